import {
  type AllocationRecord,
  type ChassisRecord,
  type DeployTemplateRecord,
  type InspectionRuleRecord,
  type PortgroupRecord,
  ResourceAlreadyExists,
  ResourceConflict,
  type RunbookRecord,
  type VolumeConnectorRecord,
  type VolumeTargetRecord,
} from '@bmaas/common';
import type { Knex } from 'knex';
import { AllocationStore } from './allocation-store.js';
import { rowToRecord } from './case.js';
import { COMMON_SORT_EXPRESSIONS, ResourceStore, type ResourceTableSpec } from './resource-store.js';
import { TraitStore } from './trait-store.js';

const exists = (message: string) => new ResourceAlreadyExists(message);

/** Chassis: nodes point at them by uuid. */
export class ChassisStore extends ResourceStore<ChassisRecord> {
  constructor(db: Knex) {
    super(db, {
      table: 'chassis',
      jsonColumns: ['extra'],
      sortExpressions: { ...COMMON_SORT_EXPRESSIONS('chassis'), description: "coalesce(chassis.description, '')" },
      hasNode: false,
      hasName: false,
      conflict: (_, v) => exists(`A chassis with UUID ${v.uuid} already exists.`),
    });
  }

  async countNodes(chassisUuid: string): Promise<number> {
    const row = await this.db('nodes').where({ chassis_uuid: chassisUuid }).count<{ count: string }[]>('* as count');
    return Number(row[0]?.count ?? 0);
  }
}

export class PortgroupStore extends ResourceStore<PortgroupRecord> {
  constructor(db: Knex) {
    super(db, {
      table: 'portgroups',
      jsonColumns: ['properties', 'internal_info', 'extra'],
      sortExpressions: {
        ...COMMON_SORT_EXPRESSIONS('portgroups'),
        name: "coalesce(portgroups.name, '')",
        address: "coalesce(portgroups.address, '')",
        mode: 'portgroups.mode',
        standalone_ports_supported: 'portgroups.standalone_ports_supported',
      },
      hasNode: true,
      hasName: true,
      conflict: (constraint, v) => {
        if (constraint.includes('name')) return exists(`A portgroup with name ${v.name} already exists.`);
        if (constraint.includes('address')) return exists(`A portgroup with MAC address ${v.address} already exists.`);
        return exists(`A portgroup with UUID ${v.uuid} already exists.`);
      },
    });
  }

  async countPorts(portgroupUuid: string): Promise<number> {
    const row = await this.db('ports')
      .where({ portgroup_uuid: portgroupUuid })
      .count<{ count: string }[]>('* as count');
    return Number(row[0]?.count ?? 0);
  }
}

function namedResourceSpec(table: string, label: string): ResourceTableSpec {
  return {
    table,
    jsonColumns: ['steps', 'extra'],
    sortExpressions: { ...COMMON_SORT_EXPRESSIONS(table), name: `${table}.name` },
    hasNode: false,
    hasName: true,
    conflict: (constraint, v) =>
      constraint.includes('name')
        ? exists(`A ${label} with name ${v.name} already exists.`)
        : exists(`A ${label} with UUID ${v.uuid} already exists.`),
  };
}

function namedResource<R extends { id: number; uuid: string }>(db: Knex, table: string, label: string) {
  return new ResourceStore<R>(db, namedResourceSpec(table, label));
}

/** Inspection rules (1.96); the conductor reads a phase's rules at every inspection. */
export class InspectionRuleStore extends ResourceStore<InspectionRuleRecord> {
  constructor(db: Knex) {
    super(db, {
      table: 'inspection_rules',
      jsonColumns: ['conditions', 'actions'],
      sortExpressions: {
        ...COMMON_SORT_EXPRESSIONS('inspection_rules'),
        priority: 'inspection_rules.priority',
        phase: 'inspection_rules.phase',
        description: "coalesce(inspection_rules.description, '')",
        sensitive: 'inspection_rules.sensitive',
      },
      hasNode: false,
      hasName: false,
      conflict: (_constraint, v) => exists(`An inspection rule with UUID ${v.uuid} already exists.`),
    });
  }

  /** Every rule of a phase. */
  async listPhase(phase: string): Promise<InspectionRuleRecord[]> {
    const rows = await this.select().where('inspection_rules.phase', phase).orderBy('inspection_rules.id');
    return rows.map((row: Record<string, unknown>) => rowToRecord<InspectionRuleRecord>(row));
  }
}

/** Runbooks, each read with its traits (runbook_traits, 1.112). */
export class RunbookStore extends ResourceStore<RunbookRecord> {
  readonly traits: TraitStore;

  constructor(db: Knex) {
    super(db, namedResourceSpec('runbooks', 'runbook'));
    this.traits = new TraitStore(db, 'runbook_traits', 'runbook_id');
  }

  protected override select(db: Knex | Knex.Transaction = this.db): Knex.QueryBuilder {
    return super
      .select(db)
      .select(
        db.raw(
          "coalesce((select array_agg(trait order by trait) from runbook_traits where runbook_id = runbooks.id), '{}') as traits",
        ),
      );
  }
}

export function createResourceStores(db: Knex) {
  return {
    chassis: new ChassisStore(db),
    portgroups: new PortgroupStore(db),
    allocations: new AllocationStore(db, {
      table: 'allocations',
      jsonColumns: ['traits', 'candidate_nodes', 'extra'],
      sortExpressions: {
        ...COMMON_SORT_EXPRESSIONS('allocations'),
        name: "coalesce(allocations.name, '')",
        state: 'allocations.state',
        resource_class: "coalesce(allocations.resource_class, '')",
        node_uuid: 'coalesce(allocations.node_id, 0)',
      },
      hasNode: true,
      hasName: true,
      conflict: (constraint, v) => {
        if (constraint.includes('name')) return exists(`An allocation with name ${v.name} already exists.`);
        if (constraint.includes('node_id')) return new ResourceConflict('The node already has an allocation.');
        return exists(`An allocation with UUID ${v.uuid} already exists.`);
      },
    }),
    deployTemplates: namedResource<DeployTemplateRecord>(db, 'deploy_templates', 'deploy template'),
    runbooks: new RunbookStore(db),
    inspectionRules: new InspectionRuleStore(db),
    volumeConnectors: new ResourceStore<VolumeConnectorRecord>(db, {
      table: 'volume_connectors',
      jsonColumns: ['extra'],
      sortExpressions: {
        ...COMMON_SORT_EXPRESSIONS('volume_connectors'),
        type: 'volume_connectors.type',
        connector_id: 'volume_connectors.connector_id',
      },
      hasNode: true,
      hasName: false,
      conflict: (constraint, v) =>
        constraint.includes('connector_id')
          ? exists(`A volume connector with type ${v.type} and connector ID ${v.connectorId} already exists.`)
          : exists(`A volume connector with UUID ${v.uuid} already exists.`),
    }),
    volumeTargets: new ResourceStore<VolumeTargetRecord>(db, {
      table: 'volume_targets',
      jsonColumns: ['properties', 'extra'],
      sortExpressions: {
        ...COMMON_SORT_EXPRESSIONS('volume_targets'),
        volume_type: 'volume_targets.volume_type',
        boot_index: 'volume_targets.boot_index',
        volume_id: 'volume_targets.volume_id',
      },
      hasNode: true,
      hasName: false,
      conflict: (constraint, v) =>
        constraint.includes('boot_index')
          ? exists(`A volume target with boot index '${v.bootIndex}' for the same node already exists.`)
          : exists(`A volume target with UUID ${v.uuid} already exists.`),
    }),
  };
}

export type ResourceStores = ReturnType<typeof createResourceStores>;
export type { AllocationRecord };
