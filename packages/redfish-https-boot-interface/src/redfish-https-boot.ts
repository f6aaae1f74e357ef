import { readFile, rename, rm, rmdir } from 'node:fs/promises';
import { InvalidParameterValue, type Logger, MissingParameterValue } from '@bmaas/common';
import {
  BaseBootInterface,
  type BootFileSettings,
  type BootInterfaceDescriptor,
  checkKernelAppendParams,
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
  tempPathBeside,
  validateRamdiskImages,
} from '@bmaas/http-root';
import {
  etagOf,
  objectAt,
  REDFISH_SECTION,
  type RedfishDeps,
  RedfishNode,
  type RedfishSettings,
  redfishDepsOf,
  stringsAt,
} from '@bmaas/redfish-interfaces';
import { buildUnifiedKernelImage, UKI_STUB } from './unified-kernel-image.js';

/** The node's boot artefact in its http_root directory: the URI the BMC is given serves it. */
export const BOOT_ARTEFACT_NAME = 'boot.efi';
/** Kernel parameters when neither driver_info nor [redfish] (or [pxe]) name any (as the other interfaces). */
export const DEFAULT_KERNEL_APPEND_PARAMS = 'nofb vga=normal';
/** Longest an image download may take. */
const IMAGE_DOWNLOAD_TIMEOUT_MS = 30 * 60 * 1000;
/** Kernel parameters as one line of plain words: nothing that could end the command line or add to it. */

export interface RedfishHttpsBootOptions {
  /** The EFI stub the node's UKI is built on; default Debian's (UKI_STUB). */
  ukiStub?: string;
}

/**
 * Upstream's `redfish-https`: UEFI HTTP boot where the BMC is told the URI
 * (`Boot.HttpBootUri` with `BootSourceOverrideTarget: UefiHttp`, once), so
 * no DHCP boot file option is involved. The URI serves the node's own boot
 * artefact from this conductor's HTTP root: a Unified Kernel Image of the
 * ramdisk's kernel and initrd with its kernel command line (agent URL,
 * BOOTIF), where upstream serves an ISO of the same three. UEFI only.
 * Sets the boot device itself (setsBootDevice): the deploy then powers the
 * machine on without setting network boot over the override.
 */
export class RedfishHttpsBootInterface extends BaseBootInterface {
  readonly setsBootDevice = true;
  private readonly layout: HttpRootLayout;
  private readonly deploy: BootFileSettings;
  private readonly apiUrl: string | null;
  private readonly allowedPaths: readonly string[];
  private readonly logger: Logger;
  private readonly kernelAppendParams: string;
  private readonly ukiStub: string;

  constructor(
    deps: InterfaceDeps<RedfishSettings>,
    private readonly redfish: RedfishDeps,
    options: RedfishHttpsBootOptions = {},
  ) {
    super();
    this.layout = new HttpRootLayout(deps.deploy.http_root, readCacheOptionsOf(deps.deploy));
    this.deploy = deps.deploy;
    this.apiUrl = deps.apiPublicEndpoint;
    this.allowedPaths = deps.fileUrlAllowedPaths;
    this.logger = deps.logger;
    this.kernelAppendParams = checkKernelAppendParams(deps.settings.kernel_append_params, DEFAULT_KERNEL_APPEND_PARAMS);
    this.ukiStub = options.ukiStub ?? UKI_STUB;
  }

  getProperties(): Record<string, string> {
    return {
      ...RAMDISK_IMAGE_PROPERTIES,
      kernel_append_params:
        'Kernel parameters of the ramdisk, plain words separated by spaces (default: [redfish]kernel_append_params)',
    };
  }

  /** driver_info (images, kernel parameters, the BMC's), [deploy]http_url, [api]public_endpoint, UEFI. Writes nothing. */
  async validate(task: Task): Promise<void> {
    new RedfishNode(this.redfish, task.node);
    if (task.node.bootMode === 'bios') {
      throw new InvalidParameterValue(
        `Node ${task.node.uuid} boots in bios mode: the redfish-https boot interface boots UEFI machines only.`,
      );
    }
    await validateRamdiskImages(task.node, { allowedPaths: this.allowedPaths });
    this.artefactUri(task.node.uuid);
    this.cmdline(task);
  }

  /**
   * The ramdisk's images in the node's directory, its UKI built from them (rewritten only when
   * it changes), then the BMC told to boot it once by UEFI HTTP from its URI.
   */
  async prepareRamdisk(task: Task, mode: RamdiskMode): Promise<void> {
    const { uuid } = task.node;
    const uri = this.artefactUri(uuid);
    const cmdline = this.cmdline(task);
    const sources = await ramdiskImageSources(task.node, mode, { allowedPaths: this.allowedPaths });
    const log = this.nodeLogger(task);
    await placeRamdiskImages(this.layout, uuid, sources, {
      downloadTimeoutMs: IMAGE_DOWNLOAD_TIMEOUT_MS,
      allowedPaths: this.allowedPaths,
      logger: log,
    });
    const artefact = this.layout.nodeFile(uuid, BOOT_ARTEFACT_NAME);
    const fresh = tempPathBeside(artefact);
    try {
      await buildUnifiedKernelImage(
        {
          stub: this.ukiStub,
          kernel: this.layout.nodeImage(uuid, `${mode}_kernel`),
          initrd: this.layout.nodeImage(uuid, `${mode}_ramdisk`),
          cmdline,
        },
        fresh,
        tempPathBeside(artefact),
      );
      if (await sameContent(fresh, artefact)) await rm(fresh, { force: true });
      else await rename(fresh, artefact);
    } catch (error) {
      await rm(fresh, { force: true });
      throw error;
    }
    await this.bootOnceFrom(task, uri);
    log.info(`UEFI HTTP boot of the ${mode} ramdisk prepared: ${uri}`);
  }

  /** The images and the artefact go (the BMC's override was once: it is spent or harmless). */
  async cleanUpRamdisk(task: Task): Promise<void> {
    await this.removeArtefacts(task.node.uuid);
  }

  /** The instance boots from its disk (the deploy sets that boot device): nothing of the ramdisk stays. */
  async prepareInstance(task: Task): Promise<void> {
    await this.removeArtefacts(task.node.uuid);
    this.nodeLogger(task).info('ramdisk boot artefacts removed; the instance boots from its disk');
  }

  async cleanUpInstance(task: Task): Promise<void> {
    await this.layout.removeNodeDir(task.node.uuid);
  }

  /** Where the machine's firmware fetches the node's artefact: [deploy]http_url/<uuid>/boot.efi. */
  artefactUri(nodeUuid: string): string {
    const base = this.deploy.http_url;
    if (!base) throw new MissingParameterValue('The redfish-https boot interface needs [deploy]http_url.');
    if (!/^https?:\/\/[A-Za-z0-9._~:[\]-]+(\/[A-Za-z0-9._~/-]*)?$/.test(base)) {
      throw new InvalidParameterValue('[deploy]http_url cannot be given to a BMC as an HTTP boot URI.');
    }
    return `${base.replace(/\/+$/, '')}/${this.layout.nodeDir(nodeUuid) && nodeUuid.toLowerCase()}/${BOOT_ARTEFACT_NAME}`;
  }

  /** The ramdisk's kernel command line: the parameters, BOOTIF (the PXE-enabled port), the agent's API. */
  private cmdline(task: Task): string {
    if (!this.apiUrl) throw new MissingParameterValue('The redfish-https boot interface needs [api]public_endpoint.');
    const api = this.apiUrl.replace(/\/+$/, '');
    if (!/^https?:\/\/[A-Za-z0-9._~:/[\]-]+$/.test(api)) {
      throw new InvalidParameterValue('[api]public_endpoint cannot be written into a kernel command line.');
    }
    const params = checkKernelAppendParams(task.node.driverInfo.kernel_append_params, this.kernelAppendParams);
    const port = task.ports.find((p) => p.pxeEnabled) ?? task.ports[0];
    const bootif = port ? ` BOOTIF=${port.address.toLowerCase()}` : '';
    return `${params}${bootif} ipa-api-url=${api}`;
  }

  /** BootSourceOverrideTarget UefiHttp, once, with the URI; refused when the system does not offer UefiHttp. */
  private async bootOnceFrom(task: Task, uri: string): Promise<void> {
    const node = new RedfishNode(this.redfish, task.node);
    const { path, body } = await node.system();
    const current = objectAt(body, 'Boot');
    const allowed = stringsAt(current, 'BootSourceOverrideTarget@Redfish.AllowableValues');
    if (allowed && !allowed.includes('UefiHttp')) {
      throw new InvalidParameterValue(
        `The BMC of node ${task.node.uuid} does not offer UefiHttp boot (it offers ${allowed.join(', ')}).`,
      );
    }
    const boot: Record<string, unknown> = {
      BootSourceOverrideTarget: 'UefiHttp',
      BootSourceOverrideEnabled: 'Once',
      HttpBootUri: uri,
    };
    if ('BootSourceOverrideMode' in current) boot.BootSourceOverrideMode = 'UEFI';
    await node.client.patch(node.target, path, { Boot: boot }, etagOf(body));
  }

  private async removeArtefacts(uuid: string): Promise<void> {
    await rm(this.layout.nodeFile(uuid, BOOT_ARTEFACT_NAME), { force: true });
    await removeRamdiskImages(this.layout, uuid);
    await rmdir(this.layout.nodeDir(uuid)).catch((error: unknown) => {
      if (!isMissing(error) && (error as NodeJS.ErrnoException).code !== 'ENOTEMPTY') throw error;
    });
  }

  private nodeLogger(task: Task): Logger {
    return this.logger.child({ nodeUuid: task.node.uuid, requestId: task.requestId });
  }
}

async function sameContent(a: string, b: string): Promise<boolean> {
  const existing = await readFile(b).catch((error: unknown) => {
    if (isMissing(error)) return undefined;
    throw error;
  });
  return existing?.equals(await readFile(a)) ?? false;
}

/** The `redfish-https` boot interface, for the conductor's registry: the redfish hardware type takes it. */
export const redfishHttpsBootInterface: BootInterfaceDescriptor<typeof REDFISH_SECTION.options> = {
  name: 'redfish-https',
  config: REDFISH_SECTION,
  rootFiles: [],
  bootConfigNames: [],
  discoveryConfigNames: [],
  textFiles: [],
  networkBoot: false,
  hardwareTypes: ['redfish'],
  create: (deps) => new RedfishHttpsBootInterface(deps, redfishDepsOf(deps)),
};
