import { createServer } from 'node:net';
import { freePort } from '@bmaas/common';
import { describe, expect, it } from 'vitest';
import { assertPortsFree } from './port-check.js';

describe('assertPortsFree', () => {
  it('accepts free ports', async () => {
    const port = await freePort();
    await expect(
      assertPortsFree([{ host: '127.0.0.1', port, owner: 'the API', option: '--api-port' }]),
    ).resolves.toBeUndefined();
  });

  it('names the port, what wanted it and the option to change, when another program holds it', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    try {
      await expect(
        assertPortsFree([{ host: '127.0.0.1', port, owner: 'the API', option: '--api-port' }]),
      ).rejects.toThrow(
        `127.0.0.1:${port} (the API) is already in use by another program: stop it, or choose another port with --api-port`,
      );
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('refuses two claims on one port', async () => {
    const port = await freePort();
    await expect(
      assertPortsFree([
        { host: '127.0.0.1', port, owner: "conductor-2's JSON-RPC", option: '--json-rpc-base-port' },
        { host: '127.0.0.1', port, owner: "conductor-1's file server", option: '--http-base-port' },
      ]),
    ).rejects.toThrow(/wanted by both conductor-2's JSON-RPC \(--json-rpc-base-port\) and conductor-1's file server/);
  });
});
