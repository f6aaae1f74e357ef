import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { BootConfigNotFound, type NodeRecord, type PortRecord, UnsupportedDriverExtension } from '@bmaas/common';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BootInterface, RamdiskMode } from '../boot.js';
import { createTestNode, createTestPort, createTestTask, type TestTask } from './test-task.js';

/** What a boot interface under test brings to the contract suite; made afresh for every test. */
export interface BootContractFixture {
  iface: BootInterface;
  /** A configuration name getBootConfig serves once prepareRamdisk ran (e.g. `boot.ipxe`). */
  configName: string;
  /** Node fields a node needs to pass validate and prepareRamdisk in both modes (driver_info images…). */
  node?: Partial<NodeRecord>;
  /**
   * A comparable picture of everything the interface keeps outside the node
   * record (files it wrote…). Compared around calls that must not write, and
   * around repeated calls that must be idempotent.
   */
  snapshot?: () => Promise<unknown>;
  /** Removes what the fixture made (temporary directories…). */
  cleanup?: () => Promise<void>;
  /**
   * The descriptor's `rootFiles` and the http_root they are written to:
   * prepareHttpRoot must write each (non-empty) there. Omit both for an
   * interface with no root files.
   */
  rootFiles?: readonly string[];
  httpRoot?: string;
  /**
   * What a served configuration boots, read from what it loads (the kernel,
   * the local disk), never from the node: default bootTargetByImageNames.
   */
  bootTarget?: (config: string) => BootTarget;
}

/** What a node's configuration boots. */
export type BootTarget = 'deploy' | 'rescue' | 'instance' | 'ambiguous';

/**
 * The rules of the contract that span nodes and modes; a failure message
 * starts with the rule it broke.
 */
export const BOOT_CONTRACT_RULES = {
  ownConfiguration:
    'each node is served only its own configuration: it names that node, no other node, and an unprepared node gets none',
  othersCleanUp: "a clean-up of one node leaves every other node's configuration as it was",
  bootsItsMode:
    'prepareRamdisk(deploy) boots the deploy ramdisk, prepareRamdisk(rescue) the rescue ramdisk, prepareInstance the instance',
} as const;
export type BootContractRule = keyof typeof BOOT_CONTRACT_RULES;

/** A rule of the contract broke; the message names it. */
export class BootContractViolation extends Error {
  constructor(
    readonly rule: BootContractRule,
    detail: string,
  ) {
    super(`boot interface contract, rule "${rule}" (${BOOT_CONTRACT_RULES[rule]}): ${detail}`);
    this.name = 'BootContractViolation';
  }
}

function holds(condition: boolean, rule: BootContractRule, detail: string): asserts condition {
  if (!condition) throw new BootContractViolation(rule, detail);
}

/**
 * What a configuration boots by the images it names, as the interfaces built
 * on @bmaas/http-root name them (`…/deploy_kernel`, `…/rescue_kernel`): one
 * ramdisk's kernel, or no kernel at all (the instance on the local disk).
 */
export function bootTargetByImageNames(config: string): BootTarget {
  const deploy = /\bdeploy_kernel\b/.test(config);
  const rescue = /\brescue_kernel\b/.test(config);
  if (deploy && rescue) return 'ambiguous';
  if (deploy) return 'deploy';
  if (rescue) return 'rescue';
  return 'instance';
}

/** One node of the multi-node rules, with its own ports (distinct MACs). */
interface ContractNode {
  record: NodeRecord;
  ports: PortRecord[];
}

function contractNode(fixture: BootContractFixture): ContractNode {
  const record = createTestNode(fixture.node);
  return { record, ports: [createTestPort(record), createTestPort(record, { pxeEnabled: false })] };
}

const exclusiveOf = (n: ContractNode) => createTestTask(n.record, n.ports);
const sharedOf = (n: ContractNode) => createTestTask(n.record, n.ports, { shared: true });

/** The node's configuration, or undefined when the interface serves none (BootConfigNotFound). */
async function servedTo(fixture: BootContractFixture, n: ContractNode): Promise<string | undefined> {
  try {
    return await fixture.iface.getBootConfig(sharedOf(n), fixture.configName);
  } catch (error) {
    if (error instanceof BootConfigNotFound) return undefined;
    throw error;
  }
}

/**
 * Rules ownConfiguration and othersCleanUp over four nodes at once: one
 * booting the deploy ramdisk, one the rescue ramdisk, one its instance, one
 * never prepared; then clean-ups of some while the others stay. Throws a
 * BootContractViolation naming the rule that broke.
 */
export async function checkNodeIsolation(fixture: BootContractFixture): Promise<void> {
  const { iface } = fixture;
  const [deploying, rescuing, active, untouched] = [1, 2, 3, 4].map(() => contractNode(fixture)) as [
    ContractNode,
    ContractNode,
    ContractNode,
    ContractNode,
  ];
  const all = [deploying, rescuing, active, untouched];
  const label = new Map(all.map((n, i) => [n, ['deploying', 'rescuing', 'active', 'never prepared'][i] as string]));
  await iface.prepareRamdisk(exclusiveOf(deploying), 'deploy');
  await iface.prepareRamdisk(exclusiveOf(rescuing), 'rescue');
  await iface.prepareRamdisk(exclusiveOf(active), 'deploy');
  await iface.prepareInstance(exclusiveOf(active));

  const expectOwn = async (n: ContractNode, when: string): Promise<string> => {
    const config = await servedTo(fixture, n);
    holds(config !== undefined, 'ownConfiguration', `the ${label.get(n)} node is served nothing ${when}`);
    holds(
      config.includes(n.record.uuid),
      'ownConfiguration',
      `the configuration served to the ${label.get(n)} node ${n.record.uuid} ${when} does not name it`,
    );
    for (const other of all.filter((o) => o !== n)) {
      holds(
        !config.includes(other.record.uuid),
        'ownConfiguration',
        `the configuration served to the ${label.get(n)} node ${when} names the ${label.get(other)} node ${other.record.uuid}`,
      );
    }
    return config;
  };
  const expectNone = async (n: ContractNode, rule: BootContractRule, when: string): Promise<void> => {
    const config = await servedTo(fixture, n);
    holds(config === undefined, rule, `the ${label.get(n)} node is served a configuration ${when}`);
  };

  const before = 'with four nodes prepared';
  const rescueConfig = await expectOwn(rescuing, before);
  await expectOwn(deploying, before);
  const activeConfig = await expectOwn(active, before);
  await expectNone(untouched, 'ownConfiguration', before);

  await iface.cleanUpRamdisk(exclusiveOf(deploying));
  const afterRamdisk = "after the deploying node's cleanUpRamdisk";
  await expectNone(deploying, 'othersCleanUp', afterRamdisk);
  for (const [n, config] of [
    [rescuing, rescueConfig],
    [active, activeConfig],
  ] as const) {
    holds(
      (await expectOwn(n, afterRamdisk)) === config,
      'othersCleanUp',
      `the ${label.get(n)} node's configuration changed ${afterRamdisk}`,
    );
  }

  await iface.cleanUpInstance(exclusiveOf(active));
  const afterInstance = "after the active node's cleanUpInstance";
  await expectNone(active, 'othersCleanUp', afterInstance);
  holds(
    (await expectOwn(rescuing, afterInstance)) === rescueConfig,
    'othersCleanUp',
    `the rescuing node's configuration changed ${afterInstance}`,
  );
  await expectNone(untouched, 'ownConfiguration', afterInstance);

  // A node prepared again after its clean-up gets its own configuration back, the others keep theirs.
  await iface.prepareRamdisk(exclusiveOf(deploying), 'deploy');
  await expectOwn(deploying, 'when prepared again after its clean-up');
  holds(
    (await expectOwn(rescuing, 'when another node is prepared again')) === rescueConfig,
    'othersCleanUp',
    "the rescuing node's configuration changed when another node was prepared again",
  );
}

/**
 * Rule bootsItsMode: each mode's configuration boots what it should, read by
 * the fixture's bootTarget; also after a switch from one mode to another on
 * the same node. Throws a BootContractViolation naming the rule.
 */
export async function checkBootTargets(fixture: BootContractFixture): Promise<void> {
  const { iface } = fixture;
  const read = fixture.bootTarget ?? bootTargetByImageNames;
  const n = contractNode(fixture);
  const expectTarget = async (wanted: BootTarget, after: string) => {
    const config = await servedTo(fixture, n);
    holds(config !== undefined, 'bootsItsMode', `nothing is served after ${after}`);
    const target = read(config);
    holds(target === wanted, 'bootsItsMode', `after ${after} the configuration boots ${target}, not ${wanted}`);
  };
  await iface.prepareRamdisk(exclusiveOf(n), 'rescue');
  await expectTarget('rescue', 'prepareRamdisk(rescue)');
  await iface.prepareRamdisk(exclusiveOf(n), 'deploy');
  await expectTarget('deploy', 'prepareRamdisk(deploy) on a node that booted the rescue ramdisk');
  await iface.prepareInstance(exclusiveOf(n));
  await expectTarget('instance', 'prepareInstance');
  await iface.prepareRamdisk(exclusiveOf(n), 'rescue');
  await expectTarget('rescue', 'prepareRamdisk(rescue) on an active node (rescue)');
}

export interface BootContractOptions {
  /**
   * `supported` (default): getBootConfig serves `configName` after
   * prepareRamdisk. `unsupported`: the interface keeps the default and every
   * getBootConfig must throw UnsupportedDriverExtension.
   */
  getBootConfig?: 'supported' | 'unsupported';
}

const RAMDISK_MODES: readonly RamdiskMode[] = ['deploy', 'rescue'];

const CONTRACT_METHODS = [
  'getProperties',
  'prepareHttpRoot',
  'validate',
  'prepareRamdisk',
  'cleanUpRamdisk',
  'prepareInstance',
  'cleanUpInstance',
  'getBootConfig',
] as const;

/** Names no boot interface may serve: traversal, encodings, control characters, huge and odd names. */
export function unknownBootConfigNames(configName: string): string[] {
  const names = [
    'nope',
    '',
    '.',
    '..',
    '../config',
    '..%2F..%2Fetc%2Fpasswd',
    '%2e%2e',
    '/etc/passwd',
    'config\0',
    'x'.repeat(5000),
    'bööt.ipxe',
    '引导.ipxe',
    '__proto__',
    'constructor',
    'toString',
    `${configName}\0`,
    `${configName}%00`,
    `./${configName}`,
    `../${configName}`,
    `/${configName}`,
    `${configName}/`,
    ` ${configName}`,
    `${configName}\n`,
  ];
  if (configName.toUpperCase() !== configName) names.push(configName.toUpperCase());
  return names.filter((name) => name !== configName);
}

/**
 * The contract every boot interface must keep, as a vitest `describe` block.
 * Run it from the interface's own tests:
 *
 *   describeBootInterfaceContract('ipxe', async () => ({ iface, configName: 'boot.ipxe', … }));
 *
 * It drives the interface through real Task objects over an in-memory node
 * (see createTestTask) with one PXE-enabled and one PXE-disabled port.
 */
export function describeBootInterfaceContract(
  name: string,
  setup: () => BootContractFixture | Promise<BootContractFixture>,
  options: BootContractOptions = {},
): void {
  const supported = (options.getBootConfig ?? 'supported') === 'supported';

  describe(`boot interface contract: ${name}`, () => {
    let fixture: BootContractFixture;
    let iface: BootInterface;
    let record: NodeRecord;
    let ports: PortRecord[];
    const exclusive = (): TestTask => createTestTask(record, ports);
    const shared = (): TestTask => createTestTask(record, ports, { shared: true });
    const external = async (): Promise<unknown> => (fixture.snapshot ? await fixture.snapshot() : null);
    /** Node and outside state, minus the update time a rewrite of the same values moves. */
    const state = async () => {
      const { updatedAt: _, ...node } = structuredClone(record);
      return { node, external: await external() };
    };
    const expectNotServed = async (result: Promise<string>, why: string) => {
      await expect(result, why).rejects.toBeInstanceOf(supported ? BootConfigNotFound : UnsupportedDriverExtension);
    };

    beforeEach(async () => {
      fixture = await setup();
      iface = fixture.iface;
      record = createTestNode(fixture.node);
      ports = [createTestPort(record), createTestPort(record, { pxeEnabled: false })];
    });
    afterEach(async () => {
      await fixture.cleanup?.();
    });

    if (supported) {
      it(`rule ownConfiguration and othersCleanUp: several nodes, each served only its own configuration, before and after clean-ups`, async () => {
        await checkNodeIsolation(fixture);
      });

      it('rule bootsItsMode: deploy boots the deploy ramdisk, rescue the rescue ramdisk, an active node its instance', async () => {
        await checkBootTargets(fixture);
      });
    }

    it('has every method of the contract', () => {
      for (const method of CONTRACT_METHODS) {
        expect(typeof iface[method], method).toBe('function');
      }
    });

    it('prepareHttpRoot writes its root files, needs no node, and a second call changes nothing', async () => {
      await iface.prepareHttpRoot();
      const once = await state();
      for (const file of fixture.rootFiles ?? []) {
        expect(fixture.httpRoot, 'httpRoot of the root files').toBeDefined();
        const content = await readFile(join(fixture.httpRoot as string, file), 'utf8').catch(() => '');
        expect(content.length, file).toBeGreaterThan(0);
      }
      await iface.prepareHttpRoot();
      expect(await state()).toEqual(once);
    });

    it('getProperties describes each property with a string', () => {
      const properties = iface.getProperties();
      expect(Object.getPrototypeOf(properties)).toBe(Object.prototype);
      for (const [key, description] of Object.entries(properties)) {
        expect(key).not.toBe('');
        expect(typeof description, key).toBe('string');
        expect(description, key).not.toBe('');
      }
    });

    it('validate accepts a complete node under a shared lock and changes nothing', async () => {
      const before = structuredClone(record);
      const outside = await external();
      const task = shared();
      await iface.validate(task);
      expect(task.updateCalls).toEqual([]);
      expect(record).toEqual(before);
      expect(await external()).toEqual(outside);
    });

    it.each(RAMDISK_MODES)('prepareRamdisk(%s) makes the configuration available under a shared lock', async (mode) => {
      await iface.prepareRamdisk(exclusive(), mode);
      if (!supported) {
        await expectNotServed(iface.getBootConfig(shared(), fixture.configName), 'extension not implemented');
        return;
      }
      const content = await iface.getBootConfig(shared(), fixture.configName);
      expect(typeof content).toBe('string');
      expect(content.length).toBeGreaterThan(0);
    });

    it('getBootConfig writes nothing and answers the same twice', async () => {
      await iface.prepareRamdisk(exclusive(), 'deploy');
      const before = structuredClone(record);
      const outside = await external();
      const task = shared();
      if (supported) {
        const first = await iface.getBootConfig(task, fixture.configName);
        expect(await iface.getBootConfig(task, fixture.configName)).toBe(first);
      } else {
        await expectNotServed(iface.getBootConfig(task, fixture.configName), 'extension not implemented');
      }
      expect(task.updateCalls).toEqual([]);
      expect(record).toEqual(before);
      expect(await external()).toEqual(outside);
    });

    it('getBootConfig refuses every name it does not know', async () => {
      await iface.prepareRamdisk(exclusive(), 'deploy');
      const outside = await external();
      const task = shared();
      for (const unknown of unknownBootConfigNames(fixture.configName)) {
        await expectNotServed(iface.getBootConfig(task, unknown), JSON.stringify(unknown.slice(0, 40)));
      }
      expect(task.updateCalls).toEqual([]);
      expect(await external()).toEqual(outside);
    });

    it('getBootConfig finds nothing before prepareRamdisk', async () => {
      await expectNotServed(iface.getBootConfig(shared(), fixture.configName), 'not prepared');
    });

    it('prepareRamdisk twice leaves what it left once', async () => {
      for (const mode of RAMDISK_MODES) {
        await iface.prepareRamdisk(exclusive(), mode);
        const once = await state();
        await iface.prepareRamdisk(exclusive(), mode);
        expect(await state(), mode).toEqual(once);
      }
    });

    it('prepareInstance twice leaves what it left once', async () => {
      await iface.prepareRamdisk(exclusive(), 'deploy');
      await iface.prepareInstance(exclusive());
      const once = await state();
      await iface.prepareInstance(exclusive());
      expect(await state()).toEqual(once);
    });

    it('cleanUpRamdisk works before prepareRamdisk, twice, and removes the configuration', async () => {
      await iface.cleanUpRamdisk(exclusive());
      await iface.prepareRamdisk(exclusive(), 'deploy');
      await iface.cleanUpRamdisk(exclusive());
      const once = await state();
      await iface.cleanUpRamdisk(exclusive());
      expect(await state()).toEqual(once);
      await expectNotServed(iface.getBootConfig(shared(), fixture.configName), 'after cleanUpRamdisk');
    });

    it('cleanUpInstance works before prepareInstance, twice, and removes the configuration', async () => {
      await iface.cleanUpInstance(exclusive());
      await iface.prepareRamdisk(exclusive(), 'deploy');
      await iface.prepareInstance(exclusive());
      await iface.cleanUpInstance(exclusive());
      const once = await state();
      await iface.cleanUpInstance(exclusive());
      expect(await state()).toEqual(once);
      await expectNotServed(iface.getBootConfig(shared(), fixture.configName), 'after cleanUpInstance');
    });

    // A configuration served from memory ([deploy]boot_config_cache_check_interval) must not outlive its removal:
    // remove node files through HttpRootLayout (removeNodeFile, removeNodeDir), which forgets them.
    // The wait lets the file's times age past the 3 s within which the layout reads a fresh file anyway.
    it('getBootConfig finds nothing at once after a clean-up, even when it served from memory just before', async () => {
      await iface.prepareRamdisk(exclusive(), 'deploy');
      await new Promise((resolve) => setTimeout(resolve, 3_200));
      if (supported) expect(await iface.getBootConfig(shared(), fixture.configName)).not.toBe('');
      await iface.cleanUpRamdisk(exclusive());
      await expectNotServed(iface.getBootConfig(shared(), fixture.configName), 'after cleanUpRamdisk');

      await iface.prepareRamdisk(exclusive(), 'deploy');
      await iface.prepareInstance(exclusive());
      await new Promise((resolve) => setTimeout(resolve, 3_200));
      if (supported) expect(await iface.getBootConfig(shared(), fixture.configName)).not.toBe('');
      await iface.cleanUpInstance(exclusive());
      await expectNotServed(iface.getBootConfig(shared(), fixture.configName), 'after cleanUpInstance');
    }, 15_000);
  });
}
