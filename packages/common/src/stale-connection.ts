import type { ClientRequest } from 'node:http';

/**
 * The error a node:http request failed with, marked with whether it went
 * out on a pooled keep-alive connection (`req.reusedSocket`): what
 * retryOnStaleConnection looks at.
 */
export function markConnectionReuse<E extends Error>(error: E, req: ClientRequest): E & { reusedSocket: boolean } {
  return Object.assign(error, { reusedSocket: req.reusedSocket });
}

/**
 * `send()`, and once more when it failed with a reset on a pooled
 * connection (marked by markConnectionReuse): the server had closed it while
 * idle (its keep-alive timeout), so the request never reached it and sending
 * it again on a new connection is safe.
 */
export async function retryOnStaleConnection<T>(send: () => Promise<T>): Promise<T> {
  try {
    return await send();
  } catch (error) {
    const { reusedSocket, code } = error as { reusedSocket?: boolean; code?: string };
    if (reusedSocket && code === 'ECONNRESET') return send();
    throw error;
  }
}
