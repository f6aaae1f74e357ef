import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { SecureVersion } from 'node:tls';
import {
  type HttpExchangeResponse,
  HttpTransportError,
  httpExchange,
  type JsonObject,
  type Logger,
  type NodeRecord,
  type TlsVerify,
} from '@bmaas/common';
import { AgentAPIError, AgentCommandFailed, AgentConnectionFailed, AgentInProgress } from './agent-errors.js';
import type { AgentSettings } from './agent-options.js';

/** driver_internal_info keys of the running agent, as upstream names them. */
export const AGENT_URL_KEY = 'agent_url';
export const AGENT_TOKEN_KEY = 'agent_secret_token';
/**
 * Set beside the token when it was issued before the agent booted (a boot
 * interface that hands it to the ramdisk on its kernel command line, as
 * upstream's virtual media boot does), not at the agent's first lookup.
 */
export const AGENT_TOKEN_PREGENERATED_KEY = 'agent_secret_token_pregenerated';
/** The agent's self-signed certificate (PEM) from its heartbeats: every call pins it. */
export const AGENT_VERIFY_CA_KEY = 'agent_verify_ca';

/** A new agent token: 256 random bits, URL-safe (the agent sends it back in JSON and on command lines). */
export function newAgentToken(): string {
  return randomBytes(32).toString('base64url');
}

export type AgentCommandStatus = 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'CLEAN_VERSION_MISMATCH' | 'VERSION_MISMATCH';

/** One command as the agent reports it (GET /v1/commands/ lists these, oldest first). */
export interface AgentCommandResult {
  id: string;
  /** Short name, without the extension ("execute_deploy_step"). */
  command_name: string;
  command_status: AgentCommandStatus;
  command_error: { type?: string; code?: number; message?: string; details?: string } | null;
  command_result: JsonObject | null;
}

/** The agent's [agent] settings. */
export type AgentClientConfig = Pick<
  AgentSettings,
  | 'verify_ca'
  | 'tls_minimum_version'
  | 'command_timeout'
  | 'max_command_attempts'
  | 'command_wait_interval'
  | 'command_wait_attempts'
>;

/** Why a command did not succeed: the agent reported it, never answered, or answered with an error. */
export type AgentCommandFailure = 'failed' | 'unreachable' | 'refused';

/** Hears of every command that did not succeed (metrics). */
export interface AgentCommandObserver {
  /** `command` is the short name (`execute_deploy_step`). */
  commandFailed(command: string, reason: AgentCommandFailure): void;
}

export interface AgentClientDeps {
  config: AgentClientConfig;
  logger: Logger;
  /** Told of each command that failed; absent, nobody is. */
  observer?: AgentCommandObserver | undefined;
  /** Waits between polls; tests pass a faster one. */
  sleep?: (ms: number) => Promise<void>;
}

/** The node fields a call needs: where the agent is, its token and certificate. */
export type AgentNode = Pick<NodeRecord, 'uuid' | 'driverInfo' | 'driverInternalInfo'>;

export interface CommandOptions {
  /** wait=true: the agent answers when the command finished (quick sync commands only). */
  wait?: boolean;
  /** Post with wait=false, then poll the command list until it finished (install_bootloader). */
  poll?: boolean;
}

const STATUSES: ReadonlySet<string> = new Set([
  'RUNNING',
  'SUCCEEDED',
  'FAILED',
  'CLEAN_VERSION_MISMATCH',
  'VERSION_MISMATCH',
]);

function shortName(command: string): string {
  return command.slice(command.lastIndexOf('.') + 1);
}

/** How a thrown error counts for the observer; a busy agent (retried later) does not count. */
function failureOf(error: unknown): AgentCommandFailure | undefined {
  if (error instanceof AgentConnectionFailed) return 'unreachable';
  if (error instanceof AgentAPIError) return 'refused';
  if (error instanceof AgentCommandFailed) return 'failed';
  return undefined;
}

function isCommandResult(value: unknown): value is AgentCommandResult {
  const v = value as Partial<AgentCommandResult> | null;
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof v.command_name === 'string' &&
    typeof v.command_status === 'string' &&
    STATUSES.has(v.command_status)
  );
}

/** "true"/"false"/a path, as in ironic.conf and driver_info. */
function verifyFromSetting(value: unknown, where: string): TlsVerify | undefined {
  if (value === undefined || value === null || value === '') return undefined;
  if (value === true || /^(true|yes|1|on)$/i.test(String(value))) return { kind: 'system' };
  if (value === false || /^(false|no|0|off)$/i.test(String(value))) return { kind: 'none' };
  try {
    return { kind: 'pem', pem: readFileSync(String(value), 'utf8') };
  } catch (error) {
    throw new AgentConnectionFailed(`${where}: cannot read CA file ${value} (${(error as Error).message})`);
  }
}

/**
 * The conductor's client of the agent's HTTP command API (IPA's
 * /v1/commands/). It talks to the URL of the agent's last heartbeat
 * (driver_internal_info.agent_url), sends the agent token on every call,
 * pins the certificate the agent sent (agent_verify_ca), bounds every call
 * by [agent]command_timeout and retries calls that got no answer up to
 * [agent]max_command_attempts times, adopting a command the agent started
 * although its answer was lost. Deploy, cleaning, inspection and rescue
 * call agents through it only.
 */
export class AgentClient {
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(private readonly deps: AgentClientDeps) {
    this.sleep = deps.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  }

  /**
   * Sends `name` ("<extension>.<command>") with `params` and returns its
   * result. Throws AgentInProgress (409 busy), AgentAPIError (other HTTP
   * errors, an answer that is no command result, an incompatible agent),
   * AgentConnectionFailed (no answer after every attempt). A FAILED result is
   * returned, not thrown: see requireSuccess.
   */
  async executeCommand(
    node: AgentNode,
    name: string,
    params: JsonObject,
    options: CommandOptions = {},
  ): Promise<AgentCommandResult> {
    try {
      const result = await this.runCommand(node, name, params, options);
      if (result.command_status === 'FAILED') this.deps.observer?.commandFailed(shortName(name), 'failed');
      return result;
    } catch (error) {
      const reason = failureOf(error);
      if (reason) this.deps.observer?.commandFailed(shortName(name), reason);
      throw error;
    }
  }

  /** executeCommand without telling the observer. */
  private async runCommand(
    node: AgentNode,
    name: string,
    params: JsonObject,
    options: CommandOptions = {},
  ): Promise<AgentCommandResult> {
    const wait = options.wait === true && options.poll !== true;
    const url = this.commandsUrl(node, { wait: String(wait) });
    const logger = this.deps.logger.child({ nodeUuid: node.uuid });
    logger.debug('agent command', { command: name, wait });
    let result: AgentCommandResult | undefined;
    const attempts = Math.max(1, this.deps.config.max_command_attempts);
    for (let attempt = 1; result === undefined; attempt++) {
      try {
        result = this.commandResultOf(name, await this.send(node, 'POST', url, { name, params }));
      } catch (error) {
        if (!(error instanceof HttpTransportError)) throw error;
        if (attempt >= attempts) {
          throw new AgentConnectionFailed(
            `Failed to send ${name} to the agent of node ${node.uuid} at ${url.origin} after ${attempt} attempts: ${error.message}`,
          );
        }
        logger.warn('agent command got no answer, retrying', { command: name, attempt, error: error.message });
        // The command may have started although its answer was lost: adopt it rather than send it twice.
        result = await this.adoptRunning(node, name).catch(() => undefined);
      }
    }
    if (result.command_error?.type === 'TypeError') {
      throw new AgentAPIError(
        `The agent of node ${node.uuid} does not understand ${name} (incompatible agent): ${result.command_error.message ?? ''}`,
        undefined,
      );
    }
    return options.poll ? this.pollUntilFinished(node, name) : result;
  }

  /** Every command the agent ran since it started, oldest first (GET /v1/commands/). */
  async listCommands(node: AgentNode): Promise<AgentCommandResult[]> {
    const url = this.commandsUrl(node, {});
    const attempts = Math.max(1, this.deps.config.max_command_attempts);
    for (let attempt = 1; ; attempt++) {
      try {
        const response = await this.send(node, 'GET', url);
        const body = this.jsonOf(response, 'list commands') as { commands?: unknown };
        if (!Array.isArray(body.commands) || !body.commands.every(isCommandResult)) {
          throw new AgentAPIError(`The agent of node ${node.uuid} answered a malformed command list.`, 200);
        }
        return body.commands;
      } catch (error) {
        if (!(error instanceof HttpTransportError)) throw error;
        if (attempt >= attempts) {
          throw new AgentConnectionFailed(
            `Failed to list the commands of the agent of node ${node.uuid} at ${url.origin} after ${attempt} attempts: ${error.message}`,
          );
        }
      }
    }
  }

  /** The last command the agent ran, or undefined for a freshly started agent. */
  async lastCommand(node: AgentNode): Promise<AgentCommandResult | undefined> {
    return (await this.listCommands(node)).at(-1);
  }

  /** A command's result, or AgentCommandFailed with the agent's message when it did not succeed. */
  requireSuccess(result: AgentCommandResult, what: string): AgentCommandResult {
    if (result.command_status === 'SUCCEEDED') return result;
    if (result.command_status === 'RUNNING') throw new AgentInProgress(`${what} is still running.`);
    const error = result.command_error;
    const message = error?.message ?? error?.details ?? result.command_status;
    throw new AgentCommandFailed(what, message, result.command_status);
  }

  // -- the commands the conductor sends (ipa-protocol §2.6) --------------------------

  getDeploySteps(node: AgentNode, context: { node: JsonObject; ports: JsonObject[] }) {
    return this.quick(node, 'deploy.get_deploy_steps', context);
  }

  executeDeployStep(
    node: AgentNode,
    step: JsonObject,
    context: { node: JsonObject; ports: JsonObject[]; deploy_version?: unknown },
  ) {
    return this.executeCommand(node, 'deploy.execute_deploy_step', { step, ...context });
  }

  getCleanSteps(node: AgentNode, context: { node: JsonObject; ports: JsonObject[] }) {
    return this.quick(node, 'clean.get_clean_steps', context);
  }

  executeCleanStep(
    node: AgentNode,
    step: JsonObject,
    context: { node: JsonObject; ports: JsonObject[]; clean_version?: unknown },
  ) {
    return this.executeCommand(node, 'clean.execute_clean_step', { step, ...context });
  }

  getPartitionUuids(node: AgentNode) {
    return this.quick(node, 'standby.get_partition_uuids', {});
  }

  installBootloader(node: AgentNode, params: JsonObject) {
    return this.executeCommand(node, 'image.install_bootloader', params, { poll: true });
  }

  /** Asks the agent to sync and power the machine off; it answers before it does. */
  powerOff(node: AgentNode) {
    return this.executeCommand(node, 'standby.power_off', {});
  }

  sync(node: AgentNode) {
    return this.quick(node, 'standby.sync', {});
  }

  collectSystemLogs(node: AgentNode) {
    return this.quick(node, 'log.collect_system_logs', {});
  }

  finalizeRescue(node: AgentNode, hashedPassword: string) {
    return this.executeCommand(node, 'rescue.finalize_rescue', { rescue_password: hashedPassword, hashed: true });
  }

  lockdown(node: AgentNode) {
    return this.executeCommand(node, 'system.lockdown', {});
  }

  // -- internals ------------------------------------------------------------------------

  private async quick(node: AgentNode, name: string, params: JsonObject): Promise<JsonObject> {
    const result = this.requireSuccess(await this.executeCommand(node, name, params, { wait: true }), name);
    return result.command_result ?? {};
  }

  private commandsUrl(node: AgentNode, query: Record<string, string>): URL {
    const base = node.driverInternalInfo[AGENT_URL_KEY];
    if (typeof base !== 'string' || base === '') {
      throw new AgentConnectionFailed(`Node ${node.uuid} has no agent URL: its agent has not heartbeated yet.`);
    }
    const url = new URL(`${base.replace(/\/+$/, '')}/v1/commands/`);
    for (const [key, value] of Object.entries(query)) url.searchParams.set(key, value);
    const token = node.driverInternalInfo[AGENT_TOKEN_KEY];
    if (typeof token === 'string' && token !== '') url.searchParams.set('agent_token', token);
    return url;
  }

  private verifyFor(node: AgentNode): TlsVerify {
    const pinned = node.driverInternalInfo[AGENT_VERIFY_CA_KEY];
    if (typeof pinned === 'string' && pinned.includes('-----BEGIN')) return { kind: 'pem', pem: pinned };
    return (
      verifyFromSetting(node.driverInfo.agent_verify_ca, 'driver_info.agent_verify_ca') ??
      verifyFromSetting(this.deps.config.verify_ca, '[agent]verify_ca') ?? { kind: 'system' }
    );
  }

  private send(node: AgentNode, method: 'GET' | 'POST', url: URL, body?: unknown): Promise<HttpExchangeResponse> {
    return httpExchange({
      method,
      url,
      body,
      timeoutMs: this.deps.config.command_timeout * 1000,
      verify: this.verifyFor(node),
      tlsMinVersion: `TLSv${this.deps.config.tls_minimum_version}` as SecureVersion,
    });
  }

  private jsonOf(response: HttpExchangeResponse, what: string): unknown {
    try {
      return JSON.parse(response.text);
    } catch {
      throw new AgentAPIError(
        `The agent answered ${what} with HTTP ${response.status} and a body that is not JSON.`,
        response.status,
      );
    }
  }

  private commandResultOf(name: string, response: HttpExchangeResponse): AgentCommandResult {
    const body = this.jsonOf(response, name) as { faultstring?: unknown } | null;
    if (response.status >= 400) {
      const fault = typeof body?.faultstring === 'string' ? body.faultstring : `HTTP ${response.status}`;
      if (response.status === 409 || /agent is busy/i.test(fault)) {
        throw new AgentInProgress(`The agent is busy, ${name} will be retried: ${fault}`);
      }
      throw new AgentAPIError(`The agent refused ${name} (HTTP ${response.status}): ${fault}`, response.status);
    }
    if (!isCommandResult(body)) {
      throw new AgentAPIError(`The agent answered ${name} with something that is not a command result.`, 200);
    }
    return body;
  }

  private async adoptRunning(node: AgentNode, name: string): Promise<AgentCommandResult | undefined> {
    const last = await this.lastCommand(node);
    return last && last.command_name === shortName(name) && last.command_status === 'RUNNING' ? last : undefined;
  }

  private async pollUntilFinished(node: AgentNode, name: string): Promise<AgentCommandResult> {
    const short = shortName(name);
    const { command_wait_attempts: attempts, command_wait_interval: interval } = this.deps.config;
    for (let attempt = 1; attempt <= attempts; attempt++) {
      await this.sleep(interval * 1000);
      const newest = (await this.listCommands(node)).filter((c) => c.command_name === short).at(-1);
      if (newest && newest.command_status !== 'RUNNING') return newest;
    }
    throw new AgentCommandFailed(name, `still running after ${attempts} polls ${interval} s apart`, 'RUNNING');
  }
}
