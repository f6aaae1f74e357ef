import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRootLogger, UsageError } from '@bmaas/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderStormNginxConfig, startStormNginx, stormRatios, writeImageFile } from '../../bench/src/image-storm.js';
import { runStorm } from '../../bench/src/image-storm-client.js';
import { findNginx, unprivilegedUser } from '../../bench/src/nginx.js';
import { parseBenchOptions } from '../../bench/src/options.js';
import { checkRanges } from '../../bench/src/range-check.js';
import { createHttpFileServer } from '../../packages/conductor/src/http-file-server.js';

/** The image storm's pieces, fast: small files, no stack, no timed assertions. */

const UUID = '0a6f1f36-0000-4000-8000-000000000009';
const KERNEL = 3 * 1024 * 1024 + 7;
const RAMDISK = 5 * 1024 * 1024 + 3;

describe('image storm pieces', () => {
  let dir: string;
  let root: string;
  let server: http.Server;
  let port: number;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'bmaas-storm-test-'));
    chmodSync(dir, 0o755);
    root = join(dir, 'httpboot');
    mkdirSync(join(root, UUID), { recursive: true });
    writeImageFile(join(root, UUID, 'deploy_kernel'), KERNEL);
    writeImageFile(join(root, UUID, 'deploy_ramdisk'), RAMDISK);
    const logger = createRootLogger({ level: 'warn', format: 'json' });
    server = createHttpFileServer({ root, logger, isTextFile: () => false });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server?.close(() => resolve()));
    rmSync(dir, { recursive: true, force: true });
  });

  const files = () => [
    { path: `/${UUID}/deploy_kernel`, size: KERNEL },
    { path: `/${UUID}/deploy_ramdisk`, size: RAMDISK },
  ];

  it('writes image files of the exact size, not all zero', () => {
    const kernel = join(root, UUID, 'deploy_kernel');
    expect(statSync(kernel).size).toBe(KERNEL);
    expect(
      readFileSync(kernel)
        .subarray(0, 4096)
        .some((b) => b !== 0),
    ).toBe(true);
  });

  it('downloads every file of every machine, counting bytes and a first-byte time per request', async () => {
    const machines = Array.from({ length: 4 }, () => ({ host: '127.0.0.1', port, files: files() }));
    const result = await runStorm(machines, 30_000);
    expect(result).toMatchObject({ requests: 8, bytes: 4 * (KERNEL + RAMDISK), errors: 0 });
    expect(result.ttfbMs).toHaveLength(8);
  });

  it('counts a wrong length and a missing file as errors', async () => {
    const wrong = [{ path: `/${UUID}/deploy_kernel`, size: KERNEL + 1 }];
    const missing = [{ path: `/${UUID}/nothing`, size: 1 }];
    const result = await runStorm(
      [
        { host: '127.0.0.1', port, files: wrong },
        { host: '127.0.0.1', port, files: missing },
      ],
      30_000,
    );
    expect(result.errors).toBe(2);
    expect(result.firstErrors.join('\n')).toMatch(/Content-Length/);
    expect(result.firstErrors.join('\n')).toMatch(/HTTP 404/);
  });

  it("passes every range check on the conductor's file server", async () => {
    const cases = await checkRanges(
      `http://127.0.0.1:${port}/${UUID}/deploy_kernel`,
      join(root, UUID, 'deploy_kernel'),
    );
    expect(cases.filter((c) => c.failures.length > 0)).toEqual([]);
    expect(cases.length).toBeGreaterThan(10);
  });

  it('pairs each round of the conductors storm with the nginx storm after it and takes the median ratio', () => {
    const run = (server: 'conductors' | 'nginx', machines: number, round: number, gigabytesPerSecond: number) => ({
      server,
      machines,
      round,
      gigabytesPerSecond,
    });
    const runs = [
      run('conductors', 64, 1, 2),
      run('nginx', 64, 1, 2.5),
      run('conductors', 64, 2, 1),
      run('nginx', 64, 2, 2),
      run('conductors', 64, 3, 3),
      run('nginx', 64, 3, 3),
      run('conductors', 256, 1, 2),
    ];
    expect(stormRatios(runs, [64, 256])).toEqual([
      { machines: 64, conductorsToNginx: 0.8, rounds: [0.8, 0.5, 1] },
      { machines: 256, conductorsToNginx: null, rounds: [] },
    ]);
  });

  it('parses the storm options: machine counts, sizes (smaller with --quick), 0 for none', () => {
    expect(parseBenchOptions([], '/r')).toMatchObject({
      stormMachines: [64, 256],
      stormKernelMib: 10,
      stormRamdiskMib: 400,
      stormClients: 2,
    });
    expect(parseBenchOptions(['--quick'], '/r')).toMatchObject({ stormKernelMib: 2, stormRamdiskMib: 64 });
    expect(
      parseBenchOptions(['--storm-machines', '8,16', '--storm-ramdisk-mib=100', '--image-storm-only'], '/r'),
    ).toMatchObject({ stormMachines: [8, 16], stormRamdiskMib: 100, imageStormOnly: true });
    expect(parseBenchOptions(['--storm-machines', '0'], '/r')).toMatchObject({ stormMachines: [] });
    expect(parseBenchOptions(['--storm-clients', '1'], '/r')).toMatchObject({ stormClients: 1 });
    expect(() => parseBenchOptions(['--storm-machines', '-1'], '/r')).toThrow(UsageError);
  });

  it('renders one nginx server per http root', () => {
    const config = renderStormNginxConfig({
      sites: [
        { root: '/a', port: 1 },
        { root: '/b', port: 2 },
      ],
      workers: 2,
      prefixDir: '/p',
    });
    expect(config).toContain('worker_processes 2;');
    expect(config).toMatch(/listen 127\.0\.0\.1:1;\s+root \/a;/);
    expect(config).toMatch(/listen 127\.0\.0\.1:2;\s+root \/b;/);
    expect(config).toContain('sendfile on;');
  });

  const nginx = findNginx();
  it.skipIf(!nginx)('nginx (when installed) passes the range checks and the storm on the same root', async () => {
    const { createServer } = await import('node:net');
    const free = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port: p } = probe.address() as AddressInfo;
        probe.close(() => resolve(p));
      });
    });
    const served = await startStormNginx(nginx as string, {
      sites: [{ root, port: free }],
      workers: 1,
      prefixDir: join(dir, 'nginx'),
      user: unprivilegedUser(),
    });
    try {
      const cases = await checkRanges(
        `http://127.0.0.1:${free}/${UUID}/deploy_kernel`,
        join(root, UUID, 'deploy_kernel'),
      );
      expect(cases.filter((c) => c.failures.length > 0)).toEqual([]);
      const result = await runStorm([{ host: '127.0.0.1', port: free, files: files() }], 30_000);
      expect(result).toMatchObject({ requests: 2, bytes: KERNEL + RAMDISK, errors: 0 });
    } finally {
      await served.stop();
    }
  });
});
