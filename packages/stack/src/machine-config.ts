import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DRIVER_CATALOG } from '@bmaas/conductor';

/**
 * The address machines reach the stack at: the API and every conductor's file server on the
 * same port numbers as on 127.0.0.1. `npm run lab` makes it answer on its network (an address
 * of the lab namespace relayed to the host, or QEMU's guestfwd in user-mode networking).
 */
export const MACHINE_FACING_HOST = '10.0.2.100';

/** [pxe]kernel_append_params of npm start: the ramdisk talks on the serial console too. */
export const MACHINE_KERNEL_APPEND_PARAMS = 'nofb vga=normal console=tty0 console=ttyS0';

/** Where `npm run lab` keeps its images: deploy kernels and ramdisks may be local files there. */
export function labImagesDir(statePath: string): string {
  return join(statePath, 'lab', 'images');
}

/** Paths local images may come from by default (Ironic's), plus the lab's. */
const DEFAULT_ALLOWED_PATHS = ['/var/lib/ironic', '/shared/html', '/opt/cache/files', '/vagrant', '/templates'];

/** The boot interfaces npm start enables: every one of the conductor's registry, so a new one needs no edit here. */
export const STACK_BOOT_INTERFACES: readonly string[] = DRIVER_CATALOG.interfaces.boot.map((d) => d.name);

/**
 * Writes <state>/stack/machines.conf, read before the operator's own files (which override it):
 * the real interfaces next to the fake ones, so a machine behind an IPMI or Redfish BMC boots through iPXE
 * and deploys with no configuration of the operator's. Returns its path.
 */
export function writeMachineConfig(statePath: string): string {
  const dir = join(statePath, 'stack');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'machines.conf');
  writeFileSync(
    file,
    [
      '# Written by npm start at every start; your own --config-file settings override it.',
      '[DEFAULT]',
      'enabled_hardware_types = fake-hardware,ipmi,redfish',
      `enabled_boot_interfaces = ${STACK_BOOT_INTERFACES.join(',')}`,
      'enabled_deploy_interfaces = fake,direct',
      'enabled_power_interfaces = fake,ipmitool,redfish',
      'enabled_management_interfaces = fake,ipmitool,redfish',
      'enabled_inspect_interfaces = no-inspect,fake,agent,redfish',
      'enabled_bios_interfaces = no-bios,fake,redfish',
      'enabled_firmware_interfaces = no-firmware,fake,redfish',
      '',
      '[conductor]',
      `file_url_allowed_paths = ${[...DEFAULT_ALLOWED_PATHS, labImagesDir(statePath)].join(',')}`,
      '',
      '[pxe]',
      '# every machine gets the same root boot.ipxe, which asks the API for its own script',
      'ipxe_use_boot_config_api = true',
      '# the ramdisk talks on the serial console too (what `npm run lab` records per machine)',
      `kernel_append_params = ${MACHINE_KERNEL_APPEND_PARAMS}`,
      '',
      '[agent]',
      '# the lab ramdisk serves its agent API over plain HTTP on the lab network',
      'require_tls = false',
      '',
    ].join('\n'),
  );
  return file;
}

/** What a running stack publishes for tools on the same machine (`npm run lab`): <state>/stack/endpoints.json. */
export interface StackEndpoints {
  /** PID of `npm start` (as in <state>/stack.pid). */
  pid: number;
  apiUrl: string;
  machineApiUrl: string;
  conductors: Array<{ name: string; hostname: string; httpUrl: string; machineHttpUrl: string }>;
}

export function endpointsFile(statePath: string): string {
  return join(statePath, 'stack', 'endpoints.json');
}

export function writeEndpoints(statePath: string, endpoints: StackEndpoints): void {
  writeFileSync(endpointsFile(statePath), `${JSON.stringify(endpoints, null, 2)}\n`);
}
