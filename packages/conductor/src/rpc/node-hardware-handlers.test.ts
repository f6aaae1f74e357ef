import {
  createSilentLogger,
  InvalidParameterValue,
  NodeIsRetired,
  NodeProtected,
  type NodeRecord,
  UnsupportedDriverExtension,
} from '@bmaas/common';
import { createStores, type Stores } from '@bmaas/db';
import { createNode, createTestDatabase, type TestDatabase } from '@bmaas/db/testing';
import { FAKE_BOOT_CONFIG_NAME } from '@bmaas/driver-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodeHistoryWriter } from '../history/node-history-writer.js';
import type { ProvisioningRunner } from '../provisioning/runner.js';
import type { TaskManager } from '../task-manager.js';
import { fixtureRunner, fixtureTasks, testConfig } from '../testing/fixtures.js';
import { createRpcHandlers } from './handlers.js';
import type { ConductorRpcHandlers, RpcCall } from './json-rpc-server.js';

let database: TestDatabase;
let stores: Stores;
let tasks: TaskManager;
let runner: ProvisioningRunner;
let history: NodeHistoryWriter;
let handlers: ConductorRpcHandlers;
const call: RpcCall = { requestId: 'req-test', logger: createSilentLogger() };

beforeAll(async () => {
  database = await createTestDatabase();
  stores = createStores(database.db);
  // A long interval: the test flushes when it wants the entries.
  history = new NodeHistoryWriter({
    store: stores.nodeHistory,
    conductor: 'c1',
    logger: createSilentLogger(),
    flushIntervalMs: 60_000,
  });
  const config = testConfig({ DEFAULT: { enabled_management_interfaces: ['fake', 'noop'] } });
  const fixture = fixtureTasks(stores, config, { history });
  tasks = fixture.tasks;
  const registry = fixture.registry;
  runner = fixtureRunner(stores, tasks);
  handlers = createRpcHandlers({ runner, tasks, history, registry });
});
afterAll(async () => {
  await history?.close();
  await database?.drop();
});

const stored = async (node: NodeRecord) => (await stores.nodes.getById(node.id)) as NodeRecord;

describe('node hardware RPC handlers (the node interfaces under its lock)', () => {
  it('validates and stores a target RAID config with fake RAID; no-raid refuses; {} clears anywhere', async () => {
    const fake = await createNode(stores, { raidInterface: 'fake' });
    const config = { logical_disks: [{ size_gb: 'MAX', raid_level: '1+0', is_root_volume: true }] };
    await handlers.set_target_raid_config({ node_id: fake.uuid, target_raid_config: config }, call);
    expect((await stored(fake)).targetRaidConfig).toEqual(config);
    const bad = { logical_disks: [{ size_gb: 10, raid_level: '7' }] };
    await expect(
      handlers.set_target_raid_config({ node_id: fake.uuid, target_raid_config: bad }, call),
    ).rejects.toThrow(InvalidParameterValue);
    const none = await createNode(stores);
    await expect(
      handlers.set_target_raid_config({ node_id: none.uuid, target_raid_config: config }, call),
    ).rejects.toThrow('Driver fake-hardware does not support raid (disabled or not implemented).');
    await handlers.set_target_raid_config({ node_id: fake.uuid, target_raid_config: {} }, call);
    expect((await stored(fake)).targetRaidConfig).toEqual({});
    expect((await stored(fake)).reservation).toBeNull();
  });

  it('attaches and detaches VIFs with the noop network interface, which lists none (as Ironic)', async () => {
    const node = await createNode(stores);
    await handlers.vif_attach({ node_id: node.uuid, vif_info: { id: 'vif-1' } }, call);
    expect(await handlers.vif_list({ node_id: node.uuid }, call)).toEqual([]);
    await handlers.vif_detach({ node_id: node.uuid, vif_id: 'vif-1' }, call);
    await expect(handlers.vif_attach({ node_id: node.uuid, vif_info: { id: '' } }, call)).rejects.toThrow(
      'VIF id is required.',
    );
  });

  it('turns a fake console on and off; no-console refuses with UnsupportedDriverExtension', async () => {
    const none = await createNode(stores);
    await expect(handlers.set_console_mode({ node_id: none.uuid, enabled: true }, call)).rejects.toThrow(
      UnsupportedDriverExtension,
    );
    expect(await handlers.get_console_information({ node_id: none.uuid }, call)).toEqual({
      console_enabled: false,
      console_info: null,
    });
    const fake = await createNode(stores, { consoleInterface: 'fake' });
    await handlers.set_console_mode({ node_id: fake.uuid, enabled: true }, call);
    expect(await handlers.get_console_information({ node_id: fake.uuid }, call)).toEqual({
      console_enabled: true,
      console_info: { type: 'fake', url: 'fake://' },
    });
    await handlers.set_console_mode({ node_id: fake.uuid, enabled: false }, call);
    expect((await stored(fake)).consoleEnabled).toBe(false);
  });

  it('runs fake vendor methods; no-vendor lists none and refuses', async () => {
    const none = await createNode(stores);
    expect(await handlers.get_node_vendor_passthru_methods({ node_id: none.uuid }, call)).toEqual({});
    const params = { node_id: none.uuid, driver_method: 'first_method', http_method: 'POST', info: { bar: 'x' } };
    await expect(handlers.vendor_passthru(params, call)).rejects.toThrow(
      'Driver fake-hardware does not support vendor (disabled or not implemented).',
    );
    const fake = await createNode(stores, { vendorInterface: 'fake' });
    expect(await handlers.vendor_passthru({ ...params, node_id: fake.uuid }, call)).toEqual({
      return: { bar: 'x' },
      async: false,
    });
    await expect(
      handlers.vendor_passthru({ ...params, node_id: fake.uuid, driver_method: 'nope' }, call),
    ).rejects.toThrow('No handler for method nope');
  });

  it('records the boot mode and secure boot state the fake management set', async () => {
    const node = await createNode(stores);
    await handlers.set_boot_mode({ node_id: node.uuid, mode: 'uefi' }, call);
    await handlers.set_secure_boot_state({ node_id: node.uuid, state: true }, call);
    expect(await stored(node)).toMatchObject({ bootMode: 'uefi', secureBoot: true, reservation: null });
  });

  it('attaches, lists and detaches virtual media with the fake management, in the background', async () => {
    const node = await createNode(stores, {}, { lastError: 'an older failure' });
    const attach = { node_id: node.uuid, image_download_source: 'local' };
    await handlers.attach_virtual_media({ ...attach, device_type: 'cdrom', image_url: 'http://x/a.iso' }, call);
    await handlers.attach_virtual_media({ ...attach, device_type: 'floppy', image_url: 'nfs://s/f.img' }, call);
    expect(await tasks.drain(5000)).toBe(true);
    expect(await stored(node)).toMatchObject({
      lastError: null,
      reservation: null,
      driverInternalInfo: { fake_vmedia: { cdrom: 'http://x/a.iso', floppy: 'nfs://s/f.img' } },
    });
    expect(await handlers.get_virtual_media({ node_id: node.uuid }, call)).toEqual({
      disk: { inserted: false, image_url: null },
      cdrom: { inserted: true, image_url: 'http://x/a.iso' },
      floppy: { inserted: true, image_url: 'nfs://s/f.img' },
    });
    await handlers.detach_virtual_media({ node_id: node.uuid, device_types: ['cdrom'] }, call);
    expect(await tasks.drain(5000)).toBe(true);
    expect((await stored(node)).driverInternalInfo.fake_vmedia).toEqual({ floppy: 'nfs://s/f.img' });
    await handlers.detach_virtual_media({ node_id: node.uuid }, call);
    expect(await tasks.drain(5000)).toBe(true);
    expect((await stored(node)).driverInternalInfo.fake_vmedia).toEqual({});
    await expect(
      handlers.attach_virtual_media({ ...attach, device_type: 'usb', image_url: 'http://x/a.iso' }, call),
    ).rejects.toThrow(InvalidParameterValue);
    await expect(handlers.detach_virtual_media({ node_id: node.uuid, device_types: ['usb'] }, call)).rejects.toThrow(
      InvalidParameterValue,
    );
  });

  it('refuses virtual media where the management interface has none (UnsupportedDriverExtension)', async () => {
    const node = await createNode(stores, { managementInterface: 'noop' });
    const attach = {
      node_id: node.uuid,
      device_type: 'cdrom',
      image_url: 'http://x/a.iso',
      image_download_source: 'local',
    };
    await expect(handlers.attach_virtual_media(attach, call)).rejects.toThrow(
      'Driver fake-hardware does not support attach_virtual_media (disabled or not implemented).',
    );
    await expect(handlers.detach_virtual_media({ node_id: node.uuid }, call)).rejects.toThrow(
      'Driver fake-hardware does not support detach_virtual_media (disabled or not implemented).',
    );
    await expect(handlers.get_virtual_media({ node_id: node.uuid }, call)).rejects.toThrow(UnsupportedDriverExtension);
    expect(await stored(node)).toMatchObject({ reservation: null, lastError: null });
  });

  it('lists, reads and sets indicators with the fake management, the state kept on the node', async () => {
    const node = await createNode(stores);
    const supported = await handlers.get_supported_indicators({ node_id: node.uuid }, call);
    expect(Object.keys(supported).sort()).toEqual(['chassis', 'disk', 'system']);
    expect(await handlers.get_supported_indicators({ node_id: node.uuid, component: 'system' }, call)).toEqual({
      system: { led: { readonly: false, states: ['blinking', 'off', 'on'] } },
    });
    const led = { node_id: node.uuid, component: 'system', indicator: 'led' };
    expect(await handlers.get_indicator_state(led, call)).toBe('off');
    await handlers.set_indicator_state({ ...led, state: 'blinking' }, call);
    expect(await handlers.get_indicator_state(led, call)).toBe('blinking');
    expect((await stored(node)).driverInternalInfo.fake_indicators).toEqual({ system: { led: 'blinking' } });
    expect((await stored(node)).reservation).toBeNull();
    await expect(handlers.set_indicator_state({ ...led, state: 'dim' }, call)).rejects.toThrow(
      'Invalid indicator state dim, expected one of: on, off, blinking, unknown.',
    );
    await expect(handlers.get_indicator_state({ ...led, component: 'rack' }, call)).rejects.toThrow(
      'Invalid component rack specified.',
    );
    await expect(
      handlers.set_indicator_state({ ...led, component: 'chassis', indicator: 'led-0', state: 'off' }, call),
    ).rejects.toThrow('Indicator led-0 of component chassis is read-only.');
  });

  it('refuses indicators where the management interface has none (UnsupportedDriverExtension)', async () => {
    const node = await createNode(stores, { managementInterface: 'noop' });
    const led = { node_id: node.uuid, component: 'system', indicator: 'led' };
    await expect(handlers.get_supported_indicators({ node_id: node.uuid }, call)).rejects.toThrow(
      'Driver fake-hardware does not support get_supported_indicators (disabled or not implemented).',
    );
    await expect(handlers.get_indicator_state(led, call)).rejects.toThrow(UnsupportedDriverExtension);
    await expect(handlers.set_indicator_state({ ...led, state: 'on' }, call)).rejects.toThrow(
      'Driver fake-hardware does not support set_indicator_state (disabled or not implemented).',
    );
    expect((await stored(node)).reservation).toBeNull();
  });

  it('refuses a virtual media change on a node in maintenance after a power failure', async () => {
    const node = await createNode(stores, {}, { maintenance: true, fault: 'power failure' });
    await expect(handlers.detach_virtual_media({ node_id: node.uuid }, call)).rejects.toThrow(
      `Unable to detach all devices for node ${node.uuid} due to power failure state`,
    );
  });

  it('refuses to delete or rebuild a protected node and to provide a retired one', async () => {
    const shielded = await createNode(stores, {}, { provisionState: 'active', protected: true });
    await expect(runner.doProvisioningAction(shielded.uuid, 'delete')).rejects.toThrow(NodeProtected);
    await expect(runner.doProvisioningAction(shielded.uuid, 'rebuild')).rejects.toThrow(NodeProtected);
    const retired = await createNode(stores, { retired: true }, { provisionState: 'manageable' });
    await expect(runner.doProvisioningAction(retired.uuid, 'provide')).rejects.toThrow(
      `The providing operation can't be performed on node ${retired.uuid} because it is retired.`,
    );
    await expect(runner.doProvisioningAction(retired.uuid, 'provide')).rejects.toThrow(NodeIsRetired);
  });

  it('records provision state changes, errors and served boot configs (once for a quick repeat) in the node history', async () => {
    const node = await createNode(stores);
    await runner.doProvisioningAction(node.uuid, 'manage');
    expect(await tasks.drain(5000)).toBe(true);
    await stores.nodes.update(node.id, { disablePowerOff: true });
    await runner.changePowerState(node.uuid, 'power off');
    expect(await tasks.drain(5000)).toBe(true);
    await stores.nodes.update(node.id, {
      driverInternalInfo: { fake_boot: 'deploy' },
    });
    const served = await handlers.get_boot_config({ node_id: node.uuid, name: FAKE_BOOT_CONFIG_NAME }, call);
    expect(served.content).toContain('deploy');
    // Asked again at once (firmware retrying): served, not recorded twice.
    await handlers.get_boot_config({ node_id: node.uuid, name: FAKE_BOOT_CONFIG_NAME }, call);
    // A refused name is not a served configuration.
    await expect(handlers.get_boot_config({ node_id: node.uuid, name: 'other' }, call)).rejects.toThrow();
    await history.flush();
    const entries = await stores.nodeHistory.list(node.id, { limit: 10, sortDir: 'asc' });
    expect(entries.map((e) => [e.eventType, e.severity, e.conductor])).toEqual([
      ['provisioning', 'info', 'c1'],
      ['provisioning', 'info', 'c1'],
      ['power', 'error', 'c1'],
      ['boot-config', 'info', 'c1'],
    ]);
    expect(entries[3]?.event).toBe(`Boot configuration "${FAKE_BOOT_CONFIG_NAME}" served.`);
    expect(entries[0]?.event).toBe('Provision state changed from "enroll" to "verifying" (target "manageable").');
    expect(entries[1]?.event).toBe('Provision state changed from "verifying" to "manageable".');
    expect(entries[2]?.event).toContain('Refusing to power off node');
    expect((await stored(node)).powerState).toBeNull();
  });
});
