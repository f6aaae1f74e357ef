import { describe, expect, it } from 'vitest';
import {
  ALL_PROVISION_STATES,
  allowedEvents,
  CRASH_RECOVERY,
  findTransition,
  PROVISION_TARGETS,
  ProvisionState as S,
  TRANSITIONS,
  USER_EVENTS,
  WAIT_STATES,
  WAIT_TIMEOUT_FAILURE,
} from './states.js';

describe('provision state machine', () => {
  it("uses Ironic's exact state strings", () => {
    expect(ALL_PROVISION_STATES).toContain('wait call-back');
    expect(ALL_PROVISION_STATES).toContain('clean wait');
    expect(ALL_PROVISION_STATES).not.toContain('deploy wait');
    expect([...WAIT_STATES].sort()).toEqual(
      ['clean wait', 'inspect wait', 'rescue wait', 'service wait', 'wait call-back'].sort(),
    );
  });

  it('has unique (from, event) pairs over known states', () => {
    const seen = new Set<string>();
    for (const t of TRANSITIONS) {
      const key = `${t.from}/${t.event}`;
      expect(seen.has(key), key).toBe(false);
      seen.add(key);
      expect(ALL_PROVISION_STATES).toContain(t.from);
      expect(ALL_PROVISION_STATES).toContain(t.to);
    }
  });

  it.each([
    [S.ENROLL, 'manage', S.VERIFYING],
    [S.VERIFYING, 'done', S.MANAGEABLE],
    [S.MANAGEABLE, 'provide', S.CLEANING],
    [S.CLEANING, 'wait', S.CLEAN_WAIT],
    [S.CLEAN_WAIT, 'resume', S.CLEANING],
    [S.CLEANING, 'done', S.AVAILABLE],
    [S.AVAILABLE, 'deploy', S.DEPLOYING],
    [S.DEPLOYING, 'wait', S.DEPLOY_WAIT],
    [S.DEPLOY_WAIT, 'resume', S.DEPLOYING],
    [S.DEPLOYING, 'done', S.ACTIVE],
    [S.DEPLOY_WAIT, 'abort', S.DEPLOY_FAILED],
    [S.DEPLOY_FAILED, 'deploy', S.DEPLOYING],
    [S.ACTIVE, 'rebuild', S.DEPLOYING],
    [S.ACTIVE, 'delete', S.DELETING],
    [S.DELETING, 'clean', S.CLEANING],
    [S.DELETING, 'fail', S.ERROR],
    [S.MANAGEABLE, 'inspect', S.INSPECTING],
    [S.INSPECT_WAIT, 'done', S.MANAGEABLE],
    [S.ACTIVE, 'rescue', S.RESCUING],
    [S.RESCUING, 'wait', S.RESCUE_WAIT],
    [S.RESCUE, 'unrescue', S.UNRESCUING],
    [S.UNRESCUING, 'done', S.ACTIVE],
    [S.CLEAN_WAIT, 'abort', S.CLEAN_FAILED],
    [S.CLEAN_FAILED, 'manage', S.MANAGEABLE],
  ])('%s -%s-> %s', (from, event, to) => {
    expect(findTransition(from, event)?.to).toBe(to);
  });

  it('refuses what Ironic refuses', () => {
    expect(findTransition(S.ENROLL, 'deploy')).toBeUndefined();
    expect(findTransition(S.AVAILABLE, 'provide')).toBeUndefined();
    expect(findTransition(S.ACTIVE, 'deploy')).toBeUndefined();
    expect(findTransition(S.MANAGEABLE, 'delete')).toBeUndefined();
    expect(allowedEvents(S.ENROLL).sort()).toEqual(['inspect', 'manage']);
  });

  it("services an active node as Ironic's state machine does (1.85 unhold, 1.87 service)", () => {
    const serviceEdges: [string, string, string, string | undefined][] = [
      [S.ACTIVE, 'service', S.SERVICING, S.ACTIVE],
      [S.SERVICING, 'done', S.ACTIVE, undefined],
      [S.SERVICING, 'wait', S.SERVICE_WAIT, S.ACTIVE],
      [S.SERVICING, 'hold', S.SERVICE_HOLD, S.ACTIVE],
      [S.SERVICING, 'fail', S.SERVICE_FAILED, undefined],
      [S.SERVICE_WAIT, 'resume', S.SERVICING, S.ACTIVE],
      [S.SERVICE_WAIT, 'hold', S.SERVICE_HOLD, S.ACTIVE],
      [S.SERVICE_WAIT, 'abort', S.SERVICE_FAILED, undefined],
      [S.SERVICE_WAIT, 'delete', S.DELETING, S.AVAILABLE],
      [S.SERVICE_HOLD, 'unhold', S.SERVICE_WAIT, S.ACTIVE],
      [S.SERVICE_HOLD, 'service', S.SERVICING, S.ACTIVE],
      [S.SERVICE_HOLD, 'abort', S.SERVICE_FAILED, undefined],
      [S.SERVICE_FAILED, 'service', S.SERVICING, S.ACTIVE],
      [S.SERVICE_FAILED, 'abort', S.ACTIVE, undefined],
      [S.SERVICE_FAILED, 'rescue', S.RESCUING, S.RESCUE],
      [S.SERVICE_FAILED, 'delete', S.DELETING, S.AVAILABLE],
    ];
    for (const [from, event, to, target] of serviceEdges) {
      const transition = findTransition(from, event);
      expect(transition?.to, `${from} -${event}->`).toBe(to);
      expect(transition?.target, `${from} -${event}-> target`).toBe(target);
    }
    expect(allowedEvents(S.ACTIVE)).toContain('service');
    expect(findTransition(S.MANAGEABLE, 'service')).toBeUndefined();
    expect(findTransition(S.SERVICING, 'abort')).toBeUndefined();
    expect(findTransition(S.SERVICE_HOLD, 'resume')).toBeUndefined();
    expect(PROVISION_TARGETS.service).toBe('service');
    expect(PROVISION_TARGETS.unhold).toBe('unhold');
  });

  it('maps every API target to a user event', () => {
    for (const event of Object.values(PROVISION_TARGETS)) expect(USER_EVENTS.has(event)).toBe(true);
    expect(PROVISION_TARGETS.active).toBe('deploy');
    expect(PROVISION_TARGETS.deleted).toBe('delete');
  });

  it('knows how every wait fails and every transient state recovers', () => {
    for (const wait of WAIT_STATES) {
      const failed = WAIT_TIMEOUT_FAILURE[wait];
      expect(failed).toBeDefined();
      expect(findTransition(wait, 'fail')?.to).toBe(failed);
    }
    expect(CRASH_RECOVERY[S.DEPLOYING]).toBe(S.DEPLOY_FAILED);
    expect(CRASH_RECOVERY[S.CLEANING]).toBe(S.CLEAN_FAILED);
  });
});
