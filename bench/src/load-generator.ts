import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { bootPath } from './macs.js';
import { parseWrkOutput, renderWrkScript } from './wrk-script.js';

/** One measured run against one server. */
export interface LoadTarget {
  baseUrl: string;
  /** Enrolled MACs (any form); each request picks one at random. */
  macs: readonly string[];
  concurrency: number;
  durationSeconds: number;
}

export interface LoadResult {
  requests: number;
  durationSeconds: number;
  requestsPerSecond: number;
  latencyMs: { p50: number; p90: number; p99: number; max: number };
  /** Socket errors (connect, read, write), answers that were not 2xx, timeouts, and their sum. */
  errors: { socket: number; status: number; timeout: number; total: number };
}

export interface LoadGenerator {
  readonly name: string;
  readonly version: string;
  /** Runs the load; `started` receives the PID doing it (for the CPU it uses). */
  run(target: LoadTarget, started?: (pid: number) => void): Promise<LoadResult>;
}

/** Seconds a single request may take before it counts as an error (the API's own RPC timeout). */
const REQUEST_TIMEOUT_SECONDS = 5;

function onPath(command: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
}

/** wrk, installed with apt when missing and we may (root); false when it is still missing. */
export function ensureWrk(log: (line: string) => void): boolean {
  if (onPath('wrk')) return true;
  if (process.getuid?.() !== 0 || !onPath('apt-get')) return false;
  log('installing wrk (apt-get install wrk)…');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  spawnSync('apt-get', ['update', '-qq'], { stdio: 'ignore', env });
  spawnSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'wrk'], { stdio: 'ignore', env });
  return onPath('wrk');
}

/** wrk with a Lua script drawing a random enrolled MAC per request (2 threads, as in the reference figures). */
export class WrkLoadGenerator implements LoadGenerator {
  readonly name = 'wrk';
  readonly version: string;
  private readonly scripts = new WeakMap<readonly string[], string>();

  constructor(private readonly workDir: string) {
    const banner = spawnSync('wrk', ['--version'], { encoding: 'utf8' });
    this.version = /wrk\s+(\S+)/.exec(`${banner.stdout}${banner.stderr}`)?.[1] ?? 'unknown';
  }

  run(target: LoadTarget, started?: (pid: number) => void): Promise<LoadResult> {
    const threads = Math.min(2, target.concurrency);
    const args = [
      `-t${threads}`,
      `-c${target.concurrency}`,
      `-d${target.durationSeconds}s`,
      `--timeout`,
      `${REQUEST_TIMEOUT_SECONDS}s`,
      '-s',
      this.scriptFor(target.macs),
      target.baseUrl,
    ];
    return new Promise((resolve, reject) => {
      const child = spawn('wrk', args, { stdio: ['ignore', 'pipe', 'pipe'] });
      if (child.pid) started?.(child.pid);
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
      });
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
      });
      child.on('error', reject);
      child.on('exit', (code) => {
        if (code !== 0) {
          reject(new Error(`wrk exited with ${code}: ${stderr || stdout}`));
          return;
        }
        try {
          const summary = parseWrkOutput(stdout);
          const durationSeconds = summary.durationUs / 1e6;
          const socket = summary.errors.connect + summary.errors.read + summary.errors.write;
          resolve({
            requests: summary.requests,
            durationSeconds,
            requestsPerSecond: summary.requests / durationSeconds,
            latencyMs: {
              p50: summary.latencyUs.p50 / 1000,
              p90: summary.latencyUs.p90 / 1000,
              p99: summary.latencyUs.p99 / 1000,
              max: summary.latencyUs.max / 1000,
            },
            errors: {
              socket,
              status: summary.errors.status,
              timeout: summary.errors.timeout,
              total: socket + summary.errors.status + summary.errors.timeout,
            },
          });
        } catch (error) {
          reject(error);
        }
      });
    });
  }

  private scriptFor(macs: readonly string[]): string {
    let script = this.scripts.get(macs);
    if (!script) {
      const index = Math.random().toString(36).slice(2, 8);
      const list = join(this.workDir, `macs-${index}.txt`);
      writeFileSync(list, `${macs.map((m) => m.toLowerCase().replaceAll(':', '-')).join('\n')}\n`);
      script = join(this.workDir, `boot-${index}.lua`);
      writeFileSync(script, renderWrkScript(list));
      this.scripts.set(macs, script);
    }
    return script;
  }
}

/**
 * autocannon, in this process: the fallback when wrk cannot be had. It tops
 * out near 11k requests/s on two cores, so it understates the static servers
 * and flatters the ratios; the report says which generator was used.
 */
export class AutocannonLoadGenerator implements LoadGenerator {
  readonly name = 'autocannon';
  readonly version = 'npm';

  async run(target: LoadTarget, started?: (pid: number) => void): Promise<LoadResult> {
    started?.(process.pid);
    const { macs } = target;
    const result = await autocannon({
      url: target.baseUrl,
      connections: target.concurrency,
      duration: target.durationSeconds,
      timeout: REQUEST_TIMEOUT_SECONDS,
      requests: [
        {
          method: 'GET',
          setupRequest: (request) => ({
            ...request,
            path: bootPath(macs[Math.floor(Math.random() * macs.length)] ?? ''),
          }),
        },
      ],
    });
    const durationSeconds = result.duration;
    return {
      requests: result.requests.total,
      durationSeconds,
      requestsPerSecond: result.requests.total / durationSeconds,
      latencyMs: {
        p50: result.latency.p50,
        p90: result.latency.p90,
        p99: result.latency.p99,
        max: result.latency.max,
      },
      errors: {
        socket: result.errors - result.timeouts,
        status: result.non2xx,
        timeout: result.timeouts,
        total: result.errors + result.non2xx,
      },
    };
  }
}

/** wrk when it is there (or can be installed), else autocannon; `preferred` forces one. */
export function chooseLoadGenerator(
  preferred: 'auto' | 'wrk' | 'autocannon',
  workDir: string,
  log: (line: string) => void,
): LoadGenerator {
  if (preferred !== 'autocannon') {
    if (ensureWrk(log)) return new WrkLoadGenerator(workDir);
    if (preferred === 'wrk') throw new Error('wrk is not installed (apt-get install wrk) and could not be installed');
    log('wrk is not available (needs root and apt to install): falling back to autocannon, which caps near 11k req/s');
  }
  return new AutocannonLoadGenerator();
}
