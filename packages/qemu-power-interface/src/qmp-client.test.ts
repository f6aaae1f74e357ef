import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { QmpClient, QmpError, withQmp } from './qmp-client.js';

const QEMU = '/usr/bin/qemu-system-x86_64';
const run = existsSync(QEMU) || process.env.CI === 'true';

/** A diskless machine waiting powered off (-S) with one QMP socket. */
function startQemu(socket: string): ChildProcess {
  const args = ['-accel', 'tcg', '-m', '32', '-nodefaults', '-display', 'none', '-S', '-no-shutdown'];
  return spawn(QEMU, [...args, '-qmp', `unix:${socket},server=on,wait=off`], { stdio: 'ignore' });
}

async function stopQemu(qemu: ChildProcess): Promise<void> {
  if (qemu.exitCode !== null || qemu.signalCode !== null) return;
  const exited = new Promise((resolve) => qemu.once('exit', resolve));
  qemu.kill('SIGKILL');
  await exited;
}

describe.skipIf(!run)('QMP client against a real QEMU', () => {
  let dir: string;
  const started: ChildProcess[] = [];
  const clients: QmpClient[] = [];
  const machine = (name: string) => {
    const socket = join(dir, `${name}.qmp`);
    started.push(startQemu(socket));
    return socket;
  };
  const connect = async (socket: string, options?: Parameters<typeof QmpClient.connect>[1]) => {
    const client = await QmpClient.connect(socket, options);
    clients.push(client);
    return client;
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'bmaas-qmp-'));
  });
  afterEach(async () => {
    for (const client of clients.splice(0)) client.close();
    await Promise.all(started.splice(0).map(stopQemu));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('fails at once on a missing socket, and waits for it when asked to', async () => {
    const socket = join(dir, 'late.qmp');
    const before = Date.now();
    await expect(QmpClient.connect(socket, { timeoutMs: 5000 })).rejects.toThrow(/ENOENT/);
    expect(Date.now() - before).toBeLessThan(1000);

    const connecting = connect(socket, { timeoutMs: 30_000, waitForSocket: true });
    started.push(startQemu(socket)); // the socket appears a moment later
    const client = await connecting;
    expect(await client.queryStatus()).toMatchObject({ status: 'prelaunch', running: false });
  });

  it('runs commands, records events and waits for one', async () => {
    const client = await connect(machine('events'), { waitForSocket: true });
    await client.cont();
    expect(await client.queryStatus()).toMatchObject({ status: 'running', running: true });
    await client.execute('stop');
    const stop = await client.waitForEvent('STOP', 5000);
    expect(stop.event).toBe('STOP');
    expect(client.events.map((event) => event.event)).toEqual(['RESUME', 'STOP']);
    await expect(client.waitForEvent('SHUTDOWN', 200)).rejects.toThrow(
      /event SHUTDOWN.*timed out after 200 ms \(events so far: RESUME, STOP\)/,
    );
  });

  it("rejects with QEMU's error class and description", async () => {
    const client = await connect(machine('errors'), { waitForSocket: true });
    const failed = client.execute('no-such-command').catch((error: unknown) => error);
    expect(await failed).toBeInstanceOf(QmpError);
    expect(String(await failed)).toMatch(/QMP no-such-command: CommandNotFound/);
    expect((await client.queryStatus()).status).toBe('prelaunch'); // the session goes on
  });

  it('bounds the greeting: QEMU serves one client per socket, a second waits unanswered', async () => {
    const socket = machine('busy');
    await connect(socket, { waitForSocket: true });
    const before = Date.now();
    await expect(QmpClient.connect(socket, { timeoutMs: 500 })).rejects.toThrow(/greeting.*timed out after/);
    expect(Date.now() - before).toBeLessThan(3000);
  });

  it('rejects pending and later commands once QEMU is gone, and says it is closed', async () => {
    const client = await connect(machine('quit'), { waitForSocket: true });
    await client.quit(); // QEMU may close the socket before answering: not an error
    await expect(client.execute('query-status')).rejects.toThrow(/connection closed/);
    expect(client.closed).toBe(true);
  });

  it('withQmp opens a session per call and closes it, so the next one is served', async () => {
    const socket = machine('sessions');
    await connect(socket, { waitForSocket: true }).then((client) => client.close());
    for (let i = 0; i < 3; i++) {
      expect((await withQmp(socket, 5000, (qmp) => qmp.queryStatus())).status).toBe('prelaunch');
    }
  });
});
