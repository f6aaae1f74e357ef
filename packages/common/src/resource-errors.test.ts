import { describe, expect, it } from 'vitest';
import { BmaasError, ClientError, Conflict, fromErrorPayload, NotFound, UnexpectedRpcError } from './errors.js';
import * as resourceErrors from './resource-errors.js';

describe('resource errors', () => {
  it('documents every concrete class with the status it really has', () => {
    const documented = new Map(resourceErrors.RESOURCE_ERRORS.map((e) => [e.code, e.status]));
    const classes = (Object.values(resourceErrors) as unknown[]).filter(
      (value): value is new (arg: string) => BmaasError =>
        typeof value === 'function' && value.prototype instanceof BmaasError,
    );
    expect(classes.length).toBe(documented.size);
    for (const cls of classes) {
      const instance = new cls('x');
      expect(documented.get(cls.name), cls.name).toBe(instance.status);
      expect(instance.code).toBe(cls.name);
    }
  });

  it('are kinds of the one base each is named after (no second set of bases)', () => {
    for (const missing of [
      new resourceErrors.ChassisNotFound('c'),
      new resourceErrors.PortgroupNotFound('p'),
      new resourceErrors.AllocationNotFound('a'),
      new resourceErrors.DeployTemplateNotFound('t'),
      new resourceErrors.RunbookNotFound('r'),
      new resourceErrors.VolumeConnectorNotFound('v'),
      new resourceErrors.VolumeTargetNotFound('v'),
    ]) {
      expect(missing, missing.code).toBeInstanceOf(NotFound);
    }
    expect(new resourceErrors.ChassisNotEmpty('c')).toBeInstanceOf(ClientError);
    expect(new resourceErrors.PortgroupNotEmpty('p')).toBeInstanceOf(ClientError);
    expect(new resourceErrors.ResourceAlreadyExists('taken')).toBeInstanceOf(Conflict);
    expect(new resourceErrors.ResourceConflict('busy')).toBeInstanceOf(Conflict);
  });

  it('stay in the API: a conductor cannot send one over JSON-RPC', () => {
    const payload = { class: 'ChassisNotFound', message: 'Chassis c could not be found.', status: 404, details: {} };
    expect(fromErrorPayload(payload, 'x')).toBeInstanceOf(UnexpectedRpcError);
  });

  it('say what Ironic says', () => {
    expect(new resourceErrors.ChassisNotEmpty('c-1').message).toBe(
      'Cannot complete the requested action because chassis c-1 contains nodes.',
    );
    expect(new resourceErrors.PortgroupNotFound('pg').message).toBe('Portgroup pg could not be found.');
    expect(new resourceErrors.AllocationNotFound('n-1', 'Allocation for node n-1 was not found').message).toBe(
      'Allocation for node n-1 was not found',
    );
    expect(new resourceErrors.DeployTemplateNotFound('t').details).toEqual({ template: 't' });
  });
});
