import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ConfigError } from '@bmaas/common';
import bcrypt from 'bcryptjs';

const BCRYPT = /^\$2[aby]\$\d{2}\$[./A-Za-z0-9]{53}$/;
/** Verified credentials are remembered (as digests): a bcrypt round per call would dominate the boot path. */
const MAX_REMEMBERED = 1024;

/** Users of an Apache htpasswd file with bcrypt entries (`user:$2y$…`), read once at start; as Ironic, bcrypt only. */
export class HtpasswdFile {
  private readonly remembered = new Set<string>();

  private constructor(private readonly hashes: ReadonlyMap<string, string>) {}

  static read(path: string): HtpasswdFile {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch (error) {
      throw new ConfigError(`${path}: cannot read htpasswd file (${(error as NodeJS.ErrnoException).code ?? error})`);
    }
    const hashes = new Map<string, string>();
    text.split(/\r?\n/).forEach((raw, index) => {
      const line = raw.trim();
      if (line === '' || line.startsWith('#')) return;
      const colon = line.indexOf(':');
      const hash = line.slice(colon + 1);
      if (colon <= 0 || !BCRYPT.test(hash)) {
        throw new ConfigError(`${path}:${index + 1}: only "user:<bcrypt hash>" entries are supported`);
      }
      hashes.set(line.slice(0, colon), hash);
    });
    return new HtpasswdFile(hashes);
  }

  /** Checks a `Basic …` Authorization header. */
  async verifyHeader(header: string | undefined): Promise<boolean> {
    const match = /^Basic\s+([A-Za-z0-9+/=]+)$/i.exec(header ?? '');
    if (!match) return false;
    const decoded = Buffer.from(match[1] as string, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) return false;
    return this.verify(decoded.slice(0, colon), decoded.slice(colon + 1));
  }

  async verify(user: string, password: string): Promise<boolean> {
    const hash = this.hashes.get(user);
    if (hash === undefined) return false;
    const digest = createHash('sha256').update(`${user}\0${password}\0${hash}`).digest('hex');
    if (this.remembered.has(digest)) return true;
    if (!(await bcrypt.compare(password, hash))) return false;
    if (this.remembered.size >= MAX_REMEMBERED) this.remembered.clear();
    this.remembered.add(digest);
    return true;
  }
}
