import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { ensurePrivateDirectory, writePrivateFile } from '@bmaas/common';
import forge from 'node-forge';

/**
 * The install's certificate authority and the certificates it signs, as PEM
 * files under one directory:
 *
 *     <directory>/ca/cert.pem          the CA certificate: what clients trust (cafile)
 *     <directory>/ca/key.pem           the CA's private key (0600): signs, never leaves
 *     <directory>/<name>/cert.pem      a process's certificate (cert_file)
 *     <directory>/<name>/key.pem       its private key (0600, key_file)
 *
 * Each identity's directory is written whole under a temporary name and
 * renamed into place, so a reader never sees a key without its certificate,
 * and two processes making the same CA at once end with one (the second
 * rename fails and the loser reads the winner's).
 */

/** RSA modulus of every key made here: 2048 bits, what TLS libraries everywhere accept (NIST SP 800-57: through 2030). */
const KEY_BITS = 2048;
const DAY_MS = 24 * 60 * 60 * 1000;
/** The CA lasts ten years: replacing it means reissuing and redistributing every certificate. */
const CA_VALIDITY_DAYS = 3650;
/** A process certificate lasts about two years (825 days, the longest clients such as Apple's accept). */
export const DEFAULT_CERTIFICATE_VALIDITY_DAYS = 825;
/** A certificate with less than this left is reissued by the next ensureCertificate. */
const RENEW_BEFORE_DAYS = 30;

export interface CertificateAuthorityFiles {
  /** The CA certificate (PEM): the `cafile` of every client. */
  certFile: string;
  /** The CA's private key (PEM, 0600). */
  keyFile: string;
}

export interface CertificateRequest {
  /** The directory holding the CA and the certificates (created 0700). */
  directory: string;
  /**
   * The certificate's subject CN and the name of its directory: letters,
   * digits, '.', '_' and '-' (a conductor's hostname, "api", …).
   */
  commonName: string;
  /** subjectAltName DNS names a client may reach this process by. */
  dnsNames?: readonly string[];
  /** subjectAltName IP addresses (v4 or v6) a client may reach this process at. */
  ipAddresses?: readonly string[];
  /** Days from now the certificate is valid for; default 825. */
  validityDays?: number;
}

export interface CertificateFiles {
  /** The process's certificate (PEM): serverAuth and clientAuth. */
  certFile: string;
  /** Its private key (PEM, 0600). */
  keyFile: string;
  /** The CA certificate that signed it: the `cafile` of its peers. */
  caFile: string;
}

/** A name or address that cannot go into a certificate: the caller's mistake, said plainly. */
export class CertificateRequestError extends Error {
  override readonly name = 'CertificateRequestError';
}

const COMMON_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;
const DNS_NAME = /^(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

/** A positive serial number of 128 random bits (RFC 5280: at most 20 octets, non-negative). */
function serialNumber(): string {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0] as number) & 0x7f;
  return bytes.toString('hex');
}

function newCertificate(publicKey: forge.pki.PublicKey, validityDays: number): forge.pki.Certificate {
  const certificate = forge.pki.createCertificate();
  certificate.publicKey = publicKey;
  certificate.serialNumber = serialNumber();
  // An hour back: a peer whose clock is a little behind still accepts it at once.
  certificate.validity.notBefore = new Date(Date.now() - 60 * 60 * 1000);
  certificate.validity.notAfter = new Date(Date.now() + validityDays * DAY_MS);
  return certificate;
}

/** Writes an identity's key and certificate under a temporary directory beside `target`, then renames it into place. */
function writeIdentity(directory: string, target: string, keyPem: string, certPem: string): void {
  const temporary = mkdtempSync(join(directory, '.new-'));
  try {
    writePrivateFile(join(temporary, 'key.pem'), keyPem);
    writeFileSync(join(temporary, 'cert.pem'), certPem, { mode: 0o644 });
    renameSync(temporary, target);
  } finally {
    rmSync(temporary, { recursive: true, force: true });
  }
}

function readIdentity(target: string): { certificate: forge.pki.Certificate; certPem: string; keyPem: string } {
  const certPem = readFileSync(join(target, 'cert.pem'), 'utf8');
  const keyPem = readFileSync(join(target, 'key.pem'), 'utf8');
  return { certificate: forge.pki.certificateFromPem(certPem), certPem, keyPem };
}

/**
 * The install's CA in `directory`, made on first use and kept: a self-signed
 * RSA certificate that may sign certificates and nothing else (keyCertSign,
 * pathLen 0). `directory` is created 0700.
 */
export function ensureCertificateAuthority(directory: string): CertificateAuthorityFiles {
  const target = join(directory, 'ca');
  const files = { certFile: join(target, 'cert.pem'), keyFile: join(target, 'key.pem') };
  if (existsSync(files.certFile)) return files;
  ensurePrivateDirectory(directory);
  const keys = forge.pki.rsa.generateKeyPair({ bits: KEY_BITS });
  const certificate = newCertificate(keys.publicKey, CA_VALIDITY_DAYS);
  const subject = [
    { name: 'commonName', value: `bmaas install CA ${randomBytes(4).toString('hex')}` },
    { name: 'organizationName', value: 'bmaas' },
  ];
  certificate.setSubject(subject);
  certificate.setIssuer(subject);
  certificate.setExtensions([
    { name: 'basicConstraints', cA: true, pathLenConstraint: 0, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  certificate.sign(keys.privateKey, forge.md.sha256.create());
  try {
    writeIdentity(
      directory,
      target,
      forge.pki.privateKeyToPem(keys.privateKey),
      forge.pki.certificateToPem(certificate),
    );
  } catch (error) {
    // Another process made the CA between our check and our rename: theirs is the one.
    if (!existsSync(files.certFile)) throw error;
  }
  return files;
}

function checkRequest(request: CertificateRequest): { dnsNames: string[]; ipAddresses: string[] } {
  if (!COMMON_NAME.test(request.commonName) || request.commonName === 'ca') {
    throw new CertificateRequestError(
      `certificate name ${JSON.stringify(request.commonName)}: expected letters, digits, '.', '_' or '-' (and not "ca")`,
    );
  }
  const dnsNames = [...new Set(request.dnsNames ?? [])];
  const ipAddresses = [...new Set(request.ipAddresses ?? [])];
  for (const name of dnsNames) {
    if (!DNS_NAME.test(name)) throw new CertificateRequestError(`${JSON.stringify(name)} is not a DNS name`);
  }
  for (const address of ipAddresses) {
    if (isIP(address) === 0) throw new CertificateRequestError(`${JSON.stringify(address)} is not an IP address`);
  }
  if (dnsNames.length === 0 && ipAddresses.length === 0) {
    throw new CertificateRequestError(`certificate ${request.commonName}: give at least one DNS name or IP address`);
  }
  if (request.validityDays !== undefined && !(Number.isInteger(request.validityDays) && request.validityDays > 0)) {
    throw new CertificateRequestError(`validityDays must be a positive whole number, got ${request.validityDays}`);
  }
  return { dnsNames, ipAddresses };
}

/** An IP address in one spelling (IPv6 compressed, as WHATWG URLs print it), to compare addresses. */
function canonicalIp(address: string): string {
  return isIP(address) === 6 ? new URL(`http://[${address}]/`).hostname.slice(1, -1) : address;
}

/** The names a certificate carries in its subjectAltName, as `DNS:name` and `IP:address`, sorted. */
export function subjectAltNames(certificate: forge.pki.Certificate): string[] {
  const extension = certificate.getExtension('subjectAltName') as
    | { altNames?: { type: number; value: string; ip?: string }[] }
    | undefined;
  return (extension?.altNames ?? []).map((name) => (name.type === 7 ? `IP:${name.ip}` : `DNS:${name.value}`)).sort();
}

function wantedAltNames(dnsNames: readonly string[], ipAddresses: readonly string[]): string[] {
  return [
    ...dnsNames.map((name) => `DNS:${name}`),
    ...ipAddresses.map((address) => `IP:${canonicalIp(address)}`),
  ].sort();
}

/** Whether the certificate in `target` can be kept: signed by this CA, the same names, not close to expiry. */
function reusable(target: string, ca: forge.pki.Certificate, wanted: string[]): boolean {
  if (!existsSync(join(target, 'cert.pem')) || !existsSync(join(target, 'key.pem'))) return false;
  try {
    const { certificate } = readIdentity(target);
    if (!ca.verify(certificate)) return false;
    if (certificate.validity.notAfter.getTime() - Date.now() < RENEW_BEFORE_DAYS * DAY_MS) return false;
    const names = subjectAltNames(certificate);
    return names.length === wanted.length && names.every((name, i) => name === wanted[i]);
  } catch {
    return false;
  }
}

/**
 * A certificate for one process, signed by the install's CA (made first if
 * there is none): RSA, valid for TLS servers and clients (serverAuth,
 * clientAuth), naming `commonName` and the given DNS names and IP addresses
 * in its subjectAltName — the names clients check, the CN is not. An
 * existing certificate is kept while it is signed by this CA, names the same
 * hosts and has more than 30 days left; otherwise a new key and certificate
 * replace it.
 */
export function ensureCertificate(request: CertificateRequest): CertificateFiles {
  const { dnsNames, ipAddresses } = checkRequest(request);
  const authority = ensureCertificateAuthority(request.directory);
  const target = join(request.directory, request.commonName);
  const files = { certFile: join(target, 'cert.pem'), keyFile: join(target, 'key.pem'), caFile: authority.certFile };
  const caCertificate = forge.pki.certificateFromPem(readFileSync(authority.certFile, 'utf8'));
  const wanted = wantedAltNames(dnsNames, ipAddresses);
  if (reusable(target, caCertificate, wanted)) return files;

  const caKey = forge.pki.privateKeyFromPem(readFileSync(authority.keyFile, 'utf8'));
  const keys = forge.pki.rsa.generateKeyPair({ bits: KEY_BITS });
  const certificate = newCertificate(keys.publicKey, request.validityDays ?? DEFAULT_CERTIFICATE_VALIDITY_DAYS);
  certificate.setSubject([
    { name: 'commonName', value: request.commonName },
    { name: 'organizationName', value: 'bmaas' },
  ]);
  certificate.setIssuer(caCertificate.subject.attributes);
  certificate.setExtensions([
    { name: 'basicConstraints', cA: false, critical: true },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    { name: 'extKeyUsage', serverAuth: true, clientAuth: true },
    {
      name: 'subjectAltName',
      altNames: [...dnsNames.map((value) => ({ type: 2, value })), ...ipAddresses.map((ip) => ({ type: 7, ip }))],
    },
    { name: 'subjectKeyIdentifier' },
    { name: 'authorityKeyIdentifier', keyIdentifier: caCertificate.generateSubjectKeyIdentifier().getBytes() },
  ]);
  certificate.sign(caKey, forge.md.sha256.create());
  if (existsSync(target)) rmSync(target, { recursive: true, force: true });
  writeIdentity(
    request.directory,
    target,
    forge.pki.privateKeyToPem(keys.privateKey),
    forge.pki.certificateToPem(certificate),
  );
  return files;
}

/**
 * A certificate as the command line names it, `NAME[=HOST,HOST...]`
 * (`api=api,localhost,127.0.0.1`): the name, and the hosts split into DNS
 * names and IP addresses; NAME alone stands for itself.
 */
export function parseCertificateArgument(argument: string): {
  commonName: string;
  dnsNames: string[];
  ipAddresses: string[];
} {
  const [commonName = '', hosts] = argument.split('=', 2);
  const names = hosts === undefined ? [commonName] : hosts.split(',').filter((host) => host !== '');
  return {
    commonName,
    dnsNames: names.filter((host) => isIP(host) === 0),
    ipAddresses: names.filter((host) => isIP(host) !== 0),
  };
}
