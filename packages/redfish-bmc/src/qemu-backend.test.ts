import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { withQmp } from '@bmaas/qemu-power-interface';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QemuMachineBackend } from './qemu-backend.js';
import { type RedfishBmc, startRedfishBmc } from './redfish-bmc.js';

const QEMU = '/usr/bin/qemu-system-x86_64';
const IPXE_ROM = '/usr/lib/ipxe/qemu/efi-virtio.rom';

describe.skipIf(!existsSync(QEMU) || !existsSync(IPXE_ROM))('Redfish BMC with a QEMU machine behind it', () => {
  let dir: string;
  let qemu: ChildProcess;
  let bmc: RedfishBmc;
  let serialLog: string;
  let socket: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'bmaas-redfish-qemu-'));
    socket = join(dir, 'qmp');
    serialLog = join(dir, 'serial.log');
    writeFileSync(join(dir, 'disk.img'), Buffer.alloc(1024 * 1024));
    // SeaBIOS with QEMU's iPXE ROM on the NIC and a blank disk: the serial console says which
    // it tries first ("Booting from Hard Disk" / "Booting from ROM").
    qemu = spawn(
      QEMU,
      [
        ...['-accel', 'tcg', '-m', '64', '-nodefaults', '-no-user-config', '-display', 'none'],
        ...['-machine', 'graphics=off', '-serial', `file:${serialLog}`, '-S', '-no-shutdown'],
        ...['-qmp', `unix:${socket},server=on,wait=off`, '-boot', 'reboot-timeout=0'],
        ...['-netdev', 'user,id=n0,restrict=on', '-device', 'virtio-net-pci,netdev=n0,id=nic0'],
        ...['-drive', `file=${join(dir, 'disk.img')},if=none,id=d0,format=raw`],
        ...['-device', 'virtio-blk-pci,drive=d0,id=disk0'],
      ],
      { stdio: 'ignore' },
    );
    for (const deadline = Date.now() + 30_000; !existsSync(socket); await sleep(50)) {
      if (Date.now() > deadline) throw new Error('QEMU did not create its QMP socket');
    }
    bmc = await startRedfishBmc({
      systems: [
        {
          id: 'vm',
          power: new QemuMachineBackend({
            qmpSocket: socket,
            firmware: 'bios',
            devices: { nic: 'nic0', disk: 'disk0' },
            defaultOrder: ['Pxe', 'Hdd'],
          }),
        },
      ],
      username: 'admin',
      password: 'secret',
    });
  });

  afterAll(async () => {
    await bmc?.close();
    if (qemu && qemu.exitCode === null) {
      const exited = new Promise((r) => qemu.once('exit', r));
      qemu.kill('SIGTERM');
      await exited;
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${bmc.url}/redfish/v1/Systems/vm${path}`, {
      method,
      headers: { Authorization: `Basic ${Buffer.from('admin:secret').toString('base64')}` },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };
  const reset = (type: string) => call('POST', '/Actions/ComputerSystem.Reset', { ResetType: type });
  const serial = () => (existsSync(serialLog) ? readFileSync(serialLog, 'latin1') : '');
  /** The first boot device SeaBIOS tries in the first boot that starts after serial offset `from`. */
  async function firstBootDevice(from: number): Promise<string> {
    for (const deadline = Date.now() + 60_000; Date.now() < deadline; await sleep(200)) {
      // from the next firmware start on: the boot before may still be printing its fallbacks
      const tried = /SeaBIOS \(version[\s\S]*?Booting from (Hard Disk|ROM)/.exec(serial().slice(from));
      if (tried?.[1]) return tried[1];
    }
    throw new Error(`no boot attempt on the serial console:\n${serial().slice(from)}`);
  }

  it('advertises what the machine can do: its reset types, its boot devices, its one boot mode', async () => {
    const { body } = await call('GET', '');
    expect(body.PowerState).toBe('Off');
    expect(body.Boot['BootSourceOverrideTarget@Redfish.AllowableValues']).toEqual(['None', 'Pxe', 'Hdd']);
    expect(body.Boot['BootSourceOverrideMode@Redfish.AllowableValues']).toEqual(['Legacy']);
    expect(body.Actions['#ComputerSystem.Reset']['ResetType@Redfish.AllowableValues']).toContain('ForceRestart');
    expect((await call('PATCH', '', { Boot: { BootSourceOverrideMode: 'UEFI' } })).status).toBe(400);
  });

  it('powers on from the override once, then from the machine order; reads power back from QEMU', async () => {
    expect((await call('PATCH', '', { Boot: { BootSourceOverrideTarget: 'Hdd' } })).status).toBe(204);
    let from = serial().length;
    expect((await reset('On')).status).toBe(204);
    expect((await call('GET', '')).body.PowerState).toBe('On');
    expect(await firstBootDevice(from)).toBe('Hard Disk');
    expect((await call('GET', '')).body.Boot.BootSourceOverrideEnabled).toBe('Disabled');

    // the guest reboots by itself (a reset the BMC did not ask for): the order of the last boot stays
    from = serial().length;
    await withQmp(socket, 5000, (qmp) => qmp.execute('system_reset'));
    expect(await firstBootDevice(from)).toBe('Hard Disk');

    from = serial().length;
    expect((await reset('ForceRestart')).status).toBe(204);
    expect(await firstBootDevice(from)).toBe('ROM');

    expect((await reset('ForceOff')).status).toBe(204);
    expect((await call('GET', '')).body.PowerState).toBe('Off');
  });

  it('keeps a continuous override across power cycles', async () => {
    await call('PATCH', '', { Boot: { BootSourceOverrideTarget: 'Hdd', BootSourceOverrideEnabled: 'Continuous' } });
    for (const type of ['On', 'PowerCycle']) {
      const from = serial().length;
      expect((await reset(type)).status).toBe(204);
      expect(await firstBootDevice(from)).toBe('Hard Disk');
    }
    await reset('ForceOff');
    expect((await call('GET', '')).body.PowerState).toBe('Off');
  });
});
