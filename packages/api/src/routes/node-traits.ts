import { InvalidParameterValue, NodeLocked, type NodeRecord, ResourceNotFound } from '@bmaas/common';
import type { Request, Router } from 'express';
import { requireResourceMinor } from '../errors.js';
import { onlyQuery } from '../list-query.js';
import { type RouteDeps, resourceRouter } from '../route-deps.js';
import { compileSchema } from '../validation.js';
import { Minor } from '../versions.js';

/** Ironic's limit on traits per node. */
export const MAX_TRAITS_PER_NODE = 50;

/**
 * Trait names as Ironic accepts them: CUSTOM_ followed by upper-case letters,
 * digits and underscores, or a standard trait of os-traits, whose names all
 * sit in these namespaces with the same characters.
 */
const TRAIT_NAME = /^(CUSTOM|COMPUTE|HW|MISC|OWNER|STORAGE)_[A-Z0-9_]+$/;

export function checkTraitName(trait: unknown): string {
  if (typeof trait !== 'string' || trait.length > 255 || !TRAIT_NAME.test(trait)) {
    throw new InvalidParameterValue(
      `Invalid trait ${JSON.stringify(trait)}: a trait is a standard trait (os-traits) or matches ^CUSTOM_[A-Z0-9_]+$ (at most 255 characters).`,
    );
  }
  return trait;
}

export const checkTraitsBody = compileSchema<{ traits: unknown[] }>('traits', {
  type: 'object',
  properties: { traits: { type: 'array' } },
  required: ['traits'],
  additionalProperties: false,
});

function tooMany(node: NodeRecord, count: number): InvalidParameterValue {
  return new InvalidParameterValue(
    `Could not modify traits for node ${node.uuid} as it would exceed the maximum number of traits per node (${MAX_TRAITS_PER_NODE} vs. ${count})`,
  );
}

/** Ironic changes traits under the node's exclusive lock: a node a conductor holds is not changed. */
function checkNotLocked(node: NodeRecord): void {
  if (node.reservation) throw new NodeLocked(node.uuid, node.reservation);
}

/** /v1/nodes/{id}/traits (1.37): list, replace all, add one, remove one or all. */
export function nodeTraitsRouter(deps: RouteDeps): Router {
  const { router, allow } = resourceRouter();
  const node = async (req: Request) => {
    requireResourceMinor(req.context.minor, Minor.TRAITS);
    return deps.nodes.find(req.params.ident as string, req.context.minor);
  };

  router.get('/v1/nodes/:ident/traits', onlyQuery(), async (req, res) => {
    res.json({ traits: await deps.stores.nodeTraits.list((await node(req)).id) });
  });

  router.put('/v1/nodes/:ident/traits', onlyQuery(), async (req, res) => {
    const target = await node(req);
    const traits = checkTraitsBody(req.body).traits.map(checkTraitName);
    const unique = [...new Set(traits)];
    if (unique.length > MAX_TRAITS_PER_NODE) throw tooMany(target, unique.length);
    checkNotLocked(target);
    await deps.stores.nodeTraits.replace(target.id, unique);
    req.context.logger.info('node traits set', { nodeUuid: target.uuid, count: unique.length });
    res.status(204).end();
  });

  router.put('/v1/nodes/:ident/traits/:trait', onlyQuery(), async (req, res) => {
    const target = await node(req);
    const trait = checkTraitName(req.params.trait);
    if (req.body !== undefined && req.body !== null && Object.keys(req.body as object).length > 0) {
      throw new InvalidParameterValue('Adding one trait takes no body.');
    }
    checkNotLocked(target);
    const present = await deps.stores.nodeTraits.list(target.id);
    if (!present.includes(trait) && present.length + 1 > MAX_TRAITS_PER_NODE) throw tooMany(target, present.length + 1);
    await deps.stores.nodeTraits.add(target.id, trait);
    req.context.logger.info('node trait added', { nodeUuid: target.uuid, trait });
    res.status(204).end();
  });

  router.delete('/v1/nodes/:ident/traits', onlyQuery(), async (req, res) => {
    const target = await node(req);
    checkNotLocked(target);
    await deps.stores.nodeTraits.replace(target.id, []);
    res.status(204).end();
  });

  router.delete('/v1/nodes/:ident/traits/:trait', onlyQuery(), async (req, res) => {
    const target = await node(req);
    const trait = req.params.trait as string;
    checkNotLocked(target);
    if (!(await deps.stores.nodeTraits.remove(target.id, trait))) {
      throw new ResourceNotFound(`Node ${target.uuid} doesn't have a trait '${trait}'`);
    }
    res.status(204).end();
  });

  allow('/v1/nodes/:ident/traits', ['GET', 'PUT', 'DELETE']);
  allow('/v1/nodes/:ident/traits/:trait', ['PUT', 'DELETE']);
  return router;
}
