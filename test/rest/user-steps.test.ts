import { ironicFault } from '@bmaas/api-client';
import { describe, expect, it } from 'vitest';
import { useApiStack } from '../support/api-stack-suite.js';

/**
 * deploy_steps (1.69) and disable_ramdisk (1.70) as a client sends them: REST
 * calls to the API, routed to the owning conductor process, on fake hardware.
 */

const suite = useApiStack('1.70', {
  conductors: 1,
  env: { BMAAS_DEFAULT__ENABLED_BOOT_INTERFACES: 'fake', BMAAS_DEFAULT__ENABLED_DEPLOY_INTERFACES: 'fake' },
});

/** A fake-hardware node driven to `manageable`, and to `available` when asked. */
async function nodeIn(name: string, available: boolean): Promise<void> {
  await suite.rest.createNode({ driver: 'fake-hardware', name });
  const steps = available ? (['manage', 'provide'] as const) : (['manage'] as const);
  for (const target of steps) {
    const answer = await suite.rest.provision(name, target);
    expect(answer.status, `${target}: ${answer.text}`).toBe(202);
    await suite.rest.settled(name, target === 'manage' ? 'manageable' : 'available');
  }
}

describe('user deploy steps and disable_ramdisk through the API and a conductor', () => {
  it('deploys with a user step the fake runs after its core step, and refuses an unknown one', async () => {
    await nodeIn('steps-fake', true);
    const unknown = await suite.rest.provision('steps-fake', 'active', {
      deploy_steps: [{ interface: 'deploy', step: 'nonexistent', args: {}, priority: 10 }],
    });
    expect(unknown.status).toBe(400);
    expect(ironicFault(unknown).faultstring).toContain('node does not support this deploy step:');
    expect((await suite.rest.node('steps-fake')).provision_state).toBe('available');

    const answer = await suite.rest.provision('steps-fake', 'active', {
      deploy_steps: [{ interface: 'deploy', step: 'write_marker', args: { path: '/m' }, priority: 50 }],
    });
    expect(answer.status, answer.text).toBe(202);
    const done = await suite.rest.settled('steps-fake', 'active');
    expect(done).toMatchObject({ last_error: null, deploy_step: {} });
    expect(done.driver_internal_info).toMatchObject({ fake_deploy_steps: ['deploy.deploy', 'deploy.write_marker'] });
  }, 60_000);

  it('cleans a manageable node without a ramdisk and ends manageable', async () => {
    await nodeIn('clean-noramdisk', false);
    const answer = await suite.rest.provision('clean-noramdisk', 'clean', {
      clean_steps: [{ interface: 'management', step: 'clear_job_queue' }],
      disable_ramdisk: true,
    });
    expect(answer.status, answer.text).toBe(202);
    const done = await suite.rest.settled('clean-noramdisk', 'manageable');
    expect(done).toMatchObject({ last_error: null, clean_step: {} });
  }, 60_000);
});
