import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { JsonObject } from '@bmaas/common';
import type { AgentCommandResult, AgentCommandStatus } from '../agent-client.js';

/** How the double answers one command: finished at once, or RUNNING until `finish`. */
export type CommandBehaviour =
  | { kind: 'sync'; result?: JsonObject | null; status?: AgentCommandStatus; message?: string }
  | { kind: 'async' }
  /** 409 "Agent is busy", as when another command still runs. */
  | { kind: 'busy' };

/**
 * A real HTTP server that answers like ironic-python-agent's command API
 * (ipa-protocol §2): POST/GET /v1/commands/ with the token, 409 while the
 * last command runs, 400 for an unknown command, results kept in order. For
 * tests of the conductor side; each test tells it how to answer.
 */
export class AgentDouble {
  readonly commands: AgentCommandResult[] = [];
  /** Every request's command name and params, in order. */
  readonly received: Array<{ name: string; params: JsonObject; wait: string | null }> = [];
  readonly behaviours = new Map<string, CommandBehaviour>();

  private constructor(
    private readonly server: http.Server,
    readonly url: string,
    /** The token it accepts (the one the conductor issued). */
    public token: string,
  ) {}

  static async start(token: string): Promise<AgentDouble> {
    let double: AgentDouble | undefined;
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => double?.answer(req, Buffer.concat(chunks).toString('utf8'), res));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    double = new AgentDouble(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`, token);
    return double;
  }

  /** Ends the running command `name` (the last one by that name). */
  finish(name: string, status: AgentCommandStatus, result: JsonObject | null, message?: string): void {
    const command = [...this.commands].reverse().find((c) => c.command_name === name);
    if (!command) throw new Error(`no command ${name}`);
    command.command_status = status;
    command.command_result = result;
    command.command_error = message ? { type: 'CommandExecutionError', code: 500, message, details: message } : null;
  }

  /** A restarted agent: no commands. */
  reset(): void {
    this.commands.length = 0;
    this.received.length = 0;
  }

  stop(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private answer(req: http.IncomingMessage, body: string, res: http.ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://agent');
    const send = (status: number, payload: unknown): void => {
      res.writeHead(status, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(payload));
    };
    if ((url.searchParams.get('agent_token') ?? '') !== this.token) {
      send(401, { faultcode: 'Client', faultstring: 'Token invalid.' });
      return;
    }
    if (url.pathname !== '/v1/commands/') {
      send(404, { faultcode: 'Client', faultstring: 'Not found' });
      return;
    }
    if (req.method === 'GET') {
      send(200, { commands: this.commands });
      return;
    }
    const { name, params } = JSON.parse(body) as { name: string; params: JsonObject };
    this.received.push({ name, params, wait: url.searchParams.get('wait') });
    const last = this.commands.at(-1);
    if (last?.command_status === 'RUNNING') {
      send(409, { faultcode: 'Client', faultstring: `Agent is busy: executing command ${last.command_name}` });
      return;
    }
    const behaviour = this.behaviours.get(name);
    if (!behaviour) {
      send(400, { faultcode: 'Client', faultstring: `Invalid command: Unknown command: ${name}` });
      return;
    }
    if (behaviour.kind === 'busy') {
      send(409, { faultcode: 'Client', faultstring: 'Agent is busy: executing command other' });
      return;
    }
    const short = name.slice(name.indexOf('.') + 1);
    const command: AgentCommandResult =
      behaviour.kind === 'async'
        ? {
            id: randomUUID(),
            command_name: short,
            command_status: 'RUNNING',
            command_error: null,
            command_result: null,
          }
        : {
            id: randomUUID(),
            command_name: short,
            command_status: behaviour.status ?? 'SUCCEEDED',
            command_error: behaviour.message ? { type: 'X', code: 500, message: behaviour.message } : null,
            command_result: behaviour.result ?? null,
          };
    this.commands.push(command);
    send(200, command);
  }
}
