import { connect, type Socket } from 'node:net';

export class QmpError extends Error {}

interface QmpReply {
  id?: number;
  return?: unknown;
  error?: { class: string; desc: string };
  event?: string;
  QMP?: unknown;
}

/**
 * One QMP session over a unix socket: the greeting, capabilities negotiation,
 * then commands answered in order (events are skipped). QEMU serves one QMP
 * client at a time, so sessions are short: open, run, close.
 */
export class QmpSession {
  private buffer = '';
  private readonly waiting: Array<{ resolve(reply: QmpReply): void; reject(error: Error): void }> = [];
  private nextId = 1;
  private closedError: Error | undefined;

  private constructor(private readonly socket: Socket) {
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => this.receive(chunk));
    const fail = (error: Error) => {
      this.closedError ??= error;
      for (const w of this.waiting.splice(0)) w.reject(error);
    };
    socket.on('error', fail);
    socket.on('close', () => fail(new QmpError('QMP connection closed')));
  }

  static async open(path: string, timeoutMs: number): Promise<QmpSession> {
    const socket = connect(path);
    socket.setTimeout(timeoutMs, () =>
      socket.destroy(new QmpError(`QMP at ${path} did not answer in ${timeoutMs} ms`)),
    );
    const session = new QmpSession(socket);
    await session.next(); // greeting
    await session.execute('qmp_capabilities');
    return session;
  }

  async execute<T = unknown>(command: string, args?: Record<string, unknown>): Promise<T> {
    const id = this.nextId++;
    const reply = this.next();
    this.socket.write(`${JSON.stringify({ execute: command, id, ...(args ? { arguments: args } : {}) })}\n`);
    const answer = await reply;
    if (answer.error) throw new QmpError(`QMP ${command}: ${answer.error.class}: ${answer.error.desc}`);
    return answer.return as T;
  }

  close(): void {
    this.socket.end();
    this.socket.destroy();
  }

  private next(): Promise<QmpReply> {
    if (this.closedError) return Promise.reject(this.closedError);
    return new Promise((resolve, reject) => this.waiting.push({ resolve, reject }));
  }

  private receive(chunk: string): void {
    this.buffer += chunk;
    let newline = this.buffer.indexOf('\n');
    while (newline >= 0) {
      const line = this.buffer.slice(0, newline).trim();
      this.buffer = this.buffer.slice(newline + 1);
      newline = this.buffer.indexOf('\n');
      if (!line) continue;
      const message = JSON.parse(line) as QmpReply;
      if (message.event) continue;
      this.waiting.shift()?.resolve(message);
    }
  }
}

/** Opens a session, runs `work`, and always closes it. */
export async function withQmp<T>(
  path: string,
  timeoutMs: number,
  work: (session: QmpSession) => Promise<T>,
): Promise<T> {
  const session = await QmpSession.open(path, timeoutMs);
  try {
    return await work(session);
  } finally {
    session.close();
  }
}
