// A scenario's working directory: HTTP roots, sockets, serial consoles and process logs.
// Removed after a passing run; after a failure (or with BMAAS_E2E_KEEP=1) the logs stay.
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Short on purpose: QMP and relay socket paths must stay under 107 bytes. */
export function createWorkDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'bmaas-e2e-'));
}

/**
 * Deletes the directory, or, when the run failed or BMAAS_E2E_KEEP is set,
 * keeps the logs (serial consoles, QEMU output, dnsmasq, every product
 * process) and drops only the bulky HTTP roots and dead sockets.
 */
export async function finishWorkDir(dir: string | undefined, failed: boolean, label: string): Promise<void> {
  if (!dir) return;
  if (!failed && !process.env.BMAAS_E2E_KEEP) {
    await rm(dir, { recursive: true, force: true });
    return;
  }
  for (const entry of await readdir(dir)) {
    if (/^http-\d+$/.test(entry) || /\.(sock|qmp|monitor)$/.test(entry)) {
      await rm(join(dir, entry), { recursive: true, force: true });
    }
  }
  console.warn(
    `[${label}] logs kept in ${dir}: <machine>.serial.log, <machine>.qemu.log, dnsmasq.log, logs/<process>.log`,
  );
}
