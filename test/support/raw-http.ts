import http from 'node:http';

/** An HTTP answer as the wire gave it. */
export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Headers that legitimately differ between two otherwise identical answers. */
const VARYING_HEADERS = new Set(['date', 'openstack-request-id', 'x-openstack-request-id']);

/**
 * GET with the path sent exactly as given: no URL normalisation, so `..`,
 * `%2e%2e` and `%2F` reach the server as a firmware or an attacker would
 * send them (fetch would resolve dot segments first).
 */
export function rawGet(baseUrl: string, path: string, timeoutMs = 10_000): Promise<RawAnswer> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: url.hostname, port: url.port, path, method: 'GET', agent: false, timeout: timeoutMs },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const headers: Record<string, string> = {};
          for (const [name, value] of Object.entries(res.headers)) {
            if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
          }
          resolve({ status: res.statusCode ?? 0, headers, body: Buffer.concat(chunks).toString('utf8') });
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`GET ${path}: no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}

/** The answer without the headers that differ between requests: compare two refusals byte for byte. */
export function comparable(answer: RawAnswer): RawAnswer {
  return {
    status: answer.status,
    headers: Object.fromEntries(Object.entries(answer.headers).filter(([name]) => !VARYING_HEADERS.has(name))),
    body: answer.body,
  };
}
