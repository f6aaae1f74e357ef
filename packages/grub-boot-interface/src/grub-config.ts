// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${name} is GRUB's own variable expansion, written into the configs as is.
import { InvalidParameterValue, MissingParameterValue } from '@bmaas/common';
import { checkKernelAppendParams, type RamdiskMode } from '@bmaas/driver-api';

/** What a node's grub.cfg boots: a ramdisk (deploy, rescue) or the deployed instance. */
export type GrubConfigEntry = RamdiskMode | 'boot_instance';

/** First line of every node config: cleanUpRamdisk reads the entry back from it. */
const ENTRY_MARK = '# bmaas-entry:';

/** Kernel parameters used when driver_info has no kernel_append_params (as iPXE's default). */
export const DEFAULT_KERNEL_APPEND_PARAMS = 'nofb vga=normal';
/** Seconds the root config waits before rebooting a machine nothing is known of. */
export const FALLBACK_REBOOT_DELAY_SECONDS = 10;
/** Tries of the API before the fallback, and the pause between them (a busy API, a ring change). */
export const ROOT_CONFIG_ATTEMPTS = 3;
export const ROOT_CONFIG_RETRY_DELAY_SECONDS = 2;

/** Kernel parameters GRUB passes on as they are: no quoting, variables or command separators. */

/**
 * An http:// URL as GRUB names it: `(http,host:port)/path`. GRUB speaks
 * plain HTTP only; anything that could break out of the device name or the
 * path is refused.
 */
export function grubHttpLocation(url: string, what: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new InvalidParameterValue(`${what} ${JSON.stringify(url)} is not a URL.`);
  }
  if (parsed.protocol !== 'http:') {
    throw new InvalidParameterValue(`${what} must be an http:// URL for GRUB (it speaks plain HTTP only).`);
  }
  if (parsed.username || parsed.password || parsed.search || parsed.hash) {
    throw new InvalidParameterValue(`${what} must be a plain http://host[:port][/path] URL for GRUB.`);
  }
  const path = parsed.pathname.replace(/\/+$/, '');
  if (!/^[A-Za-z0-9._~/-]*$/.test(path)) {
    throw new InvalidParameterValue(`${what}: GRUB cannot use the path ${JSON.stringify(path)}.`);
  }
  return `(http,${parsed.host})${path}`;
}

export interface RootConfigOptions {
  /** [api]public_endpoint: where the boot configuration API is. */
  apiUrl: string | null;
}

/**
 * The root grub.cfg, the same for every machine (GRUB built with prefix
 * /grub reads it from the server it was loaded from): asks the boot
 * configuration API for this machine's grub.cfg a few times, then falls
 * back to a message and a reboot. A node config either boots or leaves
 * GRUB (`exit`, local disk); coming back here means the API had nothing.
 */
export function renderRootConfig(options: RootConfigOptions): string {
  if (!options.apiUrl) {
    throw new MissingParameterValue(
      "The grub boot interface needs [api]public_endpoint: GRUB asks the API for each machine's config.",
    );
  }
  const api = grubHttpLocation(options.apiUrl, '[api]public_endpoint');
  return [
    "# Root GRUB config, the same for every machine: this machine's config comes from the boot",
    '# configuration API. Written by the conductor; changes are overwritten.',
    'set timeout=0',
    'set bmaas_mac="${net_default_mac}"',
    // A DHCP answer with a DNS server leaves GRUB without its network settings: ask again.
    'if [ -z "${bmaas_mac}" ]; then net_bootp; set bmaas_mac="${net_efinet0_dhcp_mac}"; fi',
    'export bmaas_mac',
    `for attempt in ${Array.from({ length: ROOT_CONFIG_ATTEMPTS }, (_, i) => i + 1).join(' ')}; do`,
    `  configfile ${api}/v1/boot/\${bmaas_mac}/grub.cfg`,
    `  sleep ${ROOT_CONFIG_RETRY_DELAY_SECONDS}`,
    'done',
    'echo "bmaas: no boot configuration for ${bmaas_mac}: the GRUB fallback, rebooting"',
    `sleep ${FALLBACK_REBOOT_DELAY_SECONDS}`,
    'reboot',
    '',
  ].join('\n');
}

export interface NodeConfigOptions {
  nodeUuid: string;
  entry: GrubConfigEntry;
  /** [deploy]http_url: where this conductor serves the node's images. */
  httpUrl: string | null;
  /** [api]public_endpoint, given to the ramdisk as ipa-api-url. */
  apiUrl: string | null;
  /** driver_info kernel_append_params, or the default. */
  kernelAppendParams: string;
}

/** Checks kernel parameters taken from driver_info: one line of plain words. */
export function checkKernelParams(value: unknown, fallback: string = DEFAULT_KERNEL_APPEND_PARAMS): string {
  return checkKernelAppendParams(value, fallback);
}

/**
 * A node's grub.cfg: the kernel and initrd of its ramdisk from this
 * conductor's HTTP root, or `exit` (GRUB hands back to the firmware, which
 * boots the next device: the local disk).
 */
export function renderNodeConfig(options: NodeConfigOptions): string {
  const header = [
    `${ENTRY_MARK} ${options.entry}`,
    `# GRUB config of node ${options.nodeUuid}, written by its conductor; changes are overwritten.`,
    'set timeout=0',
  ];
  if (options.entry === 'boot_instance') {
    return [...header, 'echo "bmaas: booting from the local disk"', 'exit', ''].join('\n');
  }
  if (!options.httpUrl) throw new MissingParameterValue('The grub boot interface needs [deploy]http_url.');
  if (!options.apiUrl) throw new MissingParameterValue('The grub boot interface needs [api]public_endpoint.');
  const files = `${grubHttpLocation(options.httpUrl, '[deploy]http_url')}/${options.nodeUuid}`;
  const api = options.apiUrl.replace(/\/+$/, '');
  if (!/^https?:\/\/[A-Za-z0-9._~:/[\]-]+$/.test(api)) {
    throw new InvalidParameterValue('[api]public_endpoint cannot be written into a GRUB config.');
  }
  const params = checkKernelParams(options.kernelAppendParams);
  const kernel = `${options.entry}_kernel`;
  const ramdisk = `${options.entry}_ramdisk`;
  return [
    ...header,
    'set gfxpayload=text',
    `echo "bmaas: node ${options.nodeUuid}: loading the ${options.entry} ramdisk"`,
    `linux ${files}/${kernel} ${params} BOOTIF=\${bmaas_mac} ipa-api-url=${api}`,
    `initrd ${files}/${ramdisk}`,
    'boot',
    '',
  ].join('\n');
}

/** The entry a node config was written for, from its first line. */
export function nodeConfigEntry(config: string): GrubConfigEntry | undefined {
  const first = config.split('\n', 1)[0] ?? '';
  if (!first.startsWith(ENTRY_MARK)) return undefined;
  const entry = first.slice(ENTRY_MARK.length).trim();
  return entry === 'deploy' || entry === 'rescue' || entry === 'boot_instance' ? entry : undefined;
}

export interface DiscoveryConfigOptions {
  /** [discovery]: on or off, the inspection ramdisk's kernel, initrd and kernel parameters. */
  discovery: {
    enabled: boolean;
    deploy_kernel: string | null;
    deploy_ramdisk: string | null;
    kernel_append_params: string;
  };
  /** [api]public_endpoint, given to the ramdisk as ipa-api-url. */
  apiUrl: string | null;
  /** [inspector]callback_endpoint_override, else [api]public_endpoint: where the inventory goes. */
  inspectionCallbackEndpoint: string | null;
}

/**
 * The grub.cfg of a machine no node has, with [discovery]enabled: the
 * inspection ramdisk ([discovery]deploy_kernel, deploy_ramdisk, plain
 * http:// for GRUB) with the inspection callback, so that its inventory
 * enrols it. Undefined when discovery is off or cannot work (images or the
 * API unset): the API answers its usual 404 and GRUB falls back.
 */
export function renderDiscoveryConfig(options: DiscoveryConfigOptions): string | undefined {
  const { enabled, deploy_kernel: kernel, deploy_ramdisk: ramdisk } = options.discovery;
  const api = options.apiUrl?.replace(/\/+$/, '');
  if (!enabled || !kernel || !ramdisk || !api) return undefined;
  const callback = `${(options.inspectionCallbackEndpoint ?? api).replace(/\/+$/, '')}/v1/continue_inspection`;
  for (const url of [api, callback]) {
    if (!/^https?:\/\/[A-Za-z0-9._~:/[\]-]+$/.test(url)) {
      throw new InvalidParameterValue(`${url} cannot be written into a GRUB config.`);
    }
  }
  const params = checkKernelParams(options.discovery.kernel_append_params);
  return [
    '# Discovery: no node has this machine; boot the inspection ramdisk so that its inventory enrols it.',
    'set timeout=0',
    'set gfxpayload=text',
    'echo "bmaas: unknown machine ${bmaas_mac}: loading the discovery ramdisk"',
    `linux ${grubHttpLocation(kernel, '[discovery]deploy_kernel')} ${params} BOOTIF=\${bmaas_mac} ipa-api-url=${api} ipa-inspection-callback-url=${callback}`,
    `initrd ${grubHttpLocation(ramdisk, '[discovery]deploy_ramdisk')}`,
    'boot',
    '',
  ].join('\n');
}
