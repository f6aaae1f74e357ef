import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { exitOf, isRunning, run, spawned, stopProcess, waitForOutputLine } from './child-process.js';

/** A Node process that ignores SIGTERM, as a hung child would. */
const IGNORES_SIGTERM = "process.on('SIGTERM', () => {}); console.log('ready'); setInterval(() => {}, 1000);";

describe('run', () => {
  it("gives a command's output, and its stderr when it fails", async () => {
    expect(await run('sh', ['-c', 'echo out; echo err >&2'])).toEqual({ stdout: 'out\n', stderr: 'err\n' });
    await expect(run('sh', ['-c', 'echo broken >&2; exit 3'])).rejects.toThrow(/sh -c .* failed: broken$/);
    await expect(run('/nonexistent/tool', [])).rejects.toThrow(/\/nonexistent\/tool {2}failed: .*ENOENT/);
  });

  it('runs in cwd and ends a command that outlives its timeout', async () => {
    expect((await run('pwd', [], { cwd: '/tmp' })).stdout).toBe('/tmp\n');
    const before = Date.now();
    await expect(run('sleep', ['10'], { timeoutMs: 200 })).rejects.toThrow(/sleep 10 failed/);
    expect(Date.now() - before).toBeLessThan(5000);
  });
});

describe('child processes', () => {
  it('spawned gives the PID, or the reason it could not start', async () => {
    const child = spawn('sleep', ['10'], { stdio: 'ignore' });
    expect(await spawned(child)).toBe(child.pid);
    expect(isRunning(child)).toBe(true);
    await stopProcess(child);
    expect(isRunning(child)).toBe(false);
    await expect(spawned(spawn('/nonexistent/tool', [], { stdio: 'ignore' }))).rejects.toThrow(/ENOENT/);
  });

  it('exitOf gives the exit status, also of a process that exited before it was asked', async () => {
    const child = spawn('sh', ['-c', 'exit 7'], { stdio: 'ignore' });
    expect(await exitOf(child)).toEqual({ code: 7, signal: null });
    expect(await exitOf(child)).toEqual({ code: 7, signal: null });
  });

  it('stopProcess ends a process with SIGTERM, and one that ignores it with SIGKILL after the grace', async () => {
    const polite = spawn('sleep', ['30'], { stdio: 'ignore' });
    await spawned(polite);
    expect(await stopProcess(polite)).toEqual({ code: null, signal: 'SIGTERM' });

    const stubborn = spawn(process.execPath, ['-e', IGNORES_SIGTERM], { stdio: ['ignore', 'pipe', 'ignore'] });
    await waitForOutputLine(stubborn, /^ready$/, 10_000);
    const before = Date.now();
    expect(await stopProcess(stubborn, 300)).toEqual({ code: null, signal: 'SIGKILL' });
    expect(Date.now() - before).toBeGreaterThanOrEqual(290);
    // a stopped process stops again without error
    expect(await stopProcess(stubborn)).toEqual({ code: null, signal: 'SIGKILL' });
  });

  it('waitForOutputLine gives the first matching line, across chunks', async () => {
    const child = spawn('sh', ['-c', 'printf "one\\ntw"; sleep 0.2; printf "o\\nready 42\\n"; sleep 30'], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    try {
      expect(await waitForOutputLine(child, /^(two|ready \d+)$/, 10_000)).toBe('two');
    } finally {
      await stopProcess(child);
    }
  });

  it('waitForOutputLine fails when the process exits first or prints nothing in time', async () => {
    const quits = spawn('sh', ['-c', 'echo bye; exit 2'], { stdio: ['ignore', 'pipe', 'ignore'] });
    await expect(waitForOutputLine(quits, /^ready$/, 10_000)).rejects.toThrow(/exited \(code 2\) before printing/);

    const silent = spawn('sleep', ['30'], { stdio: ['ignore', 'pipe', 'ignore'] });
    try {
      await expect(waitForOutputLine(silent, /^ready$/, 200)).rejects.toThrow(/no output matching .* within 200 ms/);
    } finally {
      await stopProcess(silent);
    }
    await expect(waitForOutputLine(spawn('true', [], { stdio: 'ignore' }), /x/, 100)).rejects.toThrow(
      'child has no piped stdout',
    );
  });
});
