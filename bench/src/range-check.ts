import { closeSync, openSync, readSync, statSync } from 'node:fs';
import http from 'node:http';

/**
 * What iPXE and `curl -C -` send to resume or split a download, checked
 * against a file server: status, Content-Range, Content-Length and the
 * very bytes of the file at those offsets.
 */

export interface RangeCase {
  name: string;
  failures: string[];
}

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

function get(url: string, headers: Record<string, string>, method = 'GET'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.setTimeout(30_000, () => req.destroy(new Error('no answer within 30 s')));
    req.end();
  });
}

function bytesOf(file: string, start: number, endInclusive: number): Buffer {
  const fd = openSync(file, 'r');
  try {
    const buffer = Buffer.alloc(endInclusive - start + 1);
    readSync(fd, buffer, 0, buffer.length, start);
    return buffer;
  } finally {
    closeSync(fd);
  }
}

/** The checks of one answer meant to be `bytes start-end/size` of the file. */
function expectPart(answer: Answer, file: string, size: number, start: number, end: number): string[] {
  const failures: string[] = [];
  if (answer.status !== 206) return [`status ${answer.status}, expected 206`];
  const range = `bytes ${start}-${end}/${size}`;
  if (answer.headers['content-range'] !== range) {
    failures.push(`Content-Range ${answer.headers['content-range']}, expected ${range}`);
  }
  if (Number(answer.headers['content-length']) !== end - start + 1) {
    failures.push(`Content-Length ${answer.headers['content-length']}, expected ${end - start + 1}`);
  }
  if (!answer.body.equals(bytesOf(file, start, end))) failures.push(`body is not bytes ${start}-${end} of the file`);
  return failures;
}

function expectWhole(answer: Answer, size: number): string[] {
  if (answer.status !== 200) return [`status ${answer.status}, expected 200 (the whole file)`];
  return answer.body.length === size ? [] : [`body of ${answer.body.length} bytes, the file has ${size}`];
}

/**
 * Every case against `url`, which serves `file` (a few MiB at least: the
 * whole file is read once, for the If-Range mismatch).
 */
export async function checkRanges(url: string, file: string): Promise<RangeCase[]> {
  const size = statSync(file).size;
  const head = await get(url, {}, 'HEAD');
  const etag = String(head.headers.etag ?? '');
  const lastModified = String(head.headers['last-modified'] ?? '');
  const cases: Array<[string, () => Promise<string[]>]> = [
    [
      'HEAD: Accept-Ranges: bytes, Content-Length, ETag, Last-Modified',
      async () => {
        const f: string[] = [];
        if (head.status !== 200) f.push(`status ${head.status}`);
        if (head.headers['accept-ranges'] !== 'bytes') f.push(`Accept-Ranges ${head.headers['accept-ranges']}`);
        if (Number(head.headers['content-length']) !== size) f.push(`Content-Length ${head.headers['content-length']}`);
        if (!etag) f.push('no ETag');
        if (!lastModified) f.push('no Last-Modified');
        return f;
      },
    ],
    ['bytes=0-0 (first byte)', async () => expectPart(await get(url, { Range: 'bytes=0-0' }), file, size, 0, 0)],
    [
      'bytes=1000-70535 (a middle part)',
      async () => expectPart(await get(url, { Range: 'bytes=1000-70535' }), file, size, 1000, 70535),
    ],
    [
      'bytes=N- (open-ended: curl -C resume)',
      async () => {
        const start = size - 123_457;
        return expectPart(await get(url, { Range: `bytes=${start}-` }), file, size, start, size - 1);
      },
    ],
    [
      'bytes=-500 (suffix)',
      async () => expectPart(await get(url, { Range: 'bytes=-500' }), file, size, size - 500, size - 1),
    ],
    [
      'bytes=N-M past the end (clamped to the last byte)',
      async () =>
        expectPart(await get(url, { Range: `bytes=${size - 10}-${size + 1000}` }), file, size, size - 10, size - 1),
    ],
    [
      'bytes=size- (unsatisfiable): 416, Content-Range bytes */size',
      async () => {
        const answer = await get(url, { Range: `bytes=${size}-` });
        const f: string[] = [];
        if (answer.status !== 416) f.push(`status ${answer.status}, expected 416`);
        if (answer.headers['content-range'] !== `bytes */${size}`) {
          f.push(`Content-Range ${answer.headers['content-range']}, expected bytes */${size}`);
        }
        return f;
      },
    ],
    [
      'If-Range: the current ETag → 206',
      async () => expectPart(await get(url, { Range: 'bytes=10-19', 'If-Range': etag }), file, size, 10, 19),
    ],
    [
      'If-Range: the Last-Modified date → 206',
      async () => expectPart(await get(url, { Range: 'bytes=10-19', 'If-Range': lastModified }), file, size, 10, 19),
    ],
    [
      'If-Range: another ETag → 200, the whole file',
      async () => expectWhole(await get(url, { Range: 'bytes=10-19', 'If-Range': '"not-this-one"' }), size),
    ],
    [
      'If-None-Match: the current ETag → 304',
      async () => {
        const answer = await get(url, { 'If-None-Match': etag });
        return answer.status === 304 && answer.body.length === 0 ? [] : [`status ${answer.status}, expected 304`];
      },
    ],
    [
      'If-Modified-Since: Last-Modified → 304',
      async () => {
        const answer = await get(url, { 'If-Modified-Since': lastModified });
        return answer.status === 304 ? [] : [`status ${answer.status}, expected 304`];
      },
    ],
  ];
  const results: RangeCase[] = [];
  for (const [name, check] of cases) {
    results.push({ name, failures: await check().catch((error: Error) => [error.message]) });
  }
  return results;
}
