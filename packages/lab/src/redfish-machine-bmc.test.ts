// A lab machine behind a Redfish BMC: a real QEMU machine (user-mode networking, no root)
// powered and booted through Redfish. Skipped without QEMU, a failure under CI=true.
import { execFile } from 'node:child_process';
import { createReadStream, existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, truncate, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  inventoryOf,
  type RedfishMachineBmc,
  type RedfishMachineBmcOptions,
  startRedfishMachineBmc,
} from './redfish-machine-bmc.js';

const execFileAsync = promisify(execFile);

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
    expect(system.Boot['BootSourceOverrideTarget@Redfish.AllowableValues']).toEqual(['None', 'Pxe', 'Hdd', 'Cd']);
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

  it('boots the CD inserted through virtual media, and ejects it', async () => {
    const iso = await bootableIso(dir, 'CDBOOT-OK');
    const images = createServer((_req, res) => {
      createReadStream(iso).pipe(res);
    });
    await new Promise<void>((resolve) => images.listen(0, '127.0.0.1', resolve));
    try {
      const image = `http://127.0.0.1:${(images.address() as AddressInfo).port}/boot.iso`;
      const cd = '/redfish/v1/Managers/rf-1/VirtualMedia/Cd';
      expect((await call('POST', `${cd}/Actions/VirtualMedia.InsertMedia`, { Image: image })).status).toBe(204);
      expect((await call('GET', cd)).body).toMatchObject({ Image: image, Inserted: true, ConnectedVia: 'URI' });
      const qmp = await bmc.machine.qmp();
      const inserted = (await qmp.execute<BlockInfo[]>('query-block')).find((b) => b.qdev?.endsWith('cdrom0'));
      expect(inserted?.inserted?.file).toMatch(/rf-1\.media\/rf-1-\w+\.iso$/);

      await call('PATCH', bmc.systemId, { Boot: { BootSourceOverrideTarget: 'Cd' } });
      const from = await serialLength();
      await call('POST', `${bmc.systemId}/Actions/ComputerSystem.Reset`, { ResetType: 'On' });
      await bmc.machine.waitForSerial(/CDBOOT-OK/, 60_000);
      expect((await bmc.machine.readSerial()).slice(from)).toMatch(/Booting from DVD\/CD[\s\S]*CDBOOT-OK/);
      await call('POST', `${bmc.systemId}/Actions/ComputerSystem.Reset`, { ResetType: 'ForceOff' });

      expect((await call('POST', `${cd}/Actions/VirtualMedia.EjectMedia`, {})).status).toBe(204);
      const ejected = (await qmp.execute<BlockInfo[]>('query-block')).find((b) => b.qdev?.endsWith('cdrom0'));
      expect(ejected?.inserted).toBeUndefined();
      expect(await readdir(join(dir, 'rf-1.media'))).toEqual([]);
    } finally {
      images.closeAllConnections();
      await new Promise((resolve) => images.close(resolve));
    }
  });
});

interface BlockInfo {
  qdev?: string;
  inserted?: { file: string };
}

/**
 * A no-emulation El Torito ISO whose boot image writes `marker` to the first serial port
 * (COM1, 0x3f8) and halts: position-independent real-mode code, one `mov al; out dx, al` per byte.
 */
async function bootableIso(dir: string, marker: string): Promise<string> {
  const root = join(dir, 'iso-root');
  await mkdir(root, { recursive: true });
  const code = [0xba, 0xf8, 0x03]; // mov dx, 0x3f8
  for (const byte of Buffer.from(`\r\n${marker}\r\n`)) code.push(0xb0, byte, 0xee); // mov al, byte; out dx, al
  code.push(0xfa, 0xf4, 0xeb, 0xfd); // cli; hlt; jmp back to hlt
  const boot = Buffer.alloc(2048);
  Buffer.from(code).copy(boot);
  await writeFile(join(root, 'boot.bin'), boot);
  const iso = join(dir, 'boot.iso');
  await execFileAsync('genisoimage', [
    '-quiet',
    '-o',
    iso,
    '-b',
    'boot.bin',
    '-no-emul-boot',
    '-boot-load-size',
    '4',
    root,
  ]);
  return iso;
}
