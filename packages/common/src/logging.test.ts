import { spawn } from 'node:child_process';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createRootLogger, createSilentLogger, writesDebug } from './logging.js';

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

describe('writesDebug', () => {
  it.each(['error', 'warn', 'info', 'debug', 'silly'])(
    'agrees with winston for a root logger and its children at %s',
    (level) => {
      const root = createRootLogger({ level, format: 'json', stream: new PassThrough() });
      const child = root.child({ component: 'x' }).child({ requestId: 'req-1' });
      expect(writesDebug(root)).toBe(root.isDebugEnabled());
      expect(writesDebug(child)).toBe(child.isDebugEnabled());
      expect(writesDebug(child)).toBe(['debug', 'silly'].includes(level));
    },
  );

  it('follows a level changed at run time, and is false for the silent logger', () => {
    const root = createRootLogger({ level: 'info', format: 'json', stream: new PassThrough() });
    const child = root.child({ component: 'x' });
    root.level = 'debug';
    expect(writesDebug(child)).toBe(true);
    expect(writesDebug(createSilentLogger())).toBe(false);
  });
});
