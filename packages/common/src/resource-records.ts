/** Records of the resources around nodes, as the stores return them (camelCase). */
import type { JsonObject } from './records.js';

interface Stored {
  id: number;
  uuid: string;
  createdAt: Date;
  updatedAt: Date | null;
}

/** A resource that belongs to one node (its uuid read with it). */
interface NodeOwned extends Stored {
  nodeId: number;
  nodeUuid: string;
}

export interface ChassisRecord extends Stored {
  description: string | null;
  extra: JsonObject;
}

export interface PortgroupRecord extends NodeOwned {
  name: string | null;
  address: string | null;
  mode: string;
  properties: JsonObject;
  standalonePortsSupported: boolean;
  internalInfo: JsonObject;
  extra: JsonObject;
  physicalNetwork: string | null;
  category: string | null;
  /** Made by a conductor from ports available for one, not by a user (1.111). */
  dynamicPortgroup: boolean;
}

export type AllocationState = 'allocating' | 'active' | 'error';

export interface AllocationRecord extends Stored {
  name: string | null;
  /** Null until a node is chosen, and when allocation failed. */
  nodeId: number | null;
  nodeUuid: string | null;
  state: AllocationState;
  lastError: string | null;
  resourceClass: string | null;
  traits: string[];
  /** Node uuids the allocation may choose from (empty: any). */
  candidateNodes: string[];
  extra: JsonObject;
  owner: string | null;
  /** The id of the conductor processing it (null: backfilled by the API, or its conductor was deleted). */
  conductorAffinity: number | null;
}

/** A deploy or runbook step: which interface runs which step, with what arguments. */
export interface StepRecord {
  interface: string;
  step: string;
  args: JsonObject;
  /** Deploy templates order steps by priority, runbooks by order. */
  priority?: number;
  order?: number;
}

export interface DeployTemplateRecord extends Stored {
  name: string;
  steps: StepRecord[];
  extra: JsonObject;
}

/** One condition or action of an inspection rule, as stored (Ironic's shape). */
export interface InspectionRuleStepRecord {
  op: string;
  args: JsonObject | unknown[];
  loop?: unknown[] | JsonObject;
  multiple?: 'any' | 'all' | 'first' | 'last';
}

export interface InspectionRuleRecord extends Stored {
  description: string | null;
  priority: number;
  phase: string;
  /** Its conditions and actions are never shown, and its arguments never logged. */
  sensitive: boolean;
  conditions: InspectionRuleStepRecord[];
  actions: InspectionRuleStepRecord[];
}

export interface RunbookRecord extends Stored {
  name: string;
  description: string | null;
  /** The node traits it may run on (1.112), sorted. */
  traits: string[];
  steps: StepRecord[];
  disableRamdisk: boolean;
  public: boolean;
  owner: string | null;
  extra: JsonObject;
}

export interface VolumeConnectorRecord extends NodeOwned {
  type: string;
  connectorId: string;
  extra: JsonObject;
}

export interface VolumeTargetRecord extends NodeOwned {
  volumeType: string;
  properties: JsonObject;
  bootIndex: number;
  volumeId: string;
  extra: JsonObject;
}
