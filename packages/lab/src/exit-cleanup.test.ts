import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { until, waitFor } from '@bmaas/common';
import { processRunning } from '@bmaas/stack';
import { afterEach, describe, expect, it } from 'vitest';
import { exitOf, stopProcess, waitForOutputLine } from './child-process.js';
import { killNow } from './exit-cleanup.js';

// The module runs in a Node process of its own (the built one: `npx tsc -b` first), which
// starts a `sleep` and registers killing it; the test then ends that process in each way.
const EXIT_CLEANUP = fileURLToPath(new URL('../dist/exit-cleanup.js', import.meta.url));
const OWNER = `
import { spawn } from 'node:child_process';
import { killNow, onAbnormalExit } from ${JSON.stringify(EXIT_CLEANUP)};
const sleeper = spawn('sleep', ['60'], { stdio: 'ignore', detached: true });
sleeper.unref();
const forget = onAbnormalExit(() => killNow(sleeper.pid));
onAbnormalExit(() => { throw new Error('a failing action does not stop the others'); });
const how = process.argv[1];
if (how === 'forget') forget();
console.log('sleeper ' + sleeper.pid);
if (how === 'exit' || how === 'forget') setTimeout(() => process.exit(3), 100);
else setInterval(() => {}, 1000); // until signalled
`;

const started: ChildProcess[] = [];
const sleepers: number[] = [];

/** SIGKILL is delivered asynchronously: bounded wait for the process to be gone. */
function gone(pid: number): Promise<true> {
  return waitFor(
    `process ${pid} to be gone`,
    until(() => !processRunning(pid)),
    { timeoutMs: 5000, intervalMs: 20 },
  );
}

async function owner(how: 'exit' | 'signal' | 'forget'): Promise<{ child: ChildProcess; sleeper: number }> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', OWNER, how], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  started.push(child);
  const line = await waitForOutputLine(child, /^sleeper \d+$/, 15_000);
  const sleeper = Number(line.split(' ')[1]);
  sleepers.push(sleeper);
  return { child, sleeper };
}

afterEach(async () => {
  await Promise.all(started.splice(0).map((child) => stopProcess(child)));
  for (const pid of sleepers.splice(0)) killNow(pid);
});

describe('cleanup when a process ends without its teardown', () => {
  it('runs the actions on process.exit', async () => {
    const { child, sleeper } = await owner('exit');
    expect(await exitOf(child)).toEqual({ code: 3, signal: null });
    expect(await gone(sleeper)).toBe(true);
  });

  it('runs the actions on SIGTERM, then ends by that signal as before', async () => {
    const { child, sleeper } = await owner('signal');
    expect(processRunning(sleeper)).toBe(true);
    child.kill('SIGTERM');
    expect(await exitOf(child)).toEqual({ code: null, signal: 'SIGTERM' });
    expect(await gone(sleeper)).toBe(true);
  });

  it('leaves alone what was cleaned up normally (the action forgotten)', async () => {
    const { child, sleeper } = await owner('forget');
    expect((await exitOf(child)).code).toBe(3);
    expect(processRunning(sleeper)).toBe(true);
  });

  it('killNow ignores a PID that is gone or none', () => {
    expect(() => killNow(undefined)).not.toThrow();
    expect(() => killNow(2 ** 22 + 1)).not.toThrow();
  });
});
