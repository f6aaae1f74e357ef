import { spawn } from 'node:child_process';
import { IPMIFailure, type Logger } from '@bmaas/common';
import { bmcName, type IpmiTarget } from './driver-info.js';
import { withPasswordFile } from './password-file.js';

export interface IpmitoolRunnerOptions {
  /** [ipmi]ipmitool_path. */
  ipmitoolPath: string;
  /** [ipmi]command_retry_timeout in ms: retries of retryable errors, and the kill deadline, stay within it. */
  commandRetryTimeoutMs: number;
  /** [ipmi]min_command_interval in ms, between two commands to one BMC. */
  minCommandIntervalMs: number;
  /** [ipmi]lan_timeout in seconds (ipmitool -N, whole seconds). */
  lanTimeoutSeconds: number;
  logger: Logger;
}

/** What ipmitool printed for a command that succeeded. */
export interface IpmitoolOutput {
  stdout: string;
  stderr: string;
}

interface Attempt extends IpmitoolOutput {
  exitCode: number | null;
  killed: boolean;
  elapsedMs: number;
}

/** BMC answers worth another try, as upstream lists them (the BMC is busy, not broken). */
const RETRYABLE = [
  /insufficient resources for session/i,
  /node busy/i,
  /timeout/i,
  /out of space/i,
  /BMC initialization in progress/i,
  // An answer to an earlier (retransmitted) request arrived late: a slow BMC or a loaded host.
  /Request Match NOT FOUND/i,
  // The session's close was lost on a loaded host or a slow BMC; every command sent here is
  // idempotent (a read, or a set to a given value), so another try is safe.
  /Close Session command failed/i,
];
/** ipmitool's one line for both "nobody answered" and "credentials refused". */
const SESSION_FAILURE = /Unable to establish (IPMI v2 \/ RMCP\+|LAN) session|Get Session Challenge command failed/i;
/** What ipmitool -v adds when the BMC answered and refused the session (credentials, privilege, cipher suite). */
const SESSION_REFUSED =
  /RAKP 2 HMAC is invalid|RAKP \d message indicates an error[^\n]*|unauthorized name|Insufficient privilege[^\n]*|invalid (authentication|integrity|confidentiality) algorithm|Activate Session error[^\n]*/i;
/** What ipmitool -v adds when the BMC never answered the first request of a session. */
const NO_ANSWER = /Get Auth Capabilities error|Error issuing Get Channel Authentication Capabilities request/i;
/** ipmitool may exit 0 while the BMC refused the request ("Set Chassis Boot Parameter 5 failed: …"). */
const REFUSED = /\bfailed: /i;

/**
 * Runs ipmitool for the ipmitool interfaces of one conductor: one command at
 * a time per BMC with [ipmi]min_command_interval between them, the password
 * in a 0600 file (-f), one retransmission per command (-R 1) so a dead BMC
 * costs about 2 × lan_timeout, retries of busy answers within
 * command_retry_timeout, and a kill at that deadline. Failures become one
 * IPMIFailure line naming the BMC.
 */
export class IpmitoolRunner {
  /** Tail of the command chain of each BMC ("address:port"). */
  private readonly queues = new Map<string, Promise<unknown>>();
  private readonly lastCommandEnd = new Map<string, number>();

  constructor(private readonly options: IpmitoolRunnerOptions) {}

  /** Runs `ipmitool … <command>` against the target's BMC, after the commands already queued for it. */
  run(target: IpmiTarget, command: readonly string[]): Promise<IpmitoolOutput> {
    const bmc = bmcName(target);
    const previous = this.queues.get(bmc) ?? Promise.resolve();
    const next = previous.catch(() => {}).then(() => this.runWithRetries(bmc, target, command));
    this.queues.set(bmc, next);
    const forget = () => {
      if (this.queues.get(bmc) === next) this.queues.delete(bmc);
    };
    next.then(forget, forget);
    return next;
  }

  private async runWithRetries(bmc: string, target: IpmiTarget, command: readonly string[]): Promise<IpmitoolOutput> {
    const { commandRetryTimeoutMs, minCommandIntervalMs, logger } = this.options;
    const deadline = Date.now() + commandRetryTimeoutMs;
    /** The last "busy" answer, and how many tries gave one. */
    let lastBusy: string | undefined;
    let busyTries = 0;
    for (let tries = 1; ; tries++) {
      await this.keepInterval(bmc);
      const attempt = await withPasswordFile(target.password, (file) =>
        this.spawnOnce(this.argumentsFor(target, file, command), Math.max(1, deadline - Date.now())),
      );
      this.lastCommandEnd.set(bmc, Date.now());
      logger.debug('ipmitool command', {
        bmc,
        command: command.join(' '),
        exitCode: attempt.exitCode,
        elapsedMs: attempt.elapsedMs,
        tries,
      });
      const error = problemOf(attempt);
      if (error === undefined) return { stdout: attempt.stdout, stderr: attempt.stderr };
      // ipmitool prints the reason on a line of its own, before its final "Error: …" line.
      const busy = attempt.killed ? undefined : busyLine(attempt.stderr);
      if (busy !== undefined) {
        lastBusy = busy;
        busyTries++;
      }
      if (busy !== undefined && Date.now() + minCommandIntervalMs < deadline) {
        logger.warn('BMC busy, retrying', { bmc, command: command.join(' '), error: busy, tries });
        continue;
      }
      // A try cut short by the retry deadline after busy answers says nothing new: the BMC stayed busy.
      const stayedBusy = busy ?? (attempt.killed && Date.now() + 5 >= deadline ? lastBusy : undefined);
      const message =
        stayedBusy !== undefined
          ? `IPMI command "${command.join(' ')}" to BMC ${bmc} failed: the BMC stayed busy for ${busyTries} tries within [ipmi]command_retry_timeout (${stayedBusy}).`
          : this.describeFailure(bmc, command, attempt, error);
      throw new IPMIFailure(message, { bmc, command: command.join(' ') });
    }
  }

  private async keepInterval(bmc: string): Promise<void> {
    const last = this.lastCommandEnd.get(bmc);
    if (last === undefined) return;
    const wait = last + this.options.minCommandIntervalMs - Date.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
  }

  private argumentsFor(target: IpmiTarget, passwordFile: string, command: readonly string[]): string[] {
    return [
      '-I',
      target.protocolVersion === '1.5' ? 'lan' : 'lanplus',
      '-H',
      target.address,
      '-L',
      target.privLevel,
      ...(target.port !== undefined ? ['-p', String(target.port)] : []),
      ...(target.username !== undefined ? ['-U', target.username] : []),
      '-f',
      passwordFile,
      ...(target.cipherSuite !== undefined ? ['-C', String(target.cipherSuite)] : []),
      '-R',
      '1',
      '-N',
      String(this.lanTimeout()),
      // -v: says why a session failed (refused credentials or no answer), which the error line does not.
      '-v',
      ...command,
    ];
  }

  /**
   * One ipmitool process in its own process group, killed (SIGKILL to the
   * group, so a wrapper script's children go too) if it outlives `timeoutMs`.
   */
  private spawnOnce(args: string[], timeoutMs: number): Promise<Attempt> {
    const started = Date.now();
    return new Promise<Attempt>((resolve, reject) => {
      const child = spawn(this.options.ipmitoolPath, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
      let stdout = '';
      let stderr = '';
      let killed = false;
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
        stdout += chunk;
      });
      child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
        stderr += chunk;
      });
      const timer = setTimeout(() => {
        killed = true;
        try {
          if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
        } catch {
          child.kill('SIGKILL');
        }
      }, timeoutMs);
      child.on('error', (error: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        reject(
          new IPMIFailure(
            error.code === 'ENOENT'
              ? `ipmitool not found ("${this.options.ipmitoolPath}"): install the ipmitool package or set [ipmi]ipmitool_path.`
              : `Could not run ipmitool: ${error.message}`,
          ),
        );
      });
      child.on('close', (exitCode) => {
        clearTimeout(timer);
        resolve({ stdout, stderr, exitCode, killed, elapsedMs: Date.now() - started });
      });
    });
  }

  /** ipmitool -N: whole seconds. */
  private lanTimeout(): number {
    return Math.max(1, Math.ceil(this.options.lanTimeoutSeconds));
  }

  private describeFailure(bmc: string, command: readonly string[], attempt: Attempt, error: string): string {
    const what = `IPMI command "${command.join(' ')}" to BMC ${bmc} failed`;
    const seconds = (attempt.elapsedMs / 1000).toFixed(1);
    if (attempt.killed) {
      return `${what}: ipmitool did not finish within ${seconds} s and was killed (the BMC or the network to it hangs).`;
    }
    if (SESSION_FAILURE.test(error)) {
      // ipmitool prints the same line for both. Its -v output tells them apart; failing that, the
      // time does: a dead BMC fails only after both tries timed out (2 x -N), a refusal comes at once.
      const refusal = SESSION_REFUSED.exec(attempt.stderr)?.[0];
      const silent = NO_ANSWER.test(attempt.stderr);
      const refused = refusal !== undefined || (!silent && attempt.elapsedMs < this.lanTimeout() * 1000 * 1.9);
      return refused
        ? `${what}: the BMC refused the session after ${seconds} s${refusal ? ` (${refusal.trim()})` : ''}, most likely a wrong ipmi_username or ipmi_password (or an ipmi_priv_level or ipmi_cipher_suite it does not allow); ipmitool reports an unreachable BMC with the same error, but only after its timeout (${error}).`
        : `${what}: no answer within ${seconds} s, so the BMC is down or unreachable (check ipmi_address, ipmi_port and that UDP port ${bmc.split(':').pop()} is open on the way), or it silently dropped a session with wrong credentials; ipmitool reports both with the same error (${error}).`;
    }
    return `${what}: ${error}`;
  }
}

/** The line saying the BMC is busy (worth another try), if any. */
function busyLine(stderr: string): string | undefined {
  return stderr
    .split('\n')
    .map((line) => line.trim())
    .find((line) => RETRYABLE.some((pattern) => pattern.test(line)));
}

/** The error of an attempt, from its exit status and from its output (ipmitool may exit 0 on a refusal). */
function problemOf(attempt: Attempt): string | undefined {
  const lines = attempt.stderr
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');
  const refusal = lines.find((line) => REFUSED.test(line));
  if (attempt.exitCode === 0 && !attempt.killed && refusal === undefined) return undefined;
  if (attempt.killed) return 'killed at the deadline';
  return refusal ?? lines.at(-1) ?? `ipmitool exited with status ${attempt.exitCode}`;
}
