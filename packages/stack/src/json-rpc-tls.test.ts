import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@bmaas/common';
import { afterAll, describe, expect, it } from 'vitest';
import { conductorCertificate, jsonRpcTlsEnvironment, writeJsonRpcTlsConfig } from './json-rpc-tls.js';

const parent = mkdtempSync(join(tmpdir(), 'bmaas-stack-tls-'));
afterAll(() => rmSync(parent, { recursive: true, force: true }));

describe('JSON-RPC TLS of the stack and the launcher', () => {
  it('writes a config file turning use_ssl on with the install CA, which the certificates are signed by', () => {
    const credentials = join(parent, 'credentials');
    const config = loadConfig({ configFiles: [writeJsonRpcTlsConfig(credentials)], env: {} });
    expect(config.json_rpc.use_ssl).toBe(true);
    expect(config.json_rpc.cafile).toBe(join(credentials, 'tls', 'ca', 'cert.pem'));
    expect(jsonRpcTlsEnvironment(join(credentials, 'tls'))).toEqual({
      BMAAS_JSON_RPC__USE_SSL: 'true',
      BMAAS_JSON_RPC__CAFILE: config.json_rpc.cafile,
    });

    const ca = new X509Certificate(readFileSync(config.json_rpc.cafile as string));
    const loopback = new X509Certificate(
      readFileSync(conductorCertificate(join(credentials, 'tls'), 'conductor-1', '127.0.0.1').certFile),
    );
    expect(loopback.verify(ca.publicKey)).toBe(true);
    // On loopback: every name of loopback, as clients may dial any.
    for (const host of ['127.0.0.1', '::1']) expect(loopback.checkIP(host), host).toBe(host);
    expect(loopback.checkHost('localhost')).toBe('localhost');

    // Elsewhere: the address or name it listens on, and nothing of loopback.
    const remote = new X509Certificate(
      readFileSync(conductorCertificate(join(credentials, 'tls'), 'conductor-2', '192.0.2.21').certFile),
    );
    expect(remote.checkIP('192.0.2.21')).toBe('192.0.2.21');
    expect(remote.checkIP('127.0.0.1')).toBeUndefined();
    expect(remote.checkHost('localhost')).toBeUndefined();
  });
});
