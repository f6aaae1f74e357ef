import { CLI_API_VERSION } from '@bmaas/api-client';
import type { Services } from '@bmaas/stack';
import { useApiStack } from './api-stack-suite.js';

/** What a suite driven through REST gets: the API and three conductors on its own test database. */
export interface RestStack {
  readonly stack: Services;
  readonly apiUrl: string;
}

/**
 * Starts the API and three conductors (with `env`) on a fresh test database
 * before the suite's tests, and stops them and drops the database after
 * (useApiStack's life cycle; the suite makes its own clients).
 */
export function useRestStack(env: Record<string, string>): RestStack {
  const suite = useApiStack(CLI_API_VERSION, { conductors: 3, env });
  return {
    get stack() {
      return suite.stack;
    },
    get apiUrl() {
      return suite.stack.apiUrl as string;
    },
  };
}
