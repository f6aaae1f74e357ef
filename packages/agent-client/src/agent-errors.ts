import { BmaasError } from '@bmaas/common';

/**
 * Errors of calls to a node's agent. They end up in the node's last_error
 * (the operation fails) and never cross the REST API or JSON-RPC.
 */

/** The agent could not be reached (no agent_url yet, refused, reset, timed out) after every attempt. */
export class AgentConnectionFailed extends BmaasError {}

/** The agent answered with an HTTP error or something that is not a command result. */
export class AgentAPIError extends BmaasError {
  constructor(
    message: string,
    readonly httpStatus: number | undefined,
    details: Record<string, unknown> = {},
  ) {
    super(message, { ...details, httpStatus });
  }
}

/** The agent is still running an earlier command (409 "Agent is busy"): retry on a later heartbeat. */
export class AgentInProgress extends BmaasError {}

/** A command finished with command_status FAILED (or a version mismatch); the message is the agent's. */
export class AgentCommandFailed extends BmaasError {
  constructor(
    readonly command: string,
    readonly agentMessage: string,
    readonly commandStatus: string,
  ) {
    super(`${command} failed: ${agentMessage}`, { command, commandStatus });
  }
}
