import { InventoryNotRecorded, ResourceNotFound } from '@bmaas/common';
import type { Router } from 'express';
import { type RouteDeps, resourceRouter } from '../route-deps.js';
import { Minor } from '../versions.js';

/** `GET /v1/nodes/{node_ident}/inventory` (1.81): what the node's last inspection stored. */
export function nodeInventoryRouter(deps: RouteDeps): Router {
  const { router, allow } = resourceRouter();

  router.get('/v1/nodes/:ident/inventory', async (req, res) => {
    const { minor } = req.context;
    // Before 1.81 the resource does not exist, as upstream.
    if (minor < Minor.NODE_INVENTORY) throw new ResourceNotFound();
    const node = await deps.nodes.find(req.params.ident as string, minor);
    const stored = await deps.stores.inventories.get(node.id);
    if (!stored) throw new InventoryNotRecorded(node.uuid);
    res.json({ inventory: stored.inventory, plugin_data: stored.pluginData });
  });

  allow('/v1/nodes/:ident/inventory', ['GET']);
  return router;
}
