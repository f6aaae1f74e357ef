import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const COMMON = fileURLToPath(new URL('../dist/index.js', import.meta.url));

/** A child that logs every 10 ms for 1.5 s, with survivePipeLoss or not; its output pipes closed at once. */
function orphanedLogger(survive: boolean): Promise<number | null> {
  const script = `import(${JSON.stringify(COMMON)}).then((common) => {
    ${survive ? 'common.survivePipeLoss();' : ''}
    const timer = setInterval(() => { console.log('still here'); process.stderr.write('and here\\n'); }, 10);
    setTimeout(() => { clearInterval(timer); process.exit(0); }, 1500);
  });`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.destroy();
  child.stderr.destroy();
  return new Promise((resolve) => child.on('exit', (code) => resolve(code)));
}

describe('survivePipeLoss', () => {
  it('keeps a process running when the reader of its output is gone', async () => {
    expect(await orphanedLogger(false)).not.toBe(0);
    expect(await orphanedLogger(true)).toBe(0);
  });
});
