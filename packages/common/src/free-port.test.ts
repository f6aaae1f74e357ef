import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { freePort, freePortBlock, portIsFree } from './free-port.js';

const ephemeralLow = () =>
  Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);

describe('freePort', () => {
  it('hands out distinct ports below the ephemeral range, each free to bind on every address', async () => {
    const ports: number[] = [];
    for (let i = 0; i < 40; i++) ports.push(await freePort());
    expect(new Set(ports).size).toBe(ports.length);
    for (const port of ports) {
      expect(port).toBeGreaterThanOrEqual(10_000);
      expect(port).toBeLessThan(ephemeralLow());
    }
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(ports[0], '0.0.0.0', resolve);
    });
    await new Promise((resolve) => server.close(resolve));
  });
});

describe('freePortBlock', () => {
  it('gives a base whose next ports are free, below the ephemeral range, and never overlapping another block', async () => {
    const first = await freePortBlock(3);
    const second = await freePortBlock(3);
    for (const base of [first, second]) {
      expect(base + 1).toBeGreaterThanOrEqual(10_000);
      expect(base + 3).toBeLessThan(ephemeralLow());
      for (let port = base + 1; port <= base + 3; port++) expect(await portIsFree(port)).toBe(true);
    }
    expect(Math.abs(first - second)).toBeGreaterThanOrEqual(3);
  });

  it('reports a port someone listens on as taken', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    try {
      expect(await portIsFree(port)).toBe(false);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
    expect(await portIsFree(port)).toBe(true);
  });
});
