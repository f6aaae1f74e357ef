import { InvalidParameterValue, toIndicatorState } from '@bmaas/common';
import type { Router } from 'express';
import { requireMinor } from '../errors.js';
import { selfAndBookmark } from '../links.js';
import { onlyQuery } from '../list-query.js';
import { baseUrlOf, callNodeConductor, type RouteDeps, resourceRouter } from '../route-deps.js';
import { compileSchema } from '../validation.js';
import { Minor } from '../versions.js';

const checkBootDeviceBody = compileSchema<{ boot_device: string; persistent?: boolean }>('boot device request', {
  type: 'object',
  properties: { boot_device: { type: 'string', minLength: 1 }, persistent: { type: 'boolean' } },
  required: ['boot_device'],
  additionalProperties: false,
});

const checkNmiBody = compileSchema<Record<string, never>>('inject NMI request', {
  type: 'object',
  additionalProperties: false,
});

const checkIndicatorBody = compileSchema<{ state: string }>('indicator state request', {
  type: 'object',
  properties: { state: { type: 'string' } },
  required: ['state'],
  additionalProperties: false,
});

/** `<indicator>@<component>`, Ironic's name of one indicator of one hardware component (split at the first @). */
function parseIndicatorName(unique: string): { name: string; component: string } {
  const at = unique.indexOf('@');
  if (at < 0) throw new InvalidParameterValue(`Malformed indicator name "${unique}"`);
  return { name: unique.slice(0, at), component: unique.slice(at + 1) };
}

/**
 * /v1/nodes/{id}/management: boot device, NMI and indicators (LEDs), done by
 * the owning conductor's management interface. The indicators (1.63) answer
 * at every version, as Ironic's do: its API never checked their version.
 */
export function nodeManagementRouter(deps: RouteDeps): Router {
  const { router, allow } = resourceRouter();
  const bootDevicePath = '/v1/nodes/:ident/management/boot_device';

  router.get(bootDevicePath, onlyQuery(), async (req, res) => {
    const node = await deps.nodes.find(req.params.ident as string, req.context.minor);
    res.json(await callNodeConductor(deps, req, node, 'get_boot_device', {}));
  });

  router.put(bootDevicePath, onlyQuery(), async (req, res) => {
    const node = await deps.nodes.find(req.params.ident as string, req.context.minor);
    const body = checkBootDeviceBody(req.body);
    await callNodeConductor(deps, req, node, 'set_boot_device', {
      device: body.boot_device,
      persistent: body.persistent ?? false,
    });
    req.context.logger.info('boot device set', { nodeUuid: node.uuid, device: body.boot_device });
    res.status(204).end();
  });

  router.get(`${bootDevicePath}/supported`, onlyQuery(), async (req, res) => {
    const node = await deps.nodes.find(req.params.ident as string, req.context.minor);
    const devices = await callNodeConductor(deps, req, node, 'get_supported_boot_devices', {});
    res.json({ supported_boot_devices: devices });
  });

  router.put('/v1/nodes/:ident/management/inject_nmi', onlyQuery(), async (req, res) => {
    requireMinor(req.context.minor, Minor.INJECT_NMI);
    const node = await deps.nodes.find(req.params.ident as string, req.context.minor);
    checkNmiBody(req.body ?? {});
    await callNodeConductor(deps, req, node, 'inject_nmi', {});
    req.context.logger.info('NMI injected', { nodeUuid: node.uuid });
    res.status(204).end();
  });

  const indicatorsPath = '/v1/nodes/:ident/management/indicators';

  router.get(indicatorsPath, onlyQuery(), async (req, res) => {
    const ident = req.params.ident as string;
    const node = await deps.nodes.find(ident, req.context.minor);
    const supported = await callNodeConductor(deps, req, node, 'get_supported_indicators', {});
    const base = baseUrlOf(req, deps);
    const indicators = Object.entries(supported).flatMap(([component, byId]) =>
      Object.entries(byId).map(([id, info]) => {
        const name = `${id}@${component}`;
        return {
          name,
          component,
          readonly: info.readonly ?? true,
          states: info.states ?? [],
          links: selfAndBookmark(base, 'nodes', `${ident}/management/indicators/${name}`),
        };
      }),
    );
    res.json({ indicators });
  });

  router.get(`${indicatorsPath}/:indicator`, onlyQuery(), async (req, res) => {
    const node = await deps.nodes.find(req.params.ident as string, req.context.minor);
    const { name, component } = parseIndicatorName(req.params.indicator as string);
    const state = await callNodeConductor(deps, req, node, 'get_indicator_state', { component, indicator: name });
    res.json({ state });
  });

  router.put(`${indicatorsPath}/:indicator`, onlyQuery(), async (req, res) => {
    const node = await deps.nodes.find(req.params.ident as string, req.context.minor);
    const { name, component } = parseIndicatorName(req.params.indicator as string);
    const state = toIndicatorState(checkIndicatorBody(req.body).state);
    await callNodeConductor(deps, req, node, 'set_indicator_state', { component, indicator: name, state });
    req.context.logger.info('indicator state set', { nodeUuid: node.uuid, component, indicator: name, state });
    res.status(204).end();
  });

  allow(bootDevicePath, ['GET', 'PUT']);
  allow(indicatorsPath, ['GET']);
  allow(`${indicatorsPath}/:indicator`, ['GET', 'PUT']);
  allow(`${bootDevicePath}/supported`, ['GET']);
  allow('/v1/nodes/:ident/management/inject_nmi', ['PUT']);
  return router;
}
