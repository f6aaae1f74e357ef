import { DriverNotFound } from '@bmaas/common';
import type { Router } from 'express';
import { onlyQuery } from '../list-query.js';
import { type RouteDeps, resourceRouter } from '../route-deps.js';

/**
 * GET /v1/drivers/{name}/properties: what the hardware type's default
 * interfaces read from driver_info, key -> description. Answered by an alive
 * conductor that enabled the type (get_driver_properties), as in Ironic;
 * 404 when none has it.
 */
export function driverPropertiesRouter(deps: RouteDeps): Router {
  const { router, allow } = resourceRouter();
  router.get('/v1/drivers/:name/properties', onlyQuery(), async (req, res) => {
    const name = req.params.name as string;
    const alive = await deps.stores.conductors.listAlive(deps.config.conductor.heartbeat_timeout);
    const serving = alive.find((conductor) => conductor.drivers.includes(name));
    if (!serving) throw new DriverNotFound(name);
    const properties = await deps.conductors.callForNode(
      { uuid: name, driver: name, conductorGroup: serving.conductorGroup },
      'get_driver_properties',
      { driver_name: name },
      { requestId: req.context.requestId },
    );
    res.json(properties);
  });
  allow('/v1/drivers/:name/properties', ['GET']);
  return router;
}
