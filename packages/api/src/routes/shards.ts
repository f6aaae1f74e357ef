import type { Router } from 'express';
import { requireResourceMinor } from '../errors.js';
import { onlyQuery } from '../list-query.js';
import { type RouteDeps, resourceRouter } from '../route-deps.js';
import { Minor } from '../versions.js';

/** /v1/shards (1.82): the shards nodes are in with their node count, as Ironic ("None" for nodes in none). */
export function shardsRouter(deps: RouteDeps): Router {
  const { router, allow } = resourceRouter();
  router.get('/v1/shards', onlyQuery(), async (req, res) => {
    requireResourceMinor(req.context.minor, Minor.SHARDS);
    const shards = await deps.stores.nodeCounts.shardCounts();
    res.json({ shards: shards.map(({ name, count }) => ({ name: name ?? 'None', count })) });
  });
  allow('/v1/shards', ['GET']);
  return router;
}
