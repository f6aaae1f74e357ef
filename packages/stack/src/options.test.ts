import { UsageError } from '@bmaas/common';
import { describe, expect, it } from 'vitest';
import { loopbackStackOptions, parseStackOptions } from './options.js';

describe('parseStackOptions', () => {
  it('gives the defaults of npm start', () => {
    expect(parseStackOptions([])).toEqual({
      conductors: 3,
      apiHost: '127.0.0.1',
      apiPort: 6385,
      jsonRpcBasePort: 8090,
      httpBasePort: 8080,
      configFiles: [],
    });
  });

  it('reads every flag, inline or separate, and repeated config files in order', () => {
    const argv = ['--conductors=5', '--api-host', '0.0.0.0', '--api-port', '7000', '--json-rpc-base-port=9000'];
    argv.push('--http-base-port', '9100', '--config-file', 'a.conf', '--config-file=b.conf');
    expect(parseStackOptions(argv)).toEqual({
      conductors: 5,
      apiHost: '0.0.0.0',
      apiPort: 7000,
      jsonRpcBasePort: 9000,
      httpBasePort: 9100,
      configFiles: ['a.conf', 'b.conf'],
    });
    expect(parseStackOptions(['-h'])).toBe('help');
  });

  it('refuses an unknown flag, a missing value and a number out of range, naming the flag', () => {
    expect(() => parseStackOptions(['--frobnicate'])).toThrow(/unknown option --frobnicate\nusage: npm start/);
    expect(() => parseStackOptions(['--api-port'])).toThrow(UsageError);
    expect(() => parseStackOptions(['--conductors', '51'])).toThrow('--conductors expects a whole number from 1 to 50');
  });
});

describe('loopbackStackOptions', () => {
  it('puts everything on 127.0.0.1, machines included, on ports that do not overlap', async () => {
    const options = await loopbackStackOptions(3, ['bench.conf']);
    expect(options).toMatchObject({ conductors: 3, apiHost: '127.0.0.1', machineHost: '127.0.0.1' });
    expect(options.configFiles).toEqual(['bench.conf']);
    const ports = [options.apiPort];
    for (let i = 1; i <= 3; i++) ports.push(options.jsonRpcBasePort + i, options.httpBasePort + i);
    expect(new Set(ports).size).toBe(7);
  });
});
