import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A file the test server serves. */
export interface ServedImage {
  body: Buffer;
  /** ETag header; none when undefined. */
  etag?: string;
  /** Announce this Content-Length but close the connection after the body (a cut-off download). */
  announcedLength?: number;
}

/** A loopback HTTP server serving images by path, recording every request. */
export interface ImageServer {
  url: string;
  images: Map<string, ServedImage>;
  requests: { method: string; path: string; ifNoneMatch: string | undefined; authorization: string | undefined }[];
  close(): Promise<void>;
}

export async function startImageServer(): Promise<ImageServer> {
  const images = new Map<string, ServedImage>();
  const requests: ImageServer['requests'] = [];
  const server: Server = createServer((req: IncomingMessage, res) => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    const ifNoneMatch = req.headers['if-none-match'];
    requests.push({ method: req.method ?? '', path, ifNoneMatch, authorization: req.headers.authorization });
    const image = images.get(path);
    if (!image) {
      res.writeHead(404).end('not found');
      return;
    }
    const headers: Record<string, string> = { 'content-type': 'application/octet-stream' };
    if (image.etag) headers.etag = image.etag;
    if (image.etag && ifNoneMatch === image.etag) {
      res.writeHead(304, headers).end();
      return;
    }
    headers['content-length'] = String(image.announcedLength ?? image.body.length);
    res.writeHead(200, headers);
    if (image.announcedLength !== undefined) {
      res.write(image.body, () => res.destroy());
      return;
    }
    res.end(image.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    images,
    requests,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}
