#!/usr/bin/env node
// @ts-check
// Relays bytes between two endpoints so lab traffic can cross a boundary:
//   stdio <to>          one connection on stdin/stdout (QEMU user-mode guestfwd=...-cmd:)
//   listen <from> <to>  every connection accepted on <from>; prints "ready" once listening
// Endpoints: tcp:<host>:<port> (IPv6 host in brackets) or unix:<path>.
// Plain JavaScript because QEMU and `ip netns exec` start it with node directly.
import net from 'node:net';

/** @param {string} spec @returns {{ path: string } | { host: string; port: number }} */
function endpoint(spec) {
  if (spec.startsWith('unix:')) return { path: spec.slice('unix:'.length) };
  const match = /^tcp:\[?([^\]]+?)\]?:(\d+)$/.exec(spec);
  if (!match?.[1] || !match[2]) throw new Error(`bad endpoint: ${spec}`);
  return { host: match[1], port: Number(match[2]) };
}

/** @param {import('node:net').Socket} a @param {import('node:net').Socket} b */
function splice(a, b) {
  a.pipe(b);
  b.pipe(a);
  a.on('error', () => b.destroy());
  b.on('error', () => a.destroy());
  a.on('close', () => b.destroy());
  b.on('close', () => a.destroy());
}

const [mode, first, second] = process.argv.slice(2);
if (mode === 'stdio' && first) {
  const upstream = net.connect(endpoint(first));
  process.stdin.pipe(upstream);
  upstream.pipe(process.stdout);
  upstream.on('error', () => process.exit(1));
  // exit once the answer is flushed to QEMU; stdin alone would keep us alive
  upstream.on('close', () => process.stdout.write('', () => process.exit(0)));
} else if (mode === 'listen' && first && second) {
  const target = endpoint(second);
  const server = net.createServer((client) => splice(client, net.connect(target)));
  server.on('error', (error) => {
    console.error(`socket-relay: ${error.message}`);
    process.exit(1);
  });
  server.listen(endpoint(first), () => console.log('ready'));
} else {
  console.error('usage: socket-relay.mjs stdio <to> | listen <from> <to>');
  process.exit(2);
}
