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
