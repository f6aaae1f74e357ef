import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/**
 * Debian's python3 (where python3-openstacksdk, python3-sushy and the other
 * Debian Python packages install), else the first python3 on PATH: a python3
 * of pyenv or a virtualenv first on PATH does not see Debian's packages.
 */
export const PYTHON3 = ['/usr/bin', ...(process.env.PATH ?? '').split(delimiter)]
  .filter((dir) => dir !== '')
  .map((dir) => join(dir, 'python3'))
  .find((path) => existsSync(path));

export interface PythonScriptOptions {
  /** Names the script in errors, e.g. `openstacksdk`. */
  label: string;
  /** Environment of the script (besides PATH, HOME and LANG). */
  env?: Record<string, string>;
  timeoutMs?: number;
}

/**
 * Runs a Python 3 script (on its standard input) and returns its standard
 * output, parsed as JSON (undefined when empty). Rejects with Python's stderr
 * when the script fails, so a library's exception fails the test with its message.
 */
export function runPythonScript(script: string, options: PythonScriptOptions): Promise<unknown> {
  if (!PYTHON3) return Promise.reject(new Error(`no python3 on PATH (for the ${options.label} script)`));
  return new Promise((resolve, reject) => {
    const child = execFile(
      PYTHON3 as string,
      ['-'],
      {
        timeout: options.timeoutMs ?? 60_000,
        env: { PATH: process.env.PATH, HOME: process.env.HOME, LANG: 'C.UTF-8', ...options.env },
      },
      (error, stdout, stderr) => {
        if (error) {
          reject(
            new Error(`${options.label} script failed (${error.code ?? error.signal}): ${stderr || error.message}`),
          );
          return;
        }
        try {
          resolve(stdout.trim() === '' ? undefined : JSON.parse(stdout));
        } catch {
          reject(new Error(`${options.label} script printed no JSON: ${stdout.slice(0, 500)}`));
        }
      },
    );
    child.stdin?.end(script);
  });
}

/** Whether `import <module>` works with PYTHON3. */
export function hasPythonModule(module: string): Promise<boolean> {
  if (!PYTHON3) return Promise.resolve(false);
  return new Promise((resolve) => {
    execFile(PYTHON3 as string, ['-c', `import ${module}`], { timeout: 30_000 }, (error) => resolve(!error));
  });
}
