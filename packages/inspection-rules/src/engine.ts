import { InvalidParameterValue } from '@bmaas/common';
import { parse as parseYaml } from 'yaml';
import { ACTIONS, HardwareInspectionFailure, type RuleSubject } from './actions.js';
import { type FormatContext, interpolate } from './interpolation.js';
import { OPERATORS, parseOperator } from './operators.js';

/** The phases rules run in; Ironic has one, after the inventory is processed. */
export const INSPECTION_PHASES = ['main'] as const;

export interface RuleStep {
  op: string;
  args: Record<string, unknown> | unknown[];
  loop?: unknown[] | Record<string, unknown>;
  /** Conditions with a loop: any (default), all, first or last of the results. */
  multiple?: 'any' | 'all' | 'first' | 'last';
}

/** An inspection rule as Ironic has it (1.96). */
export interface InspectionRule {
  uuid: string;
  description: string | null;
  priority: number;
  phase: string;
  sensitive: boolean;
  conditions: RuleStep[];
  actions: RuleStep[];
}

/** When arguments are shown to rules with secrets masked ([inspection_rules]mask_secrets). */
export type MaskSecrets = 'always' | 'never' | 'sensitive';

/** Top-level inventory and plugin data keys masked for rules (Ironic's SENSITIVE_FIELDS). */
const SENSITIVE_FIELDS = ['password', 'auth_token', 'bmc_password'];
const MASK = '******';

interface Signature {
  required: readonly string[];
  optional: readonly string[];
}

/** Named arguments of a step; Ironic still takes the old list form, in signature order. */
function namedArgs(signature: Signature, args: RuleStep['args']): Record<string, unknown> {
  if (!Array.isArray(args)) return { ...args };
  if (args.length < signature.required.length) {
    throw new InvalidParameterValue(
      `Not enough arguments provided. Missing: ${signature.required.slice(args.length).join(', ')}`,
    );
  }
  const names = [...signature.required, ...signature.optional];
  return Object.fromEntries(args.slice(0, names.length).map((value, i) => [names[i], value]));
}

function checkSignature(signature: Signature, args: RuleStep['args']): string | undefined {
  if (args === null || typeof args !== 'object') return 'args must be either a list or dictionary';
  let named: Record<string, unknown>;
  try {
    named = namedArgs(signature, args);
  } catch (error) {
    return (error as Error).message;
  }
  const missing = signature.required.filter((name) => !(name in named));
  const unexpected = Object.keys(named).filter(
    (name) => !signature.required.includes(name) && !signature.optional.includes(name),
  );
  const problems = [];
  if (missing.length) problems.push(`missing required argument(s): ${missing.join(', ')}`);
  if (unexpected.length) problems.push(`unexpected argument(s): ${unexpected.join(', ')}`);
  return problems.length ? problems.join('; ') : undefined;
}

/**
 * Ironic's validate_rule after its schema: a known phase, a priority of
 * 0-9999 (built-in rules may go beyond), known operators and actions with
 * the arguments each takes. Throws InvalidParameterValue naming every problem.
 */
export function validateRule(
  rule: Pick<InspectionRule, 'phase' | 'priority' | 'conditions' | 'actions'>,
  builtIn = false,
) {
  const errors: string[] = [];
  if (!(INSPECTION_PHASES as readonly string[]).includes(rule.phase)) {
    errors.push(`Invalid phase: ${rule.phase}. Valid phases are: ${INSPECTION_PHASES.join(', ')}`);
  }
  if (rule.priority < 0 && !builtIn) errors.push('Priority cannot be negative for user-defined rules.');
  if (rule.priority > 9999 && !builtIn) errors.push('Priority must be between 0 and 9999 for user-defined rules.');
  for (const condition of rule.conditions) {
    const { name } = parseOperator(condition.op);
    const operator = OPERATORS[name];
    if (!operator) {
      errors.push(`Unsupported condition operator: ${name}`);
      continue;
    }
    const problem = checkSignature(operator, condition.args);
    if (problem) errors.push(`Invalid parameters for condition operator ${name}: ${problem}`);
  }
  for (const step of rule.actions) {
    const action = ACTIONS[step.op];
    if (!action) {
      errors.push(`Unsupported action operator: ${step.op}`);
      continue;
    }
    const problem = checkSignature(action, step.args);
    if (problem) errors.push(`Invalid parameters for action operator ${step.op}: ${problem}`);
  }
  if (errors.length === 1) throw new InvalidParameterValue(errors[0] as string);
  if (errors.length > 1) throw new InvalidParameterValue(`Multiple validation errors occurred: ${errors.join('; ')}`);
}

/** The uuid a built-in rule without one gets: its place in the file, as Ironic numbers them. */
const syntheticUuid = (index: number) => `00000000-0000-0000-0000-${index.toString(16).padStart(12, '0')}`;

/**
 * Built-in rules ([inspection_rules]built_in_rules): a YAML (or JSON) list of
 * rules, each validated as a built-in one. Throws on anything else: a
 * conductor does not start with a broken rules file.
 */
export function parseBuiltInRules(text: string, source: string): InspectionRule[] {
  const data = parseYaml(text) as unknown;
  if (!Array.isArray(data)) {
    throw new InvalidParameterValue(`Built-in rules file (${source}) should contain a list of rules`);
  }
  let synthetic = 0;
  return data.map((item: Record<string, unknown>) => {
    const rule: InspectionRule = {
      uuid: typeof item.uuid === 'string' ? item.uuid : syntheticUuid(synthetic++),
      priority: typeof item.priority === 'number' ? item.priority : 0,
      description: typeof item.description === 'string' ? item.description : null,
      sensitive: item.sensitive === true,
      phase: typeof item.phase === 'string' ? item.phase : 'main',
      actions: (item.actions ?? []) as RuleStep[],
      conditions: (item.conditions ?? []) as RuleStep[],
    };
    if (!Array.isArray(rule.actions) || rule.actions.length === 0) {
      throw new InvalidParameterValue(`Built-in rule ${rule.uuid} in ${source} has no actions`);
    }
    validateRule(rule, true);
    return rule;
  });
}

function masked(data: Record<string, unknown>, mask: boolean): Record<string, unknown> {
  if (!mask) return data;
  const copy = { ...data };
  for (const key of SENSITIVE_FIELDS) if (key in copy) copy[key] = MASK;
  return copy;
}

/** The arguments of a step, its formatted ones (all of them in a loop) interpolated. */
function stepArgs(
  signature: Signature & { formatted: readonly string[] },
  step: RuleStep,
  context: FormatContext,
  inLoop: boolean,
  op: string,
): Record<string, unknown> {
  const args = namedArgs(signature, step.args);
  return Object.fromEntries(
    Object.entries(args).map(([k, v]) => [
      k,
      inLoop || signature.formatted.includes(k) ? interpolate(v, context, op) : v,
    ]),
  );
}

/** The contexts a step runs in: once, or once per loop item (a loop that is an object is one item). */
function loopContexts(step: RuleStep, base: FormatContext): FormatContext[] | undefined {
  const { loop } = step;
  if (loop === undefined || (Array.isArray(loop) && loop.length === 0)) return undefined;
  const items = Array.isArray(loop) ? loop : [loop];
  return items.map((item) => ({ ...base, item: interpolate(item, base) }));
}

function conditionHolds(step: RuleStep, base: FormatContext): boolean {
  const { name, inverted } = parseOperator(step.op);
  const operator = OPERATORS[name];
  if (!operator) throw new InvalidParameterValue(`Unsupported operator: '${name}'.`);
  const checkIn = (context: FormatContext, inLoop: boolean) => {
    const args = stepArgs(operator, step, context, inLoop, name);
    if (inLoop && operator.optional.includes('force_strings')) args.force_strings = true;
    const result = operator.check(args);
    return inverted ? !result : result;
  };
  const contexts = loopContexts(step, base);
  if (!contexts) return checkIn(base, false);
  const results = contexts.map((context) => checkIn(context, true));
  switch (step.multiple ?? 'any') {
    case 'all':
      return results.every(Boolean);
    case 'first':
      return results[0] ?? false;
    case 'last':
      return results.at(-1) ?? false;
    default:
      return results.some(Boolean);
  }
}

export interface ApplyOptions {
  maskSecrets: MaskSecrets;
}

/**
 * Applies the rules to an inspection's result, highest priority first: a
 * rule whose conditions all hold runs its actions on `subject` in order. A
 * `fail` action, or a rule that cannot be applied, throws
 * HardwareInspectionFailure naming the rule (its arguments are left out of
 * messages when the rule is sensitive). Returns the uuids of the rules applied.
 */
export function applyRules(
  rules: readonly InspectionRule[],
  subject: RuleSubject,
  inventory: Record<string, unknown>,
  options: ApplyOptions,
): string[] {
  const applied: string[] = [];
  const ordered = [...rules].sort((a, b) => b.priority - a.priority);
  for (const rule of ordered) {
    const mask = options.maskSecrets === 'always' || (options.maskSecrets === 'sensitive' && !rule.sensitive);
    const context: FormatContext = {
      node: subject.node,
      inventory: masked(inventory, mask),
      plugin_data: masked(subject.pluginData, mask),
    };
    try {
      if (!rule.conditions.every((condition) => conditionHolds(condition, context))) continue;
      for (const step of rule.actions) {
        const action = ACTIONS[step.op];
        if (!action) throw new InvalidParameterValue(`Unsupported action: '${step.op}'.`);
        for (const stepContext of loopContexts(step, context) ?? [context]) {
          action.run(subject, stepArgs(action, step, stepContext, stepContext !== context, step.op));
        }
      }
      applied.push(rule.uuid);
    } catch (error) {
      if (error instanceof HardwareInspectionFailure) throw error;
      const reason = rule.sensitive ? 'the rule is sensitive: details are not shown' : (error as Error).message;
      throw new HardwareInspectionFailure(`Failed to apply rule ${rule.uuid}: ${reason}`);
    }
  }
  return applied;
}
