import { createHash, type Hash } from 'node:crypto';
import { open } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { redactUrl } from '@bmaas/http-root';
import { InvalidImage } from '@bmaas/image-format';

/** The checksum an image must have: an algorithm node:crypto knows and its hex digest. */
export interface ImageHash {
  algo: string;
  value: string;
}

/** Hashes and counts what passes through on the way to the file. */
async function* hashing(
  source: AsyncIterable<Uint8Array>,
  hashes: Hash[],
  counted: { size: number },
): AsyncGenerator<Uint8Array> {
  for await (const chunk of source) {
    for (const hash of hashes) hash.update(chunk);
    counted.size += chunk.length;
    yield chunk;
  }
}

/**
 * Downloads `url` into `target` (a new file), hashing on the way; refuses
 * (InvalidImage) bytes whose digest is not `expected`. Returns the size and
 * the SHA-256 of what it wrote (what the conductor gives its agents).
 */
export async function downloadVerified(
  url: string,
  target: string,
  expected: ImageHash,
  timeoutMs: number,
): Promise<{ size: number; sha256: string }> {
  const shown = redactUrl(url);
  const parsed = new URL(url);
  const headers: Record<string, string> = {};
  if (parsed.username || parsed.password) {
    // fetch refuses URLs with credentials: they go in a Basic Authorization header
    const credentials = `${decodeURIComponent(parsed.username)}:${decodeURIComponent(parsed.password)}`;
    headers.authorization = `Basic ${Buffer.from(credentials).toString('base64')}`;
    parsed.username = '';
    parsed.password = '';
  }
  let response: Response;
  try {
    response = await fetch(parsed, { headers, signal: AbortSignal.timeout(timeoutMs) });
  } catch (error) {
    throw new Error(`Image download failed. URL: ${shown}; Error: ${(error as Error).message}`, { cause: error });
  }
  if (!response.ok || !response.body) {
    await response.body?.cancel();
    throw new Error(`Image download failed. URL: ${shown}; Error: HTTP ${response.status}`);
  }
  const asked = createHash(expected.algo);
  const sha256 = expected.algo === 'sha256' ? asked : createHash('sha256');
  const hashes = sha256 === asked ? [asked] : [asked, sha256];
  const file = await open(target, 'wx', 0o644);
  const counted = { size: 0 };
  try {
    const body = Readable.fromWeb(response.body as WebReadableStream<Uint8Array>);
    await pipeline(hashing(body, hashes, counted), file.createWriteStream());
  } catch (error) {
    throw new Error(`Image download failed. URL: ${shown}; Error: ${(error as Error).message}`, { cause: error });
  } finally {
    await file.close();
  }
  const got = asked.digest('hex');
  if (got !== expected.value.toLowerCase()) {
    throw new InvalidImage(
      `Image failed to verify against checksum. location: ${shown}; verification checksum: ${expected.value}; image checksum: ${got}`,
    );
  }
  return { size: counted.size, sha256: sha256 === asked ? got : sha256.digest('hex') };
}

/** The SHA-256 of a file, read once. */
export async function sha256Of(path: string): Promise<string> {
  const file = await open(path, 'r');
  try {
    const hash = createHash('sha256');
    for await (const chunk of file.createReadStream()) hash.update(chunk as Buffer);
    return hash.digest('hex');
  } finally {
    await file.close();
  }
}
