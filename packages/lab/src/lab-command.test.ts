import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { LAB_USAGE, parseLabArgs } from './lab-command.js';

const MAIN = fileURLToPath(new URL('../dist/main.js', import.meta.url));

describe('the lab command line', () => {
  it('starts three machines from .state by default', () => {
    expect(parseLabArgs([])).toEqual({
      command: 'up',
      machines: 3,
      stateDir: process.env.BMAAS_DEFAULT__STATE_PATH ?? '.state',
      network: 'netns',
      userMode: false,
      deploy: false,
      bmc: 'ipmi',
    });
  });

  it('gives the machines Redfish BMCs with --bmc redfish, and refuses another kind', () => {
    expect(parseLabArgs(['--bmc', 'redfish']).bmc).toBe('redfish');
    expect(parseLabArgs(['--bmc=ipmi']).bmc).toBe('ipmi');
    expect(() => parseLabArgs(['--bmc', 'snmp'])).toThrow(/--bmc expects ipmi or redfish/);
  });

  it('takes each flag of the usage, with its value inline or next', () => {
    expect(parseLabArgs(['--machines', '5', '--deploy', '--user-mode', '--state-dir=/tmp/s'])).toMatchObject({
      command: 'up',
      machines: 5,
      deploy: true,
      userMode: true,
      stateDir: '/tmp/s',
    });
    expect(parseLabArgs(['--machines=1']).machines).toBe(1);
    expect(parseLabArgs(['--status']).command).toBe('status');
    expect(parseLabArgs(['--down', '--state-dir', 'x']).command).toBe('down');
    expect(parseLabArgs(['-h']).command).toBe('help');
    expect(parseLabArgs(['--status', '--help']).command).toBe('help');
    expect(parseLabArgs(['--run-lab-process', '--network', 'user'])).toMatchObject({
      command: 'process',
      network: 'user',
    });
  });

  it('refuses a machine count out of 1-20, an unknown flag, a flag without its value', () => {
    for (const count of ['0', '21', '2.5', 'three']) {
      expect(() => parseLabArgs(['--machines', count])).toThrow('--machines expects a whole number from 1 to 20');
    }
    expect(() => parseLabArgs(['--machine', '2'])).toThrow(/Unknown option '--machine'[\s\S]*usage: npm run lab/);
    expect(() => parseLabArgs(['--state-dir'])).toThrow(/--state-dir/);
    expect(() => parseLabArgs(['up'])).toThrow(/Unexpected argument 'up'/);
  });

  it('every flag parseLabArgs takes for an operator is in the usage', () => {
    for (const flag of ['--machines N', '--deploy', '--status', '--down', '--user-mode', '--state-dir DIR']) {
      expect(LAB_USAGE).toContain(`  ${flag}`);
    }
  });

  it('bmaas-lab --help prints the usage; a wrong flag exits 1 with the usage', async () => {
    const run = promisify(execFile);
    const help = await run(process.execPath, [MAIN, '--help']);
    expect(help.stdout).toBe(`${LAB_USAGE}\n`);
    const wrong = await run(process.execPath, [MAIN, '--bogus']).catch(
      (error: { code: number; stderr: string }) => error,
    );
    expect(wrong).toMatchObject({ code: 1 });
    expect((wrong as { stderr: string }).stderr).toMatch(/^lab: Unknown option '--bogus'[\s\S]*usage: npm run lab/);
  });
});
