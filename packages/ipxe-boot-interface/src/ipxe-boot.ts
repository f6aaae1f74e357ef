import { readFileSync } from 'node:fs';
import { readdir, readFile, rm, rmdir } from 'node:fs/promises';
import { join } from 'node:path';
import {
  type BmaasConfig,
  BootConfigNotFound,
  type Logger,
  MissingParameterValue,
  type NodeRecord,
  ProvisionState,
} from '@bmaas/common';
import {
  BaseBootInterface,
  type BootInterface,
  type InterfaceDeps,
  type InterfaceDescriptor,
  type RamdiskMode,
  type Task,
} from '@bmaas/driver-api';
import { isMissing, linkIfChanged, readLinkIfPresent, removeIfPresent, writeFileIfChanged } from './atomic-files.js';
import { type ImageSource, parseImageSource, placeBootImage, removeBootImage } from './boot-images.js';
import { BOOT_IMAGE_NAMES, type BootImageName, HttpRootLayout } from './http-root-layout.js';
import { nodeScriptEntry, nodeScriptOptions, renderNodeScript } from './node-script.js';
import { renderRootBootScript } from './root-script.js';

/** Longest an image download may take by default. */
export const DEFAULT_IMAGE_DOWNLOAD_TIMEOUT_MS = 30 * 60 * 1000;

/**
 * The configurations getBootConfig serves, by name, and the file each is
 * read from. A request's name only ever selects an entry here.
 */
/** States whose ramdisk boot is an inspection: the ramdisk is told where to post its inventory. */
const INSPECTION_STATES: ReadonlySet<string> = new Set([ProvisionState.INSPECTING, ProvisionState.INSPECT_WAIT]);

const BOOT_CONFIG_FILES: ReadonlyMap<string, (layout: HttpRootLayout, nodeUuid: string) => string> = new Map([
  ['boot.ipxe', (layout: HttpRootLayout, nodeUuid: string) => layout.nodeScript(nodeUuid)],
]);

/** Writes the root boot.ipxe under [deploy]http_root if its content changed; returns whether it wrote. */
export async function writeRootBootScript(config: Pick<BmaasConfig, 'deploy' | 'pxe' | 'api'>): Promise<boolean> {
  return writeFileIfChanged(HttpRootLayout.fromConfig(config).rootScript, renderRootBootScript(config));
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
  private readonly config: BmaasConfig;
  private readonly logger: Logger;
  private readonly layout: HttpRootLayout;
  private readonly downloadTimeoutMs: number;

  constructor(deps: InterfaceDeps, options: IpxeBootOptions = {}) {
    super();
    this.config = deps.config;
    this.logger = deps.logger;
    this.layout = HttpRootLayout.fromConfig(deps.config);
    this.downloadTimeoutMs = options.imageDownloadTimeoutMs ?? DEFAULT_IMAGE_DOWNLOAD_TIMEOUT_MS;
  }

  getProperties(): Record<string, string> {
    return {
      deploy_kernel: 'Kernel of the deploy ramdisk: an absolute path, a file:// URL or an http(s) URL (required)',
      deploy_ramdisk: 'Initrd of the deploy ramdisk, in the same forms (required)',
      rescue_kernel: 'Kernel of the rescue ramdisk, in the same forms; needed to rescue the node',
      rescue_ramdisk: 'Initrd of the rescue ramdisk, in the same forms; needed to rescue the node',
    };
  }

  /** Checks driver_info's images and that the configuration can render both scripts. Reads nothing from disk. */
  async validate(task: Task): Promise<void> {
    this.imageSources(task.node, 'deploy');
    const info = task.node.driverInfo;
    if (info.rescue_kernel !== undefined || info.rescue_ramdisk !== undefined) {
      this.imageSources(task.node, 'rescue');
    }
    this.layout.nodeDir(task.node.uuid);
    renderNodeScript(nodeScriptOptions(this.config, task.node.uuid, 'deploy'));
    renderRootBootScript(this.config);
  }

  /** The root boot.ipxe must exist before any node is prepared: static DHCP points every machine at it. */
  override async prepareHttpRoot(): Promise<void> {
    if (await writeRootBootScript(this.config)) this.logger.info(`wrote ${this.layout.rootScript}`);
  }

  /**
   * Images first, then the node script, then the MAC links: a machine that
   * finds its link also finds what the script names.
   */
  async prepareRamdisk(task: Task, mode: RamdiskMode): Promise<void> {
    const { uuid } = task.node;
    const sources = this.imageSources(task.node, mode);
    const inspection = INSPECTION_STATES.has(task.node.provisionState);
    const script = renderNodeScript(nodeScriptOptions(this.config, uuid, mode, inspection));
    const rootScript = renderRootBootScript(this.config);
    const log = this.nodeLogger(task);

    for (const [image, source] of Object.entries(sources) as [BootImageName, ImageSource][]) {
      const outcome = await placeBootImage(source, this.layout.nodeImage(uuid, image), {
        key: image,
        downloadTimeoutMs: this.downloadTimeoutMs,
      });
      log.debug(`${image}: ${outcome}`);
    }
    for (const image of BOOT_IMAGE_NAMES.filter((name) => !(name in sources))) {
      await removeBootImage(this.layout.nodeImage(uuid, image));
    }
    await this.writeNodeScript(task, script, log);
    await this.writeRootScript(rootScript, log);
    log.info(`iPXE ${mode} ramdisk prepared`);
  }

  /**
   * Removes the images, and the script and MAC links unless they already
   * boot the instance (prepareInstance ran since): those stay until
   * cleanUpInstance.
   */
  async cleanUpRamdisk(task: Task): Promise<void> {
    const { uuid } = task.node;
    for (const image of BOOT_IMAGE_NAMES) await removeBootImage(this.layout.nodeImage(uuid, image));
    const script = await readFile(this.layout.nodeScript(uuid), 'utf8').catch((error: unknown) => {
      if (isMissing(error)) return undefined;
      throw error;
    });
    if (script !== undefined && nodeScriptEntry(script) === 'boot_instance') return;
    for (const link of await this.linksOf(uuid)) await removeIfPresent(link);
    await removeIfPresent(this.layout.nodeScript(uuid));
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
    for (const image of BOOT_IMAGE_NAMES) await removeBootImage(this.layout.nodeImage(uuid, image));
    log.info('iPXE set to boot the instance from the local disk');
  }

  /** Removes the node directory and every MAC link to it. */
  async cleanUpInstance(task: Task): Promise<void> {
    const { uuid } = task.node;
    for (const link of await this.linksOf(uuid)) await removeIfPresent(link);
    await rm(this.layout.nodeDir(uuid), { recursive: true, force: true });
  }

  /**
   * Serves `boot.ipxe`: the node script as last written. Reads one file;
   * writes nothing. The read is synchronous on purpose: the script is a few
   * hundred bytes, just written, so in the page cache, and on the boot path
   * (once per firmware request) fs.promises.readFile's four thread-pool
   * round trips cost about ten times the CPU of reading it in place.
   */
  override async getBootConfig(task: Task, name: string): Promise<string> {
    const fileOf = BOOT_CONFIG_FILES.get(name);
    if (!fileOf) throw new BootConfigNotFound(task.node.uuid, name.slice(0, 64));
    try {
      return readFileSync(fileOf(this.layout, task.node.uuid), 'utf8');
    } catch (error) {
      if (isMissing(error)) throw new BootConfigNotFound(task.node.uuid, name);
      throw error;
    }
  }

  /** The kernel and ramdisk of `mode` from driver_info; throws when either is missing or malformed. */
  private imageSources(node: NodeRecord, mode: RamdiskMode): Partial<Record<BootImageName, ImageSource>> {
    const keys: BootImageName[] =
      mode === 'deploy' ? ['deploy_kernel', 'deploy_ramdisk'] : ['rescue_kernel', 'rescue_ramdisk'];
    const missing = keys.filter(
      (key) => node.driverInfo[key] === undefined || node.driverInfo[key] === null || node.driverInfo[key] === '',
    );
    if (missing.length > 0) {
      throw new MissingParameterValue(
        `Node ${node.uuid} is missing the following parameters in driver_info: ${missing.join(', ')}.`,
        { missing },
      );
    }
    return Object.fromEntries(keys.map((key) => [key, parseImageSource(key, node.driverInfo[key])]));
  }

  private async writeNodeScript(task: Task, script: string, log: Logger): Promise<void> {
    const { uuid } = task.node;
    if (await writeFileIfChanged(this.layout.nodeScript(uuid), script)) log.debug('node script written');
    await this.linkPxePorts(task, log);
  }

  private async writeRootScript(script: string, log: Logger): Promise<void> {
    if (await writeFileIfChanged(this.layout.rootScript, script)) log.info('root boot.ipxe written');
  }

  /** One link per PXE-enabled port; links of this node for any other MAC (removed ports) go. */
  private async linkPxePorts(task: Task, log: Logger): Promise<void> {
    const { uuid } = task.node;
    const target = this.layout.macLinkTarget(uuid);
    const wanted = new Set(
      task.ports.filter((port) => port.pxeEnabled).map((port) => this.layout.macLink(port.address)),
    );
    if (wanted.size === 0) log.warn('node has no PXE-enabled port: no MAC link to its iPXE script');
    for (const link of wanted) await linkIfChanged(target, link);
    for (const link of await this.linksOf(uuid)) {
      if (!wanted.has(link)) await removeIfPresent(link);
    }
  }

  /** Every MAC link that points at the node's script. */
  private async linksOf(nodeUuid: string): Promise<string[]> {
    const target = this.layout.macLinkTarget(nodeUuid);
    const dir = this.layout.pxeConfigDir;
    const names = await readdir(dir).catch((error: unknown) => {
      if (isMissing(error)) return [];
      throw error;
    });
    const links: string[] = [];
    for (const name of names) {
      if ((await readLinkIfPresent(join(dir, name))) === target) links.push(join(dir, name));
    }
    return links;
  }

  private nodeLogger(task: Task): Logger {
    return this.logger.child({ nodeUuid: task.node.uuid, requestId: task.requestId });
  }
}

/** The `ipxe` boot interface, for the conductor's registry. */
export const ipxeBootInterface: InterfaceDescriptor<BootInterface> = {
  name: 'ipxe',
  create: (deps) => new IpxeBootInterface(deps),
};
