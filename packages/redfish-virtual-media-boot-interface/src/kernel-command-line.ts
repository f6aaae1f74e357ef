import { InvalidParameterValue, MissingParameterValue } from '@bmaas/common';
import { checkKernelAppendParams } from '@bmaas/driver-api';

/** Ironic's default of [redfish]kernel_append_params, used when neither the node nor [redfish] or [pxe] set one. */
export const DEFAULT_KERNEL_APPEND_PARAMS = 'nofb nomodeset vga=normal';
const URL_WORD = /^https?:\/\/[A-Za-z0-9_.,:=/+@%~[\]-]+$/;

/** driver_info.kernel_append_params, else the configured default; InvalidParameterValue unless plain words. */
export const kernelAppendParams = checkKernelAppendParams;

/** What the ramdisk is told on its command line. */
export interface RamdiskParams {
  appendParams: string;
  /** [api]public_endpoint (ipa-api-url). */
  apiUrl: string | null;
  /** The MAC the ramdisk boots from (BOOTIF), when the node has a port. */
  bootMac: string | undefined;
  /** The agent token issued before the boot (ipa-agent-token), as upstream's virtual media boot. */
  agentToken: string;
  /** Inspection boots only: where the ramdisk posts its inventory. */
  inspectionCallbackUrl?: string | undefined;
}

/**
 * The ramdisk's kernel command line: the append parameters, then
 * `ipa-api-url`, `BOOTIF`, `ipa-agent-token`, `boot_method=vmedia` (a
 * virtual media boot, as upstream marks it) and, for inspection,
 * `ipa-inspection-callback-url`. Every word is checked: nothing taken from
 * the node or the configuration can add a line.
 */
export function ramdiskCommandLine(params: RamdiskParams): string {
  if (!params.apiUrl) {
    throw new MissingParameterValue(
      '[api]public_endpoint is not set: the ramdisk on the ISO learns the API URL from it (ipa-api-url).',
    );
  }
  const words = [
    kernelAppendParams(params.appendParams, DEFAULT_KERNEL_APPEND_PARAMS),
    `ipa-api-url=${urlWord(params.apiUrl, '[api]public_endpoint')}`,
    ...(params.bootMac ? [`BOOTIF=${params.bootMac}`] : []),
    `ipa-agent-token=${plainWord(params.agentToken, 'the agent token')}`,
    'boot_method=vmedia',
    ...(params.inspectionCallbackUrl
      ? [`ipa-inspection-callback-url=${urlWord(params.inspectionCallbackUrl, 'the inspection callback URL')}`]
      : []),
  ];
  return words.join(' ');
}

function urlWord(value: string, what: string): string {
  if (!URL_WORD.test(value))
    throw new InvalidParameterValue(`${what} must be one http(s) URL without spaces or quotes.`);
  return value;
}

function plainWord(value: string, what: string): string {
  if (!/^[A-Za-z0-9_-]+$/.test(value)) throw new InvalidParameterValue(`${what} must be one word.`);
  return value;
}
