import { createHash } from 'node:crypto';
import { createReadStream, mkdirSync, readFileSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createSilentLogger, freePort } from '@bmaas/common';
import { InstanceImageCache } from '@bmaas/image-cache';
import {
  type ImageStormContext,
  type ImageStormRun,
  measureStorm,
  type StormOwner,
  startStormNginx,
  stormRatios,
  writeImageFile,
} from './image-storm.js';
import type { StormMachine } from './image-storm-client.js';
import type { ServedProcess } from './served-process.js';

/**
 * A rack deploying one image with image_download_source local: N agents'
 * write_image steps ask the conductor's instance image cache for the same
 * image at once (the upstream image server must see one download), each
 * node gets its agent_images/<uuid> link in its owner's http root, then the
 * N agents download their image from the conductors' file servers, and the
 * same from nginx serving the same http roots, in the same run.
 */
export interface ImageFanoutOptions {
  /** Agents per fan-out, one per value. */
  agents: readonly number[];
  imageBytes: number;
  clients: number;
  rounds: number;
}

export interface ImageFanoutReport {
  imageBytes: number;
  /** GETs the upstream image server saw while each value's agents asked for the image at once. */
  upstreamDownloads: Array<{ agents: number; downloads: number; seconds: number }>;
  runs: ImageStormRun[];
  ratios: Array<{ machines: number; conductorsToNginx: number | null; rounds: number[] }>;
}

/** The upstream image server: serves one file and counts its GETs. */
async function startUpstream(file: string): Promise<{ url: string; gets: () => number; close: () => Promise<void> }> {
  let gets = 0;
  const server = createServer((_req, res) => {
    gets++;
    res.writeHead(200, { 'content-length': statSync(file).size });
    createReadStream(file).pipe(res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/instance.img`,
    gets: () => gets,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

export async function runImageFanout(
  options: ImageFanoutOptions,
  context: ImageStormContext,
): Promise<ImageFanoutReport> {
  const { progress } = context;
  const dir = join(context.workDir, 'fanout');
  mkdirSync(dir, { recursive: true });
  const image = join(dir, 'instance.img');
  progress(`image fan-out: writing a ${options.imageBytes}-byte instance image…`);
  writeImageFile(image, options.imageBytes);
  const sha256 = createHash('sha256').update(readFileSync(image)).digest('hex');
  const upstream = await startUpstream(image);
  context.onCleanup(upstream.close);

  const count = Math.max(...options.agents);
  const owned: Array<{ uuid: string; owner: StormOwner }> = [];
  for (let i = 0; i < Math.min(count, context.nodes.length); i++) {
    const node = context.nodes[i] as (typeof context.nodes)[number];
    owned.push({ uuid: node.uuid, owner: await context.ownerOf(node) });
  }

  const upstreamDownloads: ImageFanoutReport['upstreamDownloads'] = [];
  for (const agents of options.agents) {
    // A cold cache per fan-out (the product's class, as a conductor makes it): every agent's
    // write_image asks for the image at once, and each node's link is placed in its owner's root.
    const cache = new InstanceImageCache(
      {
        path: join(dir, `cache-${agents}`),
        maxBytes: options.imageBytes * 2,
        concurrency: 20,
        forceRaw: true,
        permittedFormats: ['raw'],
        downloadTimeoutMs: 600_000,
      },
      createSilentLogger(),
    );
    const before = upstream.gets();
    const started = process.hrtime.bigint();
    await Promise.all(
      Array.from({ length: agents }, async (_, i) => {
        const { uuid, owner } = owned[i % owned.length] as (typeof owned)[number];
        const cached = await cache.get({
          url: upstream.url,
          declaredFormat: 'raw',
          hash: { algo: 'sha256', value: sha256 },
        });
        await cache.publish(cached, join(owner.httpRoot, 'agent_images', uuid));
      }),
    );
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const downloads = upstream.gets() - before;
    progress(
      `image fan-out, ${agents} agents: ${downloads} upstream download(s), image cached in ${seconds.toFixed(2)} s`,
    );
    upstreamDownloads.push({ agents, downloads, seconds: Math.round(seconds * 100) / 100 });
  }

  let nginx: ServedProcess | undefined;
  const nginxPorts = new Map<StormOwner, number>();
  if (context.nginxBinary) {
    for (const owner of context.owners) nginxPorts.set(owner, await freePort());
    nginx = await startStormNginx(context.nginxBinary, {
      sites: context.owners.map((o) => ({ root: o.httpRoot, port: nginxPorts.get(o) as number })),
      workers: context.owners.length,
      prefixDir: join(context.workDir, 'nginx-fanout'),
      user: context.nginxUser,
    });
    context.onCleanup(() => (nginx as ServedProcess).stop());
  }
  const machinesFor = (n: number, portOf: (owner: StormOwner) => number): StormMachine[] =>
    Array.from({ length: n }, (_, i) => {
      const { uuid, owner } = owned[i % owned.length] as (typeof owned)[number];
      return {
        host: '127.0.0.1',
        port: portOf(owner),
        files: [{ path: `/agent_images/${uuid}`, size: options.imageBytes }],
      };
    });
  const conductorPids = () => context.owners.flatMap((o) => o.pid() ?? []);
  const nginxPids = () => (nginx ? [nginx.pid, ...context.processes.childrenOf(nginx.pid)] : []);
  const runs: ImageStormRun[] = [];
  for (const n of options.agents) {
    for (let round = 1; round <= options.rounds; round++) {
      const plan: Array<[ImageStormRun['server'], StormMachine[], () => number[]]> = [
        ['conductors', machinesFor(n, (o) => o.port), conductorPids],
      ];
      if (nginx) plan.push(['nginx', machinesFor(n, (o) => nginxPorts.get(o) as number), nginxPids]);
      for (const [server, machines, pids] of plan) {
        const run = await measureStorm(server, machines, pids, options.clients);
        progress(
          `image fan-out, ${server}, ${n} agents (round ${round}): ${run.gigabytesPerSecond} GB/s, ${run.errors} errors`,
        );
        runs.push({ ...run, round });
      }
    }
  }
  return { imageBytes: options.imageBytes, upstreamDownloads, runs, ratios: stormRatios(runs, options.agents) };
}

/** The fan-out's lines of the printed report. */
export function renderImageFanout(report: ImageFanoutReport): string {
  const lines = [
    `image fan-out (image_download_source local): agents fetch one ${report.imageBytes}-byte instance image`,
    ...report.upstreamDownloads.map(
      (u) => `  ${u.agents} agents at once: ${u.downloads} upstream download(s), cached in ${u.seconds} s`,
    ),
    ...report.runs.map(
      (r) =>
        `  ${r.server}, ${r.machines} agents, round ${r.round}: ${r.gigabytesPerSecond.toFixed(3)} GB/s, ` +
        `TTFB p99 ${r.ttfbMs.p99} ms, ${r.errors} errors`,
    ),
    ...report.ratios.map(
      (r) =>
        `  ${r.machines} agents: conductors ÷ nginx = ${r.conductorsToNginx ?? 'n/a'} (rounds ${r.rounds.join(', ')})`,
    ),
  ];
  return `${lines.join('\n')}\n`;
}

/** The fan-out failed when an upstream download was not exactly one per fan-out, or a download failed. */
export function imageFanoutFailed(report: ImageFanoutReport): boolean {
  return report.upstreamDownloads.some((u) => u.downloads !== 1) || report.runs.some((r) => r.errors > 0);
}
