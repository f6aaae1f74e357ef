import {
  type BmaasConfig,
  ConfigError,
  INTERFACE_TYPES,
  type LoadConfigOptions,
  loadConfig,
  type SectionSchema,
} from '@bmaas/common';
import type { DriverCatalog } from './catalog.js';
import { DRIVER_CATALOG } from './enabled-interfaces.js';

/**
 * The configuration sections the catalog's descriptors own, by section
 * name. Two descriptors claiming one section is a ConfigError, unless they are
 * of different kinds and declare the very same schema (one package's
 * interfaces sharing options, as ipmitool power and management share [ipmi]).
 */
export function pluginConfigSections(catalog: DriverCatalog = DRIVER_CATALOG): Record<string, SectionSchema> {
  const sections: Record<string, SectionSchema> = {};
  const owners = new Map<string, { owner: string; kind: string }>();
  for (const kind of INTERFACE_TYPES) {
    for (const descriptor of catalog.interfaces[kind] ?? []) {
      if (!descriptor.config) continue;
      const { section, options } = descriptor.config;
      const owner = `${kind} interface "${descriptor.name}"`;
      const other = owners.get(section);
      if (other && other.kind !== kind && sections[section] === options) continue;
      if (other) throw new ConfigError(`[${section}] is claimed by ${other.owner} and by ${owner}`);
      owners.set(section, { owner, kind });
      sections[section] = options;
    }
  }
  return sections;
}

/**
 * loadConfig with every plug-in's section merged in: what the conductor, and
 * anything reading the conductors' configuration (the stack, the bench),
 * loads.
 */
export function loadConductorConfig(
  options: Omit<LoadConfigOptions, 'pluginSections'> = {},
  catalog: DriverCatalog = DRIVER_CATALOG,
): BmaasConfig {
  return loadConfig({ ...options, pluginSections: pluginConfigSections(catalog) });
}
