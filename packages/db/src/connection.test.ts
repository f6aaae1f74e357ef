import { PassThrough } from 'node:stream';
import { createRootLogger, freePort } from '@bmaas/common';
import { describe, expect, it, vi } from 'vitest';
import { isDatabaseUnavailable, openDatabase, parseMultiHost } from './connection.js';
import { createTestDatabase } from './testing/index.js';

describe('isDatabaseUnavailable', () => {
  it('recognises timeouts, cancelled statements and lost connections', () => {
    const unavailable = [
      Object.assign(new Error('Knex: Timeout acquiring a connection.'), { name: 'KnexTimeoutError' }),
      new Error('Query read timeout'),
      Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' }),
      Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' }),
      Object.assign(new Error('the database system is starting up'), { code: '57P03' }),
      Object.assign(new Error('connection failure'), { code: '08006' }),
      Object.assign(new Error('cannot execute UPDATE in a read-only transaction'), { code: '25006' }),
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

describe('multi-host connection strings (target_session_attrs)', () => {
  it('splits the hosts, keeps user, database and options, and drops target_session_attrs', () => {
    expect(
      parseMultiHost('postgresql://u:p@db1:5432,db2:5433/bmaas?target_session_attrs=read-write&sslmode=disable'),
    ).toEqual({
      urls: ['postgresql://u:p@db1:5432/bmaas?sslmode=disable', 'postgresql://u:p@db2:5433/bmaas?sslmode=disable'],
      readWrite: true,
    });
    expect(parseMultiHost('postgresql://u@db1,db2/bmaas')).toEqual({
      urls: ['postgresql://u@db1/bmaas', 'postgresql://u@db2/bmaas'],
      readWrite: false,
    });
    expect(parseMultiHost('postgresql://u@db1:5432/bmaas')).toBeUndefined();
    expect(() => parseMultiHost('postgresql://u@a,b/x?target_session_attrs=standby')).toThrow(/read-write and any/);
  });

  it('skips a host that does not answer and uses the writable one; with none, an error answered 503', async () => {
    const database = await createTestDatabase();
    try {
      const url = new URL(database.url);
      const dead = `127.0.0.1:${await freePort()}`;
      const multi = `postgresql://${url.username}:${url.password}@${dead},${url.host}${url.pathname}?target_session_attrs=read-write`;
      const db = openDatabase({ connection: multi, poolTimeoutMs: 2000 });
      try {
        const rows = await db.raw('select current_database() as name');
        expect(rows.rows[0].name).toBe(url.pathname.slice(1));
      } finally {
        await db.destroy();
      }
      const none = openDatabase({
        connection: `postgresql://${url.username}:${url.password}@${dead},${dead}${url.pathname}?target_session_attrs=read-write`,
        poolTimeoutMs: 2000,
      });
      try {
        const error = await none.raw('select 1').catch((e: unknown) => e);
        expect(String(error)).toMatch(/no writable database server among 2|Timeout acquiring a connection/);
        expect(isDatabaseUnavailable(error)).toBe(true);
      } finally {
        await none.destroy();
      }
    } finally {
      await database.drop();
    }
  });
});

describe('knex warnings', () => {
  it("go to the process's logger as its lines, none to standard output", async () => {
    const stream = new PassThrough();
    const lines: Array<{ level: string; message: string }> = [];
    stream.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line));
    });
    const logger = createRootLogger({ level: 'info', format: 'json', stream });
    const stdout = vi.spyOn(process.stdout, 'write');
    const db = openDatabase({
      connection: `postgresql://nobody:secret@127.0.0.1:${await freePort()}/nothing`,
      poolTimeoutMs: 1000,
      logger,
    });
    try {
      await expect(db.raw('select 1')).rejects.toThrow();
      expect(lines.some((l) => l.level === 'warn' && l.message.startsWith('Acquire connection error'))).toBe(true);
      expect(stdout.mock.calls.filter(([text]) => String(text).includes('Acquire connection error'))).toEqual([]);
    } finally {
      stdout.mockRestore();
      await db.destroy();
    }
  });
});
