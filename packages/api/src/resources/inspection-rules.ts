import { InspectionRuleNotFound, type InspectionRuleRecord, InvalidParameterValue } from '@bmaas/common';
import type { ColumnFilters } from '@bmaas/db';
import { ACTIONS, OPERATORS, validateRule } from '@bmaas/inspection-rules';
import type { RouteDeps } from '../route-deps.js';
import { compileSchema, schemaTypes } from '../validation.js';
import { Minor } from '../versions.js';
import { resourceRoutes } from './resource-router.js';
import { patchedDocument, type ResourceSpec, saveChanges } from './resource-spec.js';

interface RuleBody {
  uuid?: string | null;
  description?: string | null;
  priority?: number;
  phase?: string | null;
  sensitive?: boolean | null;
  conditions?: InspectionRuleRecord['conditions'];
  actions: InspectionRuleRecord['actions'];
}

const STEP_ARGS = { type: ['array', 'object'] };

/** Ironic's create_request_body for inspection rules (1.96). */
const checkRule = compileSchema<RuleBody>('inspection rule', {
  type: 'object',
  properties: {
    actions: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        required: ['op', 'args'],
        properties: { op: { enum: Object.keys(ACTIONS) }, args: STEP_ARGS, loop: STEP_ARGS },
      },
    },
    conditions: {
      type: 'array',
      items: {
        type: 'object',
        required: ['op', 'args'],
        properties: {
          op: { enum: Object.keys(OPERATORS).flatMap((op) => [op, `!${op}`]) },
          args: STEP_ARGS,
          multiple: { enum: ['any', 'all', 'first', 'last'] },
          loop: STEP_ARGS,
        },
      },
    },
    description: schemaTypes.nullableString(255),
    phase: schemaTypes.nullableString(16),
    priority: { type: 'integer', minimum: 0 },
    sensitive: { type: ['boolean', 'null'] },
    uuid: schemaTypes.nullableUuid,
  },
  required: ['actions'],
  additionalProperties: false,
});

/** The stored columns of a checked body, after Ironic's validate_rule. */
function columnsOf(body: RuleBody) {
  const columns = {
    description: body.description ?? null,
    priority: body.priority ?? 0,
    phase: body.phase ?? 'main',
    sensitive: body.sensitive ?? false,
    conditions: body.conditions ?? [],
    actions: body.actions,
  };
  validateRule(columns);
  return columns;
}

export function inspectionRuleSpec(deps: RouteDeps): ResourceSpec<InspectionRuleRecord> {
  const store = deps.stores.inspectionRules;
  return {
    path: 'inspection_rules',
    listKey: 'inspection_rules',
    sinceMinor: Minor.INSPECTION_RULES,
    fields: {
      uuid: 0,
      description: 0,
      priority: 0,
      phase: 0,
      sensitive: 0,
      conditions: 0,
      actions: 0,
      created_at: 0,
      updated_at: 0,
    },
    defaultFields: ['uuid', 'priority', 'phase', 'description'],
    filters: { phase: 0 },
    store,
    byName: false,
    notFound: (ident) => new InspectionRuleNotFound(ident),
    listFilters: async (query): Promise<ColumnFilters> => (query.phase === undefined ? {} : { phase: query.phase }),
    // A sensitive rule's conditions and actions are never shown, as Ironic's.
    view: (rule) => ({
      uuid: rule.uuid,
      description: rule.description,
      priority: rule.priority,
      phase: rule.phase,
      sensitive: rule.sensitive,
      conditions: rule.sensitive ? null : rule.conditions,
      actions: rule.sensitive ? null : rule.actions,
    }),
    create: async (body) => {
      const rule = checkRule(body);
      return store.create({ uuid: rule.uuid?.toLowerCase() ?? crypto.randomUUID(), ...columnsOf(rule) });
    },
    patch: async (rule, body, ctx) => {
      const next = patchedDocument({
        document: {
          description: rule.description,
          priority: rule.priority,
          phase: rule.phase,
          sensitive: rule.sensitive,
          conditions: rule.conditions,
          actions: rule.actions,
        },
        body,
        defaults: { description: null, priority: 0, phase: 'main', sensitive: false, conditions: [] },
        check: checkRule,
        minor: ctx.minor,
      });
      if (rule.sensitive && !next.sensitive) {
        throw new InvalidParameterValue('Inspection rules cannot have the sensitive flag unset.');
      }
      return saveChanges(store, rule, columnsOf(next));
    },
    remove: async (rule) => {
      await store.destroy(rule.id);
    },
  };
}

/** /v1/inspection_rules (1.96). */
export const inspectionRulesRouter = (deps: RouteDeps) => resourceRoutes(inspectionRuleSpec(deps), deps);
