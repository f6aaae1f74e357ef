// The SessionService's sessions: a POST to Sessions with the account's name and password gives
// an X-Auth-Token; the token is good until it is deleted or it expires (idle timeout, or
// expireAll() for a test that wants the next request to meet a 401).
import { randomBytes, timingSafeEqual } from 'node:crypto';

export interface Session {
  id: string;
  token: string;
  userName: string;
  lastUsed: number;
}

export class SessionStore {
  private readonly sessions = new Map<string, Session>();
  private nextId = 1;

  constructor(
    private readonly account: { username: string; password: string },
    /** Idle timeout, seconds (SessionService.SessionTimeout). */
    public timeoutSeconds: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whether the name and password are the account's. */
  checkCredentials(username: unknown, password: unknown): boolean {
    return (
      typeof username === 'string' &&
      typeof password === 'string' &&
      safeEqual(username, this.account.username) &&
      safeEqual(password, this.account.password)
    );
  }

  create(userName: string): Session {
    const session = {
      id: String(this.nextId++),
      token: randomBytes(24).toString('hex'),
      userName,
      lastUsed: this.now(),
    };
    this.sessions.set(session.id, session);
    return session;
  }

  /** The live session of a token (its idle time restarts), or undefined: unknown or expired. */
  byToken(token: string): Session | undefined {
    for (const session of this.sessions.values()) {
      if (!safeEqual(session.token, token)) continue;
      if (this.now() - session.lastUsed > this.timeoutSeconds * 1000) {
        this.sessions.delete(session.id);
        return undefined;
      }
      session.lastUsed = this.now();
      return session;
    }
    return undefined;
  }

  get(id: string): Session | undefined {
    return this.sessions.get(id);
  }

  delete(id: string): boolean {
    return this.sessions.delete(id);
  }

  list(): Session[] {
    return [...this.sessions.values()];
  }

  /**
   * Whether a request's credentials are good: a live session's X-Auth-Token, else the
   * account's name and password in an `Authorization: Basic` header.
   */
  authorises(token: string | undefined, authorization: string | undefined): boolean {
    if (token !== undefined) return this.byToken(token) !== undefined;
    const basic = /^Basic\s+(\S+)$/i.exec(authorization ?? '');
    if (!basic?.[1]) return false;
    const decoded = Buffer.from(basic[1], 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    return colon >= 0 && this.checkCredentials(decoded.slice(0, colon), decoded.slice(colon + 1));
  }

  /** Every session ends now: the next request with any of their tokens gets a 401. */
  expireAll(): void {
    this.sessions.clear();
  }
}

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
