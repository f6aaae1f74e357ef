import { describe, expect, it } from 'vitest';
import * as errors from './errors.js';
import {
  BmaasError,
  DOCUMENTED_ERRORS,
  fromErrorPayload,
  NodeLocked,
  toErrorPayload,
  UnexpectedRpcError,
} from './errors.js';

const classes = (Object.values(errors) as unknown[]).filter(
  (value): value is new (...args: string[]) => BmaasError =>
    typeof value === 'function' && value.prototype instanceof BmaasError,
);

describe('domain errors', () => {
  it('documents every concrete error with the status it really has', () => {
    const documented = new Map(DOCUMENTED_ERRORS.map((e) => [e.code, e.status]));
    for (const cls of classes) {
      if (cls.name === 'ConfigError') continue;
      const instance = new cls('a', 'b');
      expect(documented.get(cls.name), cls.name).toBe(instance.status);
      expect(instance.code).toBe(cls.name);
      expect(instance.name).toBe(cls.name);
    }
  });

  it('cross the RPC wire as the same class, from the allow-list only', () => {
    const original = new NodeLocked('node-1', 'conductor-a');
    const rebuilt = fromErrorPayload(JSON.parse(JSON.stringify(toErrorPayload(original))), 'x');
    expect(rebuilt).toBeInstanceOf(NodeLocked);
    expect(rebuilt.status).toBe(409);
    expect(rebuilt.message).toBe(original.message);
    expect(rebuilt.details).toEqual({ node: 'node-1', host: 'conductor-a' });

    const foreign = fromErrorPayload({ class: 'ConfigError', message: 'boom' }, 'x');
    expect(foreign).toBeInstanceOf(UnexpectedRpcError);
    expect(fromErrorPayload(undefined, 'no payload')).toBeInstanceOf(UnexpectedRpcError);
  });
});
