import {
  DeployTemplateNotFound,
  type DeployTemplateRecord,
  InvalidParameterValue,
  RunbookNotFound,
  type RunbookRecord,
  type StepRecord,
} from '@bmaas/common';
import type { ResourceStore } from '@bmaas/db';
import type { RouteDeps } from '../route-deps.js';
import { compileSchema, schemaTypes } from '../validation.js';
import { Minor } from '../versions.js';
import { maskSecrets } from '../views/format.js';
import { resourceRoutes } from './resource-router.js';
import { CUSTOM_TRAIT, patchedDocument, type ResourceSpec, saveChanges } from './resource-spec.js';

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
}

function stepsChecker(kind: StepKind) {
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
      name: CUSTOM_TRAIT,
      steps: { type: 'array', items: step, minItems: 1 },
      uuid: schemaTypes.nullableUuid,
      extra: schemaTypes.nullableObject,
      ...kind.extraProperties,
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
    }),
    create: async (body) => {
      const template = check(body);
      return store.create({ uuid: template.uuid?.toLowerCase() ?? crypto.randomUUID(), ...columnsOf(template) });
    },
    patch: async (record, body, ctx) => {
      const next = patchedDocument({
        document: { name: record.name, steps: record.steps, extra: record.extra, ...own.document(record) },
        body,
        defaults: { extra: {}, ...own.defaults },
        check,
        minor: ctx.minor,
      });
      return saveChanges(store, record, columnsOf(next));
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
    },
    deps.stores.runbooks,
    (ident) => new RunbookNotFound(ident),
    {
      fields: { disable_ramdisk: 0, public: 0, owner: 0 },
      document: (r) => ({ disable_ramdisk: r.disableRamdisk, public: r.public, owner: r.owner }),
      columns: (b) => ({
        disableRamdisk: b.disable_ramdisk ?? false,
        public: b.public ?? false,
        owner: b.owner ?? null,
      }),
      defaults: { disable_ramdisk: false, public: false, owner: null },
    },
  );
}

export const deployTemplatesRouter = (deps: RouteDeps) => resourceRoutes(deployTemplateSpec(deps), deps);
export const runbooksRouter = (deps: RouteDeps) => resourceRoutes(runbookSpec(deps), deps);
