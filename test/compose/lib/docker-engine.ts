// The Docker engine the compose suite runs against: the one already running (DOCKER_HOST or
// the default socket), or else a dockerd this module starts with a data root and socket of its
// own and stops by PID. dockerd sets the host firewall's FORWARD policy to DROP when it starts
// and leaves it so when it stops: the policy found before the start is put back after the stop.
import { type ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { waitFor } from '@bmaas/common';

const run = promisify(execFile);

/** Cached across runs: image layers (the stand-ins, the build cache) live here. */
export const DATA_ROOT = process.env.BMAAS_DOCKER_DATA_ROOT ?? '/var/lib/bmaas-test-docker';
const RUN_DIR = '/run/bmaas-test-docker';

export interface DockerEngine {
  /** The environment every docker / docker-compose child gets (DOCKER_HOST of our own engine). */
  env: NodeJS.ProcessEnv;
  /** Whether this module started dockerd (and stop() stops it). */
  started: boolean;
  /** Server version, e.g. 20.10.24+dfsg1. */
  version: string;
  stop(): Promise<void>;
}

/** What is missing to run an engine here, or null. */
export function engineProblem(): string | null {
  const missing = ['dockerd', 'docker', 'iptables'].filter(
    (tool) => !['/usr/sbin', '/usr/bin', '/usr/local/bin', '/sbin'].some((dir) => existsSync(join(dir, tool))),
  );
  if (missing.length > 0) return `no ${missing.join(', ')} (apt-get install docker.io, see test/debian-packages.txt)`;
  if (process.getuid?.() !== 0) return 'starting dockerd needs root';
  return null;
}

async function serverVersion(env: NodeJS.ProcessEnv): Promise<string | undefined> {
  try {
    const { stdout } = await run('docker', ['version', '--format', '{{.Server.Version}}'], { env, timeout: 10_000 });
    return stdout.trim() || undefined;
  } catch {
    return undefined;
  }
}

async function forwardPolicy(): Promise<string> {
  const { stdout } = await run('iptables', ['-S', 'FORWARD'], { timeout: 10_000 });
  const policy = /^-P FORWARD (\w+)/m.exec(stdout)?.[1];
  if (!policy) throw new Error(`no FORWARD policy in iptables -S FORWARD: ${stdout}`);
  return policy;
}

function exited(child: ChildProcess, timeoutMs: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), timeoutMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

/** The running engine, or one started here; throws when neither works. */
export async function ensureDockerEngine(log: (line: string) => void): Promise<DockerEngine> {
  const existing = await serverVersion(process.env);
  if (existing) {
    log(`using the running Docker engine ${existing}`);
    return { env: { ...process.env }, started: false, version: existing, stop: async () => {} };
  }
  const policy = await forwardPolicy();
  const hadDocker0 = existsSync('/sys/class/net/docker0');
  mkdirSync(DATA_ROOT, { recursive: true });
  mkdirSync(RUN_DIR, { recursive: true });
  const socket = join(RUN_DIR, 'docker.sock');
  const env = { ...process.env, DOCKER_HOST: `unix://${socket}` };
  const logFile = join(RUN_DIR, 'dockerd.log');
  const child = spawn(
    'dockerd',
    [
      '--data-root',
      DATA_ROOT,
      '--exec-root',
      join(RUN_DIR, 'exec'),
      '--pidfile',
      join(RUN_DIR, 'docker.pid'),
      '--host',
      `unix://${socket}`,
    ],
    { stdio: ['ignore', openSync(logFile, 'a'), openSync(logFile, 'a')] },
  );
  const pid = child.pid;
  if (pid === undefined) throw new Error('dockerd did not start');
  // Should the suite not get to stop it (its tests filtered out, the run interrupted):
  // stopped when this process exits, the policy put back.
  const onExit = () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    try {
      execFileSync('iptables', ['-P', 'FORWARD', policy], { timeout: 10_000 });
    } catch {}
  };
  process.once('exit', onExit);
  const stop = async () => {
    process.off('exit', onExit);
    child.kill('SIGTERM');
    if (!(await exited(child, 30_000))) {
      child.kill('SIGKILL');
      await exited(child, 10_000);
    }
    await run('iptables', ['-P', 'FORWARD', policy], { timeout: 10_000 });
    // What a stopped dockerd leaves behind: the mount of its default network namespace
    // handle, and the docker0 bridge when it made it.
    const netnsHandle = join(RUN_DIR, 'exec', 'netns', 'default');
    if (readFileSync('/proc/mounts', 'utf8').includes(` ${netnsHandle} `)) {
      await run('umount', [netnsHandle], { timeout: 10_000 });
    }
    if (!hadDocker0) await run('ip', ['link', 'del', 'docker0'], { timeout: 10_000 }).catch(() => {});
    log(`dockerd (pid ${pid}) stopped; FORWARD policy back to ${policy}`);
  };
  try {
    const version = await waitFor('dockerd to answer', () => serverVersion(env), {
      timeoutMs: 60_000,
      intervalMs: 500,
      abortReason: () => (child.exitCode !== null ? `dockerd exited (${child.exitCode}), see ${logFile}` : null),
    });
    log(`started dockerd ${version} (pid ${pid}, data root ${DATA_ROOT}, log ${logFile})`);
    return { env, started: true, version, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
