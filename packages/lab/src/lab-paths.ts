// Where the lab keeps its state, next to the stack's: <state>/lab/.
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Built ramdisks and images, shared with test/e2e (BMAAS_E2E_CACHE overrides). */
export const IMAGE_CACHE_DIR =
  process.env.BMAAS_E2E_CACHE ?? fileURLToPath(new URL('../../../test/e2e/.cache', import.meta.url));

export interface LabPaths {
  stateDir: string;
  dir: string;
  /** PID file of the lab process (the owner of every machine, BMC, relay and dnsmasq). */
  pidFile: string;
  /** Its control socket (HTTP): the machines it runs, more on request. */
  controlSocket: string;
  log: string;
  /** Names of the nodes the lab enrolled (what --down deletes). */
  nodesFile: string;
  /** The lab's CA and its Redfish BMCs' certificate (@bmaas/pki), kept across labs. */
  pkiDir: string;
}

export function labPaths(stateDir: string): LabPaths {
  const state = resolve(stateDir);
  const dir = join(state, 'lab');
  return {
    stateDir: state,
    dir,
    pidFile: join(dir, 'lab.pid'),
    controlSocket: join(dir, 'control.sock'),
    log: join(dir, 'lab.log'),
    nodesFile: join(dir, 'nodes.json'),
    pkiDir: join(dir, 'pki'),
  };
}
