import { type ApiAnswer, CLI_API_VERSION, ironicFault, type NodeAnswer } from '@bmaas/api-client';
import { waitFor } from '@bmaas/common';
import type { ConductorProcess } from '@bmaas/stack';
import { describe, expect, it } from 'vitest';
import { useApiStack } from '../support/api-stack-suite.js';
import { BAREMETAL, baremetal } from '../support/baremetal-cli.js';
import { UNFETCHED_INSTANCE_INFO } from '../support/instance-image.js';
import { missingPrerequisite } from '../support/prerequisites.js';

/**
 * The provision state machine driven the way operators drive it: REST calls
 * to the API, which routes each action to the owning one of three real
 * conductor processes, all on one test database. Fake hardware; the
 * `direct` deploy interface with the fake boot interface where a node must
 * wait for its agent. Tests run in order on one stack.
 */

/** Seconds a node may wait in "wait call-back" here before its deploy fails (the periodic check runs every second). */
const DEPLOY_CALLBACK_TIMEOUT = 5;

const suite = useApiStack(CLI_API_VERSION, {
  conductors: 3,
  env: {
    BMAAS_DEFAULT__ENABLED_BOOT_INTERFACES: 'fake',
    BMAAS_DEFAULT__ENABLED_DEPLOY_INTERFACES: 'fake,direct',
    BMAAS_CONDUCTOR__DEPLOY_CALLBACK_TIMEOUT: String(DEPLOY_CALLBACK_TIMEOUT),
  },
});
/** Every node this suite created: the ownership check covers them all. */
const created: string[] = [];

async function createNode(name: string, fields: Record<string, unknown> = {}): Promise<NodeAnswer> {
  const node = await suite.rest.createNode({ driver: 'fake-hardware', name, ...fields });
  created.push(node.uuid);
  return node;
}

/** PUT …/states/provision expecting Ironic's 202 with a Location of the node's states. */
async function accepted(ident: string, target: string, extra: Record<string, unknown> = {}): Promise<void> {
  const answer = await suite.rest.provision(ident, target, extra);
  expect(answer.status, `${target} on ${ident}: ${answer.text}`).toBe(202);
  expect(answer.headers.get('location')).toBe(`${suite.stack.apiUrl}/v1/nodes/${ident}/states`);
  expect(answer.text).toBe('');
}

/** Fires `target` and waits for the node to settle in `state`, with no target and no error left. */
async function drive(ident: string, target: string, state: string, extra: Record<string, unknown> = {}) {
  await accepted(ident, target, extra);
  const node = await suite.rest.settled(ident, state);
  expect(node).toMatchObject({ target_provision_state: null, last_error: null });
  return node;
}

async function states(ident: string): Promise<Record<string, unknown>> {
  const answer = await suite.rest.request<Record<string, unknown>>('GET', `/v1/nodes/${ident}/states`);
  expect(answer.status).toBe(200);
  return answer.body;
}

function updatedAt(node: Record<string, unknown>): number {
  expect(node.provision_updated_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00$/);
  return Date.parse(node.provision_updated_at as string);
}

/** A refusal with Ironic's error body: status, fault code Client, exact message. */
function expectRefusal(answer: ApiAnswer, status: number, faultstring: string | RegExp): void {
  expect(answer.status, answer.text).toBe(status);
  const fault = ironicFault(answer);
  expect(fault.faultcode).toBe('Client');
  expect(fault.debuginfo).toBeNull();
  if (typeof faultstring === 'string') expect(fault.faultstring).toBe(faultstring);
  else expect(fault.faultstring).toMatch(faultstring);
}

function acceptedActions(conductor: ConductorProcess, nodeUuid: string): string[] {
  return conductor.process.lines
    .filter((l) => l.message === 'provision action accepted' && l.nodeUuid === nodeUuid)
    .map((l) => l.action as string);
}

describe('provision states through the REST API, three conductors', () => {
  it('enroll -> manage -> manageable: 202 + Location, then the node and its states show the outcome', async () => {
    const node = await createNode('rest-enroll');
    expect(node).toMatchObject({ provision_state: 'enroll', target_provision_state: null, power_state: null });
    expect(suite.stack.conductors.map((c) => c.hostname)).toContain(node.conductor);
    expect(await states(node.uuid)).toMatchObject({
      provision_state: 'enroll',
      target_provision_state: null,
      last_error: null,
      provision_updated_at: null,
    });

    const managed = await drive(node.uuid, 'manage', 'manageable');
    const view = await states(node.uuid);
    expect(view).toMatchObject({
      provision_state: 'manageable',
      target_provision_state: null,
      last_error: null,
      // A fake-hardware node's power state stays unknown until something sets it, as in Ironic.
      power_state: null,
      target_power_state: null,
    });
    expect(view.provision_updated_at).toBe(managed.provision_updated_at);
    expect(updatedAt(view)).toBeGreaterThan(Date.parse(node.created_at as string));
  });

  it('provide with automated cleaning (fake deploy) and without (direct deploy, node automated_clean false) -> available', async () => {
    const cleaned = await createNode('rest-provide-clean');
    await drive(cleaned.uuid, 'manage', 'manageable');
    await drive(cleaned.uuid, 'provide', 'available');
    expect(cleaned.automated_clean).toBeNull();

    // With the direct deploy, cleaning would boot the ramdisk and wait; turned off, provide ends at once.
    const uncleaned = await createNode('rest-provide-noclean', { deploy_interface: 'direct', automated_clean: false });
    await drive(uncleaned.uuid, 'manage', 'manageable');
    const available = await drive(uncleaned.uuid, 'provide', 'available');
    expect(available.driver_internal_info).not.toHaveProperty('fake_boot');
  });

  it('deploy -> active, rebuild -> active, deleted -> available, deploy -> active, undeploy -> available', async () => {
    const node = await createNode('rest-deploy');
    await drive(node.uuid, 'manage', 'manageable');
    await drive(node.uuid, 'provide', 'available');
    const active = await drive(node.uuid, 'active', 'active');
    const rebuilt = await drive(node.uuid, 'rebuild', 'active');
    expect(updatedAt(rebuilt)).toBeGreaterThan(updatedAt(active));
    const deleted = await drive(node.uuid, 'deleted', 'available');
    expect(updatedAt(deleted)).toBeGreaterThan(updatedAt(rebuilt));
    await drive(node.uuid, 'deploy', 'active');
    await drive(node.uuid, 'undeploy', 'available');
    const owner = suite.stack.conductors.find((c) => c.hostname === rebuilt.conductor) as ConductorProcess;
    expect(acceptedActions(owner, node.uuid)).toEqual([
      'manage',
      'provide',
      'deploy',
      'rebuild',
      'delete',
      'deploy',
      'delete',
    ]);
  });

  it('a deploy waiting in "wait call-back": abort needs 1.110 (406), the wait times out to deploy failed, undeploy recovers', async () => {
    const node = await createNode('rest-deploy-wait', {
      deploy_interface: 'direct',
      automated_clean: false,
      instance_info: UNFETCHED_INSTANCE_INFO,
    });
    await drive(node.uuid, 'manage', 'manageable');
    await drive(node.uuid, 'provide', 'available');
    await accepted(node.uuid, 'active');
    const waiting = await suite.rest.settled(node.uuid, 'wait call-back');
    expect(waiting).toMatchObject({ target_provision_state: 'active', last_error: null, power_state: 'power on' });
    expect(waiting.driver_internal_info).toMatchObject({ fake_boot: 'ramdisk:deploy' });

    // Aborting a deploy wait needs API 1.110 (docs/api.md), above our maximum: the CLI's 1.78 is refused.
    const abort = await suite.rest.provision(node.uuid, 'abort');
    expect(abort.status, abort.text).toBe(406);
    expect(ironicFault(abort).faultstring).toBe(
      'Request not acceptable. The minimal required API version should be 1.110',
    );

    const failed = await suite.rest.settled(node.uuid, 'deploy failed', (DEPLOY_CALLBACK_TIMEOUT + 6) * 1000);
    expect(failed.target_provision_state).toBeNull();
    expect(failed.last_error).toBe(
      `Timeout reached while waiting for callback for node ${node.uuid} (deploy, ${DEPLOY_CALLBACK_TIMEOUT} s).`,
    );
    expect(updatedAt(failed)).toBeGreaterThan(updatedAt(waiting));
    // The ramdisk boot it waited for was undone.
    expect(failed.power_state).toBe('power off');
    expect(failed.driver_internal_info).not.toHaveProperty('fake_boot');
    expect(await states(node.uuid)).toMatchObject({ provision_state: 'deploy failed', last_error: failed.last_error });

    await drive(node.uuid, 'undeploy', 'available');
  });

  it('a clean waiting in "clean wait" is aborted -> clean failed with last_error; manage -> manageable', async () => {
    const node = await createNode('rest-clean-wait', { deploy_interface: 'direct', automated_clean: true });
    await drive(node.uuid, 'manage', 'manageable');
    await accepted(node.uuid, 'provide');
    const waiting = await suite.rest.settled(node.uuid, 'clean wait');
    expect(waiting).toMatchObject({ target_provision_state: 'available', last_error: null });
    expect(waiting.driver_internal_info).toMatchObject({ fake_boot: 'ramdisk:deploy' });

    await accepted(node.uuid, 'abort');
    const failed = await suite.rest.settled(node.uuid, 'clean failed');
    expect(failed).toMatchObject({
      target_provision_state: null,
      last_error: 'By request, the clean operation was aborted.',
    });
    // The cleaning ramdisk was torn down.
    expect(failed.driver_internal_info).not.toHaveProperty('fake_boot');
    await drive(node.uuid, 'manage', 'manageable');
  });

  it('manual clean with clean_steps, inspect and adopt from manageable', async () => {
    const node = await createNode('rest-clean-inspect-adopt', { inspect_interface: 'fake' });
    await drive(node.uuid, 'manage', 'manageable');
    expectRefusal(
      await suite.rest.provision(node.uuid, 'clean'),
      400,
      '"clean_steps" is required when setting target provision state to clean',
    );
    const cleaned = await drive(node.uuid, 'clean', 'manageable', {
      clean_steps: [{ interface: 'deploy', step: 'erase_devices_metadata' }],
    });
    expect(cleaned.driver_internal_info).not.toHaveProperty('clean_steps');
    await drive(node.uuid, 'inspect', 'manageable');
    await drive(node.uuid, 'adopt', 'active');
    const owner = suite.stack.conductors.find((c) => c.hostname === cleaned.conductor) as ConductorProcess;
    expect(acceptedActions(owner, node.uuid)).toEqual(['manage', 'clean', 'inspect', 'adopt']);
  });

  it('rescue needs a rescue_password; rescue -> rescue, unrescue -> active', async () => {
    const node = await createNode('rest-rescue');
    await drive(node.uuid, 'manage', 'manageable');
    await drive(node.uuid, 'adopt', 'active');
    expectRefusal(
      await suite.rest.provision(node.uuid, 'rescue'),
      400,
      'A non-empty "rescue_password" is required when setting target provision state to rescue',
    );
    const rescued = await drive(node.uuid, 'rescue', 'rescue', { rescue_password: 'r3scue' });
    expect(rescued.instance_info).toEqual({ rescue_password: '******' });
    const back = await drive(node.uuid, 'unrescue', 'active');
    expect(back.instance_info).toEqual({});
  });

  it('refuses transitions the state table does not have with 400 InvalidStateRequested and the Ironic body', async () => {
    const node = await createNode('rest-refused');
    const refusals: Array<[string, string, Record<string, unknown>]> = [
      ['active', 'enroll', {}],
      ['provide', 'enroll', {}],
      ['abort', 'enroll', {}],
      ['rescue', 'enroll', { rescue_password: 'x' }],
      ['unrescue', 'manageable', {}],
      ['deploy', 'manageable', {}],
      ['rebuild', 'manageable', {}],
    ];
    for (const [target, state, extra] of refusals) {
      if (state === 'manageable' && (await suite.rest.node(node.uuid)).provision_state === 'enroll') {
        await drive(node.uuid, 'manage', 'manageable');
      }
      expectRefusal(
        await suite.rest.provision(node.uuid, target, extra),
        400,
        `The requested action "${target}" can not be performed on node "${node.uuid}" while it is in state "${state}".`,
      );
    }
    expectRefusal(
      await suite.rest.provision(node.uuid, 'fly'),
      400,
      'The requested action "fly" could not be understood.',
    );
    expect(await suite.rest.node(node.uuid)).toMatchObject({ provision_state: 'manageable', last_error: null });
    const owner = suite.stack.conductors.find((c) => c.hostname === node.conductor) as ConductorProcess;
    expect(acceptedActions(owner, node.uuid)).toEqual(['manage']);
  });

  it('maintenance blocks deploy with 400; cleared, the deploy goes through', async () => {
    const node = await createNode('rest-maintenance');
    await drive(node.uuid, 'manage', 'manageable');
    await drive(node.uuid, 'provide', 'available');
    const set = await suite.rest.request('PUT', `/v1/nodes/${node.uuid}/maintenance`, { reason: 'disk swap' });
    expect(set.status).toBe(202);
    for (const target of ['active', 'deploy']) {
      expectRefusal(
        await suite.rest.provision(node.uuid, target),
        400,
        `The provisioning operation can't be performed on node ${node.uuid} because it's in maintenance mode.`,
      );
    }
    expect(await suite.rest.node(node.uuid)).toMatchObject({ provision_state: 'available', maintenance: true });
    expect((await suite.rest.request('DELETE', `/v1/nodes/${node.uuid}/maintenance`)).status).toBe(202);
    await drive(node.uuid, 'active', 'active');
  });

  it('changes the power state through PUT …/states/power: 202 + Location, then power_state follows', async () => {
    const node = await createNode('rest-power');
    for (const [target, expected] of [
      ['power on', 'power on'],
      ['power off', 'power off'],
      ['rebooting', 'power on'],
    ] as const) {
      const answer = await suite.rest.power(node.uuid, target);
      expect(answer.status, answer.text).toBe(202);
      expect(answer.headers.get('location')).toBe(`${suite.stack.apiUrl}/v1/nodes/${node.uuid}/states`);
      await waitFor(
        `power ${target} to be done`,
        async () => {
          const view = await states(node.uuid);
          return view.power_state === expected && view.target_power_state === null ? view : undefined;
        },
        { timeoutMs: 10_000, intervalMs: 50 },
      );
    }
    await accepted(node.uuid, 'manage');
    // Verification reads the power state; it does not change it.
    expect(await suite.rest.settled(node.uuid, 'manageable')).toMatchObject({ power_state: 'power on' });
    expectRefusal(
      await suite.rest.power(node.uuid, 'power sideways'),
      400,
      `The requested action "power sideways" can not be performed on node "${node.uuid}" while it is in state "power on".`,
    );
  });

  it('lets exactly one of concurrent provision actions on one node through: one 202, the rest 409 or 400', async () => {
    const enrolled = await createNode('rest-race-manage');
    const available = await createNode('rest-race-deploy');
    await drive(available.uuid, 'manage', 'manageable');
    await drive(available.uuid, 'provide', 'available');
    for (const [node, target, event, settlesIn] of [
      [enrolled, 'manage', 'manage', 'manageable'],
      [available, 'active', 'deploy', 'active'],
    ] as const) {
      const answers = await Promise.all(Array.from({ length: 12 }, () => suite.rest.provision(node.uuid, target)));
      const statuses = answers.map((a) => a.status);
      expect(statuses.filter((s) => s === 202).length, JSON.stringify(statuses)).toBe(1);
      // The API refuses what it can see (400); the owner refuses what it finds locked (409) or already moved (400).
      const locked = new RegExp(`^Node ${node.uuid} is locked by host .+, please retry after the current operation`);
      const wrongState = new RegExp(`^The requested action "(${target}|${event})" can not be performed on node`);
      for (const refused of answers.filter((a) => a.status !== 202)) {
        expect([409, 400], refused.text).toContain(refused.status);
        expect(ironicFault(refused).faultstring).toMatch(refused.status === 409 ? locked : wrongState);
      }
      await suite.rest.settled(node.uuid, settlesIn);
      const owner = suite.stack.conductors.find((c) => c.hostname === node.conductor) as ConductorProcess;
      expect(acceptedActions(owner, node.uuid).filter((a) => a === event)).toEqual([event]);
    }
  });

  it('runs every action of every node on the conductor its node answer names', async () => {
    let owned = 0;
    for (const uuid of created) {
      const { conductor } = await suite.rest.node(uuid);
      for (const process of suite.stack.conductors) {
        const actions = acceptedActions(process, uuid);
        if (process.hostname === conductor) expect(actions.length, `${uuid} on its owner`).toBeGreaterThan(0);
        else expect(actions, `${uuid} on ${process.hostname}, not its owner ${conductor}`).toEqual([]);
      }
      owned++;
    }
    expect(owned).toBe(created.length);
    // The nodes are spread: more than one conductor did work.
    const busy = suite.stack.conductors.filter((c) => created.some((uuid) => acceptedActions(c, uuid).length > 0));
    expect(busy.length).toBeGreaterThan(1);
  });
});

describe.skipIf(
  missingPrerequisite(
    'provision-states CLI',
    BAREMETAL ? null : 'no `baremetal` on PATH (apt-get install python3-ironicclient)',
  ),
)('the baremetal CLI drives the state machine with --wait', () => {
  it('manage, provide, deploy, undeploy --wait; node show -f json gives the final state', async () => {
    const endpoint = suite.stack.apiUrl as string;
    const node = await createNode('cli-flow');
    for (const [verb, state] of [
      ['manage', 'manageable'],
      ['provide', 'available'],
      ['deploy', 'active'],
      ['undeploy', 'available'],
    ] as const) {
      await baremetal(endpoint, ['node', verb, 'cli-flow', '--wait', '60']);
      // --wait returned: the state is reached already (read through REST, cheaper than one more CLI run).
      expect(await suite.rest.node(node.uuid), verb).toMatchObject({
        provision_state: state,
        target_provision_state: null,
      });
    }
    const shown = (await baremetal(endpoint, ['node', 'show', 'cli-flow', '-f', 'json'])) as NodeAnswer;
    expect(shown).toMatchObject({
      uuid: node.uuid,
      provision_state: 'available',
      target_provision_state: null,
      last_error: null,
      conductor: node.conductor,
    });
    const owner = suite.stack.conductors.find((c) => c.hostname === node.conductor) as ConductorProcess;
    expect(acceptedActions(owner, node.uuid)).toEqual(['manage', 'provide', 'deploy', 'delete']);
  }, 120_000);
});
