// What the scenarios look at after a boot: the product's log lines, the file servers' access
// lines, the boot configuration API's answers, and which conductor the ring gives a node.
import { randomUUID } from 'node:crypto';
import { createSilentLogger } from '@bmaas/common';
import type { Stores } from '@bmaas/db';
import { ConductorRing } from '@bmaas/rpc-client';
import type { LogLine } from '@bmaas/stack';
import type { ConductorOfStack, ProductStack } from './lab-services.js';

/** `52-54-00-12-34-56`: how the root boot.ipxe names a MAC in the boot API path. */
export function hexhyp(mac: string): string {
  return mac.toLowerCase().replaceAll(':', '-');
}

/** One request the built-in file server answered (its debug access line). */
export interface FileRequest {
  url: string;
  status: number;
  remote: string;
}

/** What a conductor's file server served, from its debug access lines. */
export function fileRequests(conductor: ConductorOfStack): FileRequest[] {
  return conductor.process.lines
    .filter((line) => line.component === 'http-root' && typeof line.url === 'string' && line.level === 'debug')
    .map((line) => ({ url: line.url as string, status: line.status as number, remote: line.remote as string }));
}

/** Every file any conductor served to `remote` (a machine's address). */
export function filesServedTo(stack: ProductStack, remote: string): Array<FileRequest & { conductor: string }> {
  return stack.conductors.flatMap((conductor) =>
    fileRequests(conductor)
      .filter((request) => request.remote === remote)
      .map((request) => ({ ...request, conductor: conductor.hostname })),
  );
}

/** How many times the API served a node's boot configuration (its debug line per answer). */
export function bootConfigServed(stack: ProductStack, nodeUuid: string): number {
  return stack.api.lines.filter((line) => line.message === 'boot config served' && line.nodeUuid === nodeUuid).length;
}

/** The API's refusals of the boot configuration of `mac` (one info line each, with the reason). */
export function bootConfigRefusals(stack: ProductStack, mac: string): LogLine[] {
  const path = `/v1/boot/${hexhyp(mac)}/boot.ipxe`;
  return stack.api.lines.filter(
    (line) => typeof line.message === 'string' && line.message.startsWith('boot config refused') && line.path === path,
  );
}

/** Log lines of a process about one node. */
export function nodeLines(lines: readonly LogLine[], nodeUuid: string): LogLine[] {
  return lines.filter((line) => line.nodeUuid === nodeUuid);
}

/**
 * Node uuids such that each conductor owns one, found the way the API and the
 * conductors route (the hash ring over the registered, alive conductors).
 */
export async function uuidsOwnedByEach(
  stores: Pick<Stores, 'conductors'>,
  hostnames: readonly string[],
): Promise<Map<string, string>> {
  const ring = new ConductorRing({
    conductors: stores.conductors,
    heartbeatTimeout: 30,
    resetInterval: 3600,
    logger: createSilentLogger(),
  });
  const byOwner = new Map<string, string>();
  for (let attempt = 0; attempt < 1000 && byOwner.size < hostnames.length; attempt++) {
    const uuid = randomUUID();
    const owner = await ring.hostFor({ uuid, driver: 'fake-hardware', conductorGroup: '' });
    if (!byOwner.has(owner)) byOwner.set(owner, uuid);
  }
  const missing = hostnames.filter((hostname) => !byOwner.has(hostname));
  if (missing.length > 0) throw new Error(`the ring gave no node to ${missing.join(', ')}`);
  return byOwner;
}
