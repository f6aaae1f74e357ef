import { createServer } from 'node:net';

/** A port the stack is about to listen on, and how the operator can change it. */
export interface PortClaim {
  host: string;
  port: number;
  /** What listens there, e.g. "the API". */
  owner: string;
  /** The option that moves it, e.g. "--api-port". */
  option: string;
}

/** A reason the stack refuses to start, shown as one line (no stack trace). */
export class StackStartRefused extends Error {
  override readonly name = 'StackStartRefused';
}

function tryListen(host: string, port: number): Promise<NodeJS.ErrnoException | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', (error: NodeJS.ErrnoException) => resolve(error));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(undefined)));
  });
}

/**
 * Checks, before anything starts, that every port is claimed once and free,
 * so a clash is one clear line instead of a child process failing to listen.
 */
export async function assertPortsFree(claims: readonly PortClaim[]): Promise<void> {
  const seen = new Map<number, PortClaim>();
  for (const claim of claims) {
    const other = seen.get(claim.port);
    if (other) {
      throw new StackStartRefused(
        `port ${claim.port} is wanted by both ${other.owner} (${other.option}) and ${claim.owner} (${claim.option}): choose ports that do not overlap`,
      );
    }
    seen.set(claim.port, claim);
  }
  for (const claim of claims) {
    const error = await tryListen(claim.host, claim.port);
    if (!error) continue;
    const where = `${claim.host}:${claim.port}`;
    if (error.code === 'EADDRINUSE') {
      throw new StackStartRefused(
        `${where} (${claim.owner}) is already in use by another program: stop it, or choose another port with ${claim.option}`,
      );
    }
    throw new StackStartRefused(
      `cannot listen on ${where} (${claim.owner}, ${claim.option}): ${error.code ?? error.message}`,
    );
  }
}
