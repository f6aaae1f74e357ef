import { RpcTimeout } from '@bmaas/common';

/**
 * `answer`, or RpcTimeout after timeoutMs. A batched call may wait for the
 * batch before it to come back, and a call may wait for the rings to be
 * read: its timeout still counts from the call, so firmware waits no longer
 * than timeoutMs. `awaited` names what was waited for, in the error.
 */
export function withDeadline<T>(answer: Promise<T>, timeoutMs: number, awaited: string): Promise<T> {
  // One promise and one reaction per call (a race with a deadline promise and a finally were four, per boot request).
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new RpcTimeout(`Timed out after ${timeoutMs / 1000} s waiting for ${awaited}.`)),
      timeoutMs,
    );
    answer.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
