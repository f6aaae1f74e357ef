import { UnsupportedDriverExtension } from '@bmaas/common';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ApiHarness, faultString } from '../testing/api-harness.js';
import { MAX_MINOR } from '../versions.js';

describe('node sub-resources', () => {
  let api: ApiHarness;
  let uuid: string;
  const LATEST = `1.${MAX_MINOR}`;
  beforeAll(async () => {
    api = await ApiHarness.start({ overrides: { api: { max_limit: 2 } } });
    await api.registerConductor('cond-1');
  });
  afterAll(async () => {
    await api?.close();
  });
  beforeEach(async () => {
    await api.database.db('nodes').delete();
    api.conductors.calls.length = 0;
    api.conductors.clearFailures();
    const created = await api.request('POST', '/v1/nodes', { body: { driver: 'fake-hardware', name: 'sub' } });
    uuid = created.body.uuid as string;
  });

  const req = (method: string, path: string, body?: unknown, version = LATEST) =>
    api.request(method, path, { ...(body === undefined ? {} : { body }), version });
  const nodeId = async () => (await api.stores.nodes.getByUuid(uuid))!.id;

  describe('traits (1.37)', () => {
    it('replaces, adds, lists and removes validated traits', async () => {
      expect((await req('PUT', `/v1/nodes/sub/traits`, { traits: ['CUSTOM_GPU', 'HW_CPU_X86_AVX2'] })).status).toBe(
        204,
      );
      expect((await req('GET', '/v1/nodes/sub/traits')).body).toEqual({ traits: ['CUSTOM_GPU', 'HW_CPU_X86_AVX2'] });
      expect((await req('PUT', '/v1/nodes/sub/traits/CUSTOM_FAST')).status).toBe(204);
      expect((await req('PUT', '/v1/nodes/sub/traits/CUSTOM_FAST')).status).toBe(204);
      expect((await req('GET', `/v1/nodes/${uuid}`)).body.traits).toEqual([
        'CUSTOM_FAST',
        'CUSTOM_GPU',
        'HW_CPU_X86_AVX2',
      ]);
      expect((await req('DELETE', '/v1/nodes/sub/traits/CUSTOM_GPU')).status).toBe(204);
      const gone = await req('DELETE', '/v1/nodes/sub/traits/CUSTOM_GPU');
      expect(gone.status).toBe(404);
      expect(faultString(gone)).toBe(`Node ${uuid} doesn't have a trait 'CUSTOM_GPU'`);
      expect((await req('DELETE', '/v1/nodes/sub/traits')).status).toBe(204);
      expect((await req('GET', '/v1/nodes/sub/traits')).body).toEqual({ traits: [] });
    });

    it('refuses bad names, too many traits, a locked node, and versions before 1.37', async () => {
      const bad = await req('PUT', '/v1/nodes/sub/traits/lowercase');
      expect(bad.status).toBe(400);
      expect(faultString(bad)).toContain('CUSTOM_');
      expect((await req('PUT', '/v1/nodes/sub/traits', { traits: ['CUSTOM_OK', 'NOT A TRAIT'] })).status).toBe(400);
      expect((await req('PUT', '/v1/nodes/sub/traits', { trait: [] })).status).toBe(400);
      const many = Array.from({ length: 51 }, (_, i) => `CUSTOM_T${i}`);
      const tooMany = await req('PUT', '/v1/nodes/sub/traits', { traits: many });
      expect(tooMany.status).toBe(400);
      expect(faultString(tooMany)).toContain('maximum number of traits per node (50 vs. 51)');
      await api.stores.nodes.update(await nodeId(), { reservation: 'cond-1' });
      expect((await req('PUT', '/v1/nodes/sub/traits/CUSTOM_X')).status).toBe(409);
      await api.stores.nodes.update(await nodeId(), { reservation: null });
      expect((await req('GET', '/v1/nodes/sub/traits', undefined, '1.36')).status).toBe(404);
      expect((await req('POST', '/v1/nodes/sub/traits', {})).status).toBe(405);
    });
  });

  describe('history (1.78)', () => {
    it('lists entries oldest first, short or detailed, in pages, and shows one', async () => {
      const id = await nodeId();
      const long = 'x'.repeat(300);
      await api.stores.nodeHistory.append([
        { nodeId: id, conductor: 'cond-1', eventType: 'provisioning', severity: 'info', event: 'first' },
        { nodeId: id, conductor: 'cond-1', eventType: 'provisioning', severity: 'error', event: long },
        { nodeId: id, conductor: 'cond-2', eventType: 'boot-config', severity: 'info', event: 'third' },
      ]);
      const page = await req('GET', '/v1/nodes/sub/history');
      expect(page.status).toBe(200);
      expect(page.body.history).toHaveLength(2);
      expect(Object.keys(page.body.history[0]).sort()).toEqual(['created_at', 'event', 'links', 'severity', 'uuid']);
      expect(page.body.history[0].event).toBe('first');
      expect(page.body.history[1].event).toBe(`${'x'.repeat(251)}...`);
      expect(page.body.next).toContain('marker=');
      const next = await api.request(
        'GET',
        new URL(page.body.next as string).pathname + new URL(page.body.next as string).search,
        {
          version: LATEST,
        },
      );
      expect(next.body.history.map((e: { event: string }) => e.event)).toEqual(['third']);
      const detail = await req('GET', '/v1/nodes/sub/history?detail=true');
      expect(detail.body.history[0]).toMatchObject({ event_type: 'provisioning', conductor: 'cond-1', user: null });
      expect(detail.body.next).toContain('detail=true');
      expect(detail.body.history[1].event).toBe(long);
      const one = await req('GET', `/v1/nodes/sub/history/${detail.body.history[0].uuid}`);
      expect(one.body).toMatchObject({ event: 'first', conductor: 'cond-1', severity: 'info' });
      expect((await req('GET', '/v1/nodes/sub/history/11111111-2222-4333-8444-555555555555')).status).toBe(404);
      expect((await req('GET', '/v1/nodes/sub/history', undefined, '1.77')).status).toBe(404);
      expect((await req('GET', '/v1/nodes/sub/history?marker=bad')).status).toBe(400);
      expect((await req('GET', '/v1/nodes/sub/history?sort_key=event')).status).toBe(400);
    });
  });

  describe('through the owning conductor', () => {
    it('attaches, lists and detaches VIFs (1.28; port_uuid 1.67)', async () => {
      api.conductors.respondWith('vif_list', () => [{ id: 'vif-1', extra: 'hidden' }]);
      expect((await req('GET', '/v1/nodes/sub/vifs')).body).toEqual({ vifs: [{ id: 'vif-1' }] });
      expect((await req('POST', '/v1/nodes/sub/vifs', { id: 'vif-1' })).status).toBe(204);
      expect(api.conductors.callsOf('vif_attach').at(-1)?.params).toEqual({ node_id: uuid, vif_info: { id: 'vif-1' } });
      expect((await req('DELETE', '/v1/nodes/sub/vifs/vif-1')).status).toBe(204);
      expect(api.conductors.callsOf('vif_detach').at(-1)?.params).toEqual({ node_id: uuid, vif_id: 'vif-1' });
      const port = '11111111-2222-4333-8444-555555555555';
      expect((await req('POST', '/v1/nodes/sub/vifs', { id: 'v', port_uuid: port }, '1.66')).status).toBe(406);
      const both = await req('POST', '/v1/nodes/sub/vifs', { id: 'v', port_uuid: port, portgroup_uuid: port });
      expect(faultString(both)).toBe('Cannot specify both port_uuid and portgroup_uuid');
      expect((await req('POST', '/v1/nodes/sub/vifs', {})).status).toBe(400);
      expect((await req('GET', '/v1/nodes/sub/vifs', undefined, '1.27')).status).toBe(404);
    });

    it('sets the target RAID config (1.12) and passes the interface refusal on', async () => {
      const config = { logical_disks: [{ size_gb: 100, raid_level: '1' }] };
      expect((await req('PUT', '/v1/nodes/sub/states/raid', config)).status).toBe(204);
      expect(api.conductors.callsOf('set_target_raid_config').at(-1)?.params).toEqual({
        node_id: uuid,
        target_raid_config: config,
      });
      api.conductors.failWith('set_target_raid_config', new UnsupportedDriverExtension('fake-hardware', 'raid'));
      const refused = await req('PUT', '/v1/nodes/sub/states/raid', config);
      expect(refused.status).toBe(400);
      expect(faultString(refused)).toBe('Driver fake-hardware does not support raid (disabled or not implemented).');
      expect((await req('PUT', '/v1/nodes/sub/states/raid', config, '1.11')).status).toBe(406);
      expect((await req('PUT', '/v1/nodes/sub/states/raid', [1])).status).toBe(400);
    });

    it('changes boot mode and secure boot (1.76) with 202', async () => {
      const mode = await req('PUT', '/v1/nodes/sub/states/boot_mode', { target: 'uefi' });
      expect(mode.status).toBe(202);
      expect(mode.headers.get('location')).toBe(`${api.baseUrl}/v1/nodes/sub/states`);
      expect(api.conductors.callsOf('set_boot_mode').at(-1)?.params).toEqual({ node_id: uuid, mode: 'uefi' });
      expect((await req('PUT', '/v1/nodes/sub/states/secure_boot', { target: true })).status).toBe(202);
      expect(api.conductors.callsOf('set_secure_boot_state').at(-1)?.params).toEqual({ node_id: uuid, state: true });
      expect((await req('PUT', '/v1/nodes/sub/states/boot_mode', { target: 'legacy' })).status).toBe(400);
      expect((await req('PUT', '/v1/nodes/sub/states/secure_boot', { target: 'yes' })).status).toBe(400);
      expect((await req('PUT', '/v1/nodes/sub/states/boot_mode', { target: 'uefi' }, '1.75')).status).toBe(406);
    });

    it('answers the console state and refuses to enable a console the interface lacks', async () => {
      api.conductors.respondWith('get_console_information', () => ({ console_enabled: false, console_info: null }));
      expect((await req('GET', '/v1/nodes/sub/states/console')).body).toEqual({
        console_enabled: false,
        console_info: null,
      });
      api.conductors.failWith('set_console_mode', new UnsupportedDriverExtension('fake-hardware', 'console'));
      const refused = await req('PUT', '/v1/nodes/sub/states/console', { enabled: true });
      expect(refused.status).toBe(400);
      expect(faultString(refused)).toBe('Driver fake-hardware does not support console (disabled or not implemented).');
      api.conductors.clearFailures();
      expect((await req('PUT', '/v1/nodes/sub/states/console', { enabled: 'off' })).status).toBe(202);
      expect(api.conductors.callsOf('set_console_mode').at(-1)?.params).toEqual({ node_id: uuid, enabled: false });
      expect((await req('PUT', '/v1/nodes/sub/states/console', {})).status).toBe(400);
    });

    it('runs vendor passthru methods and needs a method name', async () => {
      api.conductors.respondWith('get_node_vendor_passthru_methods', () => ({}));
      expect((await req('GET', '/v1/nodes/sub/vendor_passthru/methods')).body).toEqual({});
      const noMethod = await req('POST', '/v1/nodes/sub/vendor_passthru', {});
      expect(faultString(noMethod)).toBe('Method not specified');
      api.conductors.respondWith('vendor_passthru', (params) => ({ return: { echo: params.info }, async: false }));
      const ran = await req('POST', '/v1/nodes/sub/vendor_passthru?method=first_method', { bar: 1 });
      expect(ran.status).toBe(200);
      expect(ran.body).toEqual({ echo: { bar: 1 } });
      expect(api.conductors.callsOf('vendor_passthru').at(-1)?.params).toMatchObject({
        driver_method: 'first_method',
        http_method: 'POST',
      });
      expect((await req('POST', '/v1/nodes/sub/vendor_passthru/first_method', { bar: 2 })).body).toEqual({
        echo: { bar: 2 },
      });
      api.conductors.failWith('vendor_passthru', new UnsupportedDriverExtension('fake-hardware', 'vendor'));
      expect((await req('POST', '/v1/nodes/sub/vendor_passthru?method=x', {})).status).toBe(400);
    });
  });

  it('lists the cached BIOS settings (1.40, registry fields 1.74) and firmware components (1.86, identity 1.114)', async () => {
    expect((await req('GET', '/v1/nodes/sub/bios')).body).toEqual({ bios: [] });
    const setting = await req('GET', '/v1/nodes/sub/bios/ProcVirtualization');
    expect(setting.status).toBe(404);
    expect(faultString(setting)).toBe(`Node ${uuid} doesn't have a BIOS setting 'ProcVirtualization'`);
    const registry = {
      attributeType: 'Enumeration',
      allowableValues: ['Enabled', 'Disabled'],
      lowerBound: null,
      upperBound: null,
      minLength: null,
      maxLength: null,
      readOnly: false,
      resetRequired: true,
      unique: false,
    };
    await api.stores.hardwareSettings.replaceBiosSettings(await nodeId(), [
      { name: 'ProcVirtualization', value: 'Enabled', ...registry },
      { name: 'BootMode', value: 'Uefi', ...registry, allowableValues: ['Bios', 'Uefi'] },
    ]);
    const list = (await req('GET', '/v1/nodes/sub/bios')).body.bios as Record<string, unknown>[];
    expect(list.map((s) => [s.name, s.value])).toEqual([
      ['BootMode', 'Uefi'],
      ['ProcVirtualization', 'Enabled'],
    ]);
    expect(Object.keys(list[0] ?? {}).sort()).toEqual(['created_at', 'links', 'name', 'updated_at', 'value']);
    const detailed = (await req('GET', '/v1/nodes/sub/bios?detail=true')).body.bios as Record<string, unknown>[];
    expect(detailed[1]).toMatchObject({
      allowable_values: ['Enabled', 'Disabled'],
      reset_required: true,
      read_only: false,
    });
    const picked = (await req('GET', '/v1/nodes/sub/bios?fields=name,reset_required')).body.bios as Record<
      string,
      unknown
    >[];
    expect(Object.keys(picked[0] ?? {}).sort()).toEqual(['links', 'name', 'reset_required']);
    expect((await req('GET', '/v1/nodes/sub/bios?detail=true', undefined, '1.73')).status).toBe(406);
    const one = await req('GET', '/v1/nodes/sub/bios/ProcVirtualization');
    expect(one.body.ProcVirtualization).toMatchObject({
      name: 'ProcVirtualization',
      value: 'Enabled',
      attribute_type: 'Enumeration',
    });
    expect((await req('GET', '/v1/nodes/sub/bios', undefined, '1.39')).status).toBe(404);

    expect((await req('GET', '/v1/nodes/sub/firmware')).body).toEqual({ firmware: [] });
    await api.stores.hardwareSettings.replaceFirmwareComponents(await nodeId(), [
      {
        component: 'bios',
        initialVersion: '1.2',
        currentVersion: '1.3',
        lastVersionFlashed: null,
        vendor: 'Lab',
        model: 'LB-1',
        serialNumber: 'SN1',
      },
    ]);
    const [bios] = (await req('GET', '/v1/nodes/sub/firmware')).body.firmware as Record<string, unknown>[];
    expect(bios).toMatchObject({ component: 'bios', initial_version: '1.2', current_version: '1.3', vendor: 'Lab' });
    const [older] = (await req('GET', '/v1/nodes/sub/firmware', undefined, '1.113')).body.firmware as Record<
      string,
      unknown
    >[];
    expect(older).not.toHaveProperty('vendor');
    expect((await req('GET', '/v1/nodes/sub/firmware', undefined, '1.85')).status).toBe(404);
  });

  it('takes external events (1.54): validated, then 204', async () => {
    const event = {
      event: 'network.bind_port',
      port_id: '11111111-2222-4333-8444-555555555555',
      mac_address: '52:54:00:12:34:56',
      status: 'ACTIVE',
      device_id: null,
    };
    expect((await req('POST', '/v1/events', { events: [event] })).status).toBe(204);
    expect((await req('POST', '/v1/events', { events: [{ ...event, event: 'compute.reboot' }] })).status).toBe(400);
    expect((await req('POST', '/v1/events', { events: [] })).status).toBe(400);
    expect((await req('POST', '/v1/events', { events: [event] }, '1.53')).status).toBe(404);
  });
});
