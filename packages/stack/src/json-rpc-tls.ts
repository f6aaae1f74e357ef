import { writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { type CertificateFiles, ensureCertificate, ensureCertificateAuthority } from '@bmaas/pki';

/** The hosts a conductor listening on `host` is reached by: that address or name, and loopback's names when it is loopback. */
function conductorHosts(host: string): { dnsNames: string[]; ipAddresses: string[] } {
  const loopback = host === '127.0.0.1' || host === '::1' || host === 'localhost';
  const hosts = new Set([host, ...(loopback ? ['localhost', '127.0.0.1', '::1'] : [])]);
  return {
    dnsNames: [...hosts].filter((name) => isIP(name) === 0),
    ipAddresses: [...hosts].filter((name) => isIP(name) !== 0),
  };
}

/**
 * The certificate of the conductor `name` listening on `host`, signed by the
 * install's CA in `directory` (both made on first use, kept after): what its
 * [json_rpc]cert_file and key_file name.
 */
export function conductorCertificate(directory: string, name: string, host: string): CertificateFiles {
  return ensureCertificate({ directory, commonName: name, ...conductorHosts(host) });
}

/** The BMAAS_* turning JSON-RPC TLS on for every process, with the CA in `directory` as [json_rpc]cafile. */
export function jsonRpcTlsEnvironment(directory: string): Record<string, string> {
  return {
    BMAAS_JSON_RPC__USE_SSL: 'true',
    BMAAS_JSON_RPC__CAFILE: ensureCertificateAuthority(directory).certFile,
  };
}

/**
 * Writes `<credentials>/json-rpc-tls.conf` (at every start; read before the
 * operator's own files, which override it): JSON-RPC over TLS, the clients
 * trusting the install's CA in `<credentials>/tls` (made on first use).
 * Each conductor's own certificate is named in its environment. Returns the file.
 */
export function writeJsonRpcTlsConfig(credentialsDirectory: string): string {
  const file = join(credentialsDirectory, 'json-rpc-tls.conf');
  const ca = ensureCertificateAuthority(join(credentialsDirectory, 'tls'));
  writeFileSync(
    file,
    [
      '# Written by npm start at every start; your own --config-file settings override it.',
      '# JSON-RPC between the API and the conductors over TLS, with the install CA (tls/ca/cert.pem).',
      '[json_rpc]',
      'use_ssl = true',
      `cafile = ${ca.certFile}`,
      '',
    ].join('\n'),
  );
  return file;
}
