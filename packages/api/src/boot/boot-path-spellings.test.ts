import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiHarness } from '../testing/api-harness.js';
import { BOOT_NOT_FOUND_BODY } from './boot-config-router.js';

const MAC = '52:54:00:bb:00:01';

/** A GET whose request target is sent exactly as given (absolute form and `//` included). */
function rawGet(baseUrl: string, target: string): Promise<{ status: number; body: string }> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, path: target, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

let api: ApiHarness;
let nodeUuid: string;
beforeAll(async () => {
  api = await ApiHarness.start();
  await api.registerConductor('conductor-a');
  nodeUuid = (await api.storeNode('wait call-back', [MAC])).uuid;
  api.conductors.respondWith('get_boot_config', ({ node_id }) => ({ content: `#!ipxe\necho ${node_id}\n` }));
});
afterAll(() => api?.close());

describe('spellings of a boot path', () => {
  it('decodes a MAC once: a MAC percent-encoded twice is refused with the uniform 404', async () => {
    expect((await rawGet(api.baseUrl, '/v1/boot/52%3A54%3A00%3Abb%3A00%3A01/boot.ipxe')).status).toBe(200);
    const twice = await rawGet(api.baseUrl, '/v1/boot/52%253A54%253A00%253Abb%253A00%253A01/boot.ipxe');
    expect(twice).toEqual({ status: 404, body: BOOT_NOT_FOUND_BODY });
    const name = await rawGet(api.baseUrl, `/v1/boot/${MAC}/boot%252Eipxe`);
    expect(name).toEqual({ status: 404, body: BOOT_NOT_FOUND_BODY });
  });

  it('lookup decodes an address once too', async () => {
    // Once encoded the address is a MAC (answered for itself); twice encoded it is no address at all.
    const once = await api.request('GET', `/v1/lookup?addresses=${encodeURIComponent(MAC)}`);
    expect(once.status).not.toBe(400);
    const twice = await api.request('GET', `/v1/lookup?addresses=${encodeURIComponent(encodeURIComponent(MAC))}`);
    expect(twice.status, JSON.stringify(twice.body)).toBe(400);
  });

  it('answers equivalent paths in the boot handler: repeated slashes and absolute-form targets', async () => {
    const { port } = new URL(api.baseUrl);
    for (const target of [
      `/v1//boot/${MAC}/boot.ipxe`,
      `//v1/boot/${MAC}/boot.ipxe`,
      `http://127.0.0.1:${port}/v1/boot/${MAC}/boot.ipxe`,
      `http://bmaas.example/v1//boot/${MAC}/boot.ipxe`,
    ]) {
      expect(await rawGet(api.baseUrl, target), target).toEqual({ status: 200, body: `#!ipxe\necho ${nodeUuid}\n` });
    }
    for (const target of [
      '/v1//boot/00:00:00:00:00:01/boot.ipxe',
      `http://127.0.0.1:${port}/v1/boot/00:00:00:00:00:01/boot.ipxe`,
      '/v1//boot/',
      `/v1/boot//${MAC}//boot.ipxe`,
      `http://127.0.0.1:${port}/v1/boot`,
    ]) {
      expect(await rawGet(api.baseUrl, target), target).toEqual({ status: 404, body: BOOT_NOT_FOUND_BODY });
    }
  });
});
