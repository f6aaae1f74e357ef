import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type RedfishBmc, startRedfishBmc } from './redfish-bmc.js';
import { SimulatedMachinePower } from './simulated-power.js';

const ISO = Buffer.from('CD001 pretend image '.repeat(1000));
let images: http.Server;
let imageUrl: string;
let stateDir: string;
const running: RedfishBmc[] = [];

beforeAll(async () => {
  images = http.createServer((req, res) => {
    if (req.url === '/deploy.iso') res.end(ISO);
    else if (req.url === '/other.iso') res.end(Buffer.from('another image'));
    else if (req.url === '/private.iso' && req.headers.authorization === `Basic ${btoa('u:p')}`) res.end(ISO);
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => images.listen(0, '127.0.0.1', resolve));
  imageUrl = `http://127.0.0.1:${(images.address() as AddressInfo).port}`;
});
afterAll(async () => {
  images.closeAllConnections();
  await new Promise((resolve) => images.close(resolve));
});
afterEach(async () => {
  await Promise.all(running.splice(0).map((bmc) => bmc.close()));
  if (stateDir) rmSync(stateDir, { recursive: true, force: true });
});

async function start(allowedHosts: string[] = []) {
  stateDir = mkdtempSync(join(tmpdir(), 'bmaas-vmedia-'));
  const power = new SimulatedMachinePower();
  const bmc = await startRedfishBmc({
    systems: [{ id: 'node-1', power }],
    username: 'admin',
    password: 'secret',
    virtualMedia: { stateDir, allowedHosts },
  });
  running.push(bmc);
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${bmc.url}${path}`, {
      method,
      headers: { Authorization: `Basic ${btoa('admin:secret')}`, 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined };
  };
  return { bmc, power, call };
}

const CD = '/redfish/v1/Managers/node-1/VirtualMedia/Cd';
const INSERT = `${CD}/Actions/VirtualMedia.InsertMedia`;
const EJECT = `${CD}/Actions/VirtualMedia.EjectMedia`;

describe('Redfish BMC: virtual media', () => {
  it('lists the virtual CD under the manager, linked from the system too, empty at first', async () => {
    const { call } = await start();
    const manager = await call('GET', '/redfish/v1/Managers/node-1');
    expect(manager.body.VirtualMedia).toEqual({ '@odata.id': '/redfish/v1/Managers/node-1/VirtualMedia' });
    const system = await call('GET', '/redfish/v1/Systems/node-1');
    expect(system.body.VirtualMedia).toEqual(manager.body.VirtualMedia);
    const collection = await call('GET', '/redfish/v1/Managers/node-1/VirtualMedia');
    expect(collection.body.Members).toEqual([{ '@odata.id': CD }]);
    const cd = await call('GET', CD);
    expect(cd.body).toMatchObject({
      '@odata.type': '#VirtualMedia.v1_3_0.VirtualMedia',
      Id: 'Cd',
      MediaTypes: ['CD', 'DVD'],
      Image: null,
      Inserted: false,
      ConnectedVia: 'NotConnected',
      Actions: { '#VirtualMedia.InsertMedia': { target: INSERT }, '#VirtualMedia.EjectMedia': { target: EJECT } },
    });
  });

  it('downloads the image on insert, hands it to the drive, reports it; eject deletes the copy', async () => {
    const { call, power } = await start();
    expect((await call('POST', INSERT, { Image: `${imageUrl}/deploy.iso`, WriteProtected: true })).status).toBe(204);
    const cd = await call('GET', CD);
    expect(cd.body).toMatchObject({
      Image: `${imageUrl}/deploy.iso`,
      ImageName: 'deploy.iso',
      Inserted: true,
      WriteProtected: true,
      ConnectedVia: 'URI',
    });
    const medium = power.cdDrive.medium as string;
    expect(medium.startsWith(stateDir)).toBe(true);
    expect(readFileSync(medium)).toEqual(ISO);

    // boots from it when told to
    await call('PATCH', '/redfish/v1/Systems/node-1', { Boot: { BootSourceOverrideTarget: 'Cd' } });
    await call('POST', '/redfish/v1/Systems/node-1/Actions/ComputerSystem.Reset', { ResetType: 'On' });
    expect(power.boots.at(-1)).toMatchObject({ target: 'Cd', cdImage: medium });

    expect((await call('POST', EJECT, {})).status).toBe(204);
    expect(power.cdDrive.medium).toBeUndefined();
    expect(existsSync(medium)).toBe(false);
    expect((await call('GET', CD)).body).toMatchObject({ Image: null, Inserted: false, ConnectedVia: 'NotConnected' });
  });

  it('ejects what was there before inserting another image, and keeps one copy', async () => {
    const { call, power } = await start();
    await call('POST', INSERT, { Image: `${imageUrl}/deploy.iso` });
    const first = power.cdDrive.medium as string;
    expect((await call('POST', INSERT, { Image: `${imageUrl}/other.iso` })).status).toBe(204);
    expect(existsSync(first)).toBe(false);
    expect(readFileSync(power.cdDrive.medium as string, 'utf8')).toBe('another image');
    expect(readdirSync(stateDir)).toHaveLength(1);
  });

  it('passes UserName and Password to the image server', async () => {
    const { call, power } = await start();
    const res = await call('POST', INSERT, { Image: `${imageUrl}/private.iso`, UserName: 'u', Password: 'p' });
    expect(res.status).toBe(204);
    expect(readFileSync(power.cdDrive.medium as string)).toEqual(ISO);
  });

  it('refuses images from hosts that are not loopback or the lab, and other schemes, and reports a failed download', async () => {
    const { call, power } = await start(['192.0.2.10']);
    const foreign = await call('POST', INSERT, { Image: 'http://198.51.100.7/deploy.iso' });
    expect(foreign.status).toBe(400);
    expect(foreign.body.error.code).toBe('Base.1.8.ActionParameterValueError');
    expect((await call('POST', INSERT, { Image: 'nfs://127.0.0.1/deploy.iso' })).status).toBe(400);
    expect((await call('POST', INSERT, {})).body.error.code).toBe('Base.1.8.ActionParameterMissing');
    expect((await call('POST', INSERT, { Image: `${imageUrl}/x.iso`, Bogus: 1 })).status).toBe(400);
    const missing = await call('POST', INSERT, { Image: `${imageUrl}/missing.iso` });
    expect(missing.status).toBe(500);
    expect(missing.body.error.message).toMatch(/HTTP 404/);
    expect(power.cdDrive.medium).toBeUndefined();
    expect(readdirSync(stateDir)).toEqual([]);
    expect((await call('GET', CD)).body.Inserted).toBe(false);
  });

  it('takes HttpBootUri with UefiHttp and hands it to the boot; null clears it', async () => {
    const { call, power } = await start();
    const uri = 'http://192.0.2.1:8080/boot/node-1.efi';
    const patch = await call('PATCH', '/redfish/v1/Systems/node-1', {
      Boot: { BootSourceOverrideTarget: 'UefiHttp', HttpBootUri: uri, BootSourceOverrideMode: 'UEFI' },
    });
    expect(patch.status).toBe(204);
    expect((await call('GET', '/redfish/v1/Systems/node-1')).body.Boot.HttpBootUri).toBe(uri);
    await call('POST', '/redfish/v1/Systems/node-1/Actions/ComputerSystem.Reset', { ResetType: 'On' });
    expect(power.boots.at(-1)).toEqual({ target: 'UefiHttp', mode: 'UEFI', httpBootUri: uri });
    const bad = await call('PATCH', '/redfish/v1/Systems/node-1', { Boot: { HttpBootUri: 42 } });
    expect(bad.status).toBe(400);
    await call('PATCH', '/redfish/v1/Systems/node-1', { Boot: { HttpBootUri: null } });
    expect((await call('GET', '/redfish/v1/Systems/node-1')).body.Boot.HttpBootUri).toBeNull();
  });
});
