import { readFileSync } from 'node:fs';
import type { NodeRecord, PortRecord } from '@bmaas/common';
import type { InspectionRuleStore, NodeChanges, PortChanges, PortStore, TraitStore } from '@bmaas/db';
import {
  applyRules,
  type InspectionRule,
  type MaskSecrets,
  parseBuiltInRules,
  type RuleSubject,
} from '@bmaas/inspection-rules';
import type { ConductorTask } from '../task-manager.js';

/** Node fields rules may read and change, by Ironic name. */
const NODE_FIELDS = {
  driver_info: 'driverInfo',
  properties: 'properties',
  extra: 'extra',
  instance_info: 'instanceInfo',
  resource_class: 'resourceClass',
  description: 'description',
  owner: 'owner',
  lessee: 'lessee',
  automated_clean: 'automatedClean',
  conductor_group: 'conductorGroup',
  shard: 'shard',
  network_data: 'networkData',
} as const satisfies Record<string, keyof NodeRecord>;

/** Port fields rules may read and change, by Ironic name. */
const PORT_FIELDS = {
  extra: 'extra',
  physical_network: 'physicalNetwork',
  local_link_connection: 'localLinkConnection',
  pxe_enabled: 'pxeEnabled',
  is_smartnic: 'isSmartnic',
  name: 'name',
  description: 'description',
  vendor: 'vendor',
  category: 'category',
} as const satisfies Record<string, keyof PortRecord>;

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

function view<R extends object>(record: R, fields: Readonly<Record<string, keyof R>>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).map(([name, key]) => [name, structuredClone(record[key])]));
}

function changesOf<R extends object>(
  record: R,
  seen: Record<string, unknown>,
  fields: Readonly<Record<string, keyof R>>,
): Partial<R> {
  const changes: Partial<R> = {};
  for (const [name, key] of Object.entries(fields)) {
    if (!same(seen[name], record[key])) changes[key] = seen[name] as R[keyof R];
  }
  return changes;
}

/** The rules of [inspection_rules]built_in_rules (none when unset); throws on a file that is missing or broken. */
export function readBuiltInRules(file: string | null): InspectionRule[] {
  return file ? parseBuiltInRules(readFileSync(file, 'utf8'), file) : [];
}

export interface InspectionRuleApplierDeps {
  rules: Pick<InspectionRuleStore, 'listPhase'>;
  traits: Pick<TraitStore, 'list' | 'replace'>;
  ports: Pick<PortStore, 'listByNode' | 'update'>;
  /** [inspection_rules]built_in_rules, read when the conductor starts. */
  builtIn: readonly InspectionRule[];
  maskSecrets: MaskSecrets;
}

/**
 * Applies the inspection rules (the API's and the built-in ones) to an
 * inspection's result under the node's exclusive lock, then writes what they
 * changed: node fields, traits, ports. Returns the plugin data as the rules
 * left it. A `fail` action throws HardwareInspectionFailure: inspection fails.
 */
export class InspectionRuleApplier {
  constructor(private readonly deps: InspectionRuleApplierDeps) {}

  async apply(
    task: ConductorTask,
    inventory: Record<string, unknown>,
    pluginData: Record<string, unknown>,
  ): Promise<Record<string, unknown>> {
    const stored = await this.deps.rules.listPhase('main');
    const rules = [...stored, ...this.deps.builtIn.filter((rule) => rule.phase === 'main')];
    if (rules.length === 0) return pluginData;
    const { node } = task;
    const traits = await this.deps.traits.list(node.id);
    const ports = await this.deps.ports.listByNode(node.id);
    const subject: RuleSubject = {
      node: view(node, NODE_FIELDS),
      traits: new Set(traits),
      ports: new Map(ports.map((port) => [port.uuid, view(port, PORT_FIELDS)])),
      pluginData: structuredClone(pluginData),
      log: (level, message) =>
        task.logger[level === 'critical' ? 'error' : level === 'warning' ? 'warn' : level](
          `inspection rule: ${message}`,
        ),
    };
    const applied = applyRules(rules, subject, inventory, { maskSecrets: this.deps.maskSecrets });
    const nodeChanges = changesOf(node, subject.node, NODE_FIELDS) as NodeChanges;
    if (Object.keys(nodeChanges).length > 0) await task.updateNode(nodeChanges);
    const nextTraits = [...subject.traits].sort();
    if (!same(nextTraits, traits)) await this.deps.traits.replace(node.id, nextTraits);
    for (const port of ports) {
      const seen = subject.ports.get(port.uuid);
      const changes = seen ? (changesOf(port, seen, PORT_FIELDS) as PortChanges) : {};
      if (Object.keys(changes).length > 0) await this.deps.ports.update(port.id, changes);
    }
    task.logger.info('inspection rules applied', { rules: applied, nodeFields: Object.keys(nodeChanges) });
    return subject.pluginData;
  }
}
