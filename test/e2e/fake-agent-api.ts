// The self-test's stand-in for the product: serves the iPXE boot files, the test
// ramdisk, agent lookup and heartbeat, and records every request it gets.
import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { RAMDISK_KERNEL_ARGS, type TestRamdisk } from '@bmaas/lab';

export interface RecordedRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
  /** Date.now() when it arrived */
  at: number;
}

export interface FakeNode {
  uuid: string;
  mac: string;
  agentToken: string;
}

export interface FakeAgentApiOptions {
  ramdisk: TestRamdisk;
  macs: string[];
  /** How the per-MAC script passes BOOTIF: `${mac}` (Ironic) or `01-${mac:hexhyp}` (PXELINUX). */
  bootifStyle: 'ironic' | 'pxelinux';
}

export interface FakeAgentApi {
  readonly requests: RecordedRequest[];
  readonly nodes: FakeNode[];
  listenTcp(host: string, port?: number): Promise<number>;
  listenUnix(path: string): Promise<void>;
  close(): Promise<void>;
}

export function createFakeAgentApi(options: FakeAgentApiOptions): FakeAgentApi {
  const requests: RecordedRequest[] = [];
  const nodes = options.macs.map((mac) => ({ uuid: randomUUID(), mac: mac.toLowerCase(), agentToken: randomUUID() }));
  const servers: Server[] = [];

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const body = await readBody(request);
    requests.push({
      method: request.method ?? '',
      url: request.url ?? '',
      headers: request.headers,
      body,
      at: Date.now(),
    });
    const url = new URL(request.url ?? '/', 'http://fake');
    // iPXE and wget both send Host; links point back the way the client came
    const base = `http://${request.headers.host ?? 'missing-host'}`;
    const perMac = /^\/v1\/boot\/([0-9a-f]{2}(?:-[0-9a-f]{2}){5})\/boot\.ipxe$/.exec(url.pathname);
    const heartbeat = /^\/v1\/heartbeat\/([^/]+)$/.exec(url.pathname);

    if (request.method === 'GET' && url.pathname === '/boot.ipxe') {
      sendText(response, 200, wildcardScript(base));
    } else if (request.method === 'GET' && perMac?.[1]) {
      const mac = perMac[1].replaceAll('-', ':');
      if (nodes.some((node) => node.mac === mac)) sendText(response, 200, perMacScript(base, options.bootifStyle));
      else sendText(response, 404, 'no such port\n');
    } else if (request.method === 'GET' && (url.pathname === '/e2e/kernel' || url.pathname === '/e2e/initrd')) {
      await sendFile(response, url.pathname === '/e2e/kernel' ? options.ramdisk.kernel : options.ramdisk.initrd);
    } else if (request.method === 'GET' && url.pathname === '/v1/lookup') {
      const addresses = (url.searchParams.get('addresses') ?? '').toLowerCase().split(',');
      const node = nodes.find((candidate) => addresses.includes(candidate.mac));
      if (node)
        sendJson(response, 200, {
          node: { uuid: node.uuid },
          config: { agent_token: node.agentToken, heartbeat_timeout: 300 },
        });
      else sendJson(response, 404, { error_message: 'node not found' });
    } else if (request.method === 'POST' && heartbeat?.[1]) {
      const node = nodes.find((candidate) => candidate.uuid === heartbeat[1]);
      const token = parseJson(body)?.agent_token;
      if (!node) sendJson(response, 404, { error_message: 'node not found' });
      else if (token !== node.agentToken) sendJson(response, 401, { error_message: 'bad agent token' });
      else sendText(response, 202, '');
    } else {
      sendText(response, 404, 'not found\n');
    }
  };

  const newServer = (): Server => {
    const server = createServer((request, response) => {
      handle(request, response).catch((error: Error) => {
        if (!response.headersSent) sendText(response, 500, `${error.message}\n`);
        else response.destroy();
      });
    });
    servers.push(server);
    return server;
  };

  return {
    requests,
    nodes,
    listenTcp(host, port = 0) {
      const server = newServer();
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => resolve((server.address() as AddressInfo).port));
      });
    },
    listenUnix(path) {
      const server = newServer();
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(path, () => resolve());
      });
    },
    async close() {
      await Promise.all(
        servers.map(
          (server) =>
            new Promise<void>((resolve) => {
              server.closeAllConnections();
              server.close(() => resolve());
            }),
        ),
      );
    },
  };
}

/** Same for every machine, like the product's: chain the per-MAC script of net0. */
function wildcardScript(base: string): string {
  return [
    '#!ipxe',
    `chain --autofree ${base}/v1/boot/\${net0/mac:hexhyp}/boot.ipxe || goto no_config`,
    ':no_config',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: an iPXE variable
    'echo E2E-IPXE no boot config for ${net0/mac}',
    'exit',
    '',
  ].join('\n');
}

function perMacScript(base: string, bootifStyle: FakeAgentApiOptions['bootifStyle']): string {
  // biome-ignore lint/suspicious/noTemplateCurlyInString: iPXE variables
  const bootif = bootifStyle === 'ironic' ? '${mac}' : '01-${mac:hexhyp}';
  return [
    '#!ipxe',
    'imgfree',
    `kernel ${base}/e2e/kernel ${RAMDISK_KERNEL_ARGS} BOOTIF=${bootif} ipa-api-url=${base}`,
    `initrd ${base}/e2e/initrd`,
    'boot',
    '',
  ].join('\n');
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(Buffer.concat(chunks).toString()));
    request.on('error', reject);
  });
}

function parseJson(text: string): Record<string, unknown> | undefined {
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

function sendText(response: ServerResponse, status: number, text: string): void {
  response.writeHead(status, { 'Content-Type': 'text/plain', 'Content-Length': Buffer.byteLength(text) });
  response.end(text);
}

function sendJson(response: ServerResponse, status: number, value: unknown): void {
  const text = JSON.stringify(value);
  response.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  response.end(text);
}

async function sendFile(response: ServerResponse, path: string): Promise<void> {
  const { size } = await stat(path);
  response.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': size });
  createReadStream(path).pipe(response);
}
