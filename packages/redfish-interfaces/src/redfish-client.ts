import { createHash } from 'node:crypto';
import {
  type HttpExchangeResponse,
  HttpTransportError,
  httpExchange,
  isUntrustedCertificate,
  KeyedLimiter,
  type Logger,
  RedfishConnectionError,
  RedfishError,
} from '@bmaas/common';
import { bmcName, type RedfishTarget } from './driver-info.js';
import type { RedfishSettings } from './redfish-config.js';

/** A Redfish resource as JSON. */
export type RedfishResource = Record<string, unknown>;

export interface RedfishClientOptions {
  settings: Pick<
    RedfishSettings,
    'connection_attempts' | 'connection_retry_interval' | 'request_timeout' | 'max_concurrent_requests'
  >;
  logger: Logger;
  /** Waits between attempts; tests pass a faster one. */
  sleep?: (ms: number) => Promise<void>;
}

/** An open Redfish session: its token and the resource to DELETE to log out. */
interface Session {
  token: string;
  location: string | undefined;
  target: RedfishTarget;
}

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

/** Statuses after which the same request is sent again: the BMC is busy or restarting, not saying no. */
const RETRYABLE_STATUS = (status: number) => status >= 500;

/**
 * The conductor's client of Redfish services, shared by every redfish
 * interface of one conductor configuration. Per BMC (scheme://authority):
 * at most [redfish]max_concurrent_requests requests in flight, each bounded
 * by request_timeout and sent again on no answer, a connection error or a
 * 5xx up to connection_attempts times; one session per address, user name,
 * verify_ca and password (X-Auth-Token, opened on first use, opened again once on a
 * 401, closed by close()) or HTTP basic credentials, as redfish_auth_type
 * says. GETs given the same `scope` (a task) share one request per
 * resource, until another request goes to that BMC. Wrong credentials and an untrusted certificate fail at once, with
 * one line saying so. The password is sent, never logged.
 */
export class RedfishClient {
  private readonly limiter: KeyedLimiter;
  private readonly sessions = new Map<string, Session>();
  private readonly opening = new Map<string, Promise<Session | 'basic'>>();
  /** Services found to offer no sessions (auth type auto): basic credentials from then on. */
  private readonly basicOnly = new Set<string>();
  /** The only system of services whose nodes name none, by service root. */
  private readonly onlySystem = new Map<string, string>();
  private readonly sleep: (ms: number) => Promise<void>;
  /** GETs shared within a scope, by BMC, credentials and path, with the BMC's write count they were sent at. */
  private readonly scopedGets = new WeakMap<object, Map<string, { writes: number; body: Promise<RedfishResource> }>>();
  /** Requests other than GETs sent to each BMC: a shared GET from before one is read again. */
  private readonly writes = new Map<string, number>();

  constructor(private readonly options: RedfishClientOptions) {
    this.limiter = new KeyedLimiter(options.settings.max_concurrent_requests);
    this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  }

  /**
   * GET a resource; RedfishError for an answer other than 2xx. With a `scope` (the task
   * reading), a second GET of the same resource in that scope gets the first one's answer,
   * unless another request went to the BMC meanwhile: the power state sync reads the power
   * state and the health of one ComputerSystem with one request.
   */
  get(target: RedfishTarget, path: string, scope?: object): Promise<RedfishResource> {
    const read = () => this.request(target, 'GET', path).then((response) => this.jsonOf(target, 'GET', path, response));
    if (scope === undefined) return read();
    let gets = this.scopedGets.get(scope);
    if (!gets) {
      gets = new Map();
      this.scopedGets.set(scope, gets);
    }
    const key = `${sessionKey(target)}\n${path}`;
    const writes = this.writes.get(target.origin) ?? 0;
    const shared = gets.get(key);
    if (shared && shared.writes === writes) return shared.body;
    const entry = { writes, body: read() };
    gets.set(key, entry);
    entry.body.catch(() => {
      if (gets.get(key) === entry) gets.delete(key);
    });
    return entry.body;
  }

  /** GET a resource, or undefined when the service answers 404 (an optional resource). */
  async getOptional(target: RedfishTarget, path: string): Promise<RedfishResource | undefined> {
    const response = await this.request(target, 'GET', path, undefined, { allow404: true });
    return response.status === 404 ? undefined : this.jsonOf(target, 'GET', path, response);
  }

  /** PATCH a resource (If-Match with the ETag when given); RedfishError for an answer other than 2xx. */
  async patch(target: RedfishTarget, path: string, body: RedfishResource, etag?: string): Promise<void> {
    const response = await this.request(target, 'PATCH', path, body, etag ? { headers: { 'If-Match': etag } } : {});
    this.requireSuccess(target, 'PATCH', path, response);
  }

  /** POST to a resource or an action; RedfishError for an answer other than 2xx. */
  async post(target: RedfishTarget, path: string, body: RedfishResource): Promise<HttpExchangeResponse> {
    const response = await this.request(target, 'POST', path, body);
    this.requireSuccess(target, 'POST', path, response);
    return response;
  }

  /** The members of a collection, each read (in order). */
  async members(target: RedfishTarget, collectionPath: string): Promise<RedfishResource[]> {
    const collection = await this.get(target, collectionPath);
    const members = Array.isArray(collection.Members) ? collection.Members : [];
    const resources: RedfishResource[] = [];
    for (const member of members) {
      const path = odataId(member);
      if (path) resources.push(await this.get(target, path));
    }
    return resources;
  }

  /**
   * The path of the node's ComputerSystem: redfish_system_id (a path, or an
   * id under the Systems collection), else the service's only system.
   */
  async systemPath(target: RedfishTarget): Promise<string> {
    if (target.systemId !== undefined) {
      return target.systemId.startsWith('/') ? target.systemId : `${target.rootPrefix}Systems/${target.systemId}`;
    }
    const key = `${target.origin}${target.rootPrefix}`;
    const known = this.onlySystem.get(key);
    if (known) return known;
    const root = await this.get(target, target.rootPrefix);
    const systemsPath = odataId(root.Systems) ?? `${target.rootPrefix}Systems`;
    const systems = await this.get(target, systemsPath);
    const ids = (Array.isArray(systems.Members) ? systems.Members : []).map(odataId).filter((id) => id !== undefined);
    if (ids.length !== 1) {
      throw new RedfishError(
        `BMC ${bmcName(target)} has ${ids.length} systems${ids.length > 0 ? ` (${ids.join(', ')})` : ''}: set driver_info.redfish_system_id to the one to drive.`,
      );
    }
    this.onlySystem.set(key, ids[0] as string);
    return ids[0] as string;
  }

  /** Logs out of every session this client opened (conductor shutdown). Best effort, one attempt each. */
  async close(): Promise<void> {
    const sessions = [...this.sessions.values()];
    this.sessions.clear();
    await Promise.all(sessions.map((session) => this.logout(session)));
  }

  /** Sessions open now (tests, logs). */
  openSessions(): number {
    return this.sessions.size;
  }

  // -- requests -----------------------------------------------------------------------

  private async request(
    target: RedfishTarget,
    method: Method,
    path: string,
    body?: RedfishResource,
    options: { headers?: Record<string, string>; allow404?: boolean } = {},
  ): Promise<HttpExchangeResponse> {
    const { connection_attempts: attempts, connection_retry_interval: interval } = this.options.settings;
    const bmc = bmcName(target);
    if (method !== 'GET') this.writes.set(target.origin, (this.writes.get(target.origin) ?? 0) + 1);
    let last = '';
    for (let attempt = 1; ; attempt++) {
      try {
        const response = await this.authorised(target, method, path, body, options.headers ?? {});
        if (!RETRYABLE_STATUS(response.status)) return response;
        last = `HTTP ${response.status}${messageOf(response) ? `: ${messageOf(response)}` : ''}`;
      } catch (error) {
        if (!(error instanceof HttpTransportError)) throw error;
        if (isUntrustedCertificate(error)) throw untrustedCertificate(target, error);
        last = error.message;
      }
      if (attempt >= attempts) break;
      this.options.logger.warn('Redfish request failed, retrying', { bmc, method, path, attempt, error: last });
      await this.sleep(interval * 1000);
    }
    throw new RedfishConnectionError(
      `BMC ${bmc} gave no usable answer to ${method} ${path} after ${attempts} attempts: ${last}`,
      { bmc, path },
    );
  }

  /** One attempt with the target's credentials; a session refused with 401 is opened again once. */
  private async authorised(
    target: RedfishTarget,
    method: Method,
    path: string,
    body: RedfishResource | undefined,
    headers: Record<string, string>,
  ): Promise<HttpExchangeResponse> {
    let credentials = await this.credentialsFor(target);
    let response = await this.exchange(target, method, path, body, { ...headers, ...credentials.headers });
    if (response.status === 401 && credentials.session) {
      // The session expired or the BMC forgot it: a new one, once.
      this.options.logger.info('Redfish session refused, opening a new one', { bmc: bmcName(target) });
      this.forget(credentials.session);
      credentials = await this.credentialsFor(target);
      response = await this.exchange(target, method, path, body, { ...headers, ...credentials.headers });
    }
    if (response.status === 401) throw wrongCredentials(target);
    return response;
  }

  private exchange(
    target: RedfishTarget,
    method: Method,
    path: string,
    body: RedfishResource | undefined,
    headers: Record<string, string>,
  ): Promise<HttpExchangeResponse> {
    const bmc = bmcName(target);
    return this.limiter.run(bmc, async () => {
      const started = Date.now();
      const response = await httpExchange({
        method,
        url: new URL(path, target.origin),
        body,
        headers: { 'OData-Version': '4.0', ...headers },
        timeoutMs: this.options.settings.request_timeout * 1000,
        verify: target.verify,
      });
      this.options.logger.debug('Redfish request', {
        bmc,
        method,
        path,
        status: response.status,
        elapsedMs: Date.now() - started,
      });
      return response;
    });
  }

  // -- credentials --------------------------------------------------------------------

  private async credentialsFor(target: RedfishTarget): Promise<{ headers: Record<string, string>; session?: Session }> {
    if (target.username === undefined) return { headers: {} };
    const key = sessionKey(target);
    if (target.authType === 'basic' || this.basicOnly.has(key)) return { headers: basicHeader(target) };
    const open = this.sessions.get(key);
    if (open) return { headers: { 'X-Auth-Token': open.token }, session: open };
    let opening = this.opening.get(key);
    if (!opening) {
      opening = this.openSession(target).finally(() => this.opening.delete(key));
      this.opening.set(key, opening);
    }
    const session = await opening;
    if (session === 'basic') return { headers: basicHeader(target) };
    return { headers: { 'X-Auth-Token': session.token }, session };
  }

  /** POSTs the credentials to the service's session collection (Links.Sessions of the service root). */
  private async openSession(target: RedfishTarget): Promise<Session | 'basic'> {
    const key = sessionKey(target);
    const bmc = bmcName(target);
    const root = await this.exchange(target, 'GET', target.rootPrefix, undefined, {});
    if (root.status >= 500) throw new HttpTransportError(`HTTP ${root.status} for the service root`, false);
    const links = parseJson(root.text)?.Links as RedfishResource | undefined;
    const sessionsPath = odataId(links?.Sessions) ?? `${target.rootPrefix}SessionService/Sessions`;
    const response = await this.exchange(
      target,
      'POST',
      sessionsPath,
      { UserName: target.username, Password: target.password ?? '' },
      {},
    );
    if (response.status === 401 || response.status === 403) throw wrongCredentials(target);
    if (response.status >= 500) throw new HttpTransportError(`HTTP ${response.status} opening a session`, false);
    const token = headerOf(response, 'x-auth-token');
    if (response.status >= 300 || !token) {
      if (target.authType === 'auto') {
        this.options.logger.info('Redfish service offers no sessions, using basic credentials', {
          bmc,
          status: response.status,
        });
        this.basicOnly.add(key);
        return 'basic';
      }
      throw new RedfishError(
        `BMC ${bmc} opened no session (HTTP ${response.status} from ${sessionsPath}): set driver_info.redfish_auth_type to basic or auto.`,
      );
    }
    const location = headerOf(response, 'location') ?? odataId(parseJson(response.text));
    const session: Session = {
      token,
      location: location ? new URL(location, target.origin).pathname : undefined,
      target,
    };
    this.sessions.set(key, session);
    this.options.logger.info('Redfish session opened', { bmc, session: session.location });
    return session;
  }

  private forget(session: Session): void {
    const key = sessionKey(session.target);
    if (this.sessions.get(key) === session) this.sessions.delete(key);
  }

  private async logout(session: Session): Promise<void> {
    if (!session.location) return;
    const bmc = bmcName(session.target);
    try {
      const response = await this.exchange(session.target, 'DELETE', session.location, undefined, {
        'X-Auth-Token': session.token,
      });
      this.options.logger.info('Redfish session closed', { bmc, session: session.location, status: response.status });
    } catch (error) {
      this.options.logger.warn('Redfish session not closed', { bmc, error: (error as Error).message });
    }
  }

  // -- answers ------------------------------------------------------------------------

  private requireSuccess(target: RedfishTarget, method: Method, path: string, response: HttpExchangeResponse): void {
    if (response.status >= 200 && response.status < 300) return;
    const detail = messageOf(response);
    throw new RedfishError(
      `BMC ${bmcName(target)} answered ${method} ${path} with HTTP ${response.status}${detail ? `: ${detail}` : ''}`,
      { bmc: bmcName(target), path, status: response.status },
    );
  }

  private jsonOf(target: RedfishTarget, method: Method, path: string, response: HttpExchangeResponse): RedfishResource {
    this.requireSuccess(target, method, path, response);
    const body = parseJson(response.text);
    if (!body)
      throw new RedfishError(`BMC ${bmcName(target)} answered ${method} ${path} with a body that is no JSON object.`);
    return body;
  }
}

/** The @odata.id of a link ({"@odata.id": …}), if it is one. */
export function odataId(value: unknown): string | undefined {
  const id = (value as RedfishResource | null | undefined)?.['@odata.id'];
  return typeof id === 'string' && id !== '' ? id : undefined;
}

/**
 * A session is shared by the nodes of one address, user name, verify_ca and
 * password (a digest of it): a node with a wrong password must not ride on
 * a session another node opened with the right one.
 */
function sessionKey(target: RedfishTarget): string {
  const password = createHash('sha256')
    .update(target.password ?? '')
    .digest('hex');
  return `${target.origin}\n${target.username ?? ''}\n${target.verifySetting}\n${password}`;
}

function basicHeader(target: RedfishTarget): Record<string, string> {
  const credentials = Buffer.from(`${target.username ?? ''}:${target.password ?? ''}`).toString('base64');
  return { Authorization: `Basic ${credentials}` };
}

function headerOf(response: HttpExchangeResponse, name: string): string | undefined {
  const value = response.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function parseJson(text: string): RedfishResource | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as RedfishResource)
      : undefined;
  } catch {
    return undefined;
  }
}

/** The message of a Redfish error body (error.@Message.ExtendedInfo, else error.message), short. */
function messageOf(response: HttpExchangeResponse): string {
  const error = parseJson(response.text)?.error as RedfishResource | undefined;
  if (!error) return '';
  const extended = error['@Message.ExtendedInfo'];
  const messages = Array.isArray(extended)
    ? extended.map((info) => (info as RedfishResource).Message).filter((m): m is string => typeof m === 'string')
    : [];
  const text = messages.length > 0 ? messages.join('; ') : typeof error.message === 'string' ? error.message : '';
  return text.slice(0, 300);
}

function wrongCredentials(target: RedfishTarget): RedfishConnectionError {
  return new RedfishConnectionError(
    `BMC ${bmcName(target)} refused the credentials (HTTP 401): wrong redfish_username or redfish_password in driver_info.`,
    { bmc: bmcName(target) },
  );
}

function untrustedCertificate(target: RedfishTarget, error: HttpTransportError): RedfishConnectionError {
  return new RedfishConnectionError(
    `BMC ${bmcName(target)} presented a TLS certificate that is not trusted (${error.code}): set driver_info.redfish_verify_ca to the CA bundle that signed it, or to false to not verify it.`,
    { bmc: bmcName(target) },
  );
}
