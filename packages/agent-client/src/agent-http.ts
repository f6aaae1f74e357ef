import http from 'node:http';
import https from 'node:https';
import type { SecureVersion } from 'node:tls';

/** How to verify the agent's TLS certificate: a PEM to trust (pinned), the system CAs, or nothing. */
export type AgentTlsVerify = { kind: 'pem'; pem: string } | { kind: 'system' } | { kind: 'none' };

export interface AgentHttpRequest {
  method: 'GET' | 'POST';
  url: URL;
  body?: unknown;
  timeoutMs: number;
  verify: AgentTlsVerify;
  tlsMinVersion: SecureVersion;
}

export interface AgentHttpResponse {
  status: number;
  text: string;
}

/** The request never got an HTTP answer: refused, reset, unreachable, TLS refused, or timed out. */
export class AgentTransportError extends Error {
  constructor(
    message: string,
    readonly timedOut: boolean,
  ) {
    super(message);
  }
}

function tlsOptions(verify: AgentTlsVerify, minVersion: SecureVersion): https.RequestOptions {
  if (verify.kind === 'none') return { rejectUnauthorized: false, minVersion };
  // A pinned self-signed certificate is its own CA; the host name (IP SAN) is still checked.
  if (verify.kind === 'pem') return { ca: verify.pem, rejectUnauthorized: true, minVersion };
  return { rejectUnauthorized: true, minVersion };
}

/**
 * One HTTP exchange with an agent, bounded by `timeoutMs` from start to the
 * last byte. Resolves with any HTTP answer; rejects with AgentTransportError
 * when there is none. No agent (keep-alive) connection outlives the call.
 */
export function agentHttp(request: AgentHttpRequest): Promise<AgentHttpResponse> {
  const { url } = request;
  const secure = url.protocol === 'https:';
  const body = request.body === undefined ? undefined : JSON.stringify(request.body);
  const headers: Record<string, string> = { Accept: 'application/json', Connection: 'close' };
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
    const fail = (message: string, timedOut: boolean): void => {
      if (settled) return;
      settled = true;
      reject(new AgentTransportError(message, timedOut));
    };
    const req = (secure ? https : http).request(url, options, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', (error) => fail(error.message, false));
      res.on('end', () => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') });
      });
    });
    const timer = setTimeout(() => {
      fail(`no answer within ${request.timeoutMs / 1000} s`, true);
      req.destroy();
    }, request.timeoutMs);
    req.on('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      fail(error.code ? `${error.code}: ${error.message}` : error.message, false);
    });
    req.end(body);
  });
}
