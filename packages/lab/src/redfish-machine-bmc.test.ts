// A lab machine behind a Redfish BMC: a real QEMU machine (user-mode networking, no root)
// powered and booted through Redfish. Skipped without QEMU, a failure under CI=true.
import { existsSync } from 'node:fs';
import { mkdtemp, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  inventoryOf,
  type RedfishMachineBmc,
  type RedfishMachineBmcOptions,
  startRedfishMachineBmc,
} from './redfish-machine-bmc.js';

describe('the inventory a lab Redfish BMC reports', () => {
  it('is the hardware QEMU gives the machine: disks in order, NICs, CPUs, memory, serial number', () => {
    const base: RedfishMachineBmcOptions = {
      name: 'm',
      mac: '52:54:00:00:00:01',
      net: { kind: 'user', forwards: [] },
      workDir: '/tmp',
    };
    expect(inventoryOf(base, undefined)).toMatchObject({ nics: ['52:54:00:00:00:01'], disks: [], memoryMiB: [128] });
    const inventory = inventoryOf(
      {
        ...base,
        hardware: {
          cpus: 2,
          memoryMb: 768,
          disks: [{ sizeMb: 100, serial: 'extra-1' }],
          extraMacs: ['52:54:00:00:00:02'],
          serial: 'SN-1',
        },
      },
      4096,
    );
    expect(inventory).toMatchObject({
      serialNumber: 'SN-1',
      processors: [{ cores: 2, threads: 2 }],
      memoryMiB: [768],
      nics: ['52:54:00:00:00:01', '52:54:00:00:00:02'],
      disks: [
        { id: 'vda', capacityBytes: 4096, serialNumber: 'm-vda' },
        { id: 'vdb', capacityBytes: 100 * 1024 * 1024, serialNumber: 'extra-1' },
      ],
    });
  });
});

const QEMU = '/usr/bin/qemu-system-x86_64';
const skip = !existsSync(QEMU) && process.env.CI !== 'true';
if (skip) console.warn('[redfish-machine-bmc.test] SKIPPING: no QEMU (see test/debian-packages.txt)');

describe.skipIf(skip)('lab machine behind a Redfish BMC', () => {
  let dir: string;
  let bmc: RedfishMachineBmc;
  const mac = '52:54:00:b3:d0:01';

  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${bmc.url}${path}`, {
      method,
      headers: { Authorization: `Basic ${Buffer.from(`${bmc.username}:${bmc.password}`).toString('base64')}` },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };
  /** The first device SeaBIOS tries in the first boot that starts after serial offset `from`. */
  const firstBootDevice = async (from: number): Promise<string> => {
    for (const deadline = Date.now() + 60_000; Date.now() < deadline; await sleep(250)) {
      // from the next firmware start on: the boot before may still be printing its fallbacks
      const tried = /SeaBIOS \(version[\s\S]*?Booting from (Hard Disk|ROM)/.exec(
        (await bmc.machine.readSerial()).slice(from),
      );
      if (tried?.[1]) return tried[1];
    }
    throw new Error(`no boot attempt on the serial console:\n${(await bmc.machine.readSerial()).slice(from)}`);
  };
  const serialLength = async () => (await bmc.machine.readSerial()).length;

  beforeAll(async () => {
    expect(existsSync(QEMU), 'QEMU is installed').toBe(true);
    dir = await mkdtemp(join(tmpdir(), 'bmaas-rf-'));
    const disk = join(dir, 'm.disk');
    await writeFile(disk, '');
    await truncate(disk, 8 * 1024 * 1024);
    bmc = await startRedfishMachineBmc({ name: 'rf-1', mac, net: { kind: 'user', forwards: [] }, workDir: dir, disk });
  });

  afterAll(async () => {
    await bmc?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('gives the node driver_info of the redfish hardware type', () => {
    expect(bmc.driverInfo({ kernel_append_params: '' })).toEqual({
      redfish_address: bmc.url,
      redfish_system_id: '/redfish/v1/Systems/rf-1',
      redfish_username: 'admin',
      redfish_password: bmc.password,
      kernel_append_params: '',
    });
    expect(bmc.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it('reports the machine: its MAC, its disk, its boot sources and mode', async () => {
    const system = (await call('GET', bmc.systemId)).body;
    expect(system.PowerState).toBe('Off');
    expect(system.Boot['BootSourceOverrideTarget@Redfish.AllowableValues']).toEqual(['None', 'Pxe', 'Hdd']);
    expect(system.Boot.BootSourceOverrideMode).toBe('Legacy');
    expect((await call('GET', `${bmc.systemId}/EthernetInterfaces/NIC0`)).body.MACAddress).toBe(mac);
    expect((await call('GET', `${bmc.systemId}/Storage/Controller0/Drives/vda`)).body.CapacityBytes).toBe(
      8 * 1024 * 1024,
    );
    expect(await bmc.poweredOn()).toBe(false);
  });

  it('boots the device of the override: the disk, then the network', async () => {
    await call('PATCH', bmc.systemId, { Boot: { BootSourceOverrideTarget: 'Hdd', BootSourceOverrideEnabled: 'Once' } });
    let from = await serialLength();
    expect((await call('POST', `${bmc.systemId}/Actions/ComputerSystem.Reset`, { ResetType: 'On' })).status).toBe(204);
    expect(await bmc.poweredOn()).toBe(true);
    expect(await firstBootDevice(from)).toBe('Hard Disk');
    expect(await bmc.serialSincePowerOn()).toMatch(/^SeaBIOS/);

    await call('PATCH', bmc.systemId, { Boot: { BootSourceOverrideTarget: 'Pxe', BootSourceOverrideEnabled: 'Once' } });
    from = await serialLength();
    await call('POST', `${bmc.systemId}/Actions/ComputerSystem.Reset`, { ResetType: 'ForceRestart' });
    expect(await firstBootDevice(from)).toBe('ROM');

    await call('POST', `${bmc.systemId}/Actions/ComputerSystem.Reset`, { ResetType: 'ForceOff' });
    expect(await bmc.poweredOn()).toBe(false);
    expect((await call('GET', bmc.systemId)).body.PowerState).toBe('Off');
  });
});
