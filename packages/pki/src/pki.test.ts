import { execFileSync, spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import tls from 'node:tls';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import {
  CertificateRequestError,
  ensureCertificate,
  ensureCertificateAuthority,
  parseCertificateArgument,
} from './pki.js';

const parent = mkdtempSync(join(tmpdir(), 'bmaas-pki-'));
afterAll(() => rmSync(parent, { recursive: true, force: true }));

/**
 * A TLS server with `files`' certificate and key, and one client connection
 * to it at `address` checking the name `servername` against the CA in `ca`:
 * the client's verdict (authorized, or the error node:tls raised).
 */
async function handshake(
  files: { certFile: string; keyFile: string },
  ca: string,
  options: { servername?: string; address?: string; clientCertificate?: { certFile: string; keyFile: string } } = {},
): Promise<{ ok: true; peerAuthorized: boolean } | { ok: false; code: string }> {
  const server = tls.createServer({
    cert: readFileSync(files.certFile),
    key: readFileSync(files.keyFile),
    ca: readFileSync(ca),
    requestCert: true,
    rejectUnauthorized: false,
  });
  let peerAuthorized = false;
  server.on('secureConnection', (socket) => {
    peerAuthorized = socket.authorized;
    socket.end();
  });
  const address = options.address ?? '127.0.0.1';
  await new Promise<void>((resolve) => server.listen(0, address, resolve));
  const { port } = server.address() as AddressInfo;
  try {
    return await new Promise((resolve) => {
      const socket = tls.connect({
        host: address,
        port,
        ca: readFileSync(ca),
        ...(options.servername ? { servername: options.servername } : {}),
        ...(options.clientCertificate
          ? {
              cert: readFileSync(options.clientCertificate.certFile),
              key: readFileSync(options.clientCertificate.keyFile),
            }
          : {}),
      });
      socket.on('secureConnect', () => {
        socket.on('close', () => resolve({ ok: true, peerAuthorized }));
        socket.resume();
      });
      socket.on('error', (error: NodeJS.ErrnoException) => resolve({ ok: false, code: error.code ?? error.message }));
    });
  } finally {
    server.close();
  }
}

describe('ensureCertificate', () => {
  const directory = join(parent, 'tls');

  it('makes a CA once and a certificate that node:tls accepts for its DNS names and addresses, and refuses for another host', async () => {
    const files = ensureCertificate({
      directory,
      commonName: 'conductor-1',
      dnsNames: ['conductor-1.example.test', 'localhost'],
      ipAddresses: ['127.0.0.1', '::1'],
    });
    expect(files.caFile).toBe(ensureCertificateAuthority(directory).certFile);
    expect(statSync(directory).mode & 0o777).toBe(0o700);
    expect(statSync(files.keyFile).mode & 0o777).toBe(0o600);
    expect(statSync(ensureCertificateAuthority(directory).keyFile).mode & 0o777).toBe(0o600);

    const certificate = new X509Certificate(readFileSync(files.certFile));
    expect(certificate.checkIssued(new X509Certificate(readFileSync(files.caFile)))).toBe(true);
    expect(certificate.subjectAltName).toContain('DNS:conductor-1.example.test');
    expect(certificate.subjectAltName).toContain('IP Address:127.0.0.1');
    expect(certificate.ca).toBe(false);
    expect(new X509Certificate(readFileSync(files.caFile)).ca).toBe(true);

    expect(await handshake(files, files.caFile, { servername: 'conductor-1.example.test' })).toMatchObject({
      ok: true,
    });
    expect(await handshake(files, files.caFile, { servername: 'localhost' })).toMatchObject({ ok: true });
    expect(await handshake(files, files.caFile)).toMatchObject({ ok: true }); // by address, 127.0.0.1
    expect(await handshake(files, files.caFile, { address: '::1' })).toMatchObject({ ok: true });

    // A name the certificate does not carry: node:tls refuses it.
    expect(await handshake(files, files.caFile, { servername: 'conductor-2.example.test' })).toEqual({
      ok: false,
      code: 'ERR_TLS_CERT_ALTNAME_INVALID',
    });
    // A client that trusts another CA refuses the certificate.
    const stranger = ensureCertificateAuthority(join(parent, 'other-install'));
    expect(await handshake(files, stranger.certFile, { servername: 'localhost' })).toMatchObject({
      ok: false,
      code: expect.stringMatching(/UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT_LOCALLY/),
    });
  });

  it('makes certificates that serve as TLS client certificates too', async () => {
    const server = ensureCertificate({ directory, commonName: 'conductor-1', dnsNames: ['localhost'] });
    const client = ensureCertificate({ directory, commonName: 'api', dnsNames: ['api'] });
    expect(await handshake(server, server.caFile, { servername: 'localhost', clientCertificate: client })).toEqual({
      ok: true,
      peerAuthorized: true,
    });
  });

  it('keeps a certificate that names the same hosts and reissues one whose hosts changed', () => {
    const request = { directory, commonName: 'api', dnsNames: ['api', 'localhost'], ipAddresses: ['127.0.0.1'] };
    const first = readFileSync(ensureCertificate(request).certFile, 'utf8');
    const caPem = readFileSync(ensureCertificateAuthority(directory).certFile, 'utf8');
    expect(readFileSync(ensureCertificate({ ...request, dnsNames: ['localhost', 'api'] }).certFile, 'utf8')).toBe(
      first,
    );
    const moved = ensureCertificate({ ...request, ipAddresses: ['192.0.2.10'] });
    expect(readFileSync(moved.certFile, 'utf8')).not.toBe(first);
    expect(new X509Certificate(readFileSync(moved.certFile)).subjectAltName).toContain('IP Address:192.0.2.10');
    // The CA is made once: the same one signed both.
    expect(readFileSync(ensureCertificateAuthority(directory).certFile, 'utf8')).toBe(caPem);
  });

  it('refuses names that cannot go into a certificate', () => {
    expect(() => ensureCertificate({ directory, commonName: '../x', dnsNames: ['x'] })).toThrow(
      CertificateRequestError,
    );
    expect(() => ensureCertificate({ directory, commonName: 'ca', dnsNames: ['x'] })).toThrow(CertificateRequestError);
    expect(() => ensureCertificate({ directory, commonName: 'x', dnsNames: ['bad name'] })).toThrow(/not a DNS name/);
    expect(() => ensureCertificate({ directory, commonName: 'x', ipAddresses: ['300.1.1.1'] })).toThrow(
      /not an IP address/,
    );
    expect(() => ensureCertificate({ directory, commonName: 'x' })).toThrow(/at least one/);
  });

  it('reads NAME=HOST,HOST on the command line as DNS names and addresses', () => {
    expect(parseCertificateArgument('api=api,localhost,127.0.0.1,::1')).toEqual({
      commonName: 'api',
      dnsNames: ['api', 'localhost'],
      ipAddresses: ['127.0.0.1', '::1'],
    });
    expect(parseCertificateArgument('conductor-0')).toEqual({
      commonName: 'conductor-0',
      dnsNames: ['conductor-0'],
      ipAddresses: [],
    });
  });
});

describe('bmaas-certificates', () => {
  const main = join(dirname(dirname(fileURLToPath(import.meta.url))), 'dist', 'certificates-main.js');

  it('makes the CA and the named certificates, and says what is wrong with a bad argument', () => {
    const directory = join(parent, 'cli');
    const output = execFileSync(process.execPath, [main, directory, 'api=api,127.0.0.1', 'conductor-0'], {
      encoding: 'utf8',
    });
    expect(output).toContain(join(directory, 'ca', 'cert.pem'));
    expect(output).toContain(join(directory, 'conductor-0', 'cert.pem'));
    expect(new X509Certificate(readFileSync(join(directory, 'api', 'cert.pem'))).subjectAltName).toBe(
      'DNS:api, IP Address:127.0.0.1',
    );
    const bad = spawnSync(process.execPath, [main, directory, 'api=bad host'], { encoding: 'utf8' });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('"bad host" is not a DNS name');
    expect(spawnSync(process.execPath, [main], { encoding: 'utf8' }).status).toBe(2);
  });
});
