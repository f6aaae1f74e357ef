// Last-resort cleanup when the test process ends without running its own teardown
// (uncaught error, process.exit, SIGINT/SIGTERM). Actions must be synchronous.
const actions = new Set<() => void>();
let installed = false;

/** Registers a synchronous cleanup action; call the returned function once cleaned up normally. */
export function onAbnormalExit(action: () => void): () => void {
  install();
  actions.add(action);
  return () => {
    actions.delete(action);
  };
}

/** Sends SIGKILL to a PID we started, ignoring one that is already gone. */
export function killNow(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

function runAll(): void {
  for (const action of [...actions]) {
    actions.delete(action);
    try {
      action();
    } catch {
      // keep going: the other resources still need freeing
    }
  }
}

function install(): void {
  if (installed) return;
  installed = true;
  process.once('exit', runAll);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    // Only where nobody else handles the signal: then re-raising it still ends the process as before.
    if (process.listenerCount(signal) > 0) continue;
    process.once(signal, () => {
      runAll();
      process.kill(process.pid, signal);
    });
  }
}
