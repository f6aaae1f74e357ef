import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Debian's python3-openstacksdk lives in the system Python, whatever python3 comes first on PATH. */
export const SYSTEM_PYTHON = '/usr/bin/python3';

/** True when the system Python can import openstacksdk (python3-openstacksdk). */
export async function openstacksdkAvailable(): Promise<boolean> {
  if (!existsSync(SYSTEM_PYTHON)) return false;
  try {
    await run(SYSTEM_PYTHON, ['-c', 'import openstack']);
    return true;
  } catch {
    return false;
  }
}

/**
 * The prelude of every script: `conn`, an openstacksdk connection with no
 * auth to the endpoint in argv[1] (the way Metal3 and Bifrost's standalone
 * setups reach Ironic), and `out(value)`, which prints the script's answer as JSON.
 */
const PRELUDE = `
import json, sys
import openstack
conn = openstack.connection.Connection(auth_type='none', baremetal_endpoint_override=sys.argv[1])
def out(value):
    print(json.dumps(value, default=str))
`;

/**
 * Runs `script` (Python, after the prelude) against the API at `endpoint`
 * and parses what it printed with out(). Rejects with Python's stderr.
 */
export async function openstacksdk(endpoint: string, script: string, timeoutMs = 60_000): Promise<unknown> {
  try {
    const { stdout } = await run(SYSTEM_PYTHON, ['-c', `${PRELUDE}\n${script}`, endpoint], {
      timeout: timeoutMs,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, LANG: 'C.UTF-8' },
    });
    const last = stdout.trim().split('\n').at(-1);
    return last ? JSON.parse(last) : undefined;
  } catch (error) {
    const failed = error as Error & { stderr?: string };
    throw new Error(`openstacksdk script failed: ${failed.stderr ?? failed.message}`);
  }
}
