// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${mac} is iPXE's own setting expansion, written into the script as is.
import type { ConfigSection } from '@bmaas/common';

/** The discovery configuration the root boot.ipxe asks for when no NIC of a machine is known. */
export const DISCOVERY_SCRIPT_NAME = 'discovery.ipxe';

function withoutTrailingSlash(url: string): string {
  return url.replace(/\/+$/, '');
}

/**
 * The script an unknown machine gets with [discovery]enabled: the inspection
 * ramdisk ([discovery]deploy_kernel/deploy_ramdisk) with the inspection
 * callback, so its inventory enrols it. Undefined when discovery is off or
 * cannot work (images or the API URL unset): the caller answers the usual 404.
 */
export function renderDiscoveryScript(config: {
  discovery: ConfigSection<'discovery'>;
  /** [api]public_endpoint. */
  apiUrl: string | null;
  /** [inspector]callback_endpoint_override, else [api]public_endpoint. */
  inspectionCallbackEndpoint: string | null;
}): string | undefined {
  const { enabled, deploy_kernel: kernel, deploy_ramdisk: ramdisk } = config.discovery;
  const api = config.apiUrl;
  if (!enabled || !kernel || !ramdisk || !api) return undefined;
  const callback = `${withoutTrailingSlash(config.inspectionCallbackEndpoint ?? api)}/v1/continue_inspection`;
  const args = [
    config.discovery.kernel_append_params.replace(/[\r\n]+/g, ' ').trim(),
    'BOOTIF=${mac}',
    `ipa-api-url=${withoutTrailingSlash(api)}`,
    `ipa-inspection-callback-url=${callback}`,
    'initrd=discovery_ramdisk',
  ].filter((arg) => arg !== '');
  return [
    '#!ipxe',
    '# Discovery: no node has this machine; boot the inspection ramdisk so that its inventory enrols it.',
    'imgfree',
    `kernel ${kernel} ${args.join(' ')} || goto fail`,
    `initrd --name discovery_ramdisk ${ramdisk} || goto fail`,
    'boot',
    ':fail',
    'echo Discovery: could not download the inspection ramdisk.',
    'exit 1',
    '',
  ].join('\n');
}
