// The image fan-out as small as it goes, without a stack: a conductor's file server on an http root, the
// instance image cache of the product, an upstream image server; nginx too when installed. It must show
// one upstream download for every agent at once, and every agent's download whole. No figure is asserted.
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRootLogger } from '@bmaas/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// from dist: the storm's load generator is started as a process from its compiled file
import { imageFanoutFailed, renderImageFanout, runImageFanout } from '../../bench/dist/image-fanout.js';
import { findNginx, unprivilegedUser } from '../../bench/dist/nginx.js';
import { ProcessTable } from '../../bench/dist/process-stats.js';
import { createHttpFileServer } from '../../packages/conductor/src/http-file-server.js';

const UUIDS = ['1be26c0b-03f2-4d2e-ae87-c02d7f33c001', '1be26c0b-03f2-4d2e-ae87-c02d7f33c002'];
const IMAGE_BYTES = 3 * 1024 * 1024;

describe('image fan-out', () => {
  let dir: string;
  let server: http.Server;
  let port: number;
  const cleanups: Array<() => Promise<void>> = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'bmaas-fanout-test-'));
    chmodSync(dir, 0o755);
    mkdirSync(join(dir, 'httpboot'));
    server = createHttpFileServer({
      root: join(dir, 'httpboot'),
      logger: createRootLogger({ level: 'warn', format: 'json' }),
      isTextFile: () => false,
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
    await new Promise<void>((resolve) => server?.close(() => resolve()));
    rmSync(dir, { recursive: true, force: true });
  });

  it('downloads the image once for every agent, then serves each agent its image from the conductor (and nginx)', async () => {
    const owner = { httpRoot: join(dir, 'httpboot'), host: '127.0.0.1', port, pid: () => process.pid };
    const nginxBinary = findNginx();
    const report = await runImageFanout(
      { agents: [6], imageBytes: IMAGE_BYTES, clients: 1, rounds: 1 },
      {
        workDir: dir,
        nodes: UUIDS.map((uuid, i) => ({ uuid, mac: `52:54:00:00:00:0${i}` })),
        ownerOf: async () => owner,
        owners: [owner],
        nginxBinary,
        nginxUser: unprivilegedUser(),
        processes: new ProcessTable(),
        progress: () => {},
        onCleanup: (step) => cleanups.push(step),
      },
    );
    expect(report.upstreamDownloads).toEqual([expect.objectContaining({ agents: 6, downloads: 1 })]);
    const servers = report.runs.map((run) => run.server);
    expect(servers).toEqual(nginxBinary ? ['conductors', 'nginx'] : ['conductors']);
    for (const run of report.runs) {
      expect(run).toMatchObject({ machines: 6, errors: 0, bytes: 6 * IMAGE_BYTES });
    }
    expect(imageFanoutFailed(report)).toBe(false);
    expect(renderImageFanout(report)).toContain('6 agents at once: 1 upstream download(s)');
  });
});
