import { setTimeout as sleep } from 'node:timers/promises';
import { type ApiClient, ApiError } from '@bmaas/api-client';
import { mapLimit, waitFor } from '@bmaas/common';

/** One provision target fired at every node, and the state all must reach. */
interface Step {
  target: string;
  reaches: string;
}

/** manage → provide (automated cleaning is off) → deploy: every node ends waiting for its agent. */
const STEPS: readonly Step[] = [
  { target: 'manage', reaches: 'manageable' },
  { target: 'provide', reaches: 'available' },
  { target: 'active', reaches: 'wait call-back' },
];

/** States a node ends in when a step failed. */
const FAILED_STATES = ['enroll', 'clean failed', 'deploy failed', 'error'];

export interface ProvisioningResult {
  /**
   * Seconds each step took, from its first request until every node reached its state,
   * and the CPU seconds of each process group meanwhile (`api`, `conductors`, `postgres`), when measured.
   */
  steps: Array<{ target: string; reaches: string; seconds: number; cpuSeconds?: Record<string, number> }>;
  seconds: number;
}

/** How many nodes are in `state` (one `fields=uuid` list, paged). */
async function countInState(api: ApiClient, state: string): Promise<number> {
  const query = new URLSearchParams({ provision_state: state, fields: 'uuid', limit: '1000' });
  return (await api.listAll(`/v1/nodes?${query}`, 'nodes')).length;
}

async function firstErrors(api: ApiClient): Promise<string[]> {
  const errors: string[] = [];
  for (const state of FAILED_STATES) {
    const query = new URLSearchParams({ provision_state: state, fields: 'uuid,last_error', limit: '3' });
    type Page = { nodes: Array<{ uuid: string; last_error: string | null }> };
    const page = (await api.expect<Page>(200, 'GET', `/v1/nodes?${query}`)).body;
    for (const node of page.nodes) if (node.last_error) errors.push(`${node.uuid} (${state}): ${node.last_error}`);
  }
  return errors;
}

/** A node may be busy a moment (its previous step's lock not yet released): retry such answers. */
async function fire(api: ApiClient, uuid: string, target: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await api.expect(202, 'PUT', `/v1/nodes/${uuid}/states/provision`, { target });
      return;
    } catch (error) {
      const retryable = error instanceof ApiError && (error.status === 409 || error.status === 503);
      if (!retryable || attempt >= 20) throw error;
      await sleep(100 * attempt);
    }
  }
}

/**
 * Brings every node to `wait call-back` through the REST API, step by step
 * for all nodes; each step waits until every node has reached its state.
 */
export async function provisionNodes(
  api: ApiClient,
  uuids: readonly string[],
  options: {
    concurrency: number;
    stepTimeoutMs: number;
    progress: (line: string) => void;
    /** Called as each step starts; the function it returns as that step ends, with what it measured meanwhile. */
    measure?: (target: string) => () => Record<string, number> | undefined;
  },
): Promise<ProvisioningResult> {
  const started = performance.now();
  const steps: ProvisioningResult['steps'] = [];
  for (const step of STEPS) {
    const stop = options.measure?.(step.target);
    const stepStarted = performance.now();
    let fired = 0;
    options.progress(`${step.target}: requesting`);
    await mapLimit(uuids, options.concurrency, async (uuid) => {
      await fire(api, uuid, step.target);
      if (++fired % 1000 === 0) options.progress(`${step.target}: ${fired}/${uuids.length} requested`);
    });
    let reached = 0;
    await waitFor(
      `every node to reach "${step.reaches}"`,
      async () => {
        reached = await countInState(api, step.reaches);
        if (reached === uuids.length) return true;
        options.progress(`${step.target}: ${reached}/${uuids.length} ${step.reaches}`);
        return undefined;
      },
      {
        timeoutMs: options.stepTimeoutMs,
        intervalMs: 1000,
        describe: async () => {
          const errors = await firstErrors(api);
          return (
            `only ${reached} of ${uuids.length} did` + (errors.length ? `; for example:\n  ${errors.join('\n  ')}` : '')
          );
        },
      },
    );
    const seconds = (performance.now() - stepStarted) / 1000;
    const cpuSeconds = stop?.();
    steps.push({ ...step, seconds, ...(cpuSeconds ? { cpuSeconds } : {}) });
  }
  return { steps, seconds: (performance.now() - started) / 1000 };
}
