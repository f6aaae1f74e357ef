import { DriverNotFound, INTERFACE_TYPES, InvalidParameterValue } from '@bmaas/common';
import type { Request, Router } from 'express';
import { HardwareTypeCatalog } from '../driver-catalog.js';
import { requireMinor } from '../errors.js';
import { selfAndBookmark } from '../links.js';
import { onlyQuery, parseBoolean, parseFieldsParam, queryString } from '../list-query.js';
import { baseUrlOf, queryOf, type RouteDeps, resourceRouter } from '../route-deps.js';
import { Minor } from '../versions.js';
import { pickFields } from '../views/format.js';

/** Interface kinds whose driver fields appeared after 1.30. */
const INTERFACE_FIELD_VERSIONS: Readonly<Record<string, number>> = {
  storage: Minor.STORAGE_INTERFACE,
  rescue: Minor.RESCUE,
  bios: Minor.BIOS_INTERFACE,
  firmware: Minor.FIRMWARE_INTERFACE,
};
const ALL_KINDS = [...INTERFACE_TYPES].sort();

interface DriverViewInput {
  name: string;
  hosts: string[];
  catalog?: HardwareTypeCatalog;
}

/** A hardware type as Ironic answers it; `catalog` given = with default and enabled interfaces. */
function driverView(input: DriverViewInput, baseUrl: string, minor: number): Record<string, unknown> {
  const driver: Record<string, unknown> = {
    name: input.name,
    hosts: input.hosts,
    links: selfAndBookmark(baseUrl, 'drivers', input.name),
  };
  if (minor >= Minor.STATES_LINKS) driver.properties = selfAndBookmark(baseUrl, 'drivers', `${input.name}/properties`);
  if (minor < Minor.DYNAMIC_DRIVERS) return driver;
  driver.type = 'dynamic';
  const { catalog } = input;
  if (!catalog) return driver;
  for (const kind of ALL_KINDS) {
    if (minor < (INTERFACE_FIELD_VERSIONS[kind] ?? 0)) continue;
    driver[`default_${kind}_interface`] = catalog.defaultFor(input.name, kind) ?? null;
    driver[`enabled_${kind}_interfaces`] = catalog.enabled(input.name, kind);
  }
  return driver;
}

/** Hardware types of the alive conductors with the hosts serving each. */
async function hostsByType(deps: RouteDeps): Promise<Map<string, string[]>> {
  const alive = await deps.stores.conductors.listAlive(deps.config.conductor.heartbeat_timeout);
  const types = new Map<string, string[]>();
  for (const conductor of alive) {
    for (const driver of conductor.drivers) types.set(driver, [...(types.get(driver) ?? []), conductor.hostname]);
  }
  return new Map([...types.entries()].sort(([a], [b]) => a.localeCompare(b)));
}

function driverFields(req: Request): string[] | undefined {
  const fields = parseFieldsParam(queryOf(req), req.context.minor);
  if (fields !== undefined) requireMinor(req.context.minor, Minor.DRIVER_FIELDS);
  return fields;
}

function checkDriverFields(view: Record<string, unknown>, fields: readonly string[] | undefined): void {
  const unknown = (fields ?? []).filter((f) => !(f in view));
  if (unknown.length > 0) throw new InvalidParameterValue(`Field(s) "${unknown.join(', ')}" are not valid`);
}

/** /v1/drivers: hardware types registered by alive conductors. */
export function driversRouter(deps: RouteDeps): Router {
  const { router, allow } = resourceRouter();

  router.get('/v1/drivers', onlyQuery('type', 'detail', 'fields'), async (req, res) => {
    const minor = req.context.minor;
    const query = queryOf(req);
    const type = queryString(query, 'type');
    const rawDetail = queryString(query, 'detail');
    if (type !== undefined || rawDetail !== undefined) requireMinor(minor, Minor.DYNAMIC_DRIVERS);
    if (type !== undefined && type !== 'classic' && type !== 'dynamic') {
      throw new InvalidParameterValue(`Invalid driver type: ${type}; valid values are: classic, dynamic`);
    }
    const detail = rawDetail === undefined ? false : parseBoolean('detail', rawDetail);
    const fields = driverFields(req);
    if (fields !== undefined && detail) {
      throw new InvalidParameterValue('Can not specify ?detail=True and fields in the same request.');
    }
    const types = type === 'classic' ? new Map<string, string[]>() : await hostsByType(deps);
    const catalog = detail || fields ? await HardwareTypeCatalog.load(deps.stores.conductors, deps.config) : undefined;
    const baseUrl = baseUrlOf(req, deps);
    const drivers = [...types.entries()].map(([name, hosts]) => {
      const view = driverView({ name, hosts, catalog }, baseUrl, minor);
      checkDriverFields(view, fields);
      return pickFields(view, fields);
    });
    res.json({ drivers });
  });

  router.get('/v1/drivers/:name', onlyQuery('fields'), async (req, res) => {
    const name = req.params.name as string;
    const hosts = (await hostsByType(deps)).get(name);
    if (!hosts) throw new DriverNotFound(name);
    const fields = driverFields(req);
    const catalog = await HardwareTypeCatalog.load(deps.stores.conductors, deps.config);
    const view = driverView({ name, hosts, catalog }, baseUrlOf(req, deps), req.context.minor);
    checkDriverFields(view, fields);
    res.json(pickFields(view, fields));
  });

  allow('/v1/drivers', ['GET']);
  allow('/v1/drivers/:name', ['GET']);
  return router;
}
