// The virtual CD of a system's BMC: InsertMedia downloads the image the client names (over
// HTTP(S), from loopback or an address the service was told is the lab's) into the service's
// state directory and hands it to the machine's CD drive; EjectMedia takes it out and deletes
// the copy. The state is what the VirtualMedia resource reports.
import { randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { isObject } from './managed-system.js';
import { RedfishError, valueTypeError } from './redfish-error.js';

/** The Id of the one virtual medium of each manager. */
export const VIRTUAL_CD_ID = 'Cd';

/** A machine's CD drive: what the BMC hands an inserted image to (QEMU: its empty CD drive). */
export interface MachineCdDrive {
  /** Puts the image at `file` into the drive (replacing what was there). */
  insert(file: string): Promise<void>;
  /** Empties the drive; nothing when it is empty. */
  eject(): Promise<void>;
}

export interface VirtualMediaSettings {
  /** Where inserted images are downloaded to (one file per system, deleted at eject). */
  stateDir: string;
  /**
   * Addresses images may come from besides loopback (the lab's own: its bridge, the host's
   * addresses). Any other host is refused, as the service is not a general downloader.
   */
  allowedHosts?: readonly string[];
  /** Bound on one download; default 5 minutes. */
  downloadTimeoutMs?: number;
}

export interface VirtualMediaState {
  image: string | null;
  imageName: string | null;
  inserted: boolean;
  writeProtected: boolean;
  /** The downloaded copy, while an image is inserted. */
  file: string | undefined;
}

const EMPTY: VirtualMediaState = {
  image: null,
  imageName: null,
  inserted: false,
  writeProtected: true,
  file: undefined,
};

const INSERT_PARAMETERS = new Set([
  'Image',
  'Inserted',
  'WriteProtected',
  'UserName',
  'Password',
  'TransferMethod',
  'TransferProtocolType',
]);

export class VirtualCd {
  state: VirtualMediaState = { ...EMPTY };
  /** Inserts and ejects one at a time: a second insert waits for the first download. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly systemId: string,
    private readonly drive: MachineCdDrive,
    private readonly settings: VirtualMediaSettings,
  ) {}

  /** VirtualMedia.InsertMedia; what was inserted before is ejected first. */
  insert(parameters: unknown): Promise<void> {
    const request = parseInsert(parameters);
    return this.serially(async () => {
      const url = checkedImageUrl(request.image, this.settings.allowedHosts ?? []);
      await this.ejectNow();
      await mkdir(this.settings.stateDir, { recursive: true });
      const file = join(this.settings.stateDir, `${this.systemId}-${randomBytes(4).toString('hex')}.iso`);
      try {
        await download(url, file, request.credentials, this.settings.downloadTimeoutMs ?? 300_000);
        if (request.inserted) await this.drive.insert(file);
      } catch (error) {
        await rm(file, { force: true });
        if (error instanceof RedfishError) throw error;
        throw new RedfishError(
          500,
          'InternalError',
          `The image ${redacted(url)} could not be inserted: ${(error as Error).message}`,
        );
      }
      this.state = {
        image: request.image,
        imageName: decodeURIComponent(url.pathname.split('/').at(-1) ?? '') || null,
        inserted: request.inserted,
        writeProtected: request.writeProtected,
        file,
      };
    });
  }

  /** VirtualMedia.EjectMedia: the drive is emptied and the copy deleted. */
  eject(): Promise<void> {
    return this.serially(() => this.ejectNow());
  }

  private async ejectNow(): Promise<void> {
    const { file } = this.state;
    if (this.state.inserted) await this.drive.eject();
    this.state = { ...EMPTY };
    if (file) await rm(file, { force: true });
  }

  private serially<T>(work: () => Promise<T>): Promise<T> {
    const next = this.queue.then(work, work);
    this.queue = next.catch(() => undefined);
    return next;
  }
}

interface InsertRequest {
  image: string;
  inserted: boolean;
  writeProtected: boolean;
  credentials: { username: string; password: string } | undefined;
}

function parseInsert(parameters: unknown): InsertRequest {
  if (!isObject(parameters)) throw new RedfishError(400, 'MalformedJSON', 'The request body must be a JSON object.');
  for (const key of Object.keys(parameters)) {
    if (!INSERT_PARAMETERS.has(key)) {
      throw new RedfishError(
        400,
        'ActionParameterNotSupported',
        `The parameter ${key} for the action VirtualMedia.InsertMedia is not supported on the target resource.`,
        [`#/${key}`],
      );
    }
  }
  const { Image, Inserted = true, WriteProtected = true, UserName, Password } = parameters;
  if (Image === undefined) {
    throw new RedfishError(
      400,
      'ActionParameterMissing',
      'The action VirtualMedia.InsertMedia requires the parameter Image to be present in the request body.',
      ['#/Image'],
    );
  }
  if (typeof Image !== 'string') throw valueTypeError('Image', Image);
  if (typeof Inserted !== 'boolean') throw valueTypeError('Inserted', Inserted);
  if (typeof WriteProtected !== 'boolean') throw valueTypeError('WriteProtected', WriteProtected);
  if (UserName !== undefined && typeof UserName !== 'string') throw valueTypeError('UserName', UserName);
  if (Password !== undefined && typeof Password !== 'string') throw valueTypeError('Password', Password);
  const credentials =
    typeof UserName === 'string' ? { username: UserName, password: (Password as string | undefined) ?? '' } : undefined;
  return { image: Image, inserted: Inserted, writeProtected: WriteProtected, credentials };
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost)$/;

/** The image's URL when it is HTTP(S) from loopback or an allowed host; else 400. */
function checkedImageUrl(image: string, allowedHosts: readonly string[]): URL {
  let url: URL;
  try {
    url = new URL(image);
  } catch {
    throw imageNotAllowed(image, 'it is not a URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw imageNotAllowed(image, 'only HTTP(S) is served');
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  if (!LOOPBACK.test(host) && !allowedHosts.includes(host)) {
    throw imageNotAllowed(image, `${host} is neither loopback nor one of the lab's addresses`);
  }
  if (isIP(host) === 0 && host !== 'localhost') throw imageNotAllowed(image, 'the host must be an address');
  return url;
}

function imageNotAllowed(image: string, why: string): RedfishError {
  return new RedfishError(
    400,
    'ActionParameterValueError',
    `The value ${JSON.stringify(redacted(image))} for the parameter Image in the action VirtualMedia.InsertMedia is invalid: ${why}.`,
    ['#/Image'],
  );
}

function redacted(url: URL | string): string {
  try {
    const parsed = new URL(String(url));
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return String(url);
  }
}

/**
 * The image into `file`. A BMC does not check the server's certificate unless told to
 * (VerifyCertificate, which this service does not offer): the hosts are loopback or the lab's.
 */
function download(
  url: URL,
  file: string,
  credentials: { username: string; password: string } | undefined,
  timeoutMs: number,
): Promise<void> {
  const headers: Record<string, string> = {};
  const user = credentials ?? (url.username ? { username: url.username, password: url.password } : undefined);
  if (user) {
    const pair = `${decodeURIComponent(user.username)}:${decodeURIComponent(user.password)}`;
    headers.Authorization = `Basic ${Buffer.from(pair).toString('base64')}`;
  }
  const get = url.protocol === 'https:' ? https.get : http.get;
  return new Promise((resolve, reject) => {
    const request = get(url, { headers, rejectUnauthorized: false, timeout: timeoutMs }, (response) => {
      if (response.statusCode !== 200) {
        response.resume();
        reject(new Error(`the image server answered HTTP ${response.statusCode}`));
        return;
      }
      pipeline(response, createWriteStream(file, { mode: 0o644 }), { signal: AbortSignal.timeout(timeoutMs) }).then(
        resolve,
        reject,
      );
    });
    request.on('timeout', () => request.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    request.on('error', reject);
  });
}

/** The drive of a machine that exists only in memory: it holds the file name, as a test checks it. */
export class SimulatedCdDrive implements MachineCdDrive {
  /** The image file in the drive, or undefined. */
  medium: string | undefined;
  async insert(file: string): Promise<void> {
    this.medium = file;
  }
  async eject(): Promise<void> {
    this.medium = undefined;
  }
}
