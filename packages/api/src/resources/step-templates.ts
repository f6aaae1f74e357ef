import {
  DeployTemplateNotFound,
  type DeployTemplateRecord,
  InvalidParameterValue,
  RunbookNotFound,
  type RunbookRecord,
  type StepRecord,
} from '@bmaas/common';
import type { ResourceStore } from '@bmaas/db';
import type { Request, Router } from 'express';
import { requireResourceMinor } from '../errors.js';
import { buildUrl } from '../links.js';
import { onlyQuery } from '../list-query.js';
import { baseUrlOf, type RouteDeps } from '../route-deps.js';
import { checkTraitName, checkTraitsBody } from '../routes/node-traits.js';
import { compileSchema, schemaTypes } from '../validation.js';
import { Minor } from '../versions.js';
import { maskSecrets } from '../views/format.js';
import { resourceOf, resourceRoutes } from './resource-router.js';
import { CUSTOM_TRAIT, patchedDocument, type ResourceSpec, saveChanges } from './resource-spec.js';

/** A runbook name from 1.112: a logical name, no longer a trait (Ironic's RUNBOOK_NAME_SCHEMA). */
const RUNBOOK_NAME = { type: 'string', minLength: 1, maxLength: 255, pattern: '^[A-Za-z0-9\\-._~]+$' };

/** Interfaces whose steps a template or runbook may name. */
const STEP_INTERFACES = ['bios', 'deploy', 'firmware', 'management', 'power', 'raid'];
const STEP_NUMBER = {
  anyOf: [
    { type: 'integer', minimum: 0 },
    { type: 'string', minLength: 1, pattern: '^[0-9]+$' },
  ],
};

/**
 * Deploy templates (1.55) and runbooks (1.92) are the same kind of thing: a
 * CUSTOM_ trait name and steps, deploy steps ordered by `priority`, runbook
 * steps by `order`.
 */
interface StepKind {
  label: string;
  path: string;
  sinceMinor: number;
  /** The step's ordering field. */
  orderField: 'priority' | 'order';
  /** Fields a runbook has besides name, steps and extra. */
  extraProperties: Record<string, unknown>;
  /** From this version the name is any logical name and these fields come too (runbooks, 1.112). */
  later?: { sinceMinor: number; name: Record<string, unknown>; extraProperties: Record<string, unknown> };
}

interface TemplateBody {
  name: string;
  steps: Array<{
    interface: string;
    step: string;
    args?: Record<string, unknown>;
    priority?: number | string;
    order?: number | string;
  }>;
  uuid?: string | null;
  extra?: Record<string, unknown> | null;
  disable_ramdisk?: boolean | null;
  public?: boolean | null;
  owner?: string | null;
  description?: string | null;
}

/** The body checker of a kind at a version: the later schema from `kind.later.sinceMinor` on. */
function stepsChecker(kind: StepKind): (minor: number) => (value: unknown) => TemplateBody {
  const early = compileStepsSchema(kind, CUSTOM_TRAIT, kind.extraProperties);
  const { later } = kind;
  if (!later) return () => early;
  const late = compileStepsSchema(kind, later.name, { ...kind.extraProperties, ...later.extraProperties });
  return (minor) => (minor >= later.sinceMinor ? late : early);
}

function compileStepsSchema(kind: StepKind, name: Record<string, unknown>, extraProperties: Record<string, unknown>) {
  const step = {
    type: 'object',
    properties: {
      interface: { type: 'string', enum: STEP_INTERFACES },
      step: { type: 'string', minLength: 1 },
      args: { type: 'object' },
      [kind.orderField]: STEP_NUMBER,
    },
    required:
      kind.orderField === 'priority' ? ['interface', 'step', 'args', 'priority'] : ['interface', 'step', 'order'],
    additionalProperties: false,
  };
  return compileSchema<TemplateBody>(kind.label, {
    type: 'object',
    properties: {
      name,
      steps: { type: 'array', items: step, minItems: 1 },
      uuid: schemaTypes.nullableUuid,
      extra: schemaTypes.nullableObject,
      ...extraProperties,
    },
    required: ['steps', 'name'],
    additionalProperties: false,
  });
}

/** Steps as stored: numbers for priority/order, args always an object; duplicates refused as Ironic does. */
function storedSteps(kind: StepKind, body: TemplateBody): StepRecord[] {
  const seen = new Set<string>();
  const duplicates = new Set<string>();
  const steps = body.steps.map((step) => {
    const key = `interface: ${step.interface}, step: ${step.step}`;
    if (seen.has(key)) duplicates.add(key);
    seen.add(key);
    return {
      interface: step.interface,
      step: step.step,
      args: step.args ?? {},
      [kind.orderField]: Number(step[kind.orderField]),
    };
  });
  if (duplicates.size > 0) {
    const what = kind.orderField === 'priority' ? 'deploy' : 'runbook';
    throw new InvalidParameterValue(
      `Deploy template invalid: Duplicate ${what} steps. A ${kind.label} cannot have multiple ${what} steps with the same interface and step. Duplicates: ${[...duplicates].join('; ')}.`,
    );
  }
  return steps;
}

function stepTemplateSpec<R extends DeployTemplateRecord | RunbookRecord>(
  kind: StepKind,
  store: ResourceStore<R>,
  notFound: (ident: string) => Error,
  own: {
    fields: Record<string, number>;
    document: (record: R) => Record<string, unknown>;
    columns: (body: TemplateBody) => Record<string, unknown>;
    defaults: Record<string, unknown>;
    /** Read-only fields of the answer. */
    shown?: (record: R) => Record<string, unknown>;
  },
): ResourceSpec<R> {
  const check = stepsChecker(kind);
  const columnsOf = (body: TemplateBody) => ({
    name: body.name,
    steps: storedSteps(kind, body),
    extra: body.extra ?? {},
    ...own.columns(body),
  });
  return {
    path: kind.path,
    listKey: kind.path,
    sinceMinor: kind.sinceMinor,
    fields: { uuid: 0, name: 0, steps: 0, extra: 0, created_at: 0, updated_at: 0, ...own.fields },
    defaultFields: ['uuid', 'name'],
    filters: {},
    store,
    byName: true,
    notFound,
    listFilters: async () => ({}),
    view: (record) => ({
      uuid: record.uuid,
      name: record.name,
      steps: record.steps.map((step) => ({ ...step, args: maskSecrets(step.args) })),
      extra: record.extra,
      ...own.document(record),
      ...own.shown?.(record),
    }),
    create: async (body, ctx) => {
      const template = check(ctx.minor)(body);
      return store.create({ uuid: template.uuid?.toLowerCase() ?? crypto.randomUUID(), ...columnsOf(template) });
    },
    patch: async (record, body, ctx) => {
      const document: Record<string, unknown> = {
        name: record.name,
        steps: record.steps,
        extra: record.extra,
        ...own.document(record),
      };
      const defaults: Record<string, unknown> = { extra: {}, ...own.defaults };
      // Fields of a later version are patched only from it, and kept as they are before it.
      const kept: Record<string, unknown> = {};
      if (kind.later && ctx.minor < kind.later.sinceMinor) {
        for (const field of Object.keys(kind.later.extraProperties)) {
          kept[field] = document[field];
          delete document[field];
          delete defaults[field];
        }
      }
      const next = patchedDocument({
        document,
        body,
        defaults,
        check: check(ctx.minor),
        minor: ctx.minor,
      });
      return saveChanges(store, record, columnsOf({ ...kept, ...next } as TemplateBody));
    },
    remove: async (record) => {
      await store.destroy(record.id);
    },
  };
}

export function deployTemplateSpec(deps: RouteDeps): ResourceSpec<DeployTemplateRecord> {
  return stepTemplateSpec(
    {
      label: 'deploy template',
      path: 'deploy_templates',
      sinceMinor: Minor.DEPLOY_TEMPLATES,
      orderField: 'priority',
      extraProperties: {},
    },
    deps.stores.deployTemplates,
    (ident) => new DeployTemplateNotFound(ident),
    { fields: {}, document: () => ({}), columns: () => ({}), defaults: {} },
  );
}

export function runbookSpec(deps: RouteDeps): ResourceSpec<RunbookRecord> {
  return stepTemplateSpec(
    {
      label: 'runbook',
      path: 'runbooks',
      sinceMinor: Minor.RUNBOOKS,
      orderField: 'order',
      extraProperties: {
        disable_ramdisk: { type: ['boolean', 'null'] },
        public: { type: ['boolean', 'null'] },
        owner: schemaTypes.nullableString(255),
      },
      later: {
        sinceMinor: Minor.RUNBOOK_TRAITS,
        name: RUNBOOK_NAME,
        extraProperties: { description: schemaTypes.nullableString(255) },
      },
    },
    deps.stores.runbooks,
    (ident) => new RunbookNotFound(ident),
    {
      fields: {
        disable_ramdisk: 0,
        public: 0,
        owner: 0,
        description: Minor.RUNBOOK_TRAITS,
        traits: Minor.RUNBOOK_TRAITS,
      },
      document: (r) => ({
        disable_ramdisk: r.disableRamdisk,
        public: r.public,
        owner: r.owner,
        description: r.description,
      }),
      columns: (b) => ({
        disableRamdisk: b.disable_ramdisk ?? false,
        public: b.public ?? false,
        owner: b.owner ?? null,
        description: b.description ?? null,
      }),
      defaults: { disable_ramdisk: false, public: false, owner: null, description: null },
      shown: (r) => ({ traits: r.traits }),
    },
  );
}

export const deployTemplatesRouter = (deps: RouteDeps) => resourceRoutes(deployTemplateSpec(deps), deps);
/** /v1/runbooks, and from 1.112 a runbook's traits: list, replace all, add one, remove one or all. */
export function runbooksRouter(deps: RouteDeps): Router {
  const spec = runbookSpec(deps);
  const traits = deps.stores.runbooks.traits;
  return resourceRoutes(spec, deps, (router, allow) => {
    const runbook = async (req: Request) => {
      requireResourceMinor(req.context.minor, Minor.RUNBOOK_TRAITS);
      return resourceOf(spec, req);
    };
    router.get('/v1/runbooks/:ident/traits', onlyQuery(), async (req, res) => {
      res.json({ traits: await traits.list((await runbook(req)).id) });
    });
    router.put('/v1/runbooks/:ident/traits', onlyQuery(), async (req, res) => {
      const target = await runbook(req);
      const names = checkTraitsBody(req.body).traits.map(checkTraitName);
      await traits.replace(target.id, names);
      req.context.logger.info('runbook traits set', { uuid: target.uuid, count: names.length });
      res.status(204).end();
    });
    router.put('/v1/runbooks/:ident/traits/:trait', onlyQuery(), async (req, res) => {
      const target = await runbook(req);
      const trait = checkTraitName(req.params.trait);
      if (req.body !== undefined && req.body !== null && Object.keys(req.body as object).length > 0) {
        throw new InvalidParameterValue('No body should be provided when adding a trait');
      }
      await traits.add(target.id, trait);
      res.location(buildUrl(baseUrlOf(req, deps), 'runbooks', `${req.params.ident}/traits/${trait}`));
      res.status(204).end();
    });
    router.delete('/v1/runbooks/:ident/traits', onlyQuery(), async (req, res) => {
      await traits.replace((await runbook(req)).id, []);
      res.status(204).end();
    });
    // Removing a trait the runbook does not have is a no-op, as in Ironic.
    router.delete('/v1/runbooks/:ident/traits/:trait', onlyQuery(), async (req, res) => {
      await traits.remove((await runbook(req)).id, req.params.trait as string);
      res.status(204).end();
    });
    allow('/v1/runbooks/:ident/traits', ['GET', 'PUT', 'DELETE']);
    allow('/v1/runbooks/:ident/traits/:trait', ['PUT', 'DELETE']);
  });
}
