import { InvalidParameterValue, NodeLocked, type NodeRecord } from '@bmaas/common';
import type { ResourceContext } from './resource-spec.js';

/** The node a body names by `node_uuid`; a missing node is a bad request, not a missing resource (as Ironic). */
export async function nodeNamedInBody(nodeUuid: string, ctx: ResourceContext): Promise<NodeRecord> {
  const node = await ctx.deps.stores.nodes.getByUuid(nodeUuid.toLowerCase());
  if (!node) throw new InvalidParameterValue(`Node ${nodeUuid} could not be found.`);
  return node;
}

/** `?node=<uuid or name>` of a list: the node's id as a column filter. */
export async function nodeFilter(
  query: Readonly<Record<string, string>>,
  ctx: ResourceContext,
): Promise<{ nodeId?: number }> {
  const ident = query.node ?? query.node_uuid;
  if (ident === undefined) return {};
  const node = await ctx.deps.nodes.find(ident, ctx.minor);
  return { nodeId: node.id };
}

/** Ironic changes what belongs to a node under the node's exclusive lock: refuse while a conductor holds it. */
export async function checkNodeUnlocked(nodeId: number, ctx: ResourceContext): Promise<void> {
  const node = await ctx.deps.stores.nodes.getById(nodeId);
  if (node?.reservation) throw new NodeLocked(node.uuid, node.reservation);
}
