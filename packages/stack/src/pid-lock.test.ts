import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { acquireLock, lockHolder, processRunning, processStartTime, procStat } from './pid-lock.js';

const dir = mkdtempSync(join(tmpdir(), 'bmaas-pid-lock-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The PID of a process that has exited. */
function goneProcessPid(): number {
  const result = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(result.stdout);
}

describe('acquireLock', () => {
  it('takes a free lock, refuses it while held by a live process, and releases it', () => {
    const file = join(dir, 'held.pid');
    const lock = acquireLock(file);
    expect('release' in lock).toBe(true);
    expect(readFileSync(file, 'utf8')).toBe(`${process.pid}\n${processStartTime(process.pid)}\n`);

    // Another live process holding it: the parent of this test process, with its real start time.
    writeFileSync(file, `${process.ppid}\n${processStartTime(process.ppid)}\n`);
    expect(acquireLock(file)).toEqual({ heldBy: process.ppid });
    expect(lockHolder(file)).toBe(process.ppid);

    writeFileSync(file, `${process.pid}\n`);
    if ('release' in lock) lock.release();
    expect(existsSync(file)).toBe(false);
  });

  it('ignores the file of a crashed run whose process is gone', () => {
    const file = join(dir, 'stale.pid');
    writeFileSync(file, `${goneProcessPid()}\n`);
    const lock = acquireLock(file);
    expect('release' in lock).toBe(true);
    expect(lockHolder(file)).toBeUndefined();
    if ('release' in lock) lock.release();
  });

  it('ignores the file of a crashed run whose PID now belongs to another process', () => {
    const file = join(dir, 'reused.pid');
    writeFileSync(file, `${process.ppid}\n1\n`);
    expect(lockHolder(file)).toBeUndefined();
    const lock = acquireLock(file);
    expect('release' in lock).toBe(true);
    if ('release' in lock) lock.release();
  });
});

describe('procStat and processRunning', () => {
  it('read this process from /proc, and say a process that exited is not running', () => {
    expect(procStat(process.pid)).toMatchObject({ state: expect.stringMatching(/^[RS]$/), ppid: process.ppid });
    expect(procStat(process.pid)?.startTime).toBe(processStartTime(process.pid));
    expect(processRunning(process.pid)).toBe(true);
    const gone = goneProcessPid();
    expect(procStat(gone)).toBeUndefined();
    expect(processRunning(gone)).toBe(false);
  });
});
