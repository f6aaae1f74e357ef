import net from 'node:net';

/** True when nothing listens on 127.0.0.1:port (we could bind it). */
export function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A free port below the kernel's ephemeral range (the tests' helper: no outgoing connection takes it meanwhile). */
export { freePort } from '@bmaas/db/testing';

/**
 * A base port such that base+1 … base+count are all free: the stack launcher
 * numbers its conductors' ports from a base. Tried at random places in
 * 20,000-32,000, so a running `npm start` (ports 8080-8099) is never touched.
 */
export async function freePortBlock(count: number, random: () => number = Math.random): Promise<number> {
  for (let attempt = 0; attempt < 100; attempt++) {
    // Below the ephemeral range (32768 and up on Linux), where outgoing connections take their ports.
    const base = 20_000 + Math.floor(random() * 12_000);
    let free = true;
    for (let i = 1; i <= count && free; i++) free = await portIsFree(base + i);
    if (free) return base;
  }
  throw new Error(`no block of ${count} free ports found on 127.0.0.1`);
}
