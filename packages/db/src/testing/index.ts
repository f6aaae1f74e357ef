import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSilentLogger, freePort, type Logger } from '@bmaas/common';
import pg from 'pg';
import { type Database, openDatabase } from '../connection.js';
import { EmbeddedPostgresServer } from '../embedded-postgres.js';
import { upgradeSchema } from '../migrations/index.js';
import { NodeStore } from '../stores/node-store.js';
import { PortStore } from '../stores/port-store.js';

export { createNode, newNode } from './test-nodes.js';

/** Environment variable holding the admin URL of the test server (set by the global setup). */
export const TEST_DATABASE_URL_ENV = 'BMAAS_TEST_DATABASE_URL';
const TEMPLATE = 'bmaas_template';

/**
 * A new directory under the system's temporary one for an embedded
 * PostgreSQL's data (a test database, a stack's state_path): mkdtemp makes
 * it 0700, and as root the server runs as the postgres user, which must reach
 * the data inside it; else the data is kept under /var/tmp instead, out of
 * reach of the test's clean-up.
 */
export function stateTempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(dir, 0o755);
  return dir;
}

export interface TestPostgres {
  /** Admin URL (database `postgres`). */
  url: string;
  stop(): Promise<void>;
}

/**
 * Starts a throwaway embedded PostgreSQL for a test run, with a migrated
 * template database every test database is copied from. An external server
 * can be used instead by setting BMAAS_TEST_DATABASE_URL beforehand.
 */
export async function startTestPostgres(logger: Logger = createSilentLogger()): Promise<TestPostgres> {
  const external = process.env[TEST_DATABASE_URL_ENV];
  if (external) {
    await prepareTemplate(external);
    return { url: external, stop: async () => {} };
  }
  const dir = stateTempDir('bmaas-test-pg-');
  const server = new EmbeddedPostgresServer({ dataDir: join(dir, 'data'), port: await freePort(), logger });
  const url = await server.start();
  await prepareTemplate(url);
  return {
    url,
    stop: async () => {
      await server.discard();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

async function adminQuery(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

async function prepareTemplate(adminUrl: string): Promise<void> {
  await adminQuery(adminUrl, `drop database if exists ${TEMPLATE}`);
  await adminQuery(adminUrl, `create database ${TEMPLATE}`);
  const db = openDatabase({ connection: withDatabase(adminUrl, TEMPLATE) });
  try {
    await upgradeSchema(db);
  } finally {
    await db.destroy();
  }
}

export interface TestDatabase {
  url: string;
  db: Database;
  /** Closes the pool and drops the database. */
  drop(): Promise<void>;
}

/** A fresh, migrated database of its own for one test file. */
export async function createTestDatabase(options: { migrated?: boolean } = {}): Promise<TestDatabase> {
  const adminUrl = process.env[TEST_DATABASE_URL_ENV];
  if (!adminUrl) throw new Error(`${TEST_DATABASE_URL_ENV} is not set: run tests through vitest's global setup`);
  const name = `bmaas_t_${randomBytes(6).toString('hex')}`;
  const template = options.migrated === false ? 'template0' : TEMPLATE;
  await adminQuery(adminUrl, `create database ${name} template ${template}`);
  const url = withDatabase(adminUrl, name);
  const db = openDatabase({ connection: url, maxPoolSize: 20 });
  return {
    url,
    db,
    drop: async () => {
      await db.destroy();
      await adminQuery(adminUrl, `drop database if exists ${name} with (force)`);
    },
  };
}

/** The node and port stores on a fresh test database: where most store tests start. */
export interface NodePortTestStores {
  t: TestDatabase;
  nodes: NodeStore;
  ports: PortStore;
}

export async function createNodePortTestStores(): Promise<NodePortTestStores> {
  const t = await createTestDatabase();
  return { t, nodes: new NodeStore(t.db), ports: new PortStore(t.db) };
}
