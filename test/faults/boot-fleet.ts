import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiClient } from '@bmaas/api-client';
import { freePort, mapLimit } from '@bmaas/common';
import type { Services } from '@bmaas/stack';
import { ipxeNodeWaitingCallBack } from '../support/instance-image.js';
import { startTestServices } from '../support/test-services.js';

/** A node waiting in "wait call-back" for its machine to network-boot. */
export interface BootNode {
  uuid: string;
  /** As firmware sends it with ${mac:hexhyp}. */
  macHyphens: string;
}

/** The API, N conductors with their own http_root and file server, and nodes waiting to boot. */
export interface BootFleet {
  stack: Services;
  rest: ApiClient;
  apiUrl: string;
  nodes: BootNode[];
  /** http_url of each conductor, by registered hostname. */
  httpUrlOf: Map<string, string>;
  close(): Promise<void>;
}

/**
 * Starts the fleet on `databaseUrl` and deploys `nodeCount` fake-hardware
 * nodes with the iPXE boot interface into "wait call-back" through REST.
 */
export async function startBootFleet(options: {
  databaseUrl: string;
  conductors: number;
  nodeCount: number;
  env?: Record<string, string>;
}): Promise<BootFleet> {
  const workDir = await mkdtemp(join(tmpdir(), 'bmaas-faults-'));
  const kernel = join(workDir, 'deploy_kernel');
  const ramdisk = join(workDir, 'deploy_ramdisk');
  await writeFile(kernel, 'kernel\n');
  await writeFile(ramdisk, 'ramdisk\n');
  const indexes = Array.from({ length: options.conductors }, (_, i) => i);
  const roots = await Promise.all(indexes.map((i) => mkdtemp(join(workDir, `http-root-${i}-`))));
  const httpUrls = await Promise.all(indexes.map(async () => `http://127.0.0.1:${await freePort()}`));
  const apiPort = await freePort();
  const apiUrl = `http://127.0.0.1:${apiPort}`;
  let stack: Services | undefined;
  try {
    stack = await startTestServices({
      databaseUrl: options.databaseUrl,
      conductors: options.conductors,
      api: true,
      apiPort,
      startTimeoutMs: 60_000,
      env: {
        BMAAS_DEFAULT__ENABLED_BOOT_INTERFACES: 'fake,ipxe',
        BMAAS_CONDUCTOR__FILE_URL_ALLOWED_PATHS: workDir,
        BMAAS_DEFAULT__ENABLED_DEPLOY_INTERFACES: 'fake,direct',
        BMAAS_CONDUCTOR__AUTOMATED_CLEAN: 'false',
        BMAAS_DEPLOY__SERVE_HTTP_ROOT: 'true',
        BMAAS_DEPLOY__HTTP_SERVER_HOST_IP: '127.0.0.1',
        BMAAS_PXE__IPXE_USE_BOOT_CONFIG_API: 'true',
        BMAAS_API__PUBLIC_ENDPOINT: apiUrl,
        ...options.env,
      },
      conductorEnv: (i) => ({
        BMAAS_DEPLOY__HTTP_ROOT: roots[i] as string,
        BMAAS_DEPLOY__HTTP_URL: httpUrls[i] as string,
      }),
    });
    const httpUrlOf = new Map<string, string>();
    for (const conductor of stack.conductors) {
      const started = await conductor.process.waitForLine((l) => l.message === 'conductor started', 1000);
      const url = httpUrls.find((u) => u.endsWith(`:${String(started.httpRoot).split(':').at(-1)}`));
      httpUrlOf.set(conductor.hostname, url as string);
    }
    const rest = new ApiClient(apiUrl);
    const nodes = await mapLimit(
      Array.from({ length: options.nodeCount }, (_, i) => i),
      8,
      async (i) => {
        const mac = `52:54:00:fa:${Math.floor(i / 256)
          .toString(16)
          .padStart(2, '0')}:${(i % 256).toString(16).padStart(2, '0')}`;
        return ipxeNodeWaitingCallBack(rest, `fault-${i}`, mac, { kernel, ramdisk }, 30_000);
      },
    );
    const started = stack;
    return {
      stack,
      rest,
      apiUrl,
      nodes,
      httpUrlOf,
      close: async () => {
        await started.stop();
        await rm(workDir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await stack?.stop(1000);
    await rm(workDir, { recursive: true, force: true });
    throw error;
  }
}

/** One boot request of a storm. */
export interface BootSample {
  node: BootNode;
  /** When it was sent and answered, ms since the storm began. */
  sentAt: number;
  answeredAt: number;
  /** 0 when no HTTP answer came (connection refused or reset). */
  status: number;
  body: string;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

function get(url: string, timeoutMs: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const req = http.get(url, { agent, timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', () => resolve({ status: 0, body: '' }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve({ status: 0, body: '' }));
  });
}

/**
 * Many concurrent `GET /v1/boot/<MAC>/boot.ipxe` over the nodes, round robin,
 * as machines booting together would send, until `stop()`; every answer is kept.
 */
export class BootStorm {
  readonly samples: BootSample[] = [];
  readonly startedAt = Date.now();
  private running = true;
  private readonly workers: Promise<void>[];

  constructor(apiUrl: string, nodes: readonly BootNode[], concurrency: number, requestTimeoutMs = 30_000) {
    let next = 0;
    this.workers = Array.from({ length: concurrency }, async () => {
      while (this.running) {
        const node = nodes[next++ % nodes.length] as BootNode;
        const sentAt = Date.now() - this.startedAt;
        const answer = await get(`${apiUrl}/v1/boot/${node.macHyphens}/boot.ipxe`, requestTimeoutMs);
        this.samples.push({ node, sentAt, answeredAt: Date.now() - this.startedAt, ...answer });
        // A refused connection answers at once: do not spin.
        if (answer.status === 0) await new Promise((r) => setTimeout(r, 20));
      }
    });
  }

  /** Ms since the storm began. */
  now(): number {
    return Date.now() - this.startedAt;
  }

  async stop(): Promise<BootSample[]> {
    this.running = false;
    await Promise.all(this.workers);
    return this.samples;
  }
}

/** A script served for `node` names that node: anything else is a wrong script. */
export function isScriptOf(body: string, node: BootNode): boolean {
  return body.startsWith('#!ipxe\n') && body.includes(`# Boot script of node ${node.uuid},`);
}
