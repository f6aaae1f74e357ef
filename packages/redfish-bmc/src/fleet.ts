// A fleet of simulated BMCs in one process: thousands of Redfish services, each on its own
// loopback address (127.x.y.z, one port for all), each with one ComputerSystem of its own
// (SimulatedMachinePower), its own sessions, and the way real BMCs answer a fleet's poller:
// slowly (a latency distribution), sometimes with a 5xx, sometimes not at all. It counts what
// a fleet's client must not do: more than one request in flight to one BMC.
//
// It serves what a conductor asks a BMC it watches and powers (service root, sessions, the
// system, its Reset action, its boot override) with the resources, sessions and errors of the
// full service (createRedfishApp); anything else is Redfish's 404. One express app per BMC
// would cost ~80 KiB each; here a BMC is its system, its sessions and a few counters.
import { randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import { isObject, ManagedSystem } from './managed-system.js';
import { ROOT } from './odata.js';
import { errorBody, notFound, propertyUnknown, RedfishError, unauthorized } from './redfish-error.js';
import { SESSIONS_PATH, serviceRoot, session, systemCollection } from './service-resources.js';
import { SessionStore } from './sessions.js';
import { SimulatedMachinePower } from './simulated-power.js';
import { computerSystem, systemPath } from './system-resources.js';

/** How long a BMC takes to answer: log-normal, cut at maxMs. */
export interface LatencyDistribution {
  medianMs: number;
  /** The 99th percentile before the cut (sets the spread). */
  p99Ms: number;
  maxMs: number;
}

export const DEFAULT_FLEET_LATENCY: LatencyDistribution = { medianMs: 150, p99Ms: 1000, maxMs: 2000 };

export interface RedfishFleetOptions {
  /** BMCs in the fleet. */
  count: number;
  /** Address of the first BMC; BMC i listens on the i-th address after it. Default 127.1.0.1. */
  firstAddress?: string;
  /** The port every BMC listens on; default a free port of the first address. */
  port?: number;
  latency?: LatencyDistribution;
  /** Share of requests answered 500 or 503 (after the latency); default 0.002. */
  errorRate?: number;
  /** Share of requests never answered (the connection is dropped after hangMs); default 0.001. */
  timeoutRate?: number;
  /** How long an unanswered request is held before its connection is dropped; default 120 s. */
  hangMs?: number;
  /** Out-of-band changes (power toggled or health flipped) per minute over the whole fleet; default count / 100. */
  changesPerMinute?: number;
  /** Initial power state of every system; default On. */
  powerState?: 'On' | 'Off';
  username?: string;
  password?: string;
  /** Idle timeout of a session, seconds; default 1800. */
  sessionTimeoutSeconds?: number;
  /** Random source (tests pass a seeded one); default Math.random. */
  random?: () => number;
}

/** One BMC of the fleet. */
export interface FleetBmc {
  readonly address: string;
  readonly system: ManagedSystem;
  readonly power: SimulatedMachinePower;
  readonly sessions: SessionStore;
  readonly uuid: string;
  requests: number;
  inFlight: number;
  maxInFlight: number;
  /** Requests that arrived while another one to this BMC was in flight. */
  overlapping: number;
  /** Date.now() of the last answered GET of the system (a reading of its power and health); 0: never. */
  lastSystemRead: number;
  sessionsOpened: number;
}

/** What the fleet saw; `since` figures are about BMCs whose system was not read since then. */
export interface FleetStats {
  bmcs: number;
  requests: number;
  /** Answers by status, plus `timeout` for requests never answered. */
  answers: Record<string, number>;
  sessionsOpened: number;
  sessionsOpen: number;
  /** Highest number of requests in flight to one BMC, and requests that met another in flight. */
  maxInFlight: number;
  overlapping: number;
  /** BMCs whose system was never read. */
  neverRead: number;
  /** Age of the oldest last reading among BMCs read at least once, ms. */
  oldestReadingMs: number;
  /** BMCs not read since `since` (when asked). */
  notReadSince?: number;
  /** Out-of-band changes made so far. */
  changes: number;
}

export interface RedfishFleet {
  readonly bmcs: readonly FleetBmc[];
  readonly port: number;
  readonly username: string;
  readonly password: string;
  /** http://address:port of BMC i. */
  url(index: number): string;
  /** The system path every BMC serves (the nodes' redfish_system_id). */
  readonly systemPath: string;
  /** Over the first `count` BMCs (default all); `since`: Date.now() from which a reading counts. */
  stats(since?: number, count?: number): FleetStats;
  close(): Promise<void>;
}

const SYSTEM_ID = 'System.1';
const SYSTEM_PATH = `${ROOT}/Systems/${SYSTEM_ID}`;

/** 127.a.b.c + offset, staying in 127.0.0.0/8 and off .0 and .255 host bytes. */
export function fleetAddress(first: string, offset: number): string {
  const parts = first.split('.').map(Number);
  if (parts.length !== 4 || parts[0] !== 127 || parts.some((p) => !Number.isInteger(p) || p < 0 || p > 255)) {
    throw new Error(`a fleet's first address must be in 127.0.0.0/8, got ${first}`);
  }
  // 254 usable host bytes per /24: .1 … .254
  const start = ((parts[1] as number) * 256 + (parts[2] as number)) * 254 + ((parts[3] as number) - 1);
  const n = start + offset;
  const last = (n % 254) + 1;
  const block = Math.floor(n / 254);
  const second = Math.floor(block / 256);
  if (second > 255) throw new Error(`a fleet of this size does not fit in 127.0.0.0/8 after ${first}`);
  return `127.${second}.${block % 256}.${last}`;
}

/** A log-normal draw (Box-Muller) with the given median and 99th percentile, cut at max. */
export function latencyDraw(latency: LatencyDistribution, random: () => number): number {
  const sigma = Math.log(Math.max(latency.p99Ms, latency.medianMs) / latency.medianMs) / 2.326;
  const u = Math.max(random(), Number.EPSILON);
  const z = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * random());
  return Math.min(latency.maxMs, latency.medianMs * Math.exp(sigma * z));
}

export async function startRedfishFleet(options: RedfishFleetOptions): Promise<RedfishFleet> {
  if (!Number.isInteger(options.count) || options.count < 1) throw new Error('a fleet needs at least one BMC');
  const first = options.firstAddress ?? '127.1.0.1';
  const latency = options.latency ?? DEFAULT_FLEET_LATENCY;
  const errorRate = options.errorRate ?? 0.002;
  const timeoutRate = options.timeoutRate ?? 0.001;
  const hangMs = options.hangMs ?? 120_000;
  const random = options.random ?? Math.random;
  const username = options.username ?? 'admin';
  const password = options.password ?? randomBytes(9).toString('base64url');
  const sessionTimeout = options.sessionTimeoutSeconds ?? 1800;

  const bmcs: FleetBmc[] = [];
  const byAddress = new Map<string, FleetBmc>();
  for (let i = 0; i < options.count; i++) {
    const power = new SimulatedMachinePower({ powerState: options.powerState ?? 'On' });
    const bmc: FleetBmc = {
      address: fleetAddress(first, i),
      system: new ManagedSystem({ id: SYSTEM_ID, power, hardware: { serialNumber: `SN-FLEET-${i}` } }),
      power,
      sessions: new SessionStore({ username, password }, sessionTimeout),
      uuid: randomUUID(),
      requests: 0,
      inFlight: 0,
      maxInFlight: 0,
      overlapping: 0,
      lastSystemRead: 0,
      sessionsOpened: 0,
    };
    bmcs.push(bmc);
    byAddress.set(bmc.address, bmc);
  }

  const answers: Record<string, number> = {};
  const count = (key: string) => {
    answers[key] = (answers[key] ?? 0) + 1;
  };
  const hung = new Set<http.ServerResponse>();

  const server = http.createServer({ keepAliveTimeout: 5000 }, (req, res) => {
    const bmc = byAddress.get(req.socket.localAddress ?? '');
    if (!bmc) {
      res.destroy();
      return;
    }
    bmc.requests += 1;
    bmc.inFlight += 1;
    if (bmc.inFlight > 1) bmc.overlapping += 1;
    bmc.maxInFlight = Math.max(bmc.maxInFlight, bmc.inFlight);
    let settled = false;
    const settle = () => {
      if (settled) return;
      settled = true;
      bmc.inFlight -= 1;
    };
    res.once('finish', settle);
    res.once('close', settle);
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const draw = random();
      if (draw < timeoutRate) {
        // No answer: the client's timeout is what ends it (or the hang bound, for a client that has none).
        count('timeout');
        hung.add(res);
        const timer = setTimeout(() => res.destroy(), hangMs);
        res.once('close', () => {
          clearTimeout(timer);
          hung.delete(res);
        });
        return;
      }
      setTimeout(
        () => {
          if (res.destroyed) return;
          if (draw < timeoutRate + errorRate) {
            const status = random() < 0.5 ? 503 : 500;
            const error =
              status === 503
                ? new RedfishError(503, 'ServiceTemporarilyUnavailable', 'The service is temporarily unavailable.')
                : new RedfishError(500, 'InternalError', 'The request failed due to an internal service error.');
            send(res, status, errorBody(error), status === 503 ? { 'Retry-After': '1' } : {});
            return;
          }
          answer(bmc, req, body).then(
            ({ status, json, headers }) => send(res, status, json, headers),
            (error: unknown) => {
              const redfish =
                error instanceof RedfishError
                  ? error
                  : new RedfishError(500, 'InternalError', `The request failed: ${(error as Error).message}`);
              send(res, redfish.status, errorBody(redfish), {});
            },
          );
        },
        latencyDraw(latency, random),
      ).unref();
    });
  });
  const send = (res: http.ServerResponse, status: number, json: unknown, headers: Record<string, string>) => {
    count(String(status));
    const text = json === undefined ? '' : JSON.stringify(json);
    res.writeHead(status, {
      'OData-Version': '4.0',
      ...(text ? { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) } : {}),
      ...(status === 401 ? { 'WWW-Authenticate': 'Basic realm="Redfish"' } : {}),
      ...headers,
    });
    res.end(text);
  };

  // One listening socket per BMC, their connections all handed to the one HTTP server.
  const listeners: net.Server[] = [];
  const sockets = new Set<net.Socket>();
  const listen = (address: string, port: number) =>
    new Promise<number>((resolve, reject) => {
      const listener = net.createServer((socket) => {
        sockets.add(socket);
        socket.once('close', () => sockets.delete(socket));
        server.emit('connection', socket);
      });
      listener.once('error', reject);
      listener.listen({ host: address, port, backlog: 64 }, () => {
        listener.off('error', reject);
        listeners.push(listener);
        resolve((listener.address() as net.AddressInfo).port);
      });
    });
  const closeListeners = () =>
    Promise.all(listeners.map((l) => new Promise<void>((resolve) => l.close(() => resolve()))));
  let port: number;
  try {
    port = await listen((bmcs[0] as FleetBmc).address, options.port ?? 0);
    for (let i = 1; i < bmcs.length; i += 256) {
      await Promise.all(bmcs.slice(i, i + 256).map((bmc) => listen(bmc.address, port)));
    }
  } catch (error) {
    await closeListeners();
    throw error;
  }

  // Out-of-band changes: one timer for the fleet (never one per BMC).
  const perMinute = options.changesPerMinute ?? options.count / 100;
  let changes = 0;
  let owed = 0;
  const changer = setInterval(() => {
    owed += perMinute / 60;
    for (; owed >= 1; owed -= 1) {
      const bmc = bmcs[Math.floor(random() * bmcs.length)] as FleetBmc;
      if (random() < 0.5) bmc.system.health = bmc.system.health === 'OK' ? 'Warning' : 'OK';
      else
        void bmc.power
          .powerState()
          .then((state) => bmc.power.reset(state === 'Off' ? 'On' : 'ForceOff', { target: 'None', mode: 'UEFI' }));
      changes += 1;
    }
  }, 1000);
  changer.unref();

  return {
    bmcs,
    port,
    username,
    password,
    systemPath: SYSTEM_PATH,
    url: (index) => `http://${(bmcs[index] as FleetBmc).address}:${port}`,
    stats: (since, count = bmcs.length) => {
      const now = Date.now();
      let requests = 0;
      let maxInFlight = 0;
      let overlapping = 0;
      let neverRead = 0;
      let oldest = now;
      let notReadSince = 0;
      let sessionsOpened = 0;
      let sessionsOpen = 0;
      for (const bmc of bmcs.slice(0, count)) {
        requests += bmc.requests;
        maxInFlight = Math.max(maxInFlight, bmc.maxInFlight);
        overlapping += bmc.overlapping;
        sessionsOpened += bmc.sessionsOpened;
        sessionsOpen += bmc.sessions.list().length;
        if (bmc.lastSystemRead === 0) neverRead += 1;
        else oldest = Math.min(oldest, bmc.lastSystemRead);
        if (since !== undefined && bmc.lastSystemRead < since) notReadSince += 1;
      }
      return {
        bmcs: Math.min(count, bmcs.length),
        requests,
        answers: { ...answers },
        sessionsOpened,
        sessionsOpen,
        maxInFlight,
        overlapping,
        neverRead,
        oldestReadingMs: now - oldest,
        ...(since !== undefined ? { notReadSince } : {}),
        changes,
      };
    },
    close: async () => {
      clearInterval(changer);
      for (const res of hung) res.destroy();
      const closed = closeListeners();
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}

interface Answer {
  status: number;
  json?: unknown;
  headers: Record<string, string>;
}

/** The few resources a conductor uses, as the full service answers them. */
async function answer(bmc: FleetBmc, req: http.IncomingMessage, text: string): Promise<Answer> {
  const path = (req.url ?? '/').split('?')[0]?.replace(/\/+$/, '') ?? '';
  const method = req.method ?? 'GET';
  const ok = (json: unknown): Answer => ({ status: 200, json, headers: {} });
  if (method === 'GET' && (path === ROOT || path === '/redfish')) {
    return ok(path === ROOT ? serviceRoot(bmc.uuid) : { v1: `${ROOT}/` });
  }
  const body = text === '' ? {} : parseBody(text);
  if (method === 'POST' && path === SESSIONS_PATH) {
    if (!bmc.sessions.checkCredentials(body.UserName, body.Password)) throw unauthorized();
    const created = bmc.sessions.create(body.UserName as string);
    bmc.sessionsOpened += 1;
    return {
      status: 201,
      json: session(created),
      headers: { 'X-Auth-Token': created.token, Location: `${SESSIONS_PATH}/${created.id}` },
    };
  }
  if (!bmc.sessions.authorises(header(req, 'x-auth-token'), header(req, 'authorization'))) throw unauthorized();
  if (method === 'DELETE' && path.startsWith(`${SESSIONS_PATH}/`)) {
    if (!bmc.sessions.delete(path.slice(SESSIONS_PATH.length + 1))) throw notFound(path);
    return { status: 204, headers: {} };
  }
  if (method === 'GET' && path === `${ROOT}/Systems`) return ok(systemCollection([bmc.system]));
  if (path === systemPath(bmc.system)) {
    if (method === 'GET') {
      const json = await computerSystem(bmc.system);
      bmc.lastSystemRead = Date.now();
      return ok(json);
    }
    if (method === 'PATCH') {
      for (const key of Object.keys(body)) {
        if (key !== 'Boot' && key !== 'IndicatorLED') throw propertyUnknown(key);
      }
      if ('Boot' in body) bmc.system.patchBoot(body.Boot);
      if ('IndicatorLED' in body) bmc.system.patchIndicatorLed(body.IndicatorLED);
      return { status: 204, headers: {} };
    }
  }
  if (method === 'POST' && path === `${SYSTEM_PATH}/Actions/ComputerSystem.Reset`) {
    await bmc.system.reset(body.ResetType);
    return { status: 204, headers: {} };
  }
  throw notFound(path);
}

function header(req: http.IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function parseBody(text: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new RedfishError(400, 'MalformedJSON', 'The request body submitted was malformed JSON.');
  }
  if (!isObject(value)) throw new RedfishError(400, 'MalformedJSON', 'The request body must be a JSON object.');
  return value;
}
