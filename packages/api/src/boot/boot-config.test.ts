import { randomUUID } from 'node:crypto';
import { BootConfigNotFound, RpcTimeout, TemporaryFailure, UnsupportedDriverExtension } from '@bmaas/common';
import bcrypt from 'bcryptjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiHarness } from '../testing/api-harness.js';
import { captureLog } from '../testing/log-capture.js';
import { BOOT_NOT_FOUND_BODY } from './boot-config-router.js';

const MAC = '52:54:00:aa:00:01';

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Headers that legitimately differ between two answers. */
const VARYING = new Set(['date', 'openstack-request-id', 'x-openstack-request-id']);

async function raw(baseUrl: string, path: string, init: RequestInit = {}): Promise<RawAnswer> {
  const response = await fetch(`${baseUrl}${path}`, init);
  const headers: Record<string, string> = {};
  response.headers.forEach((value, key) => {
    if (!VARYING.has(key)) headers[key] = value;
  });
  return { status: response.status, headers, body: await response.text() };
}

describe('GET /v1/boot/<MAC>/<NAME>', () => {
  const log = captureLog();
  let api: ApiHarness;
  let nodeUuid: string;
  let reference: RawAnswer;

  beforeAll(async () => {
    api = await ApiHarness.start({ logger: log.logger });
    await api.registerConductor('conductor-a');
    await api.registerConductor('conductor-b');
    nodeUuid = (await api.storeNode('wait call-back', [MAC])).uuid;
    api.conductors.respondWith('get_boot_config', ({ node_id, name }, host) => {
      if (name !== 'boot.ipxe') throw new BootConfigNotFound(node_id, name);
      return { content: `#!ipxe\necho ${node_id} from ${host}\n` };
    });
    reference = await raw(api.baseUrl, '/v1/boot/00:00:00:00:00:00/boot.ipxe');
  });
  afterAll(() => api.close());

  it("serves the owner's script as text/plain, not cached, with no version header needed", async () => {
    const answer = await raw(api.baseUrl, `/v1/boot/${MAC}/boot.ipxe`);
    const owner = await api.conductors.hostFor({ uuid: nodeUuid, driver: 'fake-hardware', conductorGroup: '' });
    expect(answer.status).toBe(200);
    expect(answer.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(answer.headers['cache-control']).toBe('no-store');
    expect(answer.body).toBe(`#!ipxe\necho ${nodeUuid} from ${owner}\n`);
    const call = api.conductors.callsOf('get_boot_config').at(-1);
    expect(call?.host).toBe(owner);
    expect(call?.params).toEqual({ node_id: nodeUuid, name: 'boot.ipxe' });
    // What is left of [api]boot_config_rpc_timeout after the lookup.
    expect(call?.options.timeoutMs).toBeGreaterThan(0);
    expect(call?.options.timeoutMs).toBeLessThanOrEqual(5000);
    expect(call?.options.requestId).toMatch(/^req-/);
  });

  it.each([
    ['colon', '52:54:00:aa:00:01'],
    ['percent-encoded colon, as iPXE sends mac', '52%3A54%3A00%3Aaa%3A00%3A01'],
    ['lower-case percent encoding', '52%3a54%3a00%3aaa%3a00%3a01'],
    ['hyphen', '52-54-00-aa-00-01'],
    ['raw hex', '525400aa0001'],
    ['upper case', '52-54-00-AA-00-01'],
  ])('accepts the MAC in %s form', async (_form, mac) => {
    const answer = await raw(api.baseUrl, `/v1/boot/${mac}/boot.ipxe`);
    expect(answer.status).toBe(200);
    expect(answer.body).toContain(nodeUuid);
  });

  it('answers with a request id, logging a served script at debug only (no access log line on the boot path)', async () => {
    const before = log.lines.length;
    const response = await fetch(`${api.baseUrl}/v1/boot/${MAC}/boot.ipxe`);
    await response.text();
    const requestId = response.headers.get('openstack-request-id');
    expect(requestId).toMatch(/^req-/);
    expect(response.headers.get('x-openstack-request-id')).toBe(requestId);
    const lines = log.lines.slice(before).filter((l) => l.requestId === requestId);
    expect(lines.map((l) => [l.level, l.message])).toEqual([['debug', 'boot config served']]);
    expect(lines[0]?.nodeUuid).toBe(nodeUuid);
  });

  it('answers HEAD like GET without a body', async () => {
    const answer = await raw(api.baseUrl, `/v1/boot/${MAC}/boot.ipxe`, { method: 'HEAD' });
    expect(answer.status).toBe(200);
    expect(answer.body).toBe('');
  });

  it('the reference refusal is the Ironic not-found body', () => {
    expect(reference.status).toBe(404);
    expect(reference.body).toBe(BOOT_NOT_FOUND_BODY);
    expect(reference.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(reference.headers['cache-control']).toBe('no-store');
  });

  const junkPaths = [
    ['malformed MAC', '/v1/boot/52:54:00:aa:00/boot.ipxe'],
    ['unknown name', `/v1/boot/${MAC}/pxelinux.cfg`],
    ['traversal in the name', `/v1/boot/${MAC}/..%2F..%2Fetc%2Fpasswd`],
    ['encoded dots', `/v1/boot/${MAC}/%2e%2e`],
    ['dot-dot name', `/v1/boot/${MAC}/..`],
    ['NUL in the name', `/v1/boot/${MAC}/boot.ipxe%00`],
    ['very long name', `/v1/boot/${MAC}/${'a'.repeat(5000)}`],
    ['unicode name', `/v1/boot/${MAC}/${encodeURIComponent('bööt.ipxe')}`],
    ['malformed percent encoding', `/v1/boot/${MAC}/%E0%A4%A`],
    ['traversal in the MAC', '/v1/boot/..%2F..%2Fetc%2Fpasswd/boot.ipxe'],
    ['extra segment', `/v1/boot/${MAC}/boot.ipxe/more`],
    ['missing name', `/v1/boot/${MAC}`],
    ['bare branch', '/v1/boot'],
  ];

  it.each(junkPaths)('refuses %s with the identical 404', async (_what, path) => {
    const before = api.conductors.callsOf('get_boot_config').length;
    expect(await raw(api.baseUrl, path)).toEqual(reference);
    // Junk never travels to a conductor (only well-formed file-like names do).
    if (!path.endsWith('pxelinux.cfg')) expect(api.conductors.callsOf('get_boot_config').length).toBe(before);
  });

  it('refuses other methods with the identical 404', async () => {
    expect(await raw(api.baseUrl, `/v1/boot/${MAC}/boot.ipxe`, { method: 'POST', body: '{}' })).toEqual(reference);
    expect(await raw(api.baseUrl, `/v1/boot/${MAC}/boot.ipxe`, { method: 'DELETE' })).toEqual(reference);
  });

  it.each([
    [
      'interface without the extension',
      new UnsupportedDriverExtension('fake-hardware', 'get_boot_config'),
      'unsupported-driver-extension',
    ],
    ['file not rendered', new BootConfigNotFound('x', 'boot.ipxe'), 'config-not-found'],
    ['no alive conductor', new TemporaryFailure(), 'no-conductor'],
    ['RPC timeout', new RpcTimeout('timed out'), 'rpc-timeout'],
    ['any other RPC error', new Error('socket hang up'), 'rpc-error'],
  ])(
    'refuses when the conductor side fails (%s) with the identical 404, and logs why',
    async (_what, error, reason) => {
      api.conductors.failWith('get_boot_config', error);
      try {
        expect(await raw(api.baseUrl, `/v1/boot/${MAC}/boot.ipxe`)).toEqual(reference);
      } finally {
        api.conductors.clearFailures();
      }
      const line = log.lines.findLast((l) => l.reason === reason);
      expect(line?.nodeUuid).toBe(nodeUuid);
      expect(line?.message).toBe(`boot config refused: ${reason}`);
    },
  );

  it('refuses an unknown MAC and a node outside the wait states, naming the cause in the log only', async () => {
    expect(await raw(api.baseUrl, '/v1/boot/52:54:00:aa:00:99/boot.ipxe')).toEqual(reference);
    expect(log.lines.findLast((l) => l.reason === 'unknown-mac')?.detail).toBe('52:54:00:aa:00:99');

    const node = await api.stores.nodes.getByUuid(nodeUuid);
    await api.stores.nodes.update(node!.id, { provisionState: 'active' });
    try {
      expect(await raw(api.baseUrl, `/v1/boot/${MAC}/boot.ipxe`)).toEqual(reference);
      const line = log.lines.findLast((l) => l.reason === 'state-not-allowed');
      expect(line).toMatchObject({ nodeUuid, detail: 'active' });
    } finally {
      await api.stores.nodes.update(node!.id, { provisionState: 'wait call-back' });
    }
  });

  it('serves every "* wait" state and nothing else', async () => {
    const node = await api.stores.nodes.getByUuid(nodeUuid);
    const served: string[] = [];
    for (const state of [
      'wait call-back',
      'clean wait',
      'inspect wait',
      'rescue wait',
      'service wait',
      'deploying',
      'deploy hold',
      'available',
      'enroll',
    ]) {
      await api.stores.nodes.update(node!.id, { provisionState: state });
      if ((await raw(api.baseUrl, `/v1/boot/${MAC}/boot.ipxe`)).status === 200) served.push(state);
    }
    await api.stores.nodes.update(node!.id, { provisionState: 'wait call-back' });
    expect(served).toEqual(['wait call-back', 'clean wait', 'inspect wait', 'rescue wait', 'service wait']);
  });

  it("refuses when no conductor serves the node's hardware type", async () => {
    const other = await api.stores.nodes.create({
      uuid: randomUUID(),
      driver: 'ipmi',
      bootInterface: 'ipxe',
      deployInterface: 'direct',
      powerInterface: 'ipmitool',
      managementInterface: 'ipmitool',
    });
    await api.stores.nodes.update(other.id, { provisionState: 'wait call-back' });
    await api.stores.ports.create({ uuid: randomUUID(), address: '52:54:00:aa:00:02', nodeId: other.id });
    expect(await raw(api.baseUrl, '/v1/boot/52:54:00:aa:00:02/boot.ipxe')).toEqual(reference);
    expect(log.lines.findLast((l) => l.nodeUuid === other.uuid)?.reason).toBe('no-conductor');
  });
});

describe('/v1/boot with [api]restrict_boot_config = false and HTTP basic auth on', () => {
  let api: ApiHarness;
  beforeAll(async () => {
    api = await ApiHarness.start({
      overrides: { api: { restrict_boot_config: false } },
      htpasswd: `admin:${bcrypt.hashSync('secret', 4)}\n`,
    });
    await api.registerConductor('conductor-a');
    await api.storeNode('active', [MAC]);
    api.conductors.respondWith('get_boot_config', ({ node_id }) => ({ content: `#!ipxe\n# ${node_id}\n` }));
  });
  afterAll(() => api.close());

  it('serves nodes in any state (fast-track), without credentials, while the rest of the API needs them', async () => {
    const boot = await fetch(`${api.baseUrl}/v1/boot/${MAC}/boot.ipxe`);
    expect(boot.status).toBe(200);
    expect((await api.request('GET', '/v1/nodes')).status).toBe(401);
  });
});
