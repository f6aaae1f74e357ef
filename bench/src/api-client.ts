import http from 'node:http';
import { markConnectionReuse, retryOnStaleConnection } from '@bmaas/common';

/**
 * The REST API as the bench uses it: JSON in and out, at the newest
 * microversion, over keep-alive node:http connections (fetch costs more CPU
 * per request, and the bench shares the two cores with what it measures).
 */
export class ApiClient {
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  private readonly origin: URL;

  constructor(readonly baseUrl: string) {
    this.origin = new URL(baseUrl);
  }

  /**
   * One request; sent again once when a pooled connection turns out to have
   * been closed by the API meanwhile (its keep-alive timeout ran out between
   * two steps of the bench).
   */
  request<T>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
    return retryOnStaleConnection(() => this.requestOnce<T>(method, path, body));
  }

  private requestOnce<T>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const headers: http.OutgoingHttpHeaders = { 'X-OpenStack-Ironic-API-Version': 'latest' };
    if (payload !== undefined) {
      headers['Content-Type'] = 'application/json';
      headers['Content-Length'] = Buffer.byteLength(payload);
    }
    return new Promise((resolve, reject) => {
      const req = http.request(
        {
          host: this.origin.hostname,
          port: this.origin.port,
          path,
          method,
          headers,
          agent: this.agent,
          timeout: 30_000,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('error', reject);
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            try {
              resolve({ status: res.statusCode ?? 0, body: (text ? JSON.parse(text) : undefined) as T });
            } catch (error) {
              reject(error);
            }
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer within 30 s`)));
      req.on('error', (error) => reject(markConnectionReuse(error, req)));
      req.end(payload);
    });
  }

  close(): void {
    this.agent.destroy();
  }

  /** The request, which must answer `expected`; otherwise an error with the API's message. */
  async expect<T>(expected: number, method: string, path: string, body?: unknown): Promise<T> {
    const answer = await this.request<T>(method, path, body);
    if (answer.status !== expected) {
      throw new ApiError(answer.status, `${method} ${path} answered ${answer.status}: ${faultOf(answer.body)}`);
    }
    return answer.body;
  }

  /** Every item of a paged list (following `next`). */
  async listAll<T>(path: string, key: string): Promise<T[]> {
    const items: T[] = [];
    let next: string | undefined = path;
    while (next) {
      const page: Record<string, unknown> = await this.expect<Record<string, unknown>>(200, 'GET', next);
      items.push(...((page[key] as T[]) ?? []));
      next = typeof page.next === 'string' ? new URL(page.next).pathname + new URL(page.next).search : undefined;
    }
    return items;
  }
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function faultOf(body: unknown): string {
  const message = (body as { error_message?: string } | undefined)?.error_message;
  if (!message) return JSON.stringify(body)?.slice(0, 300) ?? '';
  try {
    return (JSON.parse(message) as { faultstring?: string }).faultstring ?? message;
  } catch {
    return message;
  }
}

/** Runs `work` on every item with at most `concurrency` at a time; rejects on the first failure. */
export async function forEachConcurrently<T>(
  items: readonly T[],
  concurrency: number,
  work: (item: T, index: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  let failed = false;
  const worker = async (): Promise<void> => {
    while (!failed && next < items.length) {
      const index = next++;
      try {
        await work(items[index] as T, index);
      } catch (error) {
        failed = true;
        throw error;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
}
