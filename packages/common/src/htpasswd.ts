import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import bcrypt from 'bcryptjs';
import { ConfigError } from './errors.js';

const BCRYPT = /^\$2[aby]\$\d{2}\$[./A-Za-z0-9]{53}$/;
/** Verified credentials are remembered (as digests): a bcrypt round per request would dominate hot paths. */
const MAX_REMEMBERED = 1024;

export interface BasicCredentials {
  user: string;
  password: string;
}

/** The user and password of a `Basic …` Authorization header, or undefined when it is not one. */
export function parseBasicAuthorization(header: string | undefined): BasicCredentials | undefined {
  const match = header ? /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header) : null;
  if (!match) return undefined;
  const decoded = Buffer.from(match[1] as string, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  return { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/**
 * Users of an Apache htpasswd file with bcrypt entries (`user:$2y$…`), read
 * once at start, for the REST API's and JSON-RPC's http_basic auth. Other
 * digest kinds are refused at load time: as Ironic, bcrypt only.
 */
export class HtpasswdUsers {
  private readonly remembered = new Set<string>();

  /**
   * Checked in place of an unknown user's hash, at the highest cost the file
   * uses, so an unknown user takes as long to refuse as a wrong password and
   * the time of an answer does not tell which user names exist.
   */
  private readonly dummyHash: string;

  private constructor(private readonly hashes: ReadonlyMap<string, string>) {
    const costs = [...hashes.values()].map((hash) => Number(hash.slice(4, 6)));
    const cost = String(costs.length > 0 ? Math.max(...costs) : 10).padStart(2, '0');
    this.dummyHash = `$2b$${cost}$${'A'.repeat(53)}`;
  }

  static fromFile(path: string): HtpasswdUsers {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (error) {
      throw new ConfigError(`${path}: cannot read htpasswd file (${(error as NodeJS.ErrnoException).code ?? error})`);
    }
    return HtpasswdUsers.parse(text, path);
  }

  static parse(text: string, source = 'htpasswd'): HtpasswdUsers {
    const hashes = new Map<string, string>();
    text.split(/\r?\n/).forEach((raw, index) => {
      const line = raw.trim();
      if (line === '' || line.startsWith('#')) return;
      const colon = line.indexOf(':');
      const hash = line.slice(colon + 1);
      if (colon <= 0 || !BCRYPT.test(hash)) {
        throw new ConfigError(`${source}:${index + 1}: only "user:<bcrypt hash>" entries are supported`);
      }
      hashes.set(line.slice(0, colon), hash);
    });
    return new HtpasswdUsers(hashes);
  }

  async verify(user: string, password: string): Promise<boolean> {
    const hash = this.hashes.get(user);
    if (hash === undefined) {
      await bcrypt.compare(password, this.dummyHash);
      return false;
    }
    const digest = createHash('sha256').update(`${user}\0${password}\0${hash}`).digest('hex');
    if (this.remembered.has(digest)) return true;
    if (!(await bcrypt.compare(password, hash))) return false;
    if (this.remembered.size >= MAX_REMEMBERED) this.remembered.clear();
    this.remembered.add(digest);
    return true;
  }

  /** Checks a `Basic …` Authorization header. */
  async verifyHeader(header: string | undefined): Promise<boolean> {
    const credentials = parseBasicAuthorization(header);
    return credentials !== undefined && this.verify(credentials.user, credentials.password);
  }
}
