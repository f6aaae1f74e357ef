import { startTestPostgres, TEST_DATABASE_URL_ENV } from '@bmaas/db/testing';
import type { TestProject } from 'vitest/node';

/** One embedded PostgreSQL for the whole run; each test file makes its own database from a migrated template. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const server = await startTestPostgres();
  process.env[TEST_DATABASE_URL_ENV] = server.url;
  project.provide('databaseUrl', server.url);
  return () => server.stop();
}

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
  }
}
