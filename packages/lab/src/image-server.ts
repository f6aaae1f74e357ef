// The test host's HTTP service for deploy scenarios, on a Unix socket the lab relays
// into the namespace: it serves the instance image (as an operator's image server
// would), answers 404 for anything else, can stall a download once (an agent that
// stops mid-write), and records what booted instances report.
import { createReadStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import http from 'node:http';
import { until, waitFor } from '@bmaas/common';

export interface InstanceReport {
  uuid: string;
  body: string;
}

export interface ImageServer {
  /** Path of the image as machines fetch it; `stallOncePath` stalls its first download after 1 MiB. */
  readonly imagePath: string;
  readonly stallOncePath: string;
  /** Every request: method and URL, in order. */
  readonly requests: Array<{ method: string; url: string; status: number }>;
  readonly reports: InstanceReport[];
  /** Resolves when an instance reported for `uuid` (bounded). */
  waitForReport(uuid: string, timeoutMs: number): Promise<InstanceReport>;
  /** Resolves when a GET of `url` has reached the server (bounded). */
  waitForDownload(url: string, timeoutMs: number): Promise<void>;
  close(): Promise<void>;
}

const STALL_AFTER = 1024 * 1024;

/**
 * Serves `imageFile` at imagePath (and stallOncePath), and each of `moreFiles`
 * (URL path -> file) as it is.
 */
export async function startImageServer(
  socketPath: string,
  imageFile: string,
  moreFiles: Readonly<Record<string, string>> = {},
): Promise<ImageServer> {
  const requests: ImageServer['requests'] = [];
  const reports: InstanceReport[] = [];
  const stalled = new Set<string>();
  const imagePath = '/images/instance.img';
  const stallOncePath = '/images/stall-once/instance.img';

  const server = http.createServer((req, res) => {
    const url = req.url ?? '/';
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const record = (status: number) => requests.push({ method: req.method ?? '', url, status });
      const report = /^\/report\/([0-9a-f-]{36})$/.exec(url);
      if (req.method === 'POST' && report?.[1]) {
        reports.push({ uuid: report[1], body: Buffer.concat(chunks).toString('utf8') });
        record(200);
        res.writeHead(200).end('ok\n');
        return;
      }
      const more = Object.hasOwn(moreFiles, url) ? moreFiles[url] : undefined;
      if (req.method === 'GET' && (url === imagePath || url === stallOncePath || more)) {
        record(200);
        res.writeHead(200, { 'Content-Type': 'application/octet-stream' });
        const stall = url === stallOncePath && !stalled.has(url);
        stalled.add(url);
        const stream = createReadStream(more ?? imageFile, stall ? { end: STALL_AFTER - 1 } : {});
        // a stalled download sends its first MiB, then nothing until the client goes away
        stream.pipe(res, { end: !stall });
        return;
      }
      record(404);
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found\n');
    });
  });
  await rm(socketPath, { force: true });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, resolve);
  });

  return {
    imagePath,
    stallOncePath,
    requests,
    reports,
    async waitForDownload(url, timeoutMs) {
      await waitFor(
        `a download of ${url}`,
        until(() => requests.some((r) => r.method === 'GET' && r.url === url)),
        { timeoutMs },
      );
    },
    waitForReport(uuid, timeoutMs) {
      return waitFor(`an instance report of ${uuid}`, () => reports.find((r) => r.uuid === uuid), {
        timeoutMs,
        intervalMs: 250,
      });
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
