// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${name} is iPXE's own setting expansion, written into the scripts as is.
import { InvalidParameterValue, MissingParameterValue } from '@bmaas/common';
import type { IpxeConfig } from './ipxe-config.js';
import { withoutTrailingSlash } from './node-script.js';

/** Tries of each NIC's script before moving on to the next NIC. */
export const ROOT_SCRIPT_ATTEMPTS_PER_NIC = 3;
/** Seconds between those tries: long enough for a busy API or a ring change, short for unknown machines. */
export const ROOT_SCRIPT_RETRY_DELAY_SECONDS = 2;
/** Seconds the script waits before rebooting when nothing matched. */
export const ROOT_SCRIPT_REBOOT_DELAY_SECONDS = 10;

/** Where the root script sends the NIC with MAC `mac` (an iPXE expression): prefix + mac + suffix. */
export interface NodeScriptLocation {
  prefix: string;
  suffix: string;
}

/**
 * Where node scripts are fetched from. Off: `<pxe_config_subdir>/<mac>`,
 * relative to the root script, i.e. this HTTP server. On: the boot
 * configuration API, `<root>/v1/boot/<mac>/boot.ipxe`, with root
 * [pxe]ipxe_config_api_root_url or else [api]public_endpoint.
 */
export function nodeScriptLocation(config: Pick<IpxeConfig, 'pxe' | 'api'>): NodeScriptLocation {
  if (!config.pxe.ipxe_use_boot_config_api) {
    const subdir = withoutTrailingSlash(config.pxe.pxe_config_subdir);
    return { prefix: `${checkedToken('[pxe]pxe_config_subdir', subdir)}/`, suffix: '' };
  }
  const root = config.pxe.ipxe_config_api_root_url ?? config.api.public_endpoint;
  if (!root) {
    throw new MissingParameterValue(
      '[pxe]ipxe_use_boot_config_api needs [pxe]ipxe_config_api_root_url or [api]public_endpoint to link to the API.',
    );
  }
  return {
    prefix: `${withoutTrailingSlash(checkedToken('the boot API root URL', root))}/v1/boot/`,
    suffix: '/boot.ipxe',
  };
}

/**
 * The root `boot.ipxe`, the same for every machine (DHCP hands out one
 * answer). It walks the NICs net0, net1, … and chains the first one whose
 * script exists, like Ironic's boot.ipxe; each NIC is tried a few times so a
 * busy API or a conductor change does not strand a machine. A chained
 * script that returns (local boot) ends this one too, so the firmware moves
 * on to its next boot device. When no NIC matched: the fallback script if
 * set, else a message and a reboot.
 */
export function renderRootBootScript(config: Pick<IpxeConfig, 'pxe' | 'api'>): string {
  const { prefix, suffix } = nodeScriptLocation(config);
  const fallback = config.pxe.ipxe_fallback_script;
  const lines = [
    '#!ipxe',
    '# Root boot script, the same for every machine: boot the script of the first NIC that has one.',
    '# Written by the conductor; changes are overwritten.',
    '',
    'set nic:int32 -1',
    ':next_nic',
    'inc nic || goto old_rom',
    'isset ${net${nic}/mac} || goto no_config',
    'set tries:int32 0',
    ':try_nic',
    'echo Fetching the boot script of ${net${nic}/mac:hexhyp}',
    `chain ${prefix}\${net\${nic}/mac:hexhyp}${suffix} && exit 0 ||`,
    'inc tries',
    `iseq \${tries} ${ROOT_SCRIPT_ATTEMPTS_PER_NIC} && goto next_nic ||`,
    `sleep ${ROOT_SCRIPT_RETRY_DELAY_SECONDS}`,
    'goto try_nic',
    '',
    ':old_rom',
    '# Without "inc" the NICs cannot be walked: try the one iPXE booted from.',
    `chain ${prefix}\${mac:hexhyp}${suffix} && exit 0 ||`,
    '',
    ':no_config',
  ];
  if (config.pxe.ipxe_use_boot_config_api) {
    // Discovery: the API answers an inspection ramdisk for an unknown machine when [discovery]enabled, else 404.
    lines.push(`chain ${prefix}\${mac:hexhyp}/discovery.ipxe && exit 0 ||`);
  }
  if (fallback) {
    lines.push(`chain ${checkedToken('[pxe]ipxe_fallback_script', fallback)} && exit 0 ||`);
  }
  lines.push(
    'echo No boot configuration found for any network interface of this machine.',
    `echo Rebooting in ${ROOT_SCRIPT_REBOOT_DELAY_SECONDS} seconds.`,
    `sleep ${ROOT_SCRIPT_REBOOT_DELAY_SECONDS}`,
    'reboot',
  );
  return `${lines.join('\n')}\n`;
}

/** A value that becomes one word of a script line: no spaces or line breaks. */
function checkedToken(what: string, value: string): string {
  if (value === '' || /\s/.test(value)) {
    throw new InvalidParameterValue(
      `${what} = ${JSON.stringify(value)} cannot be used in boot.ipxe (empty or spaces).`,
    );
  }
  return value;
}
