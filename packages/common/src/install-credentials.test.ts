import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { jsonRpcAuthStrategy } from './config/json-rpc-auth.js';
import { loadConfig } from './config/load.js';
import { HtpasswdUsers } from './htpasswd.js';
import { ensureInstallCredentials } from './install-credentials.js';

const parent = mkdtempSync(join(tmpdir(), 'bmaas-credentials-'));
afterAll(() => rmSync(parent, { recursive: true, force: true }));

describe('ensureInstallCredentials', () => {
  it('makes private credentials once, and a config file that turns on http_basic end to end', async () => {
    const directory = join(parent, 'credentials');
    const made = ensureInstallCredentials(directory);
    expect(statSync(directory).mode & 0o777).toBe(0o700);
    for (const name of ['api-password', 'api-htpasswd', 'json-rpc-htpasswd', 'credentials.conf']) {
      expect(statSync(join(directory, name)).mode & 0o777, name).toBe(0o600);
    }
    expect(made.apiPassword.length).toBeGreaterThanOrEqual(32);

    const config = loadConfig({ configFiles: [made.configFile], env: {} });
    expect(config.DEFAULT.auth_strategy).toBe('http_basic');
    expect(jsonRpcAuthStrategy(config)).toBe('http_basic');
    const apiUsers = HtpasswdUsers.fromFile(config.DEFAULT.http_basic_auth_user_file);
    expect(await apiUsers.verify(made.apiUser, made.apiPassword)).toBe(true);
    const rpcUsers = HtpasswdUsers.fromFile(config.json_rpc.http_basic_auth_user_file);
    expect(await rpcUsers.verify(config.json_rpc.username as string, config.json_rpc.password as string)).toBe(true);

    // Kept: a second call reads them back, it never makes new ones.
    const conf = readFileSync(made.configFile, 'utf8');
    const again = ensureInstallCredentials(directory);
    expect(again.apiPassword).toBe(made.apiPassword);
    expect(readFileSync(made.configFile, 'utf8')).toBe(conf);
    // Another install, other passwords.
    expect(ensureInstallCredentials(join(parent, 'other')).apiPassword).not.toBe(made.apiPassword);
  });
});
