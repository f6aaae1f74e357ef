import { readFile, rmdir } from 'node:fs/promises';
import { BootConfigNotFound, type Logger } from '@bmaas/common';
import {
  BaseBootInterface,
  type BootFileSettings,
  type BootInterfaceDescriptor,
  DISCOVERY_NODE,
  type InterfaceDeps,
  type RamdiskMode,
  type Task,
} from '@bmaas/driver-api';
import {
  HttpRootLayout,
  isMissing,
  placeRamdiskImages,
  RAMDISK_IMAGE_PROPERTIES,
  ramdiskImageSources,
  readCacheOptionsOf,
  removeRamdiskImages,
  validateRamdiskImages,
  writeFileIfChanged,
} from '@bmaas/http-root';
import {
  checkKernelParams,
  type DiscoveryConfigOptions,
  type GrubConfigEntry,
  nodeConfigEntry,
  renderDiscoveryConfig,
  renderNodeConfig,
  renderRootConfig,
} from './grub-config.js';
import { GRUB_OPTIONS, type GrubSettings } from './grub-options.js';

/** The root config, at `$prefix/grub.cfg` for a GRUB image built with prefix `/grub`. */
export const ROOT_CONFIG_PATH = 'grub/grub.cfg';
/** A node's own config in its directory, served as `grub.cfg` by getBootConfig. */
export const NODE_CONFIG_NAME = 'grub.cfg';
/** Longest an image download may take. */
const IMAGE_DOWNLOAD_TIMEOUT_MS = 30 * 60 * 1000;

/**
 * Network boot of UEFI machines with GRUB, like Ironic's `http` boot
 * interface with GRUB: the firmware loads GRUB (UEFI HTTP Boot, or TFTP),
 * GRUB's root config asks the boot configuration API for
 * `/v1/boot/<MAC>/grub.cfg`, and the owning conductor answers with the
 * node's config, which loads kernel and initrd from that conductor's HTTP
 * root. Files through @bmaas/http-root: atomic, repeatable, no links.
 */
export class GrubBootInterface extends BaseBootInterface {
  private readonly layout: HttpRootLayout;
  private readonly deploy: BootFileSettings;
  private readonly apiUrl: string | null;
  private readonly allowedPaths: readonly string[];
  private readonly logger: Logger;
  /** [grub]kernel_append_params, else [pxe]'s (resolved by the registry), else the built-in default. */
  private readonly kernelAppendParams: string;

  private readonly discovery: DiscoveryConfigOptions;

  constructor(deps: InterfaceDeps<Partial<GrubSettings>>) {
    super();
    this.layout = new HttpRootLayout(deps.deploy.http_root, readCacheOptionsOf(deps.deploy));
    this.deploy = deps.deploy;
    this.apiUrl = deps.apiPublicEndpoint;
    this.allowedPaths = deps.fileUrlAllowedPaths;
    this.logger = deps.logger;
    this.discovery = {
      discovery: deps.discovery,
      apiUrl: deps.apiPublicEndpoint,
      inspectionCallbackEndpoint: deps.inspectionCallbackEndpoint,
    };
    this.kernelAppendParams = checkKernelParams(deps.settings.kernel_append_params);
  }

  getProperties(): Record<string, string> {
    return {
      ...RAMDISK_IMAGE_PROPERTIES,
      kernel_append_params:
        'Kernel parameters of the ramdisk, plain words separated by spaces (default: [grub]kernel_append_params)',
    };
  }

  /** Checks driver_info (images, kernel parameters) and that both configs can be rendered. Writes nothing. */
  async validate(task: Task): Promise<void> {
    await validateRamdiskImages(task.node, { allowedPaths: this.allowedPaths });
    renderNodeConfig(this.nodeConfigOptions(task, 'deploy'));
    renderRootConfig({ apiUrl: this.apiUrl });
  }

  /** The root grub.cfg every machine's GRUB reads first. */
  override async prepareHttpRoot(): Promise<void> {
    const path = this.layout.file(ROOT_CONFIG_PATH);
    if (await writeFileIfChanged(path, renderRootConfig({ apiUrl: this.apiUrl }))) this.logger.info(`wrote ${path}`);
  }

  /** Images first, then the node's grub.cfg that names them. */
  async prepareRamdisk(task: Task, mode: RamdiskMode): Promise<void> {
    const { uuid } = task.node;
    const sources = await ramdiskImageSources(task.node, mode, { allowedPaths: this.allowedPaths });
    const config = renderNodeConfig(this.nodeConfigOptions(task, mode));
    const log = this.nodeLogger(task);
    await placeRamdiskImages(this.layout, uuid, sources, {
      downloadTimeoutMs: IMAGE_DOWNLOAD_TIMEOUT_MS,
      allowedPaths: this.allowedPaths,
      logger: log,
    });
    if (await this.layout.writeNodeFile(uuid, NODE_CONFIG_NAME, config)) log.debug('grub.cfg written');
    log.info(`GRUB ${mode} ramdisk prepared`);
  }

  /** Removes the images, and the config unless it already boots the instance. */
  async cleanUpRamdisk(task: Task): Promise<void> {
    const { uuid } = task.node;
    await removeRamdiskImages(this.layout, uuid);
    const path = this.layout.nodeFile(uuid, NODE_CONFIG_NAME);
    const config = await readFile(path, 'utf8').catch((error: unknown) => {
      if (isMissing(error)) return undefined;
      throw error;
    });
    if (config !== undefined && nodeConfigEntry(config) === 'boot_instance') return;
    await this.layout.removeNodeFile(uuid, NODE_CONFIG_NAME);
    await rmdir(this.layout.nodeDir(uuid)).catch((error: unknown) => {
      if (!isMissing(error) && (error as NodeJS.ErrnoException).code !== 'ENOTEMPTY') throw error;
    });
  }

  /** The node's config leaves GRUB for the local disk; the images go. */
  async prepareInstance(task: Task): Promise<void> {
    const { uuid } = task.node;
    const config = renderNodeConfig(this.nodeConfigOptions(task, 'boot_instance'));
    await this.layout.writeNodeFile(uuid, NODE_CONFIG_NAME, config);
    await removeRamdiskImages(this.layout, uuid);
    this.nodeLogger(task).info('GRUB set to boot the instance from the local disk');
  }

  async cleanUpInstance(task: Task): Promise<void> {
    await this.layout.removeNodeDir(task.node.uuid);
  }

  /** `grub.cfg` for a machine no node has: the discovery ramdisk (the root config asks every machine for grub.cfg). */
  override async getDiscoveryConfig(name: string): Promise<string> {
    const config = name === NODE_CONFIG_NAME ? renderDiscoveryConfig(this.discovery) : undefined;
    if (config === undefined) throw new BootConfigNotFound(DISCOVERY_NODE, name.slice(0, 64));
    return config;
  }

  /** Serves `grub.cfg`: the node's config as last written, read without following links. Writes nothing. */
  override async getBootConfig(task: Task, name: string): Promise<string> {
    const content = name === NODE_CONFIG_NAME ? this.layout.readNodeFile(task.node.uuid, NODE_CONFIG_NAME) : undefined;
    if (content === undefined) throw new BootConfigNotFound(task.node.uuid, name.slice(0, 64));
    return content;
  }

  private nodeConfigOptions(task: Task, entry: GrubConfigEntry) {
    return {
      nodeUuid: this.layout.nodeDir(task.node.uuid) && task.node.uuid.toLowerCase(),
      entry,
      httpUrl: this.deploy.http_url,
      apiUrl: this.apiUrl,
      kernelAppendParams: checkKernelParams(task.node.driverInfo.kernel_append_params, this.kernelAppendParams),
    };
  }

  private nodeLogger(task: Task): Logger {
    return this.logger.child({ nodeUuid: task.node.uuid, requestId: task.requestId });
  }
}

/** The `grub` boot interface, for the conductor's registry: GRUB over UEFI HTTP Boot through the boot configuration API. */
export const grubBootInterface: BootInterfaceDescriptor<typeof GRUB_OPTIONS> = {
  name: 'grub',
  config: { section: 'grub', options: GRUB_OPTIONS, fallbacks: { kernel_append_params: 'pxe' } },
  rootFiles: [ROOT_CONFIG_PATH],
  bootConfigNames: [NODE_CONFIG_NAME],
  discoveryConfigNames: [NODE_CONFIG_NAME],
  textFiles: ['.cfg'],
  networkBoot: true,
  create: (deps) => new GrubBootInterface(deps),
};
