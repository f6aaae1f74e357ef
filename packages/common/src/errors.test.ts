import { describe, expect, it } from 'vitest';
import * as errors from './errors.js';
import {
  BmaasError,
  ClientError,
  Conflict,
  DOCUMENTED_ERRORS,
  fromErrorPayload,
  MACAlreadyExists,
  NodeLocked,
  NodeNotFound,
  NotFound,
  toErrorPayload,
  UnexpectedRpcError,
} from './errors.js';

/** The bases the concrete errors are kinds of: not thrown themselves, so not documented. */
const BASES: ReadonlySet<unknown> = new Set([ClientError, NotFound, Conflict]);
const classes = (Object.values(errors) as unknown[]).filter(
  (value): value is abstract new (...args: never[]) => BmaasError =>
    typeof value === 'function' && value.prototype instanceof BmaasError && !BASES.has(value),
);

describe('domain errors', () => {
  it('documents every concrete error with the status it really has', () => {
    const documented = new Map(DOCUMENTED_ERRORS.map((e) => [e.code, e.status]));
    for (const cls of classes) {
      if (cls.name === 'ConfigError') continue;
      // Built the way the RPC client rebuilds errors: constructors take arguments of their own.
      const instance = Object.create(cls.prototype) as BmaasError;
      expect(documented.get(cls.name), cls.name).toBe(instance.status);
      expect(instance.code).toBe(cls.name);
      expect(instance.name).toBe(cls.name);
    }
  });

  it('are kinds of the base they are named after, with its status and a message naming the value', () => {
    const missing = new NodeNotFound('node-1');
    expect(missing).toBeInstanceOf(NotFound);
    expect(missing).toMatchObject({
      status: 404,
      message: 'Node node-1 could not be found.',
      details: { node: 'node-1' },
    });
    const taken = new MACAlreadyExists('52:54:00:00:00:01');
    expect(taken).toBeInstanceOf(Conflict);
    expect(taken.message).toBe('A port with MAC address 52:54:00:00:00:01 already exists.');
    expect(taken.details).toEqual({ mac: '52:54:00:00:00:01' });
  });

  it('cross the RPC wire as the same class, from the allow-list only', () => {
    const original = new NodeLocked('node-1', 'conductor-a');
    const rebuilt = fromErrorPayload(JSON.parse(JSON.stringify(toErrorPayload(original))), 'x');
    expect(rebuilt).toBeInstanceOf(NodeLocked);
    expect(rebuilt.status).toBe(409);
    expect(rebuilt.message).toBe(original.message);
    expect(rebuilt.details).toEqual({ node: 'node-1', host: 'conductor-a' });
    const missing = fromErrorPayload(JSON.parse(JSON.stringify(toErrorPayload(new NodeNotFound('n-1')))), 'x');
    expect(missing).toBeInstanceOf(NodeNotFound);
    expect(missing).toBeInstanceOf(NotFound);
    expect(missing).toMatchObject({ status: 404, message: 'Node n-1 could not be found.', details: { node: 'n-1' } });

    const foreign = fromErrorPayload({ class: 'ConfigError', message: 'boom' }, 'x');
    expect(foreign).toBeInstanceOf(UnexpectedRpcError);
    expect(fromErrorPayload(undefined, 'no payload')).toBeInstanceOf(UnexpectedRpcError);
  });
});
