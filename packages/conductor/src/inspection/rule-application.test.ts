import type { InspectionData } from '@bmaas/common';
import { createStores, type Stores } from '@bmaas/db';
import { createNode, createTestDatabase, type TestDatabase } from '@bmaas/db/testing';
import { HardwareInspectionFailure, parseBuiltInRules } from '@bmaas/inspection-rules';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TaskManager } from '../task-manager.js';
import { fixtureTasks, testConfig } from '../testing/fixtures.js';
import { InventoryProcessor } from './inventory-processor.js';
import { InspectionRuleApplier } from './rule-application.js';

/** What the lab's ramdisk (packages/lab/assets/ramdisk-inventory.sh) reports for a QEMU machine. */
const QEMU: InspectionData = {
  inventory: {
    interfaces: [
      {
        name: 'ens3',
        mac_address: '52:54:00:7a:00:01',
        ipv4_address: '10.10.0.23',
        ipv6_address: null,
        has_carrier: true,
        driver: 'virtio_net',
      },
    ],
    cpu: { count: 2, architecture: 'x86_64', model_name: 'QEMU Virtual CPU version 2.5+' },
    memory: { total: 2147483648, physical_mb: 2048 },
    disks: [{ name: '/dev/vda', size: 10737418240, rotational: true, model: null, vendor: '0x1af4', serial: null }],
    boot: { current_boot_mode: 'uefi', pxe_interface: '52:54:00:7a:00:01' },
    system_vendor: { product_name: 'Standard PC (Q35 + ICH9, 2009)', serial_number: null, manufacturer: 'QEMU' },
    bmc_address: null,
    hostname: 'ramdisk',
  },
  pluginData: {},
} as unknown as InspectionData;

describe('inspection rules applied to an inspection result', () => {
  let database: TestDatabase;
  let stores: Stores;
  let tasks: TaskManager;
  beforeAll(async () => {
    database = await createTestDatabase();
    stores = createStores(database.db);
    ({ tasks } = fixtureTasks(stores, testConfig()));
  });
  afterAll(async () => {
    await database?.drop();
  });

  const processor = (builtIn = '') =>
    new InventoryProcessor({
      ...stores,
      config: testConfig().inspector,
      rules: new InspectionRuleApplier({
        rules: stores.inspectionRules,
        traits: stores.nodeTraits,
        ports: stores.ports,
        builtIn: builtIn ? parseBuiltInRules(builtIn, 'test.yaml') : [],
        maskSecrets: 'always',
      }),
    });
  const inspect = async (uuid: string, p: InventoryProcessor) => {
    const task = await tasks.acquire(uuid, { purpose: 'test inspection' });
    try {
      await p.process(task, QEMU);
    } finally {
      await task.release();
    }
  };

  it("writes what the API's and the built-in rules change: node fields, capabilities, traits, ports, plugin data", async () => {
    await stores.inspectionRules.create({
      uuid: crypto.randomUUID(),
      priority: 10,
      phase: 'main',
      sensitive: false,
      description: null,
      conditions: [{ op: 'eq', args: { values: ['{inventory[system_vendor][manufacturer]}', 'QEMU'] } }],
      actions: [
        { op: 'set-attribute', args: { path: 'resource_class', value: 'qemu-{inventory[cpu][count]}cpu' } },
        { op: 'set-capability', args: { name: 'boot_mode', value: '{inventory[boot][current_boot_mode]}' } },
        { op: 'add-trait', args: { name: 'CUSTOM_QEMU' } },
        { op: 'set-plugin-data', args: { path: 'rule.seen', value: '{inventory[hostname]}' } },
      ],
    });
    const node = await createNode(stores, {}, { provisionState: 'inspect wait' });
    await inspect(
      node.uuid,
      processor(
        '- priority: 10000\n  actions:\n    - op: set-attribute\n      args: {path: extra/inspected_by, value: built-in}\n',
      ),
    );
    const after = await stores.nodes.getById(node.id);
    expect(after).toMatchObject({
      resourceClass: 'qemu-2cpu',
      extra: { inspected_by: 'built-in' },
      properties: { cpus: 2, memory_mb: 2048, capabilities: 'boot_mode:uefi' },
    });
    expect(await stores.nodeTraits.list(node.id)).toEqual(['CUSTOM_QEMU']);
    const [port] = await stores.ports.listByNode(node.id);
    expect(port?.address).toBe('52:54:00:7a:00:01');
    expect((await stores.inventories.get(node.id))?.pluginData).toEqual({ rule: { seen: 'ramdisk' } });
  });

  it('a fail action fails the inspection with its message', async () => {
    const node = await createNode(stores, {}, { provisionState: 'inspect wait' });
    const failing =
      '- conditions: [{op: is-empty, args: {value: "{inventory[bmc_address]}"}}]\n  actions: [{op: fail, args: {msg: no BMC address}}]\n';
    const error = await inspect(node.uuid, processor(failing)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HardwareInspectionFailure);
    expect((error as Error).message).toBe('no BMC address');
  });
});
