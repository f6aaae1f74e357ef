import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { whyRootFilesNotServed } from './root-files-check.js';

describe('whyRootFilesNotServed', () => {
  let server: http.Server;
  let baseUrl: string;
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      res.statusCode = req.url === '/boot.ipxe' ? 200 : 404;
      res.end('#!ipxe\n');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('is undefined when every file is served', async () => {
    expect(await whyRootFilesNotServed(baseUrl, ['boot.ipxe'])).toBeUndefined();
  });

  it('names the first file that is not served, with the status', async () => {
    expect(await whyRootFilesNotServed(baseUrl, ['boot.ipxe', 'grub.cfg'])).toBe(`GET ${baseUrl}/grub.cfg: 404`);
  });

  it('names the error when nothing answers', async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    expect(await whyRootFilesNotServed(url, ['boot.ipxe'])).toBe(`GET ${url}/boot.ipxe: ECONNREFUSED`);
  });
});
