import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvalidParameterValue, type NodeRecord } from '@bmaas/common';
import bcrypt from 'bcryptjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiHarness, faultOf } from '../testing/api-harness.js';
import { MAX_MINOR, MAX_VERSION } from '../versions.js';

/** A version newer than ours, as agents built for a newer Ironic ask for. */
const ABOVE_MAX = `1.${MAX_MINOR + 4}`;

let api: ApiHarness;
let dir: string;
let node: NodeRecord;
const TOKEN = 'c2VjcmV0LXRva2VuLWZvci10aGUtYWdlbnQ';
const body = { callback_url: 'http://192.0.2.20:9999', agent_token: TOKEN, agent_version: '9.8.0' };

beforeAll(async () => {
  // HTTP basic auth is on: the agent's calls must still go through without credentials.
  dir = mkdtempSync(join(tmpdir(), 'bmaas-heartbeat-'));
  const htpasswd = join(dir, 'htpasswd');
  writeFileSync(htpasswd, `admin:${bcrypt.hashSync('secret', 4)}\n`);
  api = await ApiHarness.start({
    overrides: { DEFAULT: { auth_strategy: 'http_basic', http_basic_auth_user_file: htpasswd } },
  });
  await api.registerConductor('conductor-a');
  await api.registerConductor('conductor-b');
  node = await api.storeNode('wait call-back', ['52:54:00:ef:00:01'], { create: { name: 'agent-node' } });
});
afterAll(async () => {
  await api?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('POST /v1/heartbeat/{node}', () => {
  it('forwards the heartbeat with its token to the owning conductor and answers 202, without credentials', async () => {
    const answer = await api.request('POST', `/v1/heartbeat/${node.uuid}`, { body, version: ABOVE_MAX });
    expect(answer.status).toBe(202);
    expect(answer.body).toBeUndefined();
    expect(answer.headers.get('x-openstack-ironic-api-version')).toBe(MAX_VERSION);
    const call = api.conductors.callsOf('heartbeat').at(-1);
    expect(call?.host).toBe(await api.conductors.hostFor(node));
    expect(call?.params).toEqual({
      node_id: node.uuid,
      callback_url: 'http://192.0.2.20:9999',
      agent_token: TOKEN,
      agent_version: '9.8.0',
    });
    expect(call?.options.requestId).toBe(answer.headers.get('openstack-request-id'));
    expect((await api.request('GET', '/v1/nodes')).status).toBe(401);
  });

  it('finds the node by name too', async () => {
    const answer = await api.request('POST', '/v1/heartbeat/agent-node', { body });
    expect(answer.status).toBe(202);
    expect(api.conductors.callsOf('heartbeat').at(-1)?.params.node_id).toBe(node.uuid);
  });

  it.each([
    ['no token', { callback_url: 'http://192.0.2.20:9999' }, 'Agent token is required for heartbeat processing.'],
    ['a null token', { callback_url: 'http://192.0.2.20:9999', agent_token: null }, 'Agent token is required'],
    ['a token that is not a string', { callback_url: 'http://x:1', agent_token: 7 }, 'must be a string'],
    ['no callback URL', { agent_token: TOKEN }, 'Missing argument: "callback_url"'],
    ['a callback URL that is not http', { callback_url: 'ftp://192.0.2.20/', agent_token: TOKEN }, 'callback_url'],
    ['an unknown agent status', { callback_url: '', agent_token: TOKEN, agent_status: 'bored' }, 'Agent status'],
  ])('refuses %s with 400 before calling the conductor', async (_what, sent, message) => {
    const before = api.conductors.callsOf('heartbeat').length;
    const answer = await api.request('POST', `/v1/heartbeat/${node.uuid}`, { body: sent });
    expect(answer.status).toBe(400);
    expect(faultOf(answer.body).faultstring).toContain(message);
    expect(api.conductors.callsOf('heartbeat')).toHaveLength(before);
  });

  it("answers the conductor's refusal of a wrong token as upstream does (400)", async () => {
    api.conductors.failWith('heartbeat', new InvalidParameterValue('Invalid or missing agent token received.'));
    try {
      const answer = await api.request('POST', `/v1/heartbeat/${node.uuid}`, {
        body: { ...body, agent_token: 'guessed' },
      });
      expect(answer.status).toBe(400);
      expect(faultOf(answer.body).faultstring).toBe('Invalid or missing agent token received.');
    } finally {
      api.conductors.clearFailures();
    }
  });

  it('refuses fields the requested version does not know', async () => {
    const old = await api.request('POST', `/v1/heartbeat/${node.uuid}`, { body, version: '1.35' });
    expect(old.status).toBe(400);
    expect(faultOf(old.body).faultstring).toBe('Field "agent_version" not recognised in this version.');
    const { agent_version: _, ...withoutVersion } = body;
    expect(
      (await api.request('POST', `/v1/heartbeat/${node.uuid}`, { body: withoutVersion, version: '1.35' })).status,
    ).toBe(202);
  });

  it('does not exist below 1.22, and answers an unknown node 404', async () => {
    for (const version of [null, '1.21']) {
      const answer = await api.request('POST', `/v1/heartbeat/${node.uuid}`, { body, version });
      expect(answer.status).toBe(404);
      expect(faultOf(answer.body).faultstring).toBe('Resource could not be found.');
    }
    const unknown = await api.request('POST', `/v1/heartbeat/${randomUUID()}`, { body });
    expect(unknown.status).toBe(404);
    expect(faultOf(unknown.body).faultstring).toMatch(/^Node .* could not be found\.$/);
  });

  it('answers 405 to other methods', async () => {
    const answer = await api.request('GET', `/v1/heartbeat/${node.uuid}`);
    expect(answer.status).toBe(405);
    expect(answer.headers.get('allow')).toBe('POST');
  });
});
