import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BmaasConfig, ConfigError, createSilentLogger, type DeepPartial } from '@bmaas/common';
import bcrypt from 'bcryptjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepareConductor } from './conductor-setup.js';
import { testConfig } from './testing/fixtures.js';

let dir: string;
let htpasswd: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'bmaas-setup-'));
  htpasswd = join(dir, 'htpasswd');
  writeFileSync(htpasswd, `api:${bcrypt.hashSync('s3cret', 4)}\n`);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const prepare = (overrides: DeepPartial<BmaasConfig>) =>
  prepareConductor({ config: testConfig(overrides), logger: createSilentLogger() });

describe('JSON-RPC authentication of a conductor', () => {
  it('follows [DEFAULT]auth_strategy when [json_rpc]auth_strategy is unset', async () => {
    const setup = prepare({
      DEFAULT: { auth_strategy: 'http_basic' },
      json_rpc: { http_basic_auth_user_file: htpasswd },
    });
    expect(setup.auth).toBeDefined();
    expect(await setup.auth?.verify('api', 's3cret')).toBe(true);
    expect(await setup.auth?.verify('api', 'wrong')).toBe(false);
  });

  it('lets an explicit [json_rpc]auth_strategy win over [DEFAULT]', () => {
    const setup = prepare({
      DEFAULT: { auth_strategy: 'http_basic' },
      json_rpc: { auth_strategy: 'noauth', host_ip: '127.0.0.1' },
    });
    expect(setup.auth).toBeUndefined();
  });

  it('refuses noauth on an address other machines can reach, naming the option that allows it', () => {
    for (const host_ip of ['0.0.0.0', '192.0.2.10', '::', 'conductor-1']) {
      expect(() => prepare({ json_rpc: { host_ip } }), host_ip).toThrow(ConfigError);
      expect(() => prepare({ json_rpc: { host_ip } }), host_ip).toThrow(/allow_unauthenticated_remote_access/);
    }
    expect(() => prepare({ json_rpc: { host_ip: '0.0.0.0', auth_strategy: 'noauth' } })).toThrow(ConfigError);
  });

  it('serves noauth on loopback, or elsewhere when the operator allows it by name', () => {
    for (const host_ip of ['127.0.0.1', '127.8.0.1', '::1', 'localhost']) {
      expect(prepare({ json_rpc: { host_ip } }).auth, host_ip).toBeUndefined();
    }
    const allowed = prepare({ json_rpc: { host_ip: '0.0.0.0', allow_unauthenticated_remote_access: true } });
    expect(allowed.auth).toBeUndefined();
  });

  it('serves http_basic on any address', () => {
    const setup = prepare({
      json_rpc: { host_ip: '0.0.0.0', auth_strategy: 'http_basic', http_basic_auth_user_file: htpasswd },
    });
    expect(setup.auth).toBeDefined();
  });
});
