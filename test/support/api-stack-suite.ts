import { ApiClient } from '@bmaas/api-client';
import { createTestDatabase, type TestDatabase } from '@bmaas/db/testing';
import type { Services } from '@bmaas/stack';
import { afterAll, beforeAll } from 'vitest';
import { PATIENT_HEARTBEATS, startTestServices, type TestServicesOptions } from './test-services.js';

/** Valid inside the tests (after beforeAll). */
export interface ApiStackSuite {
  readonly stack: Services;
  /** A client of the stack's API at the suite's microversion. */
  readonly rest: ApiClient;
  /** Another client of the same API at `version`. */
  at(version: string): ApiClient;
}

/**
 * Registers beforeAll/afterAll for a file whose tests drive real conductor
 * processes through a real API: a fresh database, the stack, a REST client at
 * `version`; stopped and dropped at the end.
 */
export function useApiStack(version: string, options: Omit<TestServicesOptions, 'databaseUrl' | 'api'>): ApiStackSuite {
  let database: TestDatabase | undefined;
  let stack: Services | undefined;
  let rest: ApiClient | undefined;
  beforeAll(async () => {
    database = await createTestDatabase();
    // Other suites may share the machine's two cores: be patient with starts.
    stack = await startTestServices({
      startTimeoutMs: 60_000,
      ...options,
      env: { ...PATIENT_HEARTBEATS, ...options.env },
      databaseUrl: database.url,
      api: true,
    });
    rest = new ApiClient(stack.apiUrl as string, { version });
  });
  afterAll(async () => {
    await stack?.stop();
    await database?.drop();
  });
  const ready = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the API stack is not started');
    return value;
  };
  return {
    get stack() {
      return ready(stack);
    },
    get rest() {
      return ready(rest);
    },
    at: (other) => new ApiClient(ready(stack).apiUrl as string, { version: other }),
  };
}
