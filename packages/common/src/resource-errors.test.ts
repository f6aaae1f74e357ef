import { describe, expect, it } from 'vitest';
import { BmaasError } from './errors.js';
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

  it('say what Ironic says', () => {
    expect(new resourceErrors.ChassisNotEmpty('c-1').message).toBe(
      'Cannot complete the requested action because chassis c-1 contains nodes.',
    );
    expect(new resourceErrors.PortgroupNotFound('pg').message).toBe('Portgroup pg could not be found.');
  });
});
