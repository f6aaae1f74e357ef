import type { Router } from 'express';
import { BulkEnrolment } from '../bulk-enrolment.js';
import { onlyQuery } from '../list-query.js';
import { type RouteDeps, resourceRouter } from '../route-deps.js';

/** Path of bulk enrolment (an extension: Ironic has none, and no POST on /v1/nodes/<ident>). */
export const BULK_ENROLMENT_PATH = '/v1/nodes/bulk';

/**
 * POST /v1/nodes/bulk: many nodes with their ports in one request (see
 * BulkEnrolment). Mounted before the nodes router, whose /v1/nodes/:ident
 * answers 405 to a POST. Other methods on the path are left to that router:
 * /v1/nodes/bulk is also the path of a node named "bulk".
 */
export function nodesBulkRouter(deps: RouteDeps): Router {
  const { router } = resourceRouter();
  const enrolment = new BulkEnrolment({
    nodes: deps.nodes,
    ports: deps.ports,
    stores: deps.stores,
    maxNodes: deps.config.api.bulk_enrolment_max_nodes,
  });
  router.post(BULK_ENROLMENT_PATH, onlyQuery(), async (req, res) => {
    const created = await enrolment.enrol(req.body, req.context.minor);
    for (const { node, ports } of created) {
      req.context.logger.info('node created', {
        nodeUuid: node.uuid,
        driver: node.driver,
        ports: ports.map((port) => port.address),
      });
    }
    res.status(201).json({
      nodes: created.map(({ node, ports }) => ({
        uuid: node.uuid,
        name: node.name,
        ports: ports.map((port) => ({ uuid: port.uuid, address: port.address })),
      })),
    });
  });
  return router;
}
