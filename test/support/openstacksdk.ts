import { hasPythonModule, runPythonScript } from './python-script.js';

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
  return runPythonScript(`${PRELUDE}\n${script}\n`, {
    label: 'openstacksdk',
    timeoutMs: options.timeoutMs,
    env: { BMAAS_SDK_ENDPOINT: endpoint, BMAAS_SDK_API_VERSION: options.apiVersion ?? '' },
  });
}

/** Whether `import openstack` works with the python3 on PATH. */
export function hasOpenstacksdk(): Promise<boolean> {
  return hasPythonModule('openstack');
}
