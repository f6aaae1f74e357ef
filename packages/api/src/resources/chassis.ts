import { ChassisNotEmpty, ChassisNotFound, type ChassisRecord } from '@bmaas/common';
import type { Router } from 'express';
import { selfAndBookmark } from '../links.js';
import { onlyQuery } from '../list-query.js';
import type { RouteDeps } from '../route-deps.js';
import { listNodes, NODE_LIST_PARAMS } from '../routes/nodes.js';
import { compileSchema, schemaTypes } from '../validation.js';
import { resourceOf, resourceRoutes } from './resource-router.js';
import { patchedDocument, type ResourceSpec, saveChanges } from './resource-spec.js';

interface ChassisBody {
  uuid?: string | null;
  description?: string | null;
  extra?: Record<string, unknown> | null;
}

const checkChassis = compileSchema<ChassisBody>('chassis', {
  type: 'object',
  properties: {
    uuid: schemaTypes.nullableUuid,
    description: schemaTypes.nullableString(255),
    extra: schemaTypes.nullableObject,
  },
  additionalProperties: false,
});

export function chassisSpec(deps: RouteDeps): ResourceSpec<ChassisRecord> {
  const store = deps.stores.chassis;
  return {
    path: 'chassis',
    listKey: 'chassis',
    sinceMinor: 1,
    fields: { uuid: 0, description: 0, extra: 0, created_at: 0, updated_at: 0, nodes: 0 },
    defaultFields: ['uuid', 'description'],
    filters: {},
    store,
    byName: false,
    notFound: (ident) => new ChassisNotFound(ident),
    listFilters: async () => ({}),
    view: (chassis, ctx) => ({
      uuid: chassis.uuid,
      description: chassis.description,
      extra: chassis.extra,
      nodes: selfAndBookmark(ctx.baseUrl, 'chassis', `${chassis.uuid}/nodes`),
    }),
    create: async (body) => {
      const chassis = checkChassis(body);
      return store.create({
        uuid: chassis.uuid?.toLowerCase() ?? crypto.randomUUID(),
        description: chassis.description ?? null,
        extra: chassis.extra ?? {},
      });
    },
    patch: async (chassis, body, ctx) => {
      const next = patchedDocument({
        document: { description: chassis.description, extra: chassis.extra },
        body,
        defaults: { description: null, extra: {} },
        check: checkChassis,
        minor: ctx.minor,
      });
      return saveChanges(store, chassis, { description: next.description ?? null, extra: next.extra ?? {} });
    },
    remove: async (chassis) => {
      if ((await store.countNodes(chassis.uuid)) > 0) throw new ChassisNotEmpty(chassis.uuid);
      await store.destroy(chassis.id);
    },
  };
}

/** /v1/chassis, and a chassis's nodes (listed as GET /v1/nodes lists them). */
export function chassisRouter(deps: RouteDeps): Router {
  const spec = chassisSpec(deps);
  return resourceRoutes(spec, deps, (router, allow) => {
    for (const detail of [false, true]) {
      const suffix = detail ? 'nodes/detail' : 'nodes';
      const params = detail ? NODE_LIST_PARAMS : [...NODE_LIST_PARAMS, 'fields', 'detail'];
      router.get(`/v1/chassis/:ident/${suffix}`, onlyQuery(...params), async (req, res) => {
        const chassis = await resourceOf(spec, req);
        const resource = `chassis/${chassis.uuid}/${suffix}`;
        await listNodes(deps, req, res, detail, { chassisUuid: chassis.uuid, resource });
      });
      allow(`/v1/chassis/:ident/${suffix}`, ['GET']);
    }
  });
}
