import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import {
  createRootLogger,
  type NodeRecord,
  PowerState,
  PowerStateFailure,
  RedfishConnectionError,
  RedfishError,
} from '@bmaas/common';
import { createTestNode, createTestTask } from '@bmaas/driver-api/testing';
import { type RedfishBmc, SimulatedMachinePower, type SystemOptions, startRedfishBmc } from '@bmaas/redfish-bmc';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { parseRedfishDriverInfo } from './driver-info.js';
import { RedfishBiosInterface } from './redfish-bios.js';
import { RedfishClient } from './redfish-client.js';
import type { RedfishSettings } from './redfish-config.js';
import { RedfishFirmwareInterface } from './redfish-firmware.js';
import { RedfishInspectInterface } from './redfish-inspect.js';
import { RedfishManagementInterface } from './redfish-management.js';
import type { RedfishDeps } from './redfish-node.js';
import { RedfishPowerInterface } from './redfish-power.js';

const PASSWORD = 'Sup3r-secret-pw';
const SETTINGS: RedfishSettings = {
  auth_type: 'auto',
  connection_attempts: 3,
  connection_retry_interval: 0,
  request_timeout: 5,
  max_concurrent_requests: 2,
  bios_apply_timeout: 5,
  kernel_append_params: null,
};

const running: RedfishBmc[] = [];
const clients: RedfishClient[] = [];
const logs: string[] = [];
const logStream = new PassThrough();
logStream.on('data', (chunk: Buffer) => logs.push(chunk.toString('utf8')));
const logger = createRootLogger({ level: 'debug', format: 'json', stream: logStream });

afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
  await Promise.all(running.splice(0).map((bmc) => bmc.close()));
});
afterAll(() => {
  // No line of any test carried the password, whatever it logged.
  expect(logs.join('')).not.toContain(PASSWORD);
  expect(logs.length).toBeGreaterThan(0);
});

function systemOptions(id: string, power: SimulatedMachinePower): SystemOptions {
  return {
    id,
    power,
    hardware: {
      manufacturer: 'bmaas',
      model: 'Lab machine',
      serialNumber: `SN-${id}`,
      nics: ['52:54:00:AA:00:01', '52:54:00:aa:00:02'],
      disks: [
        { capacityBytes: 8 * 2 ** 30, serialNumber: 'disk-a', mediaType: 'SSD' },
        { capacityBytes: 20 * 2 ** 30, serialNumber: 'disk-b', mediaType: 'HDD' },
      ],
      processors: [{ model: 'QEMU Virtual CPU', cores: 2, threads: 4, maxSpeedMHz: 2400 }],
      memoryMiB: [512, 512],
    },
  };
}

async function setUp(
  options: {
    settings?: Partial<RedfishSettings>;
    driverInfo?: Record<string, unknown>;
    systems?: number;
    tls?: { key: string; cert: string };
  } = {},
) {
  const power = new SimulatedMachinePower();
  const systems = Array.from({ length: options.systems ?? 1 }, (_, i) =>
    systemOptions(`node-${i + 1}`, i === 0 ? power : new SimulatedMachinePower()),
  );
  const bmc = await startRedfishBmc({
    systems,
    username: 'admin',
    password: PASSWORD,
    ...(options.tls ? { tls: options.tls } : {}),
  });
  running.push(bmc);
  const client = new RedfishClient({ settings: { ...SETTINGS, ...options.settings }, logger, sleep: async () => {} });
  clients.push(client);
  const deps: RedfishDeps = {
    client,
    settings: { ...SETTINGS, ...options.settings },
    powerStateChangeTimeout: 2,
    pollIntervalMs: 20,
  };
  const node: NodeRecord = createTestNode({
    driver: 'redfish',
    driverInfo: {
      redfish_address: bmc.url,
      redfish_username: 'admin',
      redfish_password: PASSWORD,
      ...options.driverInfo,
    },
  });
  const powerInterface = new RedfishPowerInterface(deps);
  const task = () => createTestTask(node, [], { logger, driver: { power: powerInterface } });
  return {
    bmc,
    power,
    client,
    node,
    task,
    powerInterface,
    management: new RedfishManagementInterface(deps),
    inspect: new RedfishInspectInterface(deps),
    bios: new RedfishBiosInterface(deps),
    firmware: new RedfishFirmwareInterface(deps),
  };
}

const requestsOf = (bmc: RedfishBmc, method: string, pattern: RegExp) =>
  bmc.control.requests.filter((r) => r.method === method && pattern.test(r.path));

describe('redfish power', () => {
  it('powers on, reboots (ForceOff then On) and off, each read back from PowerState', async () => {
    const { bmc, power, task, powerInterface, node } = await setUp();
    expect(await powerInterface.getPowerState(task())).toBe(PowerState.OFF);
    await powerInterface.setPowerState(task(), PowerState.ON);
    expect(await power.powerState()).toBe('On');
    expect(node.powerState).toBe(PowerState.ON);
    await powerInterface.setPowerState(task(), PowerState.REBOOT);
    expect(power.boots).toHaveLength(2);
    await powerInterface.setPowerState(task(), PowerState.SOFT_POWER_OFF);
    expect(await powerInterface.getPowerState(task())).toBe(PowerState.OFF);
    const resets = requestsOf(bmc, 'POST', /ComputerSystem\.Reset$/);
    // On, ForceOff + On for the reboot, GracefulShutdown: one accepted reset each.
    expect(resets.map((r) => r.status)).toEqual([204, 204, 204, 204]);
  });

  it('fails with the reset named when the BMC accepts it and nothing happens', async () => {
    const { bmc, task, powerInterface } = await setUp();
    bmc.control.ignoreResets(true);
    const error = await powerInterface.setPowerState(task(), PowerState.ON, 1).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PowerStateFailure);
    expect((error as Error).message).toMatch(
      /accepted On but the system did not reach "power on" within 1 s.*PowerState Off/,
    );
  });
});

describe('redfish client', () => {
  it('opens one session, sends X-Auth-Token, opens a new one once after a 401, and logs out on close', async () => {
    const { bmc, task, powerInterface, client } = await setUp();
    await powerInterface.getPowerState(task());
    await powerInterface.getPowerState(task());
    expect(requestsOf(bmc, 'POST', /SessionService\/Sessions$/)).toHaveLength(1);
    bmc.control.expireSessions();
    expect(await powerInterface.getPowerState(task())).toBe(PowerState.OFF);
    expect(requestsOf(bmc, 'POST', /SessionService\/Sessions$/)).toHaveLength(2);
    expect(client.openSessions()).toBe(1);
    await client.close();
    expect(client.openSessions()).toBe(0);
    expect(requestsOf(bmc, 'DELETE', /SessionService\/Sessions\/.+/).map((r) => r.status)).toEqual([204]);
  });

  it('sends basic credentials when redfish_auth_type is basic: no session', async () => {
    const { bmc, task, powerInterface } = await setUp({ driverInfo: { redfish_auth_type: 'basic' } });
    expect(await powerInterface.getPowerState(task())).toBe(PowerState.OFF);
    expect(requestsOf(bmc, 'POST', /Sessions/)).toHaveLength(0);
  });

  it('sends a request again after 503s and fails with one line after connection_attempts', async () => {
    const { bmc, task, powerInterface } = await setUp();
    await powerInterface.getPowerState(task());
    bmc.control.failRequests(2, 503);
    expect(await powerInterface.getPowerState(task())).toBe(PowerState.OFF);
    bmc.control.failRequests(10, 500);
    const error = await powerInterface.getPowerState(task()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RedfishConnectionError);
    expect((error as Error).message).toMatch(
      /^BMC http:\/\/127\.0\.0\.1:\d+ gave no usable answer to GET \/redfish\/v1\/Systems\/node-1 after 3 attempts: HTTP 500/,
    );
  });

  it('says wrong credentials in one line, without retrying', async () => {
    const { bmc, task, powerInterface } = await setUp({ driverInfo: { redfish_password: 'wrong-password' } });
    const error = await powerInterface.getPowerState(task()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RedfishConnectionError);
    expect((error as Error).message).toMatch(
      /refused the credentials \(HTTP 401\): wrong redfish_username or redfish_password/,
    );
    expect(requestsOf(bmc, 'POST', /Sessions/)).toHaveLength(1);
  });

  it('never lets a node with a wrong password use the session of a node with the right one', async () => {
    const { bmc, client, powerInterface, node } = await setUp();
    await powerInterface.getPowerState(createTestTask(node, [], { logger }));
    const wrong = createTestNode({ driver: 'redfish', driverInfo: { ...node.driverInfo, redfish_password: 'nope' } });
    await expect(powerInterface.getPowerState(createTestTask(wrong, [], { logger }))).rejects.toThrow(
      /refused the credentials/,
    );
    expect(client.openSessions()).toBe(1);
    expect(requestsOf(bmc, 'POST', /Sessions$/).map((r) => r.status)).toEqual([201, 401]);
  });

  it('names an untrusted certificate and takes the CA given in redfish_verify_ca', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'redfish-tls-'));
    try {
      execFileSync(
        'openssl',
        [
          'req',
          '-x509',
          '-newkey',
          'rsa:2048',
          '-nodes',
          '-days',
          '2',
          '-subj',
          '/CN=127.0.0.1',
          '-addext',
          'subjectAltName=IP:127.0.0.1',
          '-keyout',
          join(dir, 'key.pem'),
          '-out',
          join(dir, 'cert.pem'),
        ],
        { stdio: 'ignore' },
      );
      const tls = {
        key: readFileSync(join(dir, 'key.pem'), 'utf8'),
        cert: readFileSync(join(dir, 'cert.pem'), 'utf8'),
      };
      const untrusted = await setUp({ tls });
      const error = await untrusted.powerInterface.getPowerState(untrusted.task()).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RedfishConnectionError);
      expect((error as Error).message).toMatch(
        /presented a TLS certificate that is not trusted \(DEPTH_ZERO_SELF_SIGNED_CERT\): set driver_info\.redfish_verify_ca/,
      );
      const trusted = await setUp({ tls, driverInfo: { redfish_verify_ca: join(dir, 'cert.pem') } });
      expect(await trusted.powerInterface.getPowerState(trusted.task())).toBe(PowerState.OFF);
      const unverified = await setUp({ tls, driverInfo: { redfish_verify_ca: 'false' } });
      expect(await unverified.powerInterface.getPowerState(unverified.task())).toBe(PowerState.OFF);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('finds the only system, and asks for redfish_system_id when there are several', async () => {
    const several = await setUp({ systems: 2 });
    const error = await several.powerInterface.getPowerState(several.task()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RedfishError);
    expect((error as Error).message).toMatch(
      /has 2 systems \(\/redfish\/v1\/Systems\/node-1, \/redfish\/v1\/Systems\/node-2\): set driver_info\.redfish_system_id/,
    );
    const named = await setUp({ systems: 2, driverInfo: { redfish_system_id: '/redfish/v1/Systems/node-2' } });
    await named.powerInterface.setPowerState(named.task(), PowerState.ON);
    expect(await named.power.powerState()).toBe('Off');
    expect(await named.bmc.control.system('node-2').powerState()).toBe('On');
  });

  it('keeps at most max_concurrent_requests requests in flight to one BMC', async () => {
    const { bmc, client, node, management, task } = await setUp({ settings: { max_concurrent_requests: 1 } });
    await management.getHealth(task());
    bmc.control.slowAnswers(100);
    const target = parseRedfishDriverInfo(node, 'auto');
    const started = Date.now();
    const paths = ['Processors', 'Memory', 'EthernetInterfaces', 'SimpleStorage'];
    await Promise.all(paths.map((path) => client.get(target, `/redfish/v1/Systems/node-1/${path}`)));
    // Four GETs, one at a time: at least 4 × 100 ms.
    expect(Date.now() - started).toBeGreaterThanOrEqual(400);
  });

  it('reads the power state and the health of one task with one GET, and reads again after a reset', async () => {
    const { bmc, task, management, powerInterface } = await setUp();
    const systemGets = () => requestsOf(bmc, 'GET', /^\/redfish\/v1\/Systems\/node-1$/).length;
    await powerInterface.getPowerState(task());
    const syncTask = task();
    const before = systemGets();
    expect(await powerInterface.getPowerState(syncTask)).toBe(PowerState.OFF);
    expect(await management.getHealth(syncTask)).toBe('OK');
    expect(systemGets()).toBe(before + 1);
    await powerInterface.setPowerState(syncTask, PowerState.ON);
    const afterReset = systemGets();
    expect(await powerInterface.getPowerState(syncTask)).toBe(PowerState.ON);
    expect(systemGets()).toBe(afterReset + 1);
    // Another task reads for itself.
    bmc.control.setHealth('Critical');
    expect(await management.getHealth(task())).toBe('Critical');
  });
});

describe('redfish management', () => {
  it('sets the boot device once or persistent, with the node boot mode, and reads it back', async () => {
    const { bmc, task, management, node } = await setUp();
    expect(await management.getSupportedBootDevices(task())).toEqual(expect.arrayContaining(['pxe', 'disk', 'cdrom']));
    node.bootMode = 'bios';
    await management.setBootDevice(task(), 'pxe', false);
    expect(await management.getBootDevice(task())).toEqual({ bootDevice: 'pxe', persistent: false });
    expect(bmc.control.system().bootOverride).toMatchObject({ target: 'Pxe', enabled: 'Once', mode: 'Legacy' });
    await management.setBootDevice(task(), 'disk', true);
    expect(await management.getBootDevice(task())).toEqual({ bootDevice: 'disk', persistent: true });
    await management.setBootMode(task(), 'uefi');
    expect(bmc.control.system().bootOverride).toMatchObject({ target: 'Hdd', enabled: 'Continuous', mode: 'UEFI' });
    expect(await management.getBootMode(task())).toBe('uefi');
  });

  it('injects an NMI, reads Status.Health and drives the indicator LED', async () => {
    const { bmc, power, task, management, powerInterface } = await setUp();
    await powerInterface.setPowerState(task(), PowerState.ON);
    await management.injectNmi(task());
    expect(power.nmis).toBe(1);
    expect(await management.getHealth(task())).toBe('OK');
    bmc.control.setHealth('Critical');
    expect(await management.getHealth(task())).toBe('Critical');
    const indicators = await management.getSupportedIndicators(task());
    expect(indicators).toEqual({ system: { 'node-1': { readonly: false, states: ['off', 'on', 'blinking'] } } });
    await management.setIndicatorState(task(), 'system', 'node-1', 'blinking');
    expect(await management.getIndicatorState(task(), 'system', 'node-1')).toBe('blinking');
  });
});

describe('redfish inspect, bios and firmware', () => {
  it('reads the inventory out of band in the agent format', async () => {
    const { task, inspect } = await setUp();
    const { inventory } = await inspect.inspectHardware(task());
    expect(inventory.interfaces.map((nic) => nic.mac_address).sort()).toEqual([
      '52:54:00:aa:00:01',
      '52:54:00:aa:00:02',
    ]);
    expect(inventory.cpu).toMatchObject({ count: 4, architecture: 'x86_64', model_name: 'QEMU Virtual CPU' });
    expect(inventory.memory).toEqual({ total: 2 ** 30, physical_mb: 1024 });
    expect(inventory.disks?.map((d) => [d.size, d.serial, d.rotational])).toEqual([
      [8 * 2 ** 30, 'disk-a', false],
      [20 * 2 ** 30, 'disk-b', true],
    ]);
    expect(inventory.system_vendor).toEqual({
      manufacturer: 'bmaas',
      product_name: 'Lab machine',
      serial_number: 'SN-node-1',
    });
  });

  it('reads the BIOS settings with their registry and applies a configuration at the next boot', async () => {
    const { bmc, power, task, bios } = await setUp();
    const settings = await bios.getSettings(task());
    expect(settings.find((s) => s.name === 'ProcVirtualization')).toMatchObject({ value: 'Enabled' });
    await bios.executeOutOfBandStep(task(), {
      interface: 'bios',
      step: 'apply_configuration',
      args: { settings: [{ name: 'ProcVirtualization', value: 'Disabled' }] },
    });
    expect(bmc.control.system().biosAttributes.ProcVirtualization).toBe('Disabled');
    // The machine was off: it was booted to apply the setting, then powered off again.
    expect(power.boots.length).toBeGreaterThanOrEqual(1);
    expect(await power.powerState()).toBe('Off');
    await expect(
      bios.executeOutOfBandStep(task(), {
        interface: 'bios',
        step: 'apply_configuration',
        args: { settings: [{ name: 'NoSuch', value: 1 }] },
      }),
    ).rejects.toThrow(/has no BIOS setting NoSuch/);
    await bios.executeOutOfBandStep(task(), { interface: 'bios', step: 'factory_reset', args: {} });
    expect(bmc.control.system().biosAttributes.ProcVirtualization).toBe('Enabled');
  });

  it('lists the firmware components of the FirmwareInventory', async () => {
    const { bmc, task, firmware } = await setUp();
    bmc.control.setFirmwareVersion('BMC', '2.1.0');
    const components = await firmware.getComponents(task());
    expect(components.map((c) => [c.component, c.currentVersion])).toEqual(
      expect.arrayContaining([
        ['bios', '1.0.0'],
        ['bmc', '2.1.0'],
      ]),
    );
  });
});
