// The lab process as `npm run lab` starts it (the built main.js: `npx tsc -b` first), next to a
// stand-in for the stack: this test holds the stack's PID file. User-mode networking, so no
// root is needed; a machine's BMC is a real ipmi_sim (skipped without it, a failure under CI=true).
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, openSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  acquireLock,
  endpointsFile,
  lockHolder,
  MACHINE_FACING_HOST,
  processRunning,
  type StackEndpoints,
} from '@bmaas/stack';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { exitOf, stopProcess } from './child-process.js';
import { askLabProcess, type LabAnswer, waitForLabProcess } from './lab-control.js';
import type { LabDescription } from './lab-machines.js';
import { type LabPaths, labPaths } from './lab-paths.js';

const MAIN = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const missing = ['/usr/bin/ipmi_sim', '/usr/bin/ipmitool'].filter((tool) => !existsSync(tool));
const skip = missing.length > 0 && process.env.CI !== 'true';
if (skip) console.warn(`[lab-process.test] SKIPPING: missing ${missing.join(', ')}`);

const ask = (socketPath: string, method: string, path: string) => askLabProcess(socketPath, method, path, 60_000);

/** The lab as the answer to a request that must succeed describes it. */
function described(answer: LabAnswer | undefined): LabDescription {
  expect(answer?.status).toBe(200);
  return answer?.body as unknown as LabDescription;
}

function get(url: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    http
      .get(url, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve(Buffer.concat(chunks)));
      })
      .on('error', reject);
  });
}

describe.skipIf(skip)('the lab process (user-mode networking)', () => {
  let state: string;
  let paths: LabPaths;
  let stackLock: { release(): void };
  let image: Buffer;
  const children: ChildProcess[] = [];

  beforeEach(async () => {
    expect(missing, 'ipmi_sim and ipmitool are installed').toEqual([]);
    state = await mkdtemp(join(tmpdir(), 'bmaas-lab-process-'));
    paths = labPaths(state);
    const lock = acquireLock(join(state, 'stack.pid'));
    if ('heldBy' in lock) throw new Error(`stack.pid of a fresh directory held by ${lock.heldBy}`);
    stackLock = lock;
    const endpoints: StackEndpoints = {
      pid: process.pid,
      apiUrl: 'http://127.0.0.1:16385',
      machineApiUrl: `http://${MACHINE_FACING_HOST}:16385`,
      conductors: [
        {
          name: 'conductor-1',
          hostname: 'c1',
          httpUrl: 'http://127.0.0.1:18081',
          machineHttpUrl: `http://${MACHINE_FACING_HOST}:18081`,
        },
      ],
    };
    mkdirSync(join(state, 'stack'), { recursive: true });
    await writeFile(endpointsFile(state), JSON.stringify(endpoints));
    mkdirSync(paths.dir, { recursive: true });
    image = randomBytes(256 * 1024);
    await writeFile(join(state, 'instance.img'), image);
    const sha256 = createHash('sha256').update(image).digest('hex');
    await writeFile(join(paths.dir, 'image.json'), JSON.stringify({ path: join(state, 'instance.img'), sha256 }));
  });

  afterEach(async () => {
    await Promise.all(children.splice(0).map((child) => stopProcess(child, 10_000)));
    stackLock.release();
    await rm(state, { recursive: true, force: true });
  });

  function startLabProcess(bmc: 'ipmi' | 'redfish' = 'ipmi'): ChildProcess {
    const log = openSync(paths.log, 'a');
    const args = [MAIN, '--run-lab-process', '--network', 'user', '--bmc', bmc, '--state-dir', state];
    const child = spawn(process.execPath, args, { stdio: ['ignore', log, log] });
    children.push(child);
    return child;
  }

  const ready = (child: ChildProcess): Promise<LabDescription> =>
    waitForLabProcess(paths, () => child.exitCode !== null, 60_000);

  it('answers on its control socket, adds machines behind BMCs, serves the image, and is the only one', async () => {
    const child = startLabProcess();
    const lab = await ready(child);
    expect(lab).toMatchObject({ pid: child.pid, network: 'user', namespace: null, dnsmasqPid: null, machines: [] });
    expect(lockHolder(paths.pidFile)).toBe(child.pid);
    expect(lab.instanceInfo).toMatchObject({
      image_source: expect.stringMatching(new RegExp(`^http://${MACHINE_FACING_HOST}:\\d+/images/instance.img$`)),
      image_os_hash_algo: 'sha256',
      image_os_hash_value: createHash('sha256').update(image).digest('hex'),
    });
    // the image, on the loopback port the machines' forwards lead to
    const imagePort = new URL(lab.instanceInfo.image_source ?? '').port;
    expect((await get(`http://127.0.0.1:${imagePort}/images/instance.img`)).equals(image)).toBe(true);

    expect((await ask(paths.controlSocket, 'POST', '/machines?count=0'))?.status).toBe(400);
    expect((await ask(paths.controlSocket, 'GET', '/nothing'))?.status).toBe(404);
    const [machine] = described(await ask(paths.controlSocket, 'POST', '/machines?count=1')).machines;
    expect(machine).toMatchObject({
      name: 'lab-1',
      mac: '52:54:00:1a:b0:01',
      bmcAddress: '127.0.0.1',
      poweredOn: false,
    });
    expect(machine?.driverInfo).toMatchObject({
      ipmi_address: '127.0.0.1',
      ipmi_port: machine?.bmcPort,
      kernel_append_params: expect.stringMatching(/ipa-advertise-host=127\.0\.0\.1 ipa-advertise-port=\d+/),
    });
    expect(processRunning(machine?.bmcPid ?? 0)).toBe(true);
    // asking again for as many adds none
    expect(described(await ask(paths.controlSocket, 'POST', '/machines?count=1')).machines).toHaveLength(1);

    const second = startLabProcess();
    expect((await exitOf(second)).code).toBe(1);
    expect(await readFile(paths.log, 'utf8')).toContain(`a lab process already runs (pid ${child.pid})`);
  });

  it('with --bmc redfish, puts each machine behind a Redfish BMC that powers its QEMU', async () => {
    const child = startLabProcess('redfish');
    expect((await ready(child)).bmc).toBe('redfish');
    const [machine] = described(await ask(paths.controlSocket, 'POST', '/machines?count=1')).machines;
    expect(machine).toMatchObject({ name: 'lab-1', bmc: 'redfish', bmcPid: child.pid, poweredOn: false });
    const info = machine?.driverInfo as Record<string, string>;
    // HTTPS with a certificate of the lab's CA, which the node's driver_info names
    expect(info).toMatchObject({
      redfish_address: `https://127.0.0.1:${machine?.bmcPort}`,
      redfish_system_id: '/redfish/v1/Systems/lab-1',
      redfish_username: 'admin',
      redfish_verify_ca: join(paths.pkiDir, 'ca', 'cert.pem'),
    });
    const ca = await readFile(info.redfish_verify_ca as string);
    const auth = `Basic ${Buffer.from(`${info.redfish_username}:${info.redfish_password}`).toString('base64')}`;
    const redfish = (method: string, path: string, body?: unknown) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = https.request(
          `${info.redfish_address}${path}`,
          { method, ca, headers: { Authorization: auth, 'Content-Type': 'application/json' } },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (chunk: Buffer) => chunks.push(chunk));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
          },
        );
        req.on('error', reject);
        req.end(body === undefined ? undefined : JSON.stringify(body));
      });
    const reset = await redfish('POST', `${info.redfish_system_id}/Actions/ComputerSystem.Reset`, { ResetType: 'On' });
    expect(reset.status).toBe(204);
    expect(described(await ask(paths.controlSocket, 'GET', '/lab')).machines[0]?.poweredOn).toBe(true);
    expect(JSON.parse((await redfish('GET', info.redfish_system_id as string)).body).PowerState).toBe('On');
    // not trusted without the lab's CA
    await expect(fetch(`${info.redfish_address}/redfish/v1/`)).rejects.toThrow();

    child.kill('SIGTERM');
    expect((await exitOf(child)).code).toBe(0);
    expect(existsSync(join(paths.dir, 'lab-1.disk'))).toBe(false);
  });

  it('tears everything down when the stack stops: BMCs, disks, control socket, PID file', async () => {
    const child = startLabProcess();
    await ready(child);
    const lab = described(await ask(paths.controlSocket, 'POST', '/machines?count=1'));
    const bmcPid = lab.machines[0]?.bmcPid ?? 0;
    expect(existsSync(join(paths.dir, 'lab-1.disk'))).toBe(true);

    stackLock.release(); // the stack is gone
    expect(await exitOf(child)).toEqual({ code: 0, signal: null });
    expect(processRunning(bmcPid)).toBe(false);
    expect(existsSync(join(paths.dir, 'lab-1.disk'))).toBe(false);
    expect(existsSync(paths.controlSocket)).toBe(false);
    expect(lockHolder(paths.pidFile)).toBeUndefined();
    expect(await readFile(paths.log, 'utf8')).toContain(`the stack (pid ${process.pid}) stopped`);
  });

  it('tears everything down on SIGTERM', async () => {
    const child = startLabProcess();
    await ready(child);
    child.kill('SIGTERM');
    expect((await exitOf(child)).code).toBe(0);
    expect(existsSync(paths.controlSocket)).toBe(false);
    expect(await readFile(paths.log, 'utf8')).toMatch(/SIGTERM: stopping machines[\s\S]*stopped/);
  });
});
