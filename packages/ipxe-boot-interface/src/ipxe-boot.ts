import { readFile, rmdir } from 'node:fs/promises';
import { BootConfigNotFound, type Logger, ProvisionState } from '@bmaas/common';
import {
  BaseBootInterface,
  type BootInterfaceDescriptor,
  DISCOVERY_NODE,
  type InterfaceDeps,
  type RamdiskMode,
  type Task,
} from '@bmaas/driver-api';
import {
  type DestDirectory,
  HttpRootLayout,
  isMissing,
  placeRamdiskImages,
  RAMDISK_IMAGE_PROPERTIES,
  ramdiskImageSources,
  readCacheOptionsOf,
  removeRamdiskImages,
  ValidatedRamdiskImages,
  validateRamdiskImages,
  writeFileIfChanged,
} from '@bmaas/http-root';
import { DISCOVERY_SCRIPT_NAME, renderDiscoveryScript } from './discovery-script.js';
import { type IpxeConfig, ipxeConfigOf, PXE_OPTIONS, type PxeSettings } from './ipxe-config.js';
import { IpxeFiles, NODE_SCRIPT_NAME, ROOT_SCRIPT_NAME } from './ipxe-files.js';
import { MacLinkIndex } from './mac-link-index.js';
import { nodeScriptEntry, nodeScriptOptions, renderNodeScript } from './node-script.js';
import { renderRootBootScript } from './root-script.js';

/** Longest an image download may take by default. */
export const DEFAULT_IMAGE_DOWNLOAD_TIMEOUT_MS = 30 * 60 * 1000;

/** States whose ramdisk boot is an inspection: the ramdisk is told where to post its inventory. */
const INSPECTION_STATES: ReadonlySet<string> = new Set([ProvisionState.INSPECTING, ProvisionState.INSPECT_WAIT]);

/**
 * The configurations getBootConfig serves, by name, and the node file each
 * is read from. A request's name only ever selects an entry here.
 */
const BOOT_CONFIG_FILES: ReadonlyMap<string, string> = new Map([['boot.ipxe', NODE_SCRIPT_NAME]]);

/** Writes the root boot.ipxe under [deploy]http_root if its content changed; returns whether it wrote. */
export async function writeRootBootScript(config: IpxeConfig): Promise<boolean> {
  return writeFileIfChanged(ipxeFilesOf(config).rootScript, renderRootBootScript(config));
}

function ipxeFilesOf(config: IpxeConfig): IpxeFiles {
  const layout = new HttpRootLayout(config.deploy.http_root, readCacheOptionsOf(config.deploy));
  return new IpxeFiles(layout, config.pxe.pxe_config_subdir);
}

export interface IpxeBootOptions {
  /** Longest an image download may take, in milliseconds. */
  imageDownloadTimeoutMs?: number;
}

/**
 * Network boot with iPXE over HTTP, like Ironic's `ipxe` boot interface:
 * per node a script and its images under [deploy]http_root, per PXE-enabled
 * port a link to that script, and the root boot.ipxe that finds them. Every
 * write is atomic (temporary file, then rename) and repeatable.
 */
export class IpxeBootInterface extends BaseBootInterface {
  private readonly config: IpxeConfig;
  private readonly logger: Logger;
  private readonly files: IpxeFiles;
  private readonly macLinks: MacLinkIndex;
  private readonly downloadTimeoutMs: number;
  private readonly allowedPaths: readonly string[];
  /** What validate checked, for prepareRamdisk of the same task (a deploy checks its images once). */
  private readonly validated = new ValidatedRamdiskImages();

  private readonly discovery: Parameters<typeof renderDiscoveryScript>[0];

  constructor(deps: InterfaceDeps<PxeSettings>, options: IpxeBootOptions = {}) {
    super();
    this.config = ipxeConfigOf(deps);
    this.discovery = {
      discovery: deps.discovery,
      apiUrl: deps.apiPublicEndpoint,
      inspectionCallbackEndpoint: deps.inspectionCallbackEndpoint,
    };
    this.logger = deps.logger;
    this.files = ipxeFilesOf(this.config);
    this.macLinks = new MacLinkIndex(this.files.pxeConfigDir);
    this.downloadTimeoutMs = options.imageDownloadTimeoutMs ?? DEFAULT_IMAGE_DOWNLOAD_TIMEOUT_MS;
    this.allowedPaths = deps.fileUrlAllowedPaths;
  }

  private get layout(): HttpRootLayout {
    return this.files.layout;
  }

  getProperties(): Record<string, string> {
    return {
      ...RAMDISK_IMAGE_PROPERTIES,
      kernel_append_params: 'Kernel parameters of the ramdisk, one line (default: [pxe]kernel_append_params)',
    };
  }

  /**
   * Checks driver_info's images (a local one must resolve under
   * [conductor]file_url_allowed_paths) and that the configuration can render
   * both scripts. Writes nothing; keeps the checked images for a
   * prepareRamdisk of the same task.
   */
  async validate(task: Task): Promise<void> {
    const checked = await validateRamdiskImages(task.node, { allowedPaths: this.allowedPaths });
    this.layout.nodeDir(task.node.uuid);
    renderNodeScript(
      nodeScriptOptions(this.config, task.node.uuid, 'deploy', false, task.node.driverInfo.kernel_append_params),
    );
    renderRootBootScript(this.config);
    this.validated.remember(task, task.node, checked);
  }

  /** The root boot.ipxe must exist before any node is prepared: static DHCP points every machine at it. */
  override async prepareHttpRoot(): Promise<void> {
    if (await writeRootBootScript(this.config)) this.logger.info(`wrote ${this.files.rootScript}`);
  }

  /**
   * Images first, then the node script, then the MAC links: a machine that
   * finds its link also finds what the script names.
   */
  async prepareRamdisk(task: Task, mode: RamdiskMode): Promise<void> {
    const { uuid } = task.node;
    const sources =
      this.validated.take(task, task.node, mode) ??
      (await ramdiskImageSources(task.node, mode, { allowedPaths: this.allowedPaths }));
    const inspection = INSPECTION_STATES.has(task.node.provisionState);
    const script = renderNodeScript(
      nodeScriptOptions(this.config, uuid, mode, inspection, task.node.driverInfo.kernel_append_params),
    );
    const rootScript = renderRootBootScript(this.config);
    const log = this.nodeLogger(task);

    const directory = await placeRamdiskImages(this.layout, uuid, sources, {
      downloadTimeoutMs: this.downloadTimeoutMs,
      allowedPaths: this.allowedPaths,
      logger: log,
    });
    await this.writeNodeScript(task, script, log, directory);
    await this.writeRootScript(rootScript, log);
    log.debug(`iPXE ${mode} ramdisk prepared`);
  }

  /**
   * Removes the images, and the script and MAC links unless they already
   * boot the instance (prepareInstance ran since): those stay until
   * cleanUpInstance.
   */
  async cleanUpRamdisk(task: Task): Promise<void> {
    const { uuid } = task.node;
    await removeRamdiskImages(this.layout, uuid);
    const script = await readFile(this.files.nodeScript(uuid), 'utf8').catch((error: unknown) => {
      if (isMissing(error)) return undefined;
      throw error;
    });
    if (script !== undefined && nodeScriptEntry(script) === 'boot_instance') return;
    await this.unlinkPorts(task);
    await this.layout.removeNodeFile(uuid, NODE_SCRIPT_NAME);
    await rmdir(this.layout.nodeDir(uuid)).catch((error: unknown) => {
      const code = (error as NodeJS.ErrnoException).code;
      if (!isMissing(error) && code !== 'ENOTEMPTY') throw error;
    });
  }

  /**
   * Points the node script at the local disk and keeps the MAC links, so a
   * machine that boots from the network first still reaches its disk; the
   * ramdisk images go.
   */
  async prepareInstance(task: Task): Promise<void> {
    const { uuid } = task.node;
    const script = renderNodeScript(nodeScriptOptions(this.config, uuid, 'boot_instance'));
    const rootScript = renderRootBootScript(this.config);
    const log = this.nodeLogger(task);
    await this.writeNodeScript(task, script, log);
    await this.writeRootScript(rootScript, log);
    await removeRamdiskImages(this.layout, uuid);
    log.info('iPXE set to boot the instance from the local disk');
  }

  /** Removes the node directory and every MAC link to it. */
  async cleanUpInstance(task: Task): Promise<void> {
    const { uuid } = task.node;
    await this.unlinkPorts(task);
    await this.layout.removeNodeDir(uuid);
  }

  /** Serves `boot.ipxe`: the node script as last written. Reads one file (HttpRootLayout.readNodeFile); writes nothing. */
  /** `discovery.ipxe`: the inspection ramdisk for a machine no node has, rendered now (it depends on no node). */
  override async getDiscoveryConfig(name: string): Promise<string> {
    const script = name === DISCOVERY_SCRIPT_NAME ? renderDiscoveryScript(this.discovery) : undefined;
    if (script === undefined) throw new BootConfigNotFound(DISCOVERY_NODE, name.slice(0, 64));
    return script;
  }

  override async getBootConfig(task: Task, name: string): Promise<string> {
    const file = BOOT_CONFIG_FILES.get(name);
    const content = file === undefined ? undefined : this.layout.readNodeFile(task.node.uuid, file);
    if (content === undefined) throw new BootConfigNotFound(task.node.uuid, name.slice(0, 64));
    return content;
  }

  /** `directory`: the node directory as placeRamdiskImages left it (a new one holds no script to compare with). */
  private async writeNodeScript(task: Task, script: string, log: Logger, directory?: DestDirectory): Promise<void> {
    // Noted for the read cache: the boot request that follows (a machine asks about once per boot) need not read it back.
    const newDirectory = directory === 'new';
    if (await this.layout.writeNodeFile(task.node.uuid, NODE_SCRIPT_NAME, script, { newDirectory })) {
      log.debug('node script written');
    }
    await this.linkPxePorts(task, log);
  }

  private async writeRootScript(script: string, log: Logger): Promise<void> {
    if (await writeFileIfChanged(this.files.rootScript, script)) log.info('root boot.ipxe written');
  }

  /** One link per PXE-enabled port; links of this node for any other MAC (removed ports) go. */
  private async linkPxePorts(task: Task, log: Logger): Promise<void> {
    const target = this.files.macLinkTarget(task.node.uuid);
    const wanted = new Set(
      task.ports.filter((port) => port.pxeEnabled).map((port) => this.files.macLink(port.address)),
    );
    if (wanted.size === 0) log.warn('node has no PXE-enabled port: no MAC link to its iPXE script');
    for (const link of wanted) await this.macLinks.link(target, link);
    for (const link of await this.macLinks.linksTo(target)) {
      if (!wanted.has(link)) await this.macLinks.remove(link);
    }
  }

  /** Removes every MAC link that points at the node's script (those of its ports and those made earlier). */
  private async unlinkPorts(task: Task): Promise<void> {
    const target = this.files.macLinkTarget(task.node.uuid);
    const portLinks = task.ports.map((port) => this.files.macLink(port.address));
    for (const link of await this.macLinks.linksTo(target, portLinks)) await this.macLinks.remove(link);
  }

  private nodeLogger(task: Task): Logger {
    return this.logger.child({ nodeUuid: task.node.uuid, requestId: task.requestId });
  }
}

/** The `ipxe` boot interface, for the conductor's registry: its [pxe] options, root script and text files. */
export const ipxeBootInterface: BootInterfaceDescriptor<typeof PXE_OPTIONS> = {
  name: 'ipxe',
  config: { section: 'pxe', options: PXE_OPTIONS },
  enabledByDefault: true,
  rootFiles: [ROOT_SCRIPT_NAME],
  bootConfigNames: [...BOOT_CONFIG_FILES.keys()],
  discoveryConfigNames: [DISCOVERY_SCRIPT_NAME],
  textFiles: ['.ipxe', NODE_SCRIPT_NAME],
  networkBoot: true,
  create: (deps) => new IpxeBootInterface(deps),
};
