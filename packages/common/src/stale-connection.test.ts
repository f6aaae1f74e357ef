import { describe, expect, it } from 'vitest';
import { retryOnStaleConnection } from './stale-connection.js';

function failure(code: string, reusedSocket: boolean): Error {
  return Object.assign(new Error(code), { code, reusedSocket });
}

describe('retryOnStaleConnection', () => {
  it('sends once more after a reset on a pooled connection, and only once', async () => {
    const outcomes = [failure('ECONNRESET', true), 'answer'];
    let sent = 0;
    const send = async () => {
      const outcome = outcomes[sent++];
      if (outcome instanceof Error) throw outcome;
      return outcome;
    };
    expect(await retryOnStaleConnection(send)).toBe('answer');
    expect(sent).toBe(2);

    sent = 0;
    outcomes.splice(0, 2, failure('ECONNRESET', true), failure('ECONNRESET', true));
    await expect(retryOnStaleConnection(send)).rejects.toThrow('ECONNRESET');
    expect(sent).toBe(2);
  });

  it('does not send again after a reset on a new connection, or another failure', async () => {
    for (const error of [failure('ECONNRESET', false), failure('ECONNREFUSED', true), new Error('bad answer')]) {
      let sent = 0;
      await expect(
        retryOnStaleConnection(async () => {
          sent++;
          throw error;
        }),
      ).rejects.toBe(error);
      expect(sent).toBe(1);
    }
  });
});
