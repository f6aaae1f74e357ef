import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/**
 * Debian's python3 (where python3-openstacksdk installs), else the first
 * python3 on PATH: a python3 of pyenv or a virtualenv first on PATH does not
 * see Debian's packages.
 */
export const PYTHON3 = ['/usr/bin', ...(process.env.PATH ?? '').split(delimiter)]
  .filter((dir) => dir !== '')
  .map((dir) => join(dir, 'python3'))
  .find((path) => existsSync(path));

/**
 * Runs before every script: a connection `conn` to the API at
 * $BMAAS_SDK_ENDPOINT without authentication (what `OS_AUTH_TYPE=none`
 * gives the CLI), and `emit(value)`, which prints `value` as the script's
 * JSON answer. openstacksdk resources are turned into plain dicts.
 */
const PRELUDE = `
import json, os, sys
import openstack
import openstack.resource

conn = openstack.connect(
    auth_type='none',
    baremetal_endpoint_override=os.environ['BMAAS_SDK_ENDPOINT'],
    baremetal_api_version=os.environ.get('BMAAS_SDK_API_VERSION') or None,
)

def _plain(value):
    if isinstance(value, openstack.resource.Resource):
        return _plain(value.to_dict(computed=False))
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) or hasattr(value, '__next__'):
        return [_plain(v) for v in value]
    return value

_emitted = False
def emit(value):
    global _emitted
    _emitted = True
    sys.stdout.write(json.dumps(_plain(value), default=str))
`;

export interface SdkOptions {
  /** Microversion the connection negotiates up to (`baremetal_api_version`); default the SDK's own. */
  apiVersion?: string;
  timeoutMs?: number;
}

/**
 * Runs a Python 3 script with openstacksdk (Debian python3-openstacksdk)
 * against the API at `endpoint` and returns what it passed to `emit()`, parsed
 * (undefined if it emitted nothing). Rejects with Python's stderr when the
 * script fails, so an SDK exception (an HTTP error from the API included)
 * fails the test with its message.
 */
export function openstacksdk(endpoint: string, script: string, options: SdkOptions = {}): Promise<unknown> {
  if (!PYTHON3) return Promise.reject(new Error('no python3 on PATH (apt-get install python3-openstacksdk)'));
  return new Promise((resolve, reject) => {
    const child = execFile(
      PYTHON3 as string,
      ['-'],
      {
        timeout: options.timeoutMs ?? 60_000,
        env: {
          PATH: process.env.PATH,
          HOME: process.env.HOME,
          LANG: 'C.UTF-8',
          BMAAS_SDK_ENDPOINT: endpoint,
          BMAAS_SDK_API_VERSION: options.apiVersion ?? '',
        },
      },
      (error, stdout, stderr) => {
        if (error) {
          reject(new Error(`openstacksdk script failed (${error.code ?? error.signal}): ${stderr || error.message}`));
          return;
        }
        resolve(stdout.trim() === '' ? undefined : JSON.parse(stdout));
      },
    );
    child.stdin?.end(`${PRELUDE}\n${script}\n`);
  });
}

/** Whether `import openstack` works with the python3 on PATH. */
export function hasOpenstacksdk(): Promise<boolean> {
  if (!PYTHON3) return Promise.resolve(false);
  return new Promise((resolve) => {
    execFile(PYTHON3 as string, ['-c', 'import openstack'], { timeout: 30_000 }, (error) => resolve(!error));
  });
}
