// Small helpers around node:child_process used by every lab module.
import { type ChildProcess, execFile } from 'node:child_process';

export interface RunResult {
  stdout: string;
  stderr: string;
}

export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** Runs a command to completion; rejects with its stderr when it fails. */
export function run(
  command: string,
  args: readonly string[],
  options: { cwd?: string; timeoutMs?: number } = {},
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    execFile(
      command,
      [...args],
      { cwd: options.cwd, timeout: options.timeoutMs ?? 120_000, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error) {
          const detail = stderr.trim() || error.message;
          reject(new Error(`${command} ${args.join(' ')} failed: ${detail}`));
        } else {
          resolve({ stdout, stderr });
        }
      },
    );
  });
}

/** Resolves once the child has exited (at once if it already has). */
export function exitOf(child: ChildProcess): Promise<ExitStatus> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  }
  return new Promise((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
}

/** Resolves with the PID once the child is running; rejects if it could not start. */
export function spawned(child: ChildProcess): Promise<number> {
  if (child.pid !== undefined) return Promise.resolve(child.pid);
  return new Promise((resolve, reject) => {
    child.once('spawn', () =>
      child.pid === undefined ? reject(new Error('spawned without a pid')) : resolve(child.pid),
    );
    child.once('error', reject);
  });
}

export function isRunning(child: ChildProcess): boolean {
  return child.pid !== undefined && child.exitCode === null && child.signalCode === null;
}

/** Stops one process we started, by its PID: SIGTERM, then SIGKILL after graceMs. */
export async function stopProcess(child: ChildProcess, graceMs = 3000): Promise<ExitStatus> {
  const exited = exitOf(child);
  if (!isRunning(child) || child.pid === undefined) return exited;
  const pid = child.pid;
  signal(pid, 'SIGTERM');
  const timer = setTimeout(() => signal(pid, 'SIGKILL'), graceMs);
  try {
    return await exited;
  } finally {
    clearTimeout(timer);
  }
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // already gone
  }
}

/** Waits for the first line a child prints on stdout that matches; fails if it exits first. */
export function waitForOutputLine(child: ChildProcess, pattern: RegExp, timeoutMs: number): Promise<string> {
  const stdout = child.stdout;
  if (!stdout) return Promise.reject(new Error('child has no piped stdout'));
  return new Promise((resolve, reject) => {
    let buffered = '';
    const finish = (error: Error | null, line?: string): void => {
      clearTimeout(timer);
      stdout.off('data', onData);
      child.off('exit', onExit);
      if (error) reject(error);
      else resolve(line ?? '');
    };
    const onData = (chunk: Buffer): void => {
      buffered += chunk.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      const hit = lines.find((line) => pattern.test(line));
      if (hit !== undefined) finish(null, hit);
    };
    const onExit = (code: number | null): void =>
      finish(new Error(`process exited (code ${code}) before printing ${pattern}`));
    const timer = setTimeout(
      () => finish(new Error(`no output matching ${pattern} within ${timeoutMs} ms`)),
      timeoutMs,
    );
    stdout.on('data', onData);
    child.once('exit', onExit);
  });
}
