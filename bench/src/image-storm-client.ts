#!/usr/bin/env node
import net from 'node:net';

/**
 * The image storm's load generator, a process of its own (its CPU is
 * measured apart from the bench's): every simulated machine opens one
 * keep-alive connection to its owner's file server and GETs its files one
 * after the other, all machines at once. Bodies are counted and discarded
 * in a reused buffer (net's `onread`): no allocation per chunk, so one
 * process keeps up with several GB/s on loopback. Prints one JSON line.
 */

export interface StormMachine {
  host: string;
  port: number;
  /** Paths fetched in order on the one connection, with the size each must have. */
  files: Array<{ path: string; size: number }>;
}

export interface StormClientResult {
  requests: number;
  bytes: number;
  seconds: number;
  /** Milliseconds from sending a request to its first response byte, one per request, sorted. */
  ttfbMs: number[];
  errors: number;
  firstErrors: string[];
  /** Socket reads (onread calls): bytes ÷ reads says how the server's data arrives. */
  reads: number;
}

const READ_BUFFER_BYTES = 256 * 1024;
const HEADER_END = Buffer.from('\r\n\r\n');

function fetchAll(machine: StormMachine, result: StormClientResult, timeoutMs: number): Promise<void> {
  return new Promise((resolve) => {
    let index = 0;
    let sentAt = 0;
    let head: Buffer | undefined;
    let remaining = -1;
    let done = false;
    const fail = (message: string) => {
      if (done) return;
      done = true;
      result.errors++;
      if (result.firstErrors.length < 5) result.firstErrors.push(`${machine.host}:${machine.port}: ${message}`);
      socket.destroy();
      resolve();
    };
    const next = () => {
      const file = machine.files[index];
      if (!file) {
        done = true;
        socket.end();
        resolve();
        return;
      }
      head = undefined;
      remaining = -1;
      sentAt = performance.now();
      socket.write(
        `GET ${file.path} HTTP/1.1\r\nHost: ${machine.host}:${machine.port}\r\nUser-Agent: iPXE/1.21.1\r\n\r\n`,
      );
    };
    const body = (count: number) => {
      result.bytes += count;
      remaining -= count;
      if (remaining < 0) fail(`${machine.files[index]?.path}: more bytes than Content-Length`);
      else if (remaining === 0) {
        result.requests++;
        index++;
        next();
      }
    };
    const onHeadBytes = (chunk: Buffer) => {
      if (!head) result.ttfbMs.push(performance.now() - sentAt);
      head = head ? Buffer.concat([head, chunk]) : Buffer.from(chunk);
      const end = head.indexOf(HEADER_END);
      if (end < 0) {
        if (head.length > 16 * 1024) fail('response head larger than 16 KiB');
        return;
      }
      const text = head.subarray(0, end).toString('latin1');
      const status = Number(text.slice(9, 12));
      const length = /\r\ncontent-length:\s*(\d+)/i.exec(text)?.[1];
      const file = machine.files[index] as { path: string; size: number };
      if (status !== 200) return fail(`${file.path}: HTTP ${status}`);
      if (length === undefined || Number(length) !== file.size) {
        return fail(`${file.path}: Content-Length ${length}, the file has ${file.size}`);
      }
      remaining = file.size;
      const rest = head.length - end - HEADER_END.length;
      if (remaining === 0) body(0);
      else if (rest > 0) body(rest);
    };
    const socket = net.connect({
      host: machine.host,
      port: machine.port,
      noDelay: true,
      onread: {
        buffer: Buffer.allocUnsafe(READ_BUFFER_BYTES),
        callback: (count, buffer) => {
          result.reads++;
          if (done) return false;
          if (remaining > 0) body(count);
          else onHeadBytes(Buffer.from(buffer.buffer, buffer.byteOffset, count));
          return true;
        },
      },
    });
    socket.setTimeout(timeoutMs, () => fail(`no byte for ${timeoutMs} ms`));
    socket.on('connect', next);
    socket.on('error', (error) => fail(error.message));
    socket.on('close', () => {
      if (!done) fail('connection closed early');
    });
  });
}

export async function runStorm(machines: readonly StormMachine[], timeoutMs: number): Promise<StormClientResult> {
  const result: StormClientResult = {
    requests: 0,
    bytes: 0,
    seconds: 0,
    ttfbMs: [],
    errors: 0,
    firstErrors: [],
    reads: 0,
  };
  const start = performance.now();
  await Promise.all(machines.map((m) => fetchAll(m, result, timeoutMs)));
  result.seconds = (performance.now() - start) / 1000;
  result.ttfbMs.sort((a, b) => a - b);
  return result;
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].replace(/.*\//, '/'))) {
  let input = '';
  process.stdin.on('data', (chunk: Buffer) => {
    input += chunk.toString();
  });
  process.stdin.on('end', () => {
    const { machines, timeoutMs } = JSON.parse(input) as { machines: StormMachine[]; timeoutMs: number };
    runStorm(machines, timeoutMs).then(
      (result) => process.stdout.write(`${JSON.stringify(result)}\n`),
      (error: Error) => {
        process.stderr.write(`${error.stack}\n`);
        process.exit(1);
      },
    );
  });
}
