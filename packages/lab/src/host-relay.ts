// A byte relay on the host side of the lab (socket-relay.mjs in listen mode), e.g. a Unix
// socket that namespace processes reach through LabNetwork.portToHostSocket, leading to a
// host TCP service such as the test PostgreSQL.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { stopProcess, waitForOutputLine } from './child-process.js';
import { killNow, onAbnormalExit } from './exit-cleanup.js';

const RELAY_SCRIPT = fileURLToPath(new URL('../assets/socket-relay.mjs', import.meta.url));

export interface HostRelay {
  readonly pid: number;
  stop(): Promise<void>;
}

/** Listens on `from` and connects every client to `to` (endpoints: tcp:<host>:<port> or unix:<path>). */
export async function startHostRelay(from: string, to: string): Promise<HostRelay> {
  const child = spawn(process.execPath, [RELAY_SCRIPT, 'listen', from, to], { stdio: ['ignore', 'pipe', 'inherit'] });
  const forget = onAbnormalExit(() => killNow(child.pid));
  try {
    await waitForOutputLine(child, /^ready$/, 10_000);
  } catch (error) {
    await stopProcess(child);
    forget();
    throw error;
  }
  return {
    pid: child.pid as number,
    async stop() {
      await stopProcess(child);
      forget();
    },
  };
}
