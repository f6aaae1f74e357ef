// Needs root (network namespaces, taps): skipped elsewhere, a failure under CI=true.

import { mkdtemp, rm } from 'node:fs/promises';
import { createConnection, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exitOf, isRunning, run, spawned, waitForOutputLine } from './child-process.js';
import { LAB_IPV4, LAB_IPV6, LabNetwork, netnsUnavailableReason } from './netns.js';

const problem = await netnsUnavailableReason();
const skip = problem !== null && process.env.CI !== 'true';
if (skip) console.warn(`[netns.test] SKIPPING: ${problem}`);

/** A Node one-liner run inside the namespace: connects to host:port, sends ping, prints the answer. */
const PING = (host: string, port: number) =>
  `const s = require('node:net').connect(${port}, '${host}', () => s.write('ping'));` +
  "let a = ''; s.on('data', (d) => (a += d)); s.on('close', () => console.log(a));";
/** Answers "pong from <where>" to whatever a client sends. */
const answering = (where: string): Server =>
  createServer((socket) => socket.once('data', () => socket.end(`pong from ${where}`)));

async function namespaces(): Promise<string[]> {
  return (await run('ip', ['netns', 'list'])).stdout.split('\n').map((line) => line.split(' ')[0] ?? '');
}

describe.skipIf(skip)('lab network namespace (root)', () => {
  let dir: string;
  let network: LabNetwork;

  beforeAll(async () => {
    expect(problem, 'network namespaces are usable here').toBeNull();
    dir = await mkdtemp(join(tmpdir(), 'bmaas-netns-'));
    network = await LabNetwork.create('bmaas-test');
  });
  afterAll(async () => {
    await network?.destroy();
    await rm(dir, { recursive: true, force: true });
  });

  it("is a namespace of this process's name, with loopback up and the bridge at the lab's addresses", async () => {
    expect(network.name).toMatch(new RegExp(`^bmaas-test-${process.pid}-\\d+$`));
    expect(await namespaces()).toContain(network.name);
    const addresses = (await network.exec('ip', ['-o', 'addr', 'show', 'dev', 'br0'])).stdout;
    expect(addresses).toContain(`inet ${LAB_IPV4.address}/${LAB_IPV4.prefixLength}`);
    expect(addresses).toContain(`inet6 ${LAB_IPV6.address}/${LAB_IPV6.prefixLength}`);
    expect((await network.exec('ip', ['-o', 'link', 'show', 'lo'])).stdout).toMatch(/[<,]UP[,>]/);
    // not on the host
    expect((await run('ip', ['-o', 'addr'])).stdout).not.toContain(`inet ${LAB_IPV4.address}/`);
  });

  it('adds taps on the bridge, one per machine', async () => {
    expect(await network.addTap()).toBe('tap0');
    expect(await network.addTap()).toBe('tap1');
    const onBridge = (await network.exec('ip', ['-o', 'link', 'show', 'master', 'br0'])).stdout;
    expect(onBridge).toMatch(/tap0.*master br0/);
    expect(onBridge).toMatch(/tap1.*master br0/);
  });

  it('runs processes inside it (their PID is the command), and one more local address', async () => {
    await network.addLocalAddress('10.77.0.1');
    const child = network.spawn(process.execPath, ['-e', 'console.log(process.pid)'], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    const pid = await spawned(child);
    expect(Number(await waitForOutputLine(child, /^\d+$/, 10_000))).toBe(pid);
    expect((await network.exec('ip', ['-o', 'addr', 'show', 'dev', 'lo'])).stdout).toContain('inet 10.77.0.1/32');
  });

  it('relays a port inside to a host Unix socket, and a host Unix socket to a port inside', async () => {
    const hostSocket = join(dir, 'host-service.sock');
    const hostService = answering('the host');
    await new Promise<void>((resolve) => hostService.listen(hostSocket, resolve));
    try {
      // the relay listens on an address of the namespace's: none yet
      await expect(network.portToHostSocket('10.77.0.2', 8080, hostSocket)).rejects.toThrow(/exited/);
      await network.addLocalAddress('10.77.0.2');
      await network.portToHostSocket('10.77.0.2', 8080, hostSocket);
      expect((await network.exec(process.execPath, ['-e', PING('10.77.0.2', 8080)])).stdout).toBe(
        'pong from the host\n',
      );
    } finally {
      hostService.close();
    }

    // a service inside, on the bridge address the host cannot reach, through a host socket
    const inside = network.spawn(
      process.execPath,
      [
        '-e',
        `require('node:net').createServer((s) => s.once('data', () => s.end('pong from inside')))` +
          `.listen(7070, '${LAB_IPV4.address}', () => console.log('ready'));`,
      ],
      { stdio: ['ignore', 'pipe', 'ignore'] },
    );
    await waitForOutputLine(inside, /^ready$/, 10_000);
    const toInside = join(dir, 'to-inside.sock');
    await network.hostSocketToPort(toInside, LAB_IPV4.address, 7070);
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = createConnection(toInside);
      let text = '';
      socket.on('connect', () => socket.write('ping'));
      socket.on('data', (chunk) => (text += chunk));
      socket.on('close', () => resolve(text));
      socket.on('error', reject);
    });
    expect(answer).toBe('pong from inside');
  });

  it('on destroy stops what runs inside and deletes the namespace with its links; later use fails', async () => {
    const other = await LabNetwork.create('bmaas-test');
    expect(other.name).not.toBe(network.name);
    await other.addTap();
    const sleeper = other.spawn('sleep', ['60']);
    await spawned(sleeper);
    await other.destroy();
    expect(isRunning(sleeper)).toBe(false);
    expect((await exitOf(sleeper)).signal).toBe('SIGTERM');
    expect(await namespaces()).not.toContain(other.name);
    await other.destroy(); // again: nothing to do
    expect(() => other.spawn('true', [])).toThrow(`network namespace ${other.name} was destroyed`);
    expect(() => other.exec('true', [])).toThrow(/was destroyed/);
  });
});
