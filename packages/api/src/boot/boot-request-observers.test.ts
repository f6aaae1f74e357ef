import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { createRootLogger } from '@bmaas/common';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ApiHarness } from '../testing/api-harness.js';
import { BootConfigController } from './boot-config-controller.js';
import { createBootConfigHandler } from './boot-config-router.js';
import type { BootRequestEvent } from './boot-request-observer.js';

const MAC = '52:54:00:cc:00:01';

describe('createBootConfigHandler observers', () => {
  let api: ApiHarness;
  let server: Server;
  let baseUrl: string;
  let nodeUuid: string;
  const seen: BootRequestEvent[] = [];
  const errors: string[] = [];

  beforeAll(async () => {
    api = await ApiHarness.start();
    await api.registerConductor('conductor-a');
    nodeUuid = (await api.storeNode('wait call-back', [MAC])).uuid;
    api.conductors.respondWith('get_boot_config', () => ({ content: '#!ipxe\n' }));
    const controller = new BootConfigController({
      ports: api.stores.ports,
      conductors: api.conductors,
      restrictToWaitStates: true,
      rpcTimeoutMs: 5000,
    });
    const stream = new PassThrough();
    stream.on('data', (chunk: Buffer) => errors.push(chunk.toString()));
    const logger = createRootLogger({ level: 'error', format: 'json', stream });
    const failing = {
      observe: () => {
        throw new Error('observer bug');
      },
    };
    const handler = createBootConfigHandler(controller, logger, [failing, { observe: (e) => seen.push(e) }]);
    server = createServer((req, res) => void handler(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await api?.close();
  });

  it('calls every observer once per answered request, after the answer; a throwing one is logged', async () => {
    expect((await fetch(`${baseUrl}/v1/boot/${MAC}/boot.ipxe`)).status).toBe(200);
    expect((await fetch(`${baseUrl}/v1/boot/52:54:00:cc:00:02/boot.ipxe`)).status).toBe(404);
    expect((await fetch(`${baseUrl}/v1/boot/${MAC}`, { method: 'POST' })).status).toBe(404);
    expect(seen.map(({ durationSeconds: _, ...rest }) => rest)).toEqual([
      { outcome: 'served', name: 'boot.ipxe', mac: MAC, nodeUuid },
      { outcome: 'unknown-mac', name: 'boot.ipxe', mac: '52:54:00:cc:00:02', nodeUuid: undefined },
      { outcome: 'malformed-request', name: undefined, mac: undefined, nodeUuid: undefined },
    ]);
    for (const event of seen) expect(event.durationSeconds).toBeGreaterThanOrEqual(0);
    // The logger writes to its stream a little later.
    await vi.waitFor(() => expect(errors.join('').match(/boot request observer failed/g)).toHaveLength(3));
  });
});
