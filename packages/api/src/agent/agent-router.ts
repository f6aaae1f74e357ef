import { checkInspectionBody, InvalidUUID } from '@bmaas/common';
import type { Router } from 'express';
import { NodeDiscovery } from '../discovery/node-discovery.js';
import { baseUrlOf, queryOf, type RouteDeps, resourceRouter } from '../route-deps.js';
import { isUuid } from '../validation.js';
import { AgentLookup } from './agent-lookup.js';
import { ContinueInspection } from './continue-inspection.js';
import { checkHeartbeatBody } from './heartbeat-body.js';
import { lookupView } from './lookup-view.js';
import { ramdiskMinor, setVersionHeaders } from './ramdisk-version.js';

/** A query parameter given once or repeated, as one comma-separated list. */
function listParam(value: unknown): string[] {
  const parts = Array.isArray(value) ? value : value === undefined ? [] : [value];
  return parts
    .flatMap((part) => String(part).split(','))
    .map((part) => part.trim())
    .filter((part) => part !== '');
}

function uuidParam(value: unknown): string | undefined {
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string' || !isUuid(value)) throw new InvalidUUID(value);
  return value;
}

/**
 * What a deploy ramdisk calls: `GET /v1/lookup` and `POST
 * /v1/heartbeat/{node}`. Both are public (see middleware/auth.ts) and take
 * the microversion their own way (ramdisk-version.ts).
 */
export function agentRouter(deps: RouteDeps): Router {
  const { router, allow } = resourceRouter();
  const lookups = new AgentLookup({
    stores: deps.stores,
    conductors: deps.conductors,
    restrictToLookupStates: deps.config.api.restrict_lookup,
  });

  router.get('/v1/lookup', async (req, res) => {
    req.context.minor = ramdiskMinor(req, res);
    const query = queryOf(req);
    const node = await lookups.lookup({
      addresses: listParam(query.addresses),
      nodeUuid: uuidParam(query.node_uuid),
      requestId: req.context.requestId,
      logger: req.context.logger,
    });
    req.context.logger.info('agent lookup answered', {
      nodeUuid: node.uuid,
      tokenIssued: node.agent_token !== '******',
    });
    res.json(lookupView(node, deps.config, baseUrlOf(req, deps)));
  });

  router.post('/v1/heartbeat/:ident', async (req, res) => {
    const minor = ramdiskMinor(req, res);
    req.context.minor = minor;
    const body = checkHeartbeatBody(req.body, minor);
    const node = await deps.nodes.find(req.params.ident as string, minor);
    await deps.conductors.callForNode(
      node,
      'heartbeat',
      {
        node_id: node.uuid,
        callback_url: body.callbackUrl,
        agent_token: body.agentToken,
        ...(body.agentVersion !== undefined ? { agent_version: body.agentVersion } : {}),
        ...(body.agentVerifyCa !== undefined ? { agent_verify_ca: body.agentVerifyCa } : {}),
      },
      { requestId: req.context.requestId },
    );
    req.context.logger.info('agent heartbeat accepted', { nodeUuid: node.uuid, callbackUrl: body.callbackUrl });
    res.status(202).end();
  });

  const inspections = new ContinueInspection({
    stores: deps.stores,
    conductors: deps.conductors,
    discovery: deps.config.discovery.enabled ? new NodeDiscovery(deps.config.discovery, deps.nodes) : undefined,
  });

  router.post('/v1/continue_inspection', async (req, res) => {
    // ironic-python-agent sends no version header here: every version is served, and answered as 1.1 is.
    setVersionHeaders(res);
    const data = checkInspectionBody(req.body);
    const node = await inspections.accept(data, { requestId: req.context.requestId, logger: req.context.logger });
    req.context.logger.info('inspection inventory accepted', { nodeUuid: node.uuid });
    res.status(202).json({ uuid: node.uuid });
  });

  allow('/v1/lookup', ['GET']);
  allow('/v1/continue_inspection', ['POST']);
  allow('/v1/heartbeat/:ident', ['POST']);
  return router;
}
