import { createTestDatabase, type TestDatabase } from '@bmaas/db/testing';
import { afterAll, beforeAll } from 'vitest';
import { PATIENT_HEARTBEATS, type Stack, startStack } from './stack.js';

/** What a suite driven through REST gets: the API and three conductors on its own test database. */
export interface RestStack {
  readonly stack: Stack;
  readonly apiUrl: string;
}

/**
 * Starts the API and three conductors (with `env`) on a fresh test database
 * before the suite's tests, and stops them and drops the database after.
 */
export function useRestStack(env: Record<string, string>): RestStack {
  let database: TestDatabase | undefined;
  let stack: Stack | undefined;
  beforeAll(async () => {
    database = await createTestDatabase();
    // Other suites may share the machine's two cores: be patient with starts.
    stack = await startStack({
      databaseUrl: database.url,
      conductors: 3,
      api: true,
      startTimeoutMs: 60_000,
      env: { ...PATIENT_HEARTBEATS, ...env },
    });
  });
  afterAll(async () => {
    await stack?.stop();
    await database?.drop();
  });
  return {
    get stack() {
      if (!stack) throw new Error('the stack is not started yet (use it inside tests)');
      return stack;
    },
    get apiUrl() {
      return this.stack.apiUrl as string;
    },
  };
}
