import type { BmaasConfig } from '@bmaas/common';
import type { BootInterfaceDescriptor } from '@bmaas/driver-api';
import type { DriverCatalog } from './catalog.js';
import { DRIVER_CATALOG } from './enabled-interfaces.js';

/**
 * The descriptors of the boot interfaces `[DEFAULT]enabled_boot_interfaces`
 * names, in that order (unknown names are the registry's to refuse). What
 * the stack's readiness check, the banner and the file server ask about,
 * without creating an interface.
 */
export function enabledBootDescriptors(
  config: Pick<BmaasConfig, 'DEFAULT'>,
  catalog: DriverCatalog = DRIVER_CATALOG,
): BootInterfaceDescriptor[] {
  return config.DEFAULT.enabled_boot_interfaces.flatMap((name) =>
    catalog.interfaces.boot.filter((d) => d.name === name),
  );
}

/** The files under http_root every machine may fetch, of every enabled boot interface. */
export function bootRootFiles(descriptors: readonly BootInterfaceDescriptor[]): string[] {
  return [...new Set(descriptors.flatMap((d) => d.rootFiles))];
}

/**
 * Whether the file server sends the file named `name` (a base name) as text:
 * an enabled boot interface lists the name, or its ending.
 */
export function textFileMatcher(descriptors: readonly BootInterfaceDescriptor[]): (name: string) => boolean {
  const patterns = new Set(descriptors.flatMap((d) => d.textFiles));
  const endings = [...patterns].filter((p) => p.startsWith('.'));
  return (name) => patterns.has(name) || endings.some((ending) => name.toLowerCase().endsWith(ending));
}
