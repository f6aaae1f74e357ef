import http, { type IncomingHttpHeaders } from 'node:http';
import https from 'node:https';
import type { SecureVersion } from 'node:tls';

/** How to verify a server's TLS certificate: a PEM bundle to trust (pinned or a private CA), the system CAs, or nothing. */
export type TlsVerify = { kind: 'pem'; pem: string } | { kind: 'system' } | { kind: 'none' };

export interface HttpExchangeRequest {
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  url: URL;
  /** Sent as JSON (Content-Type application/json). */
  body?: unknown;
  /** Extra request headers (credentials, If-Match, …). */
  headers?: Readonly<Record<string, string>>;
  timeoutMs: number;
  verify: TlsVerify;
  tlsMinVersion?: SecureVersion;
}

export interface HttpExchangeResponse {
  status: number;
  text: string;
  headers: IncomingHttpHeaders;
}

/** The request never got an HTTP answer: refused, reset, unreachable, TLS refused, or timed out. */
export class HttpTransportError extends Error {
  constructor(
    message: string,
    readonly timedOut: boolean,
    /** The system or TLS error code (ECONNREFUSED, SELF_SIGNED_CERT_IN_CHAIN, …), when there is one. */
    readonly code?: string,
  ) {
    super(message);
  }
}

/** TLS error codes that mean "the certificate is not trusted" (not a network failure: retrying cannot help). */
const UNTRUSTED_CERTIFICATE = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_UNTRUSTED',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** Whether a transport error is a certificate the client does not trust. */
export function isUntrustedCertificate(error: HttpTransportError): boolean {
  return error.code !== undefined && UNTRUSTED_CERTIFICATE.has(error.code);
}

function tlsOptions(verify: TlsVerify, minVersion: SecureVersion | undefined): https.RequestOptions {
  const min = minVersion ? { minVersion } : {};
  if (verify.kind === 'none') return { rejectUnauthorized: false, ...min };
  // A pinned self-signed certificate is its own CA; the host name (IP SAN) is still checked.
  if (verify.kind === 'pem') return { ca: verify.pem, rejectUnauthorized: true, ...min };
  return { rejectUnauthorized: true, ...min };
}

/**
 * One HTTP exchange, bounded by `timeoutMs` from start to the last byte, on a
 * connection of its own (no keep-alive connection outlives the call): the
 * agent client's and the BMC clients'. Resolves with any HTTP answer;
 * rejects with HttpTransportError when there is none.
 */
export function httpExchange(request: HttpExchangeRequest): Promise<HttpExchangeResponse> {
  const { url } = request;
  const secure = url.protocol === 'https:';
  const body = request.body === undefined ? undefined : JSON.stringify(request.body);
  const headers: Record<string, string> = { Accept: 'application/json', Connection: 'close', ...request.headers };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    headers['Content-Length'] = String(Buffer.byteLength(body));
  }
  const options: https.RequestOptions = {
    method: request.method,
    headers,
    agent: false,
    ...(secure ? tlsOptions(request.verify, request.tlsMinVersion) : {}),
  };
  return new Promise((resolve, reject) => {
    let settled = false;
    const fail = (message: string, timedOut: boolean, code?: string): void => {
      if (settled) return;
      settled = true;
      reject(new HttpTransportError(message, timedOut, code));
    };
    const req = (secure ? https : http).request(url, options, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', (error) => fail(error.message, false));
      res.on('end', () => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8'), headers: res.headers });
      });
    });
    const timer = setTimeout(() => {
      fail(`no answer within ${request.timeoutMs / 1000} s`, true);
      req.destroy();
    }, request.timeoutMs);
    req.on('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      fail(error.code ? `${error.code}: ${error.message}` : error.message, false, error.code);
    });
    req.end(body);
  });
}
