import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSilentLogger, portIsFree } from '@bmaas/common';
import { afterAll, describe, expect, it } from 'vitest';
import { ChildRegistry } from './child-registry.js';
import { processStartTime, procStat } from './pid-lock.js';

const dir = mkdtempSync(join(tmpdir(), 'bmaas-child-registry-'));
const parents: ChildProcess[] = [];
afterAll(() => {
  for (const parent of parents) parent.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

describe('ChildRegistry.stopLeftovers', () => {
  it('stops a left-over server whose parent never reaps it, and its port is free when it returns', async () => {
    // A parent that never waits for its children, like a stack killed outright under an init that
    // does not reap: the server ends as a zombie, whose other threads may still hold its socket.
    const script =
      "const s = require('net').createServer().listen(0, '127.0.0.1', () => console.log(s.address().port)); process.on('SIGTERM', () => process.exit(0));";
    const parent = spawn('sh', ['-c', `"${process.execPath}" -e "${script}" & echo $!; exec sleep 60`], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    parents.push(parent);
    const lines: string[] = [];
    await new Promise<void>((resolve) => {
      parent.stdout?.on('data', (chunk: Buffer) => {
        lines.push(...chunk.toString().split('\n').filter(Boolean));
        if (lines.length >= 2) resolve();
      });
    });
    const [pid, port] = lines.map(Number) as [number, number];
    expect(await portIsFree(port)).toBe(false);

    const registry = new ChildRegistry(join(dir, 'children.json'));
    registry.record([{ name: 'conductor-1', pid, startTime: processStartTime(pid) }]);
    const started = Date.now();
    expect(await registry.stopLeftovers(createSilentLogger(), 20_000)).toEqual([pid]);
    // Stopped by SIGTERM, not waited out to the SIGKILL after the grace period.
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(procStat(pid)?.state).toBe('Z');
    expect(await portIsFree(port)).toBe(true);
  });

  it('does nothing when nothing was recorded', async () => {
    const registry = new ChildRegistry(join(dir, 'none.json'));
    expect(await registry.stopLeftovers(createSilentLogger(), 1000)).toEqual([]);
  });
});
