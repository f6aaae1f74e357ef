import { randomBytes, randomUUID } from 'node:crypto';
import { NodeLocked, type NodeRecord } from '@bmaas/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BOOT_NOT_FOUND_BODY } from '../boot/boot-config-router.js';
import { ApiHarness, faultOf } from '../testing/api-harness.js';
import { captureLog } from '../testing/log-capture.js';
import { MAX_MINOR, MAX_VERSION } from '../versions.js';

/** A version newer than ours, as agents built for a newer Ironic ask for. */
const ABOVE_MAX = `1.${MAX_MINOR + 4}`;

/** Headers that legitimately differ between two answers. */
const VARYING = new Set(['date', 'openstack-request-id', 'x-openstack-request-id', 'content-length']);

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** The answer's request id, kept apart so two answers can be compared whole. */
const requestIds = new WeakMap<RawAnswer, string>();

/** Why the API refused the request that got `answer`, from its log. */
function refusalReason(answer: RawAnswer): unknown {
  const requestId = requestIds.get(answer);
  return log.lines.find((l) => l.requestId === requestId && typeof l.reason === 'string')?.reason;
}

const log = captureLog();
let api: ApiHarness;
let macCounter = 0;

async function raw(path: string, version: string | null = '1.99'): Promise<RawAnswer> {
  const response = await fetch(`${api.baseUrl}${path}`, {
    headers: version ? { 'X-OpenStack-Ironic-API-Version': version } : {},
  });
  const headers: Record<string, string> = {};
  response.headers.forEach((value, key) => {
    if (!VARYING.has(key)) headers[key] = value;
  });
  const answer = { status: response.status, headers, body: await response.text() };
  requestIds.set(answer, response.headers.get('openstack-request-id') ?? '');
  return answer;
}

function newMac(): string {
  macCounter++;
  return `52:54:00:ab:${(macCounter >> 8).toString(16).padStart(2, '0')}:${(macCounter & 0xff).toString(16).padStart(2, '0')}`;
}

/** A node with ports in `state`; driver_internal_info as given. */
async function nodeWithPorts(state: string, macs: string[], fields: Partial<NodeRecord> = {}): Promise<NodeRecord> {
  return api.storeNode(state, macs, { update: fields });
}

beforeAll(async () => {
  api = await ApiHarness.start({ logger: log.logger });
  await api.registerConductor('conductor-a');
  await api.registerConductor('conductor-b');
  // Plays the owning conductor: issues a token once and stores it, as get_node_with_token does.
  api.conductors.respondWith('get_node_with_token', async ({ node_id }) => {
    const node = (await api.stores.nodes.getByUuid(node_id)) as NodeRecord;
    const token = randomBytes(16).toString('hex');
    const info = { ...node.driverInternalInfo, agent_secret_token: token };
    await api.stores.nodes.update(node.id, { driverInternalInfo: info });
    return {
      uuid: node.uuid,
      properties: node.properties,
      instance_info: node.instanceInfo,
      driver_internal_info: { ...info, agent_secret_token: '******' },
      agent_token: token,
    };
  });
});
afterAll(() => api?.close());

describe('GET /v1/lookup', () => {
  it("answers the node and the agent config, with the token the owner issued, then '******' without asking again", async () => {
    const mac = newMac();
    const node = await nodeWithPorts('wait call-back', [newMac(), mac], {
      properties: { cpus: 2 },
      instanceInfo: { image_source: 'img', image_url: 'http://images/secret-temp-url', configdrive: 'H4sI' },
      driverInternalInfo: { deploy_boot_mode: 'bios' },
    });
    const first = await api.request('GET', `/v1/lookup?addresses=${mac}`, { version: ABOVE_MAX });
    expect(first.status).toBe(200);
    expect(first.headers.get('x-openstack-ironic-api-version')).toBe(MAX_VERSION);
    expect(first.headers.get('x-openstack-ironic-api-minimum-version')).toBe('1.1');
    expect(first.headers.get('x-openstack-ironic-api-maximum-version')).toBe(MAX_VERSION);
    expect(Object.keys(first.body)).toEqual(['node', 'config']);
    expect(first.body.node).toEqual({
      uuid: node.uuid,
      properties: { cpus: 2 },
      instance_info: { image_source: 'img', image_url: '******', configdrive: '******' },
      driver_internal_info: { deploy_boot_mode: 'bios', agent_secret_token: '******' },
      links: [
        { href: `${api.baseUrl}/v1/nodes/${node.uuid}`, rel: 'self' },
        { href: `${api.baseUrl}/nodes/${node.uuid}`, rel: 'bookmark' },
      ],
    });
    const stored = (await api.stores.nodes.getById(node.id)) as NodeRecord;
    expect(first.body.config).toEqual({
      metrics: {
        backend: 'noop',
        prepend_host: false,
        prepend_uuid: false,
        prepend_host_reverse: true,
        global_prefix: null,
      },
      metrics_statsd: { statsd_host: 'localhost', statsd_port: 8125 },
      heartbeat_timeout: 300,
      agent_token: stored.driverInternalInfo.agent_secret_token,
      agent_token_required: true,
      disable_deep_image_inspection: false,
      permitted_image_formats: ['raw', 'qcow2', 'iso'],
      enable_bios_bootloader_install: false,
    });
    const calls = api.conductors.callsOf('get_node_with_token');
    expect(calls.at(-1)?.params).toEqual({ node_id: node.uuid });
    expect(calls.at(-1)?.host).toBe(await api.conductors.hostFor(node));
    expect(calls.at(-1)?.options.requestId).toBe(first.headers.get('openstack-request-id'));

    const callsBefore = calls.length;
    const second = await api.request('GET', `/v1/lookup?addresses=${mac}`, { version: ABOVE_MAX });
    expect(second.status).toBe(200);
    expect(second.body.config.agent_token).toBe('******');
    expect(second.body.node.driver_internal_info.agent_secret_token).toBe('******');
    expect(api.conductors.callsOf('get_node_with_token')).toHaveLength(callsBefore);
  });

  it('finds the node by any of its MACs, in any accepted form, ignoring addresses that are not MACs', async () => {
    const [one, two] = [newMac(), newMac()];
    const node = await nodeWithPorts('clean wait', [one, two]);
    const answer = await api.request('GET', `/v1/lookup?addresses=bogus,${two.toUpperCase()},,52:54`);
    expect(answer.status).toBe(200);
    expect(answer.body.node.uuid).toBe(node.uuid);
    expect(log.lines.findLast((l) => l.message === 'lookup: addresses that are not MACs ignored')?.addresses).toEqual([
      'bogus',
      '52:54',
    ]);
    const repeated = await api.request('GET', `/v1/lookup?addresses=00:00:00:00:00:01&addresses=${one}`);
    expect(repeated.body.node.uuid).toBe(node.uuid);
  });

  it('takes node_uuid over the addresses', async () => {
    const node = await nodeWithPorts('inspect wait', [newMac()]);
    const answer = await api.request('GET', `/v1/lookup?addresses=00:00:00:00:00:02&node_uuid=${node.uuid}`);
    expect(answer.status).toBe(200);
    expect(answer.body.node.uuid).toBe(node.uuid);
  });

  it('needs a MAC or a node UUID, and node_uuid must be a UUID', async () => {
    const none = await api.request('GET', '/v1/lookup?addresses=nope');
    expect(none.status).toBe(400);
    expect(faultOf(none.body).faultstring).toBe("At least one of 'addresses' and 'node_uuid' parameters is required");
    expect((await api.request('GET', '/v1/lookup')).status).toBe(400);
    const bad = await api.request('GET', '/v1/lookup?node_uuid=not-a-uuid');
    expect(bad.status).toBe(400);
    expect(faultOf(bad.body).faultstring).toMatch(/Expected a UUID/);
  });

  it('answers every miss with the same 404, and logs the reason', async () => {
    const reference = await raw('/v1/lookup?addresses=00:00:00:00:00:03');
    expect(reference.status).toBe(404);
    expect(reference.body).toBe(BOOT_NOT_FOUND_BODY);
    expect(refusalReason(reference)).toBe('unknown-node');
    expect(log.lines.findLast((l) => l.reason === 'unknown-node')?.message).toBe('agent lookup refused: unknown-node');

    const enrolled = await nodeWithPorts('enroll', [newMac()]);
    const activeMac = newMac();
    const active = await nodeWithPorts('active', [activeMac]);
    const [a, b] = [newMac(), newMac()];
    await nodeWithPorts('wait call-back', [a]);
    await nodeWithPorts('wait call-back', [b]);
    const misses: Array<[string, string]> = [
      [`/v1/lookup?node_uuid=${randomUUID()}`, 'unknown-node'],
      [`/v1/lookup?node_uuid=${enrolled.uuid}`, 'state-not-allowed'],
      [`/v1/lookup?addresses=${activeMac}`, 'state-not-allowed'],
      [`/v1/lookup?addresses=${a},${b}`, 'several-nodes'],
    ];
    for (const [path, reason] of misses) {
      const answer = await raw(path);
      expect(answer, path).toEqual(reference);
      expect(refusalReason(answer), path).toBe(reason);
    }
    expect(log.lines.findLast((l) => l.nodeUuid === active.uuid)).toMatchObject({
      reason: 'state-not-allowed',
      detail: 'active',
    });
  });

  it('does not exist below 1.22 (the same 404), and refuses a malformed version', async () => {
    const mac = newMac();
    await nodeWithPorts('wait call-back', [mac]);
    const reference = await raw('/v1/lookup?addresses=00:00:00:00:00:04');
    for (const version of [null, '1.1', '1.21']) {
      const answer = await raw(`/v1/lookup?addresses=${mac}`, version);
      expect(answer, String(version)).toEqual({
        ...reference,
        headers: { ...reference.headers, 'x-openstack-ironic-api-version': version ?? '1.1' },
      });
    }
    expect((await raw(`/v1/lookup?addresses=${mac}`, '1.22')).status).toBe(200);
    expect((await raw(`/v1/lookup?addresses=${mac}`, 'one.two')).status).toBe(400);
  });

  it("passes the owner's refusal on (a node locked while its token is issued: 409)", async () => {
    const mac = newMac();
    const node = await nodeWithPorts('wait call-back', [mac]);
    api.conductors.failWith('get_node_with_token', new NodeLocked(node.uuid, 'conductor-b'));
    try {
      const answer = await api.request('GET', `/v1/lookup?addresses=${mac}`);
      expect(answer.status).toBe(409);
    } finally {
      api.conductors.clearFailures();
    }
  });

  it('answers 405 to other methods', async () => {
    const answer = await api.request('POST', '/v1/lookup', { body: {} });
    expect(answer.status).toBe(405);
    expect(answer.headers.get('allow')).toBe('GET');
  });
});

describe('GET /v1/lookup with [api]restrict_lookup = false', () => {
  let open: ApiHarness;
  beforeAll(async () => {
    open = await ApiHarness.start({ overrides: { api: { restrict_lookup: false, ramdisk_heartbeat_timeout: 42 } } });
    await open.registerConductor('conductor-a');
    open.conductors.respondWith('get_node_with_token', ({ node_id }) => ({
      uuid: node_id,
      properties: {},
      instance_info: {},
      driver_internal_info: {},
      agent_token: 'fresh',
    }));
  });
  afterAll(() => open?.close());

  it('looks up nodes in any state', async () => {
    const node = await open.storeNode('enroll', ['52:54:00:cd:00:01']);
    const answer = await open.request('GET', '/v1/lookup?addresses=52:54:00:cd:00:01');
    expect(answer.status).toBe(200);
    expect(answer.body.node.uuid).toBe(node.uuid);
    expect(answer.body.config).toMatchObject({ agent_token: 'fresh', heartbeat_timeout: 42 });
  });
});
