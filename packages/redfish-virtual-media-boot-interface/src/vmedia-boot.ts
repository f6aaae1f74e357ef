import { createHash } from 'node:crypto';
import { readdir, rename, rm, stat } from 'node:fs/promises';
import { AGENT_TOKEN_KEY, AGENT_TOKEN_PREGENERATED_KEY, newAgentToken } from '@bmaas/agent-client';
import {
  InvalidParameterValue,
  type JsonObject,
  type Logger,
  MissingParameterValue,
  type NodeRecord,
  ProvisionState,
} from '@bmaas/common';
import {
  BaseBootInterface,
  type BootFileSettings,
  type BootInterfaceDescriptor,
  type InterfaceDeps,
  type ManagementInterface,
  type RamdiskMode,
  type Task,
} from '@bmaas/driver-api';
import {
  checkLocalImage,
  HttpRootLayout,
  type ImageSource,
  isMissing,
  parseImageSource,
  placeBootImage,
  placeRamdiskImages,
  RAMDISK_IMAGE_KEYS,
  RAMDISK_IMAGE_PROPERTIES,
  type RamdiskImageSources,
  ramdiskImageSources,
  readCacheOptionsOf,
  removeBootImage,
  tempPathBeside,
} from '@bmaas/http-root';
import { REDFISH_SECTION, type RedfishSettings } from '@bmaas/redfish-interfaces';
import { buildBootIso, requireIsoTools } from './boot-iso.js';
import { DEFAULT_KERNEL_APPEND_PARAMS, kernelAppendParams, ramdiskCommandLine } from './kernel-command-line.js';
import { VMEDIA_DEPLOY_OPTIONS, type VmediaDeploySettings } from './vmedia-options.js';

/** The ISOs this interface builds: `boot-<digest>.iso` in the node's directory (the digest covers every input). */
const BUILT_ISO = /^boot-[0-9a-f]{32}\.iso$/;
/** driver_info keys of a prebuilt ISO, per ramdisk (Ironic's deploy_iso, rescue_iso). */
export const ISO_KEYS: Readonly<Record<RamdiskMode, string>> = { deploy: 'deploy_iso', rescue: 'rescue_iso' };
/** Where a prebuilt ISO is placed in the node's directory ([deploy]ramdisk_image_download_source local). */
const PLACED_ISO: Readonly<Record<RamdiskMode, string>> = { deploy: 'deploy.iso', rescue: 'rescue.iso' };
/** ISO 9660 volume ids: config-2 when the ISO carries network_data.json, as upstream labels it. */
export const CONFIG_DRIVE_LABEL = 'config-2';
export const PLAIN_ISO_LABEL = 'VMEDIA_BOOT_ISO';
/** Where network_data goes on the ISO, as on an OpenStack config drive. */
export const NETWORK_DATA_PATH = 'openstack/latest/network_data.json';
/** Bump when the ISO's layout changes in a way its inputs do not show. */
const BUILD_FORMAT = '1';
const IMAGE_DOWNLOAD_TIMEOUT_MS = 30 * 60 * 1000;
const INSPECTION_STATES: ReadonlySet<string> = new Set([ProvisionState.INSPECTING, ProvisionState.INSPECT_WAIT]);

/** What a ramdisk boots from: a prebuilt ISO, or the kernel and initrd the conductor builds one from. */
type RamdiskSource = { kind: 'iso'; key: string; iso: ImageSource } | { kind: 'images'; images: RamdiskImageSources };

type VmediaSettings = Pick<RedfishSettings, 'kernel_append_params'>;

/**
 * Ironic's `redfish-virtual-media` boot interface: for every ramdisk boot
 * (deploy, clean, inspect, rescue) the conductor builds a hybrid ISO of the
 * ramdisk's kernel and initrd with their command line (BIOS: isolinux; UEFI:
 * GRUB on an EFI system partition image), and the node's network_data as a
 * config drive (volume config-2, openstack/latest/network_data.json), places
 * it in the node's directory under [deploy]http_root and has the BMC insert
 * it as the virtual CD (the node's management interface: Redfish
 * VirtualMedia.InsertMedia, ejecting what was there) and sets the boot
 * device to the CD, once (setsBootDevice: the deploy and inspection only
 * power the machine on). The
 * ramdisk needs no DHCP: its command line carries the API, its token and
 * boot NIC, and its network comes from network_data. The ISO is ejected and
 * deleted when the ramdisk is no longer needed.
 */
export class RedfishVirtualMediaBootInterface extends BaseBootInterface {
  /** prepareRamdisk sets the boot device (the CD, once): the deploy and inspection only power on. */
  readonly setsBootDevice = true;
  private readonly layout: HttpRootLayout;
  private readonly deploy: BootFileSettings;
  private readonly downloadSource: VmediaDeploySettings['ramdisk_image_download_source'];
  private readonly externalHttpUrl: string | null;
  private readonly apiUrl: string | null;
  private readonly inspectionUrl: string | null;
  private readonly allowedPaths: readonly string[];
  private readonly logger: Logger;
  /** [redfish]kernel_append_params, else [pxe]'s (resolved by the registry), else Ironic's default. */
  private readonly appendParams: string;

  constructor(deps: InterfaceDeps<Partial<VmediaSettings>, { deploy?: Partial<VmediaDeploySettings> }>) {
    super();
    this.layout = new HttpRootLayout(deps.deploy.http_root, readCacheOptionsOf(deps.deploy));
    this.deploy = deps.deploy;
    this.downloadSource = deps.coreSettings.deploy?.ramdisk_image_download_source ?? 'local';
    this.externalHttpUrl = deps.coreSettings.deploy?.external_http_url ?? null;
    this.apiUrl = deps.apiPublicEndpoint;
    this.inspectionUrl = deps.inspectionCallbackEndpoint ?? deps.apiPublicEndpoint;
    this.allowedPaths = deps.fileUrlAllowedPaths;
    this.logger = deps.logger;
    this.appendParams = kernelAppendParams(deps.settings.kernel_append_params, DEFAULT_KERNEL_APPEND_PARAMS);
  }

  getProperties(): Record<string, string> {
    return {
      ...RAMDISK_IMAGE_PROPERTIES,
      deploy_kernel:
        'Kernel of the deploy ramdisk: an absolute path, a file:// URL or an http(s) URL (required unless deploy_iso is set)',
      deploy_ramdisk: 'Initrd of the deploy ramdisk, in the same forms (required unless deploy_iso is set)',
      deploy_iso:
        'A prebuilt bootable ISO of the deploy ramdisk, instead of deploy_kernel and deploy_ramdisk: it carries no command line, token or network_data of the node',
      rescue_iso: 'A prebuilt bootable ISO of the rescue ramdisk, instead of rescue_kernel and rescue_ramdisk',
      kernel_append_params:
        'Kernel parameters of the ramdisk, plain words separated by spaces (default: [redfish]kernel_append_params)',
      external_http_url:
        "URL at which this node's BMC reaches the conductor's http_root (default: [deploy]external_http_url, else [deploy]http_url)",
    };
  }

  /**
   * The management interface must have virtual media, [deploy]http_url be
   * set (the BMC fetches the ISO from it), the ramdisk images (or ISO) be
   * usable and the command line renderable. Writes nothing.
   */
  async validate(task: Task): Promise<void> {
    attachOf(task);
    this.requireHttpUrl(task.node);
    const info = task.node.driverInfo;
    const modes: RamdiskMode[] = ['deploy'];
    if (['rescue_kernel', 'rescue_ramdisk', 'rescue_iso'].some((key) => info[key] !== undefined)) modes.push('rescue');
    for (const mode of modes) {
      const source = await this.ramdiskSource(task.node, mode);
      if (source.kind === 'images') this.commandLine(task, 'validate');
    }
  }

  /**
   * Builds (or finds, unchanged) the node's ISO of `mode`, then has the BMC
   * insert its URL as the virtual CD and boot it next, once. A prebuilt ISO is placed (or, with
   * [deploy]ramdisk_image_download_source http, named as it is) instead.
   */
  async prepareRamdisk(task: Task, mode: RamdiskMode): Promise<void> {
    const log = this.nodeLogger(task);
    const httpUrl = this.requireHttpUrl(task.node);
    const source = await this.ramdiskSource(task.node, mode);
    const { uuid } = task.node;
    let url: string;
    if (source.kind === 'iso' && source.iso.kind === 'http' && this.downloadSource === 'http') {
      await this.removeIsos(uuid, undefined);
      url = source.iso.url;
    } else {
      const name =
        source.kind === 'iso'
          ? await this.placeIso(task, mode, source, log)
          : await this.buildIso(task, mode, source, log);
      await this.removeIsos(uuid, name);
      url = `${httpUrl.replace(/\/+$/, '')}/${uuid}/${name}`;
    }
    await attachOf(task)(task, 'cdrom', url);
    await task.driver.management.setBootDevice(task, 'cdrom', false);
    log.info(`virtual media ${mode} ramdisk inserted`, { iso: source.kind === 'iso' ? source.key : 'built' });
  }

  /** Ejects the CD and removes the node's ISO and images. */
  async cleanUpRamdisk(task: Task): Promise<void> {
    await this.ejectAndRemove(task);
  }

  /** The instance boots from its disk (the deploy sets it): the CD is ejected and the ISO removed. */
  async prepareInstance(task: Task): Promise<void> {
    await this.ejectAndRemove(task);
    this.nodeLogger(task).info('virtual media ejected: the instance boots from its disk');
  }

  async cleanUpInstance(task: Task): Promise<void> {
    await this.ejectAndRemove(task);
  }

  private async ejectAndRemove(task: Task): Promise<void> {
    await task.driver.management.detachVirtualMedia?.(task, ['cdrom']);
    await this.layout.removeNodeDir(task.node.uuid);
  }

  /** The ISO's source for `mode`: driver_info's `<mode>_iso`, else its kernel and initrd (checked). */
  private async ramdiskSource(node: NodeRecord, mode: RamdiskMode): Promise<RamdiskSource> {
    const key = ISO_KEYS[mode];
    const value = node.driverInfo[key];
    if (value !== undefined && value !== null && value !== '') {
      const iso = parseImageSource(key, value);
      if (iso.kind === 'local')
        return { kind: 'iso', key, iso: { ...iso, checked: await checkLocalImage(key, iso.path, this.allowedPaths) } };
      return { kind: 'iso', key, iso };
    }
    try {
      return { kind: 'images', images: await ramdiskImageSources(node, mode, { allowedPaths: this.allowedPaths }) };
    } catch (error) {
      if (!(error instanceof MissingParameterValue)) throw error;
      throw new MissingParameterValue(
        `Node ${node.uuid} needs driver_info ${RAMDISK_IMAGE_KEYS[mode].join(' and ')}, or ${key}, to boot its ${mode} ramdisk from virtual media.`,
        { missing: [...RAMDISK_IMAGE_KEYS[mode], key] },
      );
    }
  }

  /** A prebuilt ISO in the node's directory, as `<mode>.iso`. */
  private async placeIso(
    task: Task,
    mode: RamdiskMode,
    source: Extract<RamdiskSource, { kind: 'iso' }>,
    log: Logger,
  ): Promise<string> {
    const name = PLACED_ISO[mode];
    const outcome = await placeBootImage(source.iso, this.layout.nodeFile(task.node.uuid, name), {
      key: source.key,
      downloadTimeoutMs: IMAGE_DOWNLOAD_TIMEOUT_MS,
      allowedPaths: this.allowedPaths,
    });
    log.debug(`${source.key}: ${outcome}`);
    return name;
  }

  /**
   * The node's ISO of `mode`: its kernel and initrd placed in the node's
   * directory, then the ISO built from them unless one of the same inputs is
   * there already (its name is their digest; the digest covers the agent
   * token, so the name cannot be guessed by whoever knows the node).
   */
  private async buildIso(
    task: Task,
    mode: RamdiskMode,
    source: Extract<RamdiskSource, { kind: 'images' }>,
    log: Logger,
  ): Promise<string> {
    const { uuid } = task.node;
    await placeRamdiskImages(this.layout, uuid, source.images, {
      downloadTimeoutMs: IMAGE_DOWNLOAD_TIMEOUT_MS,
      allowedPaths: this.allowedPaths,
      logger: log,
    });
    const token = await this.agentToken(task);
    const [kernelKey, initrdKey] = RAMDISK_IMAGE_KEYS[mode];
    const kernel = this.layout.nodeImage(uuid, kernelKey);
    const initrd = this.layout.nodeImage(uuid, initrdKey);
    const networkData = networkDataOf(task.node);
    const files: Record<string, string> = networkData
      ? { [NETWORK_DATA_PATH]: `${JSON.stringify(networkData, null, 2)}\n` }
      : {};
    const spec = {
      kernel,
      initrd,
      commandLine: this.commandLine(task, token),
      volumeId: networkData ? CONFIG_DRIVE_LABEL : PLAIN_ISO_LABEL,
      title: `${mode} ramdisk of node ${uuid}`,
      files,
    };
    const digest = createHash('sha256');
    for (const part of [BUILD_FORMAT, spec.commandLine, spec.volumeId, spec.title, JSON.stringify(files)]) {
      digest.update(part).update('\0');
    }
    for (const image of [kernel, initrd]) {
      const { dev, ino, size, mtimeMs } = await stat(image);
      digest.update(`${dev}:${ino}:${size}:${mtimeMs}\0`);
    }
    const name = `boot-${digest.digest('hex').slice(0, 32)}.iso`;
    const path = this.layout.nodeFile(uuid, name);
    if (
      await stat(path).then(
        () => true,
        (error: unknown) => (isMissing(error) ? false : Promise.reject(error)),
      )
    ) {
      log.debug('boot ISO unchanged', { mode });
      return name;
    }
    await requireIsoTools();
    const started = Date.now();
    const temporary = tempPathBeside(path);
    try {
      await buildBootIso(spec, temporary);
      await rename(temporary, path);
    } finally {
      await rm(temporary, { force: true });
    }
    log.info('boot ISO built', { mode, label: spec.volumeId, ms: Date.now() - started });
    return name;
  }

  /**
   * The token the ramdisk gets on its command line, issued now (as upstream
   * pregenerates it for virtual media) unless this boot has one already: a
   * repeated prepareRamdisk (a takeover) keeps the ISO and the running agent's token.
   */
  private async agentToken(task: Task): Promise<string> {
    const current = task.node.driverInternalInfo[AGENT_TOKEN_KEY];
    if (typeof current === 'string' && current !== '') return current;
    const token = newAgentToken();
    await task.updateNode({
      driverInternalInfo: {
        ...task.node.driverInternalInfo,
        [AGENT_TOKEN_KEY]: token,
        [AGENT_TOKEN_PREGENERATED_KEY]: true,
      },
    });
    return token;
  }

  private commandLine(task: Task, token: string): string {
    const bootPort = task.ports.find((port) => port.pxeEnabled) ?? task.ports[0];
    return ramdiskCommandLine({
      appendParams: kernelAppendParams(task.node.driverInfo.kernel_append_params, this.appendParams),
      apiUrl: this.apiUrl,
      bootMac: bootPort?.address.toLowerCase(),
      agentToken: token,
      inspectionCallbackUrl: INSPECTION_STATES.has(task.node.provisionState)
        ? `${(this.inspectionUrl ?? '').replace(/\/+$/, '')}/v1/continue_inspection`
        : undefined,
    });
  }

  /** Removes the node's ISOs but `keep` (a mode switch, a changed input, an ISO now fetched from its origin). */
  private async removeIsos(uuid: string, keep: string | undefined): Promise<void> {
    const names = await readdir(this.layout.nodeDir(uuid)).catch((error: unknown) => {
      if (isMissing(error)) return [] as string[];
      throw error;
    });
    for (const name of names) {
      if (name === keep) continue;
      if (BUILT_ISO.test(name) || Object.values(PLACED_ISO).includes(name)) {
        await removeBootImage(this.layout.nodeFile(uuid, name));
      }
    }
  }

  /** Where the BMC fetches the node's ISO: driver_info.external_http_url, [deploy]external_http_url, [deploy]http_url. */
  private requireHttpUrl(node: NodeRecord): string {
    const own = node.driverInfo.external_http_url;
    if (own !== undefined && own !== null && own !== '') {
      if (typeof own !== 'string' || !/^https?:\/\/[^\s"']+$/.test(own) || !URL.canParse(own)) {
        throw new InvalidParameterValue('driver_info.external_http_url must be an http(s) URL.');
      }
      return own;
    }
    const url = this.externalHttpUrl ?? this.deploy.http_url;
    if (!url) {
      throw new MissingParameterValue(
        '[deploy]http_url is not set: the BMC fetches the virtual media ISO from the conductor at that URL.',
      );
    }
    return url;
  }

  private nodeLogger(task: Task): Logger {
    return this.logger.child({ nodeUuid: task.node.uuid, requestId: task.requestId });
  }
}

/** The management interface's attachVirtualMedia; InvalidParameterValue when it has no virtual media. */
function attachOf(task: Task): NonNullable<ManagementInterface['attachVirtualMedia']> {
  const { management } = task.driver;
  if (typeof management.attachVirtualMedia !== 'function' || typeof management.detachVirtualMedia !== 'function') {
    throw new InvalidParameterValue(
      `The management interface "${task.node.managementInterface}" of node ${task.node.uuid} has no virtual media: the redfish-virtual-media boot interface needs one that has (redfish).`,
    );
  }
  return management.attachVirtualMedia.bind(management);
}

/** The node's network_data when it holds any (API 1.66; {} when unset). */
function networkDataOf(node: NodeRecord): JsonObject | undefined {
  const data = node.networkData;
  return data && typeof data === 'object' && Object.keys(data).length > 0 ? data : undefined;
}

/**
 * The `redfish-virtual-media` boot interface, for the conductor's registry:
 * a boot ISO per node inserted through the BMC's virtual media. No network
 * boot (ipmi and manual-management do not take it); the redfish hardware
 * type does. Its options: [redfish]kernel_append_params (the redfish
 * interfaces' section, falling back to [pxe]'s) and
 * [deploy]ramdisk_image_download_source.
 */
export const redfishVirtualMediaBootInterface: BootInterfaceDescriptor<typeof REDFISH_SECTION.options> = {
  name: 'redfish-virtual-media',
  config: REDFISH_SECTION,
  coreOptions: { deploy: VMEDIA_DEPLOY_OPTIONS },
  rootFiles: [],
  bootConfigNames: [],
  discoveryConfigNames: [],
  textFiles: [],
  networkBoot: false,
  hardwareTypes: ['redfish'],
  create: (deps) =>
    new RedfishVirtualMediaBootInterface(
      deps as InterfaceDeps<Partial<VmediaSettings>, { deploy?: Partial<VmediaDeploySettings> }>,
    ),
};
