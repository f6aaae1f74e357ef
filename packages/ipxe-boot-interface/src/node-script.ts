// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${name} is iPXE's own setting expansion, written into the scripts as is.
import { InvalidParameterValue, MissingParameterValue } from '@bmaas/common';
import type { RamdiskMode } from '@bmaas/driver-api';
import type { IpxeConfig } from './ipxe-config.js';

/** Label a node script starts at: a ramdisk (deploy, rescue) or the deployed instance. */
export type NodeScriptEntry = RamdiskMode | 'boot_instance';

export interface NodeScriptOptions {
  nodeUuid: string;
  entry: NodeScriptEntry;
  /** Where http_root is served ([deploy]http_url), without a trailing slash. */
  httpUrl: string;
  /** URL of the API the agent calls back ([api]public_endpoint), without a trailing slash. */
  apiUrl: string;
  /** The node's driver_info.kernel_append_params, else [pxe]kernel_append_params. */
  kernelAppendParams: string;
  /** [pxe]ipxe_timeout in seconds; 0 leaves iPXE's own timeout. */
  timeoutSeconds: number;
  /** [pxe]boot_retry_attempts: failed downloads retried before giving up. */
  retryAttempts: number;
  /** Inspection boots only: where the ramdisk posts its inventory (ipa-inspection-callback-url). */
  inspectionCallbackUrl?: string | undefined;
}

/** Seconds the fail label waits before rebooting, so the message can be read on a console. */
export const FAIL_REBOOT_DELAY_SECONDS = 10;

/**
 * The node's own iPXE script, as Ironic's ipxe_config template renders it:
 * `goto <entry>`, then the entry's label. Ramdisk labels download the
 * kernel and initrd from the node's directory and retry with a growing
 * pause up to retryAttempts times, then give up at `fail`.
 */
export function renderNodeScript(options: NodeScriptOptions): string {
  const lines = [
    '#!ipxe',
    `# Boot script of node ${options.nodeUuid}, written by its conductor; changes are overwritten.`,
    '',
  ];
  if (options.entry === 'boot_instance') {
    lines.push('goto boot_instance', '', ...instanceLabel());
  } else {
    lines.push(
      `set attempts:int32 ${options.retryAttempts}`,
      'set i:int32 0',
      '',
      `goto ${options.entry}`,
      '',
      ...ramdiskLabel(options, options.entry),
      '',
      ...retryLabels(options.entry),
    );
  }
  return `${lines.join('\n')}\n`;
}

function ramdiskLabel(options: NodeScriptOptions, mode: RamdiskMode): string[] {
  const base = `${options.httpUrl}/${options.nodeUuid}`;
  const timeout = options.timeoutSeconds > 0 ? `--timeout ${options.timeoutSeconds * 1000} ` : '';
  const kernelArgs = [
    options.kernelAppendParams.trim(),
    'BOOTIF=${mac}',
    `ipa-api-url=${options.apiUrl}`,
    options.inspectionCallbackUrl ? `ipa-inspection-callback-url=${options.inspectionCallbackUrl}` : '',
    // The EFI stub of the kernel finds the initrd by the name iPXE gives it.
    `initrd=${mode}_ramdisk`,
  ].filter((arg) => arg !== '');
  return [
    `:${mode}`,
    'imgfree',
    `kernel ${timeout}${base}/${mode}_kernel ${kernelArgs.join(' ')} || goto retry`,
    `initrd ${timeout}${base}/${mode}_ramdisk || goto retry`,
    'boot',
  ];
}

function retryLabels(mode: RamdiskMode): string[] {
  return [
    ':retry',
    'iseq ${i} ${attempts} && goto fail ||',
    'inc i',
    'echo Download failed, retrying in ${i} seconds.',
    'sleep ${i}',
    `goto ${mode}`,
    '',
    ':fail',
    `echo Could not boot the ${mode} ramdisk after \${attempts} retries.`,
    // Ironic powers off here; common ROMs (Debian's among them) are built without it.
    '# poweroff is not built into common iPXE ROMs: reboot, and the machine tries again.',
    `echo Rebooting in ${FAIL_REBOOT_DELAY_SECONDS} seconds.`,
    `sleep ${FAIL_REBOOT_DELAY_SECONDS}`,
    'reboot',
  ];
}

function instanceLabel(): string[] {
  return [
    ':boot_instance',
    'echo Booting the deployed instance from the local disk.',
    '# BIOS: boot the first disk. Elsewhere (UEFI) leave iPXE; the firmware tries its next boot device.',
    'sanboot --no-describe --drive 0x80 || exit 0',
  ];
}

/** The label a script written by renderNodeScript starts at, or undefined for any other text. */
export function nodeScriptEntry(script: string): NodeScriptEntry | undefined {
  const match = /^goto (deploy|rescue|boot_instance)$/m.exec(script);
  return match?.[1] as NodeScriptEntry | undefined;
}

/**
 * Node script options from the configuration. For a ramdisk entry, throws
 * MissingParameterValue when [deploy]http_url or [api]public_endpoint is
 * unset: the machine could not fetch its images, or the agent could not call
 * back. The instance entry needs neither. `nodeKernelParams` (the node's
 * driver_info.kernel_append_params), when set, replaces [pxe]kernel_append_params, as in Ironic.
 */
export function nodeScriptOptions(
  config: Pick<IpxeConfig, 'deploy' | 'pxe' | 'api' | 'inspectionCallbackEndpoint'>,
  nodeUuid: string,
  entry: NodeScriptEntry,
  inspection = false,
  nodeKernelParams?: unknown,
): NodeScriptOptions {
  const httpUrl = config.deploy.http_url ?? '';
  const apiUrl = config.api.public_endpoint ?? '';
  if (entry !== 'boot_instance') {
    if (!httpUrl) {
      throw new MissingParameterValue('[deploy]http_url is not set: booting machines fetch their images from it.');
    }
    if (!apiUrl) {
      throw new MissingParameterValue(
        '[api]public_endpoint is not set: the ramdisk learns the API URL from it (ipa-api-url).',
      );
    }
  }
  if (/[\r\n]/.test(config.pxe.kernel_append_params)) {
    throw new InvalidParameterValue('[pxe]kernel_append_params must be one line.');
  }
  const ownParams = nodeKernelParams === undefined || nodeKernelParams === null || nodeKernelParams === '';
  if (!ownParams && (typeof nodeKernelParams !== 'string' || /[\r\n]/.test(nodeKernelParams))) {
    throw new InvalidParameterValue('driver_info.kernel_append_params must be a string of one line.');
  }
  return {
    nodeUuid: nodeUuid.toLowerCase(),
    entry,
    httpUrl: withoutTrailingSlash(httpUrl),
    apiUrl: withoutTrailingSlash(apiUrl),
    kernelAppendParams: ownParams ? config.pxe.kernel_append_params : (nodeKernelParams as string),
    timeoutSeconds: config.pxe.ipxe_timeout,
    retryAttempts: config.pxe.boot_retry_attempts,
    ...(inspection
      ? {
          inspectionCallbackUrl: `${withoutTrailingSlash(config.inspectionCallbackEndpoint ?? apiUrl)}/v1/continue_inspection`,
        }
      : {}),
  };
}

export function withoutTrailingSlash(url: string): string {
  return url.replace(/\/+$/, '');
}
