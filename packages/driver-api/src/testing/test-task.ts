import { randomInt, randomUUID } from 'node:crypto';
import {
  createSilentLogger,
  type Logger,
  type NodeRecord,
  OPTIONAL_INTERFACE_GENERIC,
  OPTIONAL_INTERFACE_TYPES,
  type PortRecord,
} from '@bmaas/common';
import { FakeBootInterface } from '../fake/fake-boot.js';
import { FakeDeployInterface } from '../fake/fake-deploy.js';
import { FakeManagementInterface } from '../fake/fake-management.js';
import { FakePowerInterface } from '../fake/fake-power.js';
import { OPTIONAL_INTERFACES } from '../optional/catalog.js';
import type { NodeDriver, NodeUpdate, Task } from '../task.js';
import { createTestInterfaceDeps } from './interface-deps.js';

/** The node fields updateNode accepts, as the NodeUpdate type names them. */
const UPDATABLE_FIELDS = new Set<string>([
  'driverInternalInfo',
  'instanceInfo',
  'powerState',
  'targetPowerState',
  'lastError',
  'conductorAffinity',
  'provisionState',
  'targetProvisionState',
  'deployStep',
  'cleanStep',
] satisfies (keyof NodeUpdate)[]);

/** A complete node record with test defaults (fake interfaces, enroll state, random uuid). */
export function createTestNode(overrides: Partial<NodeRecord> = {}): NodeRecord {
  return {
    id: randomInt(1, 2 ** 31),
    uuid: randomUUID(),
    name: null,
    driver: 'fake-hardware',
    bootInterface: 'fake',
    deployInterface: 'fake',
    powerInterface: 'fake',
    managementInterface: 'fake',
    driverInfo: {},
    driverInternalInfo: {},
    instanceInfo: {},
    instanceUuid: null,
    instanceName: null,
    properties: {},
    extra: {},
    provisionState: 'enroll',
    targetProvisionState: null,
    provisionUpdatedAt: null,
    powerState: null,
    targetPowerState: null,
    lastError: null,
    maintenance: false,
    maintenanceReason: null,
    fault: null,
    reservation: null,
    conductorAffinity: null,
    conductorGroup: '',
    resourceClass: null,
    description: null,
    automatedClean: null,
    biosInterface: OPTIONAL_INTERFACE_GENERIC.bios,
    consoleInterface: OPTIONAL_INTERFACE_GENERIC.console,
    firmwareInterface: OPTIONAL_INTERFACE_GENERIC.firmware,
    inspectInterface: OPTIONAL_INTERFACE_GENERIC.inspect,
    networkInterface: OPTIONAL_INTERFACE_GENERIC.network,
    raidInterface: OPTIONAL_INTERFACE_GENERIC.raid,
    rescueInterface: OPTIONAL_INTERFACE_GENERIC.rescue,
    storageInterface: OPTIONAL_INTERFACE_GENERIC.storage,
    vendorInterface: OPTIONAL_INTERFACE_GENERIC.vendor,
    owner: null,
    lessee: null,
    protected: false,
    protectedReason: null,
    retired: false,
    retiredReason: null,
    networkData: {},
    disablePowerOff: false,
    health: null,
    shard: null,
    parentNode: null,
    bootMode: null,
    secureBoot: null,
    raidConfig: {},
    targetRaidConfig: {},
    consoleEnabled: false,
    deployStep: {},
    cleanStep: {},
    inspectionStartedAt: null,
    inspectionFinishedAt: null,
    createdAt: new Date(),
    updatedAt: null,
    ...overrides,
  };
}

/** A port of `node` with a random locally administered MAC, PXE-enabled unless overridden. */
export function createTestPort(node: NodeRecord, overrides: Partial<PortRecord> = {}): PortRecord {
  const octets = [0x02, ...Array.from({ length: 5 }, () => randomInt(0, 256))];
  return {
    id: randomInt(1, 2 ** 31),
    uuid: randomUUID(),
    address: octets.map((o) => o.toString(16).padStart(2, '0')).join(':'),
    nodeId: node.id,
    nodeUuid: node.uuid,
    pxeEnabled: true,
    physicalNetwork: null,
    localLinkConnection: {},
    extra: {},
    name: null,
    description: null,
    vendor: null,
    category: null,
    availableForDynamicPortgroup: true,
    createdAt: new Date(),
    updatedAt: null,
    ...overrides,
  };
}

/** A Task that also shows what was asked of it. */
export interface TestTask extends Task {
  /** Every updateNode call in order, including the ones refused under a shared lock. */
  readonly updateCalls: readonly NodeUpdate[];
  /** Every writeWithNext call in order, including the ones refused under a shared lock. */
  readonly writeWithNextCalls: readonly NodeUpdate[];
}

export interface TestTaskOptions {
  /** Take a shared lock: updateNode throws (default false, exclusive). */
  shared?: boolean;
  /** Interfaces of the node; the fake of each kind where not given. */
  driver?: Partial<NodeDriver>;
  logger?: Logger;
  requestId?: string;
}

/**
 * A real Task over an in-memory node: `record` plays the stored row. The task
 * works on a snapshot taken now; updateNode writes the changes into `record`
 * and refreshes the snapshot, so tasks created later see them, as tasks over
 * the database do. writeWithNext writes into `record` at once too: there is
 * no statement to save and no release to wait for.
 */
export function createTestTask(
  record: NodeRecord,
  ports: readonly PortRecord[],
  options: TestTaskOptions = {},
): TestTask {
  return new InMemoryTask(record, ports, options);
}

class InMemoryTask implements TestTask {
  readonly ports: readonly PortRecord[];
  readonly shared: boolean;
  readonly logger: Logger;
  readonly requestId: string | undefined;
  readonly driver: NodeDriver;
  readonly updateCalls: NodeUpdate[] = [];
  readonly writeWithNextCalls: NodeUpdate[] = [];
  #node: NodeRecord;

  constructor(
    private readonly record: NodeRecord,
    ports: readonly PortRecord[],
    options: TestTaskOptions,
  ) {
    this.#node = structuredClone(record);
    this.ports = structuredClone(ports);
    this.shared = options.shared ?? false;
    this.requestId = options.requestId;
    this.logger = (options.logger ?? createSilentLogger()).child({ nodeUuid: record.uuid, requestId: this.requestId });
    this.driver = {
      boot: new FakeBootInterface(),
      deploy: new FakeDeployInterface(),
      power: new FakePowerInterface(),
      management: new FakeManagementInterface(),
      ...genericOptionalInterfaces(),
      ...options.driver,
    };
  }

  get node(): NodeRecord {
    return this.#node;
  }

  async updateNode(changes: NodeUpdate): Promise<NodeRecord> {
    this.updateCalls.push(structuredClone(changes));
    return this.write('updateNode', changes);
  }

  writeWithNext(changes: NodeUpdate): void {
    this.writeWithNextCalls.push(structuredClone(changes));
    this.write('writeWithNext', changes);
  }

  private write(method: string, changes: NodeUpdate): NodeRecord {
    if (this.shared) {
      throw new Error(`${method} called on node ${this.record.uuid} under a shared lock`);
    }
    const unknown = Object.keys(changes).filter((field) => !UPDATABLE_FIELDS.has(field));
    if (unknown.length > 0) {
      throw new Error(`${method} cannot change ${unknown.join(', ')}`);
    }
    Object.assign(this.record, structuredClone(changes), { updatedAt: new Date() });
    this.#node = structuredClone(this.record);
    return this.#node;
  }
}

/** The generic implementation of every optional kind (listed first), as a node with no other gets. */
function genericOptionalInterfaces(): Omit<NodeDriver, 'boot' | 'deploy' | 'power' | 'management'> {
  const deps = createTestInterfaceDeps({});
  return Object.fromEntries(
    OPTIONAL_INTERFACE_TYPES.map((kind) => [kind, OPTIONAL_INTERFACES[kind][0]?.create(deps)]),
  ) as Omit<NodeDriver, 'boot' | 'deploy' | 'power' | 'management'>;
}
