import {
  AllocationNotFound,
  type AllocationRecord,
  InvalidParameterValue,
  NodeInWrongState,
  type NodeRecord,
  ResourceConflict,
} from '@bmaas/common';
import type { Request, Router } from 'express';
import { MethodNotAllowed } from '../errors.js';
import { onlyQuery } from '../list-query.js';
import { UPDATE_ALLOWED_STATES } from '../node-service.js';
import type { RouteDeps } from '../route-deps.js';
import { compileSchema, schemaTypes } from '../validation.js';
import { Minor } from '../versions.js';
import { contextOf, resourceRoutes, sendOne } from './resource-router.js';
import {
  CUSTOM_TRAIT,
  checkResourceVersion,
  checkWriteVersions,
  isResourceName,
  patchedDocument,
  type ResourceContext,
  type ResourceSpec,
  saveChanges,
} from './resource-spec.js';

interface AllocationBody {
  uuid?: string | null;
  name?: string | null;
  resource_class?: string | null;
  traits?: string[] | null;
  candidate_nodes?: string[] | null;
  extra?: Record<string, unknown> | null;
  owner?: string | null;
  node?: string | null;
}

const checkAllocation = compileSchema<AllocationBody>('allocation', {
  type: 'object',
  properties: {
    uuid: schemaTypes.nullableUuid,
    name: schemaTypes.nullableString(255),
    resource_class: schemaTypes.nullableString(80),
    traits: { type: ['array', 'null'], items: CUSTOM_TRAIT },
    candidate_nodes: { type: ['array', 'null'], items: { type: 'string' } },
    extra: schemaTypes.nullableObject,
    owner: schemaTypes.nullableString(255),
    node: schemaTypes.nullableString(255),
  },
  additionalProperties: false,
});

const WRITE_VERSIONS = { node: Minor.ALLOCATION_BACKFILL, owner: Minor.ALLOCATION_OWNER };

function checkName(name: string | null | undefined): void {
  if (name != null && !isResourceName(name)) {
    throw new InvalidParameterValue(`Cannot create allocation with invalid name '${name}'`);
  }
}

/** A node named in a body (uuid or name); a missing one is a bad request. */
async function nodeNamed(ident: string, ctx: ResourceContext): Promise<NodeRecord> {
  try {
    return await ctx.deps.nodes.find(ident, ctx.minor);
  } catch (error) {
    if ((error as Error).name === 'NodeNotFound') throw new InvalidParameterValue((error as Error).message);
    throw error;
  }
}

/** The uuids of candidate nodes named by uuid or name; any not found are named together, as Ironic names them. */
async function candidateUuids(idents: readonly string[], ctx: ResourceContext): Promise<string[]> {
  const uuids: string[] = [];
  const missing: string[] = [];
  for (const ident of idents) {
    try {
      uuids.push((await ctx.deps.nodes.find(ident, ctx.minor)).uuid);
    } catch (error) {
      const name = (error as Error).name;
      if (name !== 'NodeNotFound' && name !== 'InvalidParameterValue') throw error;
      missing.push(ident);
    }
  }
  if (missing.length > 0) throw new InvalidParameterValue(`Nodes cannot be found: ${missing.join(', ')}`);
  return uuids;
}

/**
 * A new allocation, as Ironic makes it: stored in `allocating`, then handed
 * to any alive conductor (create_allocation), which takes it as its own and
 * chooses a node after the API answered. No conductor to take it: the
 * allocation is deleted and the refusal (503) answered, so none is left
 * that nobody processes.
 */
async function startAllocating(values: Record<string, unknown>, ctx: ResourceContext): Promise<AllocationRecord> {
  const store = ctx.deps.stores.allocations;
  const allocation = await store.create({ ...values, state: 'allocating' });
  try {
    await ctx.deps.conductors.callAny(
      'create_allocation',
      { allocation_id: allocation.uuid },
      { requestId: ctx.requestId },
    );
  } catch (error) {
    await store.destroy(allocation.id);
    throw error;
  }
  return allocation;
}

/** Backfilling (1.58): an allocation for a node already deployed without one. */
async function backfill(body: AllocationBody, node: NodeRecord, ctx: ResourceContext): Promise<AllocationRecord> {
  const errors: string[] = [];
  if (node.provisionState !== 'active') {
    errors.push(`Node must be in the "active" state, but the current state is "${node.provisionState}"`);
  }
  if (body.resource_class && node.resourceClass !== body.resource_class) {
    errors.push(
      `Resource class ${node.resourceClass} does not match the requested resource class ${body.resource_class}`,
    );
  }
  if (body.traits?.length) {
    const traits = await ctx.deps.stores.nodeTraits.list(node.id);
    if (!body.traits.every((trait) => traits.includes(trait))) {
      errors.push(`List of traits [${traits}] does not match the requested traits ${body.traits}`);
    }
  }
  if (body.candidate_nodes?.length && !body.candidate_nodes.includes(node.uuid)) {
    errors.push(`Candidate nodes must be empty or contain the target node, but got ${body.candidate_nodes}`);
  }
  if (errors.length > 0) throw new InvalidParameterValue(errors.join('; '));
  if (node.allocationUuid)
    throw new ResourceConflict(`Node ${node.uuid} already has an allocation ${node.allocationUuid}.`);
  const uuid = body.uuid?.toLowerCase() ?? node.instanceUuid ?? crypto.randomUUID();
  if (node.instanceUuid && node.instanceUuid !== uuid) {
    throw new ResourceConflict(`Node ${node.uuid} is associated with instance ${node.instanceUuid}.`);
  }
  const store = ctx.deps.stores.allocations;
  const allocation = await store.create({
    uuid,
    name: body.name ?? null,
    resourceClass: body.resource_class ?? node.resourceClass,
    traits: body.traits ?? [],
    candidateNodes: body.candidate_nodes ?? [],
    extra: body.extra ?? {},
    owner: body.owner ?? null,
    state: 'allocating',
  });
  const done = await store.backfill(allocation, node);
  if (done) return done;
  await store.destroy(allocation.id);
  throw new ResourceConflict(`Node ${node.uuid} already has an allocation or another instance.`);
}

export function allocationSpec(deps: RouteDeps): ResourceSpec<AllocationRecord> {
  const store = deps.stores.allocations;
  return {
    path: 'allocations',
    listKey: 'allocations',
    sinceMinor: Minor.ALLOCATION,
    fields: {
      uuid: 0,
      name: 0,
      node_uuid: 0,
      state: 0,
      last_error: 0,
      resource_class: 0,
      traits: 0,
      candidate_nodes: 0,
      extra: 0,
      owner: Minor.ALLOCATION_OWNER,
      created_at: 0,
      updated_at: 0,
    },
    defaultFields: undefined,
    filters: { node: 0, resource_class: 0, state: 0, owner: Minor.ALLOCATION_OWNER },
    store,
    byName: true,
    notFound: (ident) => new AllocationNotFound(ident),
    listFilters: async (query, ctx) => {
      const filters: Record<string, string | number> = {};
      if (query.node !== undefined) filters.nodeId = (await nodeNamed(query.node, ctx)).id;
      if (query.resource_class !== undefined) filters.resourceClass = query.resource_class;
      if (query.owner !== undefined) filters.owner = query.owner;
      if (query.state !== undefined) {
        if (!['allocating', 'active', 'error'].includes(query.state)) {
          throw new InvalidParameterValue(`Invalid state ${query.state}: must be allocating, active or error`);
        }
        filters.state = query.state;
      }
      return filters;
    },
    view: (a) => ({
      uuid: a.uuid,
      name: a.name,
      node_uuid: a.nodeUuid ?? null,
      state: a.state,
      last_error: a.lastError,
      resource_class: a.resourceClass,
      traits: a.traits,
      candidate_nodes: a.candidateNodes,
      extra: a.extra,
      owner: a.owner,
    }),
    create: async (raw, ctx) => {
      const body = checkAllocation(raw);
      checkWriteVersions(body as Record<string, unknown>, WRITE_VERSIONS, ctx.minor);
      checkName(body.name);
      const candidates = await candidateUuids(body.candidate_nodes ?? [], ctx);
      if (body.node != null) {
        return backfill({ ...body, candidate_nodes: candidates }, await nodeNamed(body.node, ctx), ctx);
      }
      if (!body.resource_class) {
        throw new InvalidParameterValue('The resource_class field is mandatory when not backfilling');
      }
      return startAllocating(
        {
          uuid: body.uuid?.toLowerCase() ?? crypto.randomUUID(),
          name: body.name ?? null,
          resourceClass: body.resource_class,
          traits: body.traits ?? [],
          candidateNodes: candidates,
          extra: body.extra ?? {},
          owner: body.owner ?? null,
        },
        ctx,
      );
    },
    patch: async (a, body, ctx) => {
      if (ctx.minor < Minor.ALLOCATION_UPDATE) throw new MethodNotAllowed('PATCH', ['GET', 'DELETE']);
      const next = patchedDocument({
        document: { name: a.name, extra: a.extra },
        body,
        defaults: { name: null, extra: {} },
        check: checkAllocation,
        minor: ctx.minor,
      });
      checkName(next.name);
      return saveChanges(store, a, { name: next.name ?? null, extra: next.extra ?? {} });
    },
    remove: async (a, ctx) => {
      const node = a.nodeId === null ? undefined : await ctx.deps.stores.nodes.getById(a.nodeId);
      if (node && !node.maintenance) {
        if (node.targetProvisionState && !UPDATE_ALLOWED_STATES.has(node.provisionState)) {
          throw new NodeInWrongState(
            `Cannot remove allocation ${a.uuid} for node ${node.uuid}, because the node is in state ${node.provisionState} where updates are not allowed (and maintenance mode is off)`,
          );
        }
        if (node.provisionState === 'active') {
          throw new NodeInWrongState(
            `Cannot remove allocation ${a.uuid} for node ${node.uuid}, because the node is active (and maintenance mode is off)`,
          );
        }
      }
      await store.release(a);
    },
  };
}

/**
 * /v1/allocations (1.52+); PATCH from 1.57, backfilling (`node`) from 1.58,
 * `owner` from 1.60. And a node's own allocation, /v1/nodes/{node}/allocation
 * (GET, DELETE; 1.52+).
 */
export function allocationsRouter(deps: RouteDeps): Router {
  const spec = allocationSpec(deps);
  const router = resourceRoutes(spec, deps);
  const path = '/v1/nodes/:node/allocation';
  const allocationOf = async (req: Request): Promise<AllocationRecord> => {
    checkResourceVersion(spec, req.context.minor);
    const ident = req.params.node as string;
    const node = await deps.nodes.find(ident, req.context.minor);
    const [allocation] = await spec.store.list({ nodeId: node.id }, { limit: 1, sortKey: 'id', sortDir: 'asc' });
    if (!allocation) throw new AllocationNotFound(ident, `Allocation for node ${ident} was not found`);
    return allocation;
  };
  router.get(path, onlyQuery('fields'), async (req, res) => {
    sendOne(spec, deps, req, res, await allocationOf(req));
  });
  router.delete(path, onlyQuery(), async (req, res) => {
    const allocation = await allocationOf(req);
    await spec.remove(allocation, contextOf(deps, req));
    req.context.logger.info('allocation deleted', { uuid: allocation.uuid });
    res.status(204).end();
  });
  router.all(path, (req) => {
    throw new MethodNotAllowed(req.method, ['GET', 'DELETE']);
  });
  return router;
}
