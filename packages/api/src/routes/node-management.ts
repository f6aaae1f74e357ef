import type { Router } from 'express';
import { requireMinor } from '../errors.js';
import { onlyQuery } from '../list-query.js';
import { callNodeConductor, type RouteDeps, resourceRouter } from '../route-deps.js';
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

/** /v1/nodes/{id}/management: boot device and NMI, done by the owning conductor's management interface. */
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

  allow(bootDevicePath, ['GET', 'PUT']);
  allow(`${bootDevicePath}/supported`, ['GET']);
  allow('/v1/nodes/:ident/management/inject_nmi', ['PUT']);
  return router;
}
