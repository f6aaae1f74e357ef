import { describe, expect, it } from 'vitest';
import { isDatabaseUnavailable } from './connection.js';

describe('isDatabaseUnavailable', () => {
  it('recognises timeouts, cancelled statements and lost connections', () => {
    const unavailable = [
      Object.assign(new Error('Knex: Timeout acquiring a connection.'), { name: 'KnexTimeoutError' }),
      new Error('Query read timeout'),
      Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' }),
      Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }),
      Object.assign(new Error('the database system is starting up'), { code: '57P03' }),
      Object.assign(new Error('connection failure'), { code: '08006' }),
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
      new Error('Connection terminated unexpectedly'),
      new Error('timeout exceeded when trying to connect'),
    ];
    for (const error of unavailable) expect(isDatabaseUnavailable(error), error.message).toBe(true);
  });

  it('leaves the request errors and everything else alone', () => {
    const others = [
      Object.assign(new Error('duplicate key value violates unique constraint'), { code: '23505' }),
      Object.assign(new Error('invalid input syntax for type uuid'), { code: '22P02' }),
      new TypeError('cannot read properties of undefined'),
      'a string',
      null,
      undefined,
    ];
    for (const error of others) expect(isDatabaseUnavailable(error), String(error)).toBe(false);
  });
});
