import { afterEach, describe, expect, it } from 'vitest';
import { RESET_TYPES } from './machine-power.js';
import { type RedfishBmc, type RedfishBmcOptions, startRedfishBmc } from './redfish-bmc.js';
import { SimulatedMachinePower } from './simulated-power.js';

const running: RedfishBmc[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((bmc) => bmc.close()));
});

async function start(overrides: Partial<RedfishBmcOptions> = {}) {
  const power = new SimulatedMachinePower();
  const bmc = await startRedfishBmc({
    systems: [
      {
        id: 'node-1',
        power,
        hardware: {
          nics: ['52:54:00:AA:00:01', '52:54:00:aa:00:02'],
          disks: [{ capacityBytes: 8 * 2 ** 30, serialNumber: 'disk-a' }],
          processors: [{ model: 'QEMU Virtual CPU', cores: 2, threads: 4, maxSpeedMHz: 2400 }],
          memoryMiB: [512, 512],
        },
      },
    ],
    username: 'admin',
    password: 'secret',
    ...overrides,
  });
  running.push(bmc);
  const basic = `Basic ${Buffer.from('admin:secret').toString('base64')}`;
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${bmc.url}${path}`, {
      method,
      headers: { Authorization: basic, 'Content-Type': 'application/json', ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
  };
  return { bmc, power, call };
}

const SYSTEM = '/redfish/v1/Systems/node-1';

describe('Redfish BMC: authentication', () => {
  it('serves the service root without credentials and nothing else', async () => {
    const { bmc } = await start();
    const root = await fetch(`${bmc.url}/redfish/v1/`);
    expect(root.status).toBe(200);
    expect(root.headers.get('odata-version')).toBe('4.0');
    expect(((await root.json()) as { Links: { Sessions: unknown } }).Links.Sessions).toEqual({
      '@odata.id': '/redfish/v1/SessionService/Sessions',
    });
    const systems = await fetch(`${bmc.url}/redfish/v1/Systems`);
    expect(systems.status).toBe(401);
    expect(systems.headers.get('www-authenticate')).toMatch(/^Basic/);
    expect(((await systems.json()) as { error: { code: string } }).error.code).toBe('Base.1.8.InsufficientPrivilege');
  });

  it('refuses a wrong password in basic auth and in a session login', async () => {
    const { bmc } = await start();
    const wrong = `Basic ${Buffer.from('admin:nope').toString('base64')}`;
    expect((await fetch(`${bmc.url}/redfish/v1/Systems`, { headers: { Authorization: wrong } })).status).toBe(401);
    const login = await fetch(`${bmc.url}/redfish/v1/SessionService/Sessions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ UserName: 'admin', Password: 'nope' }),
    });
    expect(login.status).toBe(401);
  });

  it('gives sessions with X-Auth-Token that end on DELETE or when expired', async () => {
    const { bmc } = await start();
    const login = async () => {
      const res = await fetch(`${bmc.url}/redfish/v1/SessionService/Sessions`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ UserName: 'admin', Password: 'secret' }),
      });
      expect(res.status).toBe(201);
      return { token: res.headers.get('x-auth-token') as string, location: res.headers.get('location') as string };
    };
    const get = (token: string, path = SYSTEM) => fetch(`${bmc.url}${path}`, { headers: { 'X-Auth-Token': token } });

    const first = await login();
    expect(first.location).toMatch(/^\/redfish\/v1\/SessionService\/Sessions\/\d+$/);
    expect((await get(first.token)).status).toBe(200);
    expect(
      (await fetch(`${bmc.url}${first.location}`, { method: 'DELETE', headers: { 'X-Auth-Token': first.token } }))
        .status,
    ).toBe(204);
    expect((await get(first.token)).status).toBe(401);

    const second = await login();
    expect((await get(second.token)).status).toBe(200);
    bmc.control.expireSessions();
    expect((await get(second.token)).status).toBe(401);
    const third = await login();
    expect((await get(third.token)).status).toBe(200);
  });

  it('ends a session left idle longer than SessionTimeout', async () => {
    const { bmc, call } = await start({ sessionTimeoutSeconds: 1 });
    expect((await call('GET', '/redfish/v1/SessionService')).body.SessionTimeout).toBe(1);
    const res = await fetch(`${bmc.url}/redfish/v1/SessionService/Sessions`, {
      method: 'POST',
      body: JSON.stringify({ UserName: 'admin', Password: 'secret' }),
      headers: { 'Content-Type': 'application/json' },
    });
    const token = res.headers.get('x-auth-token') as string;
    await new Promise((r) => setTimeout(r, 1100));
    expect((await fetch(`${bmc.url}${SYSTEM}`, { headers: { 'X-Auth-Token': token } })).status).toBe(401);
  });
});

describe('Redfish BMC: power and boot', () => {
  it('advertises its reset types and refuses another one', async () => {
    const { call } = await start({
      systems: [{ id: 'node-1', power: new SimulatedMachinePower({ resetTypes: ['On', 'ForceOff'] }) }],
    });
    const system = (await call('GET', SYSTEM)).body;
    expect(system.Actions['#ComputerSystem.Reset']['ResetType@Redfish.AllowableValues']).toEqual(['On', 'ForceOff']);
    const refused = await call('POST', `${SYSTEM}/Actions/ComputerSystem.Reset`, { ResetType: 'ForceRestart' });
    expect(refused.status).toBe(400);
    expect(refused.body.error['@Message.ExtendedInfo'][0].MessageId).toBe('Base.1.8.ActionParameterValueNotInList');
  });

  it('powers on and off, reading the state back from the machine', async () => {
    const { call, power } = await start();
    expect((await call('GET', SYSTEM)).body.PowerState).toBe('Off');
    expect((await call('POST', `${SYSTEM}/Actions/ComputerSystem.Reset`, { ResetType: 'On' })).status).toBe(204);
    expect(await power.powerState()).toBe('On');
    expect((await call('GET', SYSTEM)).body.PowerState).toBe('On');
    await call('POST', `${SYSTEM}/Actions/ComputerSystem.Reset`, { ResetType: 'ForceOff' });
    expect((await call('GET', SYSTEM)).body.PowerState).toBe('Off');
  });

  it('boots once from the override, then from the machine order; a continuous one stays', async () => {
    const { call, power } = await start();
    const reset = (type: string) => call('POST', `${SYSTEM}/Actions/ComputerSystem.Reset`, { ResetType: type });
    expect(
      (await call('PATCH', SYSTEM, { Boot: { BootSourceOverrideTarget: 'Pxe', BootSourceOverrideEnabled: 'Once' } }))
        .status,
    ).toBe(204);
    await reset('On');
    await reset('ForceRestart');
    expect(power.boots.map((b) => b.target)).toEqual(['Pxe', 'None']);
    expect((await call('GET', SYSTEM)).body.Boot).toMatchObject({
      BootSourceOverrideTarget: 'None',
      BootSourceOverrideEnabled: 'Disabled',
    });

    await call('PATCH', SYSTEM, {
      Boot: {
        BootSourceOverrideTarget: 'Hdd',
        BootSourceOverrideEnabled: 'Continuous',
        BootSourceOverrideMode: 'Legacy',
      },
    });
    await reset('PowerCycle');
    await reset('ForceRestart');
    expect(power.boots.slice(2)).toEqual([
      { target: 'Hdd', mode: 'Legacy' },
      { target: 'Hdd', mode: 'Legacy' },
    ]);
    // a reset that does not boot (power off) leaves a once override for the next boot
    await call('PATCH', SYSTEM, { Boot: { BootSourceOverrideTarget: 'Cd', BootSourceOverrideEnabled: 'Once' } });
    await reset('ForceOff');
    expect((await call('GET', SYSTEM)).body.Boot.BootSourceOverrideEnabled).toBe('Once');
  });

  it('refuses a boot target, mode or property it does not have, and changes nothing then', async () => {
    const { call } = await start({
      systems: [{ id: 'node-1', power: new SimulatedMachinePower({ bootModes: ['Legacy'] }) }],
    });
    const bad = await call('PATCH', SYSTEM, { Boot: { BootSourceOverrideTarget: 'Floppy' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error['@Message.ExtendedInfo'][0]).toMatchObject({
      MessageId: 'Base.1.8.PropertyValueNotInList',
      RelatedProperties: ['#/Boot/BootSourceOverrideTarget'],
    });
    const mode = await call('PATCH', SYSTEM, {
      Boot: { BootSourceOverrideTarget: 'Pxe', BootSourceOverrideMode: 'UEFI' },
    });
    expect(mode.status).toBe(400);
    expect((await call('GET', SYSTEM)).body.Boot).toMatchObject({
      BootSourceOverrideTarget: 'None',
      BootSourceOverrideMode: 'Legacy',
      'BootSourceOverrideMode@Redfish.AllowableValues': ['Legacy'],
    });
    expect((await call('PATCH', SYSTEM, { PowerState: 'On' })).body.error.code).toBe('Base.1.8.PropertyNotWritable');
    expect((await call('PATCH', SYSTEM, { Frobnicate: 1 })).body.error.code).toBe('Base.1.8.PropertyUnknown');
  });
});

describe('Redfish BMC: BIOS and firmware', () => {
  it('applies pending BIOS settings at the next boot, not before', async () => {
    const { call } = await start();
    const patch = await call('PATCH', `${SYSTEM}/Bios/Settings`, { Attributes: { ProcTurboMode: 'Disabled' } });
    expect(patch.status).toBe(204);
    expect((await call('GET', `${SYSTEM}/Bios/Settings`)).body.Attributes).toEqual({ ProcTurboMode: 'Disabled' });
    expect((await call('GET', `${SYSTEM}/Bios`)).body.Attributes.ProcTurboMode).toBe('Enabled');
    await call('POST', `${SYSTEM}/Actions/ComputerSystem.Reset`, { ResetType: 'ForceOff' });
    expect((await call('GET', `${SYSTEM}/Bios`)).body.Attributes.ProcTurboMode).toBe('Enabled');
    await call('POST', `${SYSTEM}/Actions/ComputerSystem.Reset`, { ResetType: 'On' });
    const bios = (await call('GET', `${SYSTEM}/Bios`)).body;
    expect(bios.Attributes.ProcTurboMode).toBe('Disabled');
    expect(bios['@Redfish.Settings'].SettingsObject['@odata.id']).toBe(`${SYSTEM}/Bios/Settings`);
    expect((await call('GET', `${SYSTEM}/Bios/Settings`)).body.Attributes).toEqual({});
  });

  it('refuses unknown BIOS attributes and wrong types; ResetBios restores the defaults at the next boot', async () => {
    const { call } = await start();
    expect((await call('PATCH', `${SYSTEM}/Bios/Settings`, { Attributes: { NoSuch: 'x' } })).status).toBe(400);
    expect((await call('PATCH', `${SYSTEM}/Bios/Settings`, { Attributes: { PxeRetryCount: 'many' } })).status).toBe(
      400,
    );
    await call('PATCH', `${SYSTEM}/Bios/Settings`, { Attributes: { PxeRetryCount: 7 } });
    await call('POST', `${SYSTEM}/Actions/ComputerSystem.Reset`, { ResetType: 'On' });
    expect((await call('GET', `${SYSTEM}/Bios`)).body.Attributes.PxeRetryCount).toBe(7);
    expect((await call('POST', `${SYSTEM}/Bios/Actions/Bios.ResetBios`, {})).status).toBe(204);
    await call('POST', `${SYSTEM}/Actions/ComputerSystem.Reset`, { ResetType: 'ForceRestart' });
    expect((await call('GET', `${SYSTEM}/Bios`)).body.Attributes.PxeRetryCount).toBe(3);
  });

  it('publishes the BIOS attribute registry the Bios resource names, and holds settings to it', async () => {
    const { call } = await start();
    const registryId = (await call('GET', `${SYSTEM}/Bios`)).body.AttributeRegistry;
    expect(registryId).toBe('BiosAttributeRegistry.v1_0_0');
    const file = (await call('GET', `/redfish/v1/Registries/${registryId}`)).body;
    expect(file).toMatchObject({ Id: registryId, Languages: ['en'] });
    const registry = (await call('GET', file.Location[0].Uri)).body;
    expect(registry['@odata.type']).toBe('#AttributeRegistry.v1_3_0.AttributeRegistry');
    const turbo = registry.RegistryEntries.Attributes.find(
      (a: { AttributeName: string }) => a.AttributeName === 'ProcTurboMode',
    );
    expect(turbo).toMatchObject({ Type: 'Enumeration', DefaultValue: 'Enabled' });
    expect(turbo.Value.map((v: { ValueName: string }) => v.ValueName)).toEqual(['Enabled', 'Disabled']);
    const bad = await call('PATCH', `${SYSTEM}/Bios/Settings`, { Attributes: { ProcTurboMode: 'Sometimes' } });
    expect(bad.body.error.code).toBe('Base.1.8.PropertyValueNotInList');
    expect((await call('PATCH', `${SYSTEM}/Bios/Settings`, { Attributes: { PxeRetryCount: 11 } })).status).toBe(400);
    expect((await call('GET', `${SYSTEM}/Bios/Settings`)).body.Attributes).toEqual({});
  });

  it('lists firmware; only WriteProtected is writable; the control API changes a version', async () => {
    const { bmc, call } = await start();
    const inventory = (await call('GET', '/redfish/v1/UpdateService/FirmwareInventory')).body;
    expect(inventory.Members.map((m: { '@odata.id': string }) => m['@odata.id'])).toEqual([
      '/redfish/v1/UpdateService/FirmwareInventory/BIOS',
      '/redfish/v1/UpdateService/FirmwareInventory/BMC',
    ]);
    const path = '/redfish/v1/UpdateService/FirmwareInventory/BIOS';
    expect((await call('PATCH', path, { Version: '9' })).body.error.code).toBe('Base.1.8.PropertyNotWritable');
    expect((await call('PATCH', path, { WriteProtected: true })).status).toBe(204);
    bmc.control.setFirmwareVersion('BIOS', '2.1.0');
    expect((await call('GET', path)).body).toMatchObject({ Version: '2.1.0', WriteProtected: true });
    expect((await call('GET', SYSTEM)).body.BiosVersion).toBe('2.1.0');
  });
});

describe('Redfish BMC: faults', () => {
  it('answers 503 for the next N requests, then normally', async () => {
    const { bmc, call } = await start();
    bmc.control.failRequests(2);
    const first = await call('GET', SYSTEM);
    expect(first.status).toBe(503);
    expect(first.headers.get('retry-after')).toBe('1');
    expect((await call('GET', SYSTEM)).status).toBe(503);
    expect((await call('GET', SYSTEM)).status).toBe(200);
    bmc.control.failRequests(1, 500);
    expect((await call('GET', SYSTEM)).body.error.code).toBe('Base.1.8.InternalError');
  });

  it('answers slowly when told to', async () => {
    const { bmc, call } = await start();
    bmc.control.slowAnswers(300);
    const started = Date.now();
    expect((await call('GET', SYSTEM)).status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    bmc.control.clearFaults();
  });

  it('accepts a reset and leaves the machine as it was', async () => {
    const { bmc, call, power } = await start();
    bmc.control.ignoreResets(true);
    expect((await call('POST', `${SYSTEM}/Actions/ComputerSystem.Reset`, { ResetType: 'On' })).status).toBe(204);
    expect((await call('GET', SYSTEM)).body.PowerState).toBe('Off');
    expect(power.boots).toEqual([]);
    bmc.control.ignoreResets(false);
    await call('POST', `${SYSTEM}/Actions/ComputerSystem.Reset`, { ResetType: 'On' });
    expect(await power.powerState()).toBe('On');
  });

  it('reports the health a test sets', async () => {
    const { bmc, call } = await start();
    bmc.control.setHealth('Critical');
    expect((await call('GET', SYSTEM)).body.Status).toEqual({
      State: 'Enabled',
      Health: 'Critical',
      HealthRollup: 'Critical',
    });
    expect((await call('GET', '/redfish/v1/Chassis/node-1')).body.Status.Health).toBe('Critical');
  });

  it('records every request it answered', async () => {
    const { bmc, call } = await start();
    await call('GET', SYSTEM);
    await call('GET', '/redfish/v1/nowhere');
    expect(bmc.control.requests).toEqual([
      { method: 'GET', path: SYSTEM, status: 200 },
      { method: 'GET', path: '/redfish/v1/nowhere', status: 404 },
    ]);
  });
});

describe('Redfish BMC: resources', () => {
  it('serves several systems, each with its manager and chassis and its own firmware ids', async () => {
    const { call } = await start({
      systems: [
        { id: 'a', power: new SimulatedMachinePower() },
        { id: 'b', power: new SimulatedMachinePower({ powerState: 'On' }) },
      ],
    });
    const members = (path: string) =>
      call('GET', path).then((r) => r.body.Members.map((m: { '@odata.id': string }) => m['@odata.id']));
    expect(await members('/redfish/v1/Systems')).toEqual(['/redfish/v1/Systems/a', '/redfish/v1/Systems/b']);
    expect(await members('/redfish/v1/Managers')).toEqual(['/redfish/v1/Managers/a', '/redfish/v1/Managers/b']);
    expect(await members('/redfish/v1/Chassis')).toEqual(['/redfish/v1/Chassis/a', '/redfish/v1/Chassis/b']);
    expect(await members('/redfish/v1/UpdateService/FirmwareInventory')).toHaveLength(4);
    expect((await call('GET', '/redfish/v1/Systems/b')).body.PowerState).toBe('On');
    expect((await call('GET', '/redfish/v1/Managers/b')).body.Links.ManagerForServers).toEqual([
      { '@odata.id': '/redfish/v1/Systems/b' },
    ]);
  });

  it('reports NICs with their MACs, CPUs, memory and disks', async () => {
    const { call } = await start();
    const nic = (await call('GET', `${SYSTEM}/EthernetInterfaces/NIC0`)).body;
    expect(nic.MACAddress).toBe('52:54:00:aa:00:01');
    expect((await call('GET', `${SYSTEM}/EthernetInterfaces`)).body['Members@odata.count']).toBe(2);
    expect((await call('GET', `${SYSTEM}/Processors/CPU0`)).body).toMatchObject({ TotalCores: 2, TotalThreads: 4 });
    expect((await call('GET', SYSTEM)).body.MemorySummary.TotalSystemMemoryGiB).toBe(1);
    expect((await call('GET', `${SYSTEM}/SimpleStorage/Controller0`)).body.Devices[0].CapacityBytes).toBe(8 * 2 ** 30);
    const drive = (await call('GET', `${SYSTEM}/Storage/Controller0/Drives/disk0`)).body;
    expect(drive).toMatchObject({ SerialNumber: 'disk-a', CapacityBytes: 8 * 2 ** 30 });
    expect((await call('GET', `${SYSTEM}/Processors/CPU9`)).status).toBe(404);
  });

  it('every resource reachable from the root carries its own @odata.id, a versioned @odata.type and @odata.context', async () => {
    const { call } = await start();
    const seen = new Set<string>();
    const queue = ['/redfish/v1/'];
    while (queue.length > 0) {
      const path = queue.shift() as string;
      if (seen.has(path)) continue;
      seen.add(path);
      const { status, body } = await call('GET', path);
      expect(status, path).toBe(200);
      expect(body['@odata.id'], path).toBe(path);
      expect(body['@odata.type'], path).toMatch(/^#([A-Za-z]+)(\.v\d+_\d+_\d+)?\.\1$/);
      const namespace = /^#([A-Za-z]+)/.exec(body['@odata.type'])?.[1];
      expect(body['@odata.context'], path).toBe(`/redfish/v1/$metadata#${namespace}.${namespace}`);
      if (namespace?.endsWith('Collection')) expect(body['Members@odata.count'], path).toBe(body.Members.length);
      else expect(typeof body.Id === 'string' && typeof body.Name === 'string', path).toBe(true);
      JSON.stringify(body, (key, value) => {
        if (key === '@odata.id' && typeof value === 'string' && !value.includes('#')) queue.push(value);
        return value;
      });
    }
    expect(seen.size).toBeGreaterThan(20);
    expect(RESET_TYPES).toContain('On');
  });
});
