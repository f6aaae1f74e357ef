// A Redfish BMC listening on a port: one service with one or several systems, each with its
// power backend, and the control a test uses to look inside and switch faults on.
import { randomBytes, randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Logger } from '@bmaas/common';
import { createRedfishApp } from './app.js';
import { FaultSwitches } from './faults.js';
import { type Health, ManagedSystem, type SystemOptions } from './managed-system.js';
import { SessionStore } from './sessions.js';
import type { VirtualMediaSettings } from './virtual-media.js';

export interface RedfishBmcOptions {
  /** The systems of the service (at least one); their Ids must differ. */
  systems: readonly SystemOptions[];
  /** The account; default `admin` and a random password. */
  username?: string;
  password?: string;
  /** Where to listen; default 127.0.0.1 and a free port. */
  host?: string;
  port?: number;
  /** Idle timeout of a session, seconds; default 1800. */
  sessionTimeoutSeconds?: number;
  /**
   * Virtual media of the systems whose machine has a CD drive: where images are downloaded
   * and the hosts besides loopback they may come from; default a directory of its own under
   * the system's temporary directory, removed at close.
   */
  virtualMedia?: Partial<VirtualMediaSettings>;
  /** Serve HTTPS with this key and certificate (PEM); default plain HTTP. */
  tls?: { key: string | Buffer; cert: string | Buffer };
  logger?: Logger;
}

export interface RequestRecord {
  method: string;
  path: string;
  status: number;
}

/** What a test does to the running service. */
export interface RedfishBmcControl {
  /** A system of the service (default: the first). */
  system(id?: string): ManagedSystem;
  /** Every answer waits `delayMs` first (0: off). */
  slowAnswers(delayMs: number): void;
  /** The next `count` requests answer `status` (default 503) instead. */
  failRequests(count: number, status?: number): void;
  /** Every session ends: requests with their X-Auth-Token get 401 until the client logs in again. */
  expireSessions(): void;
  /** ComputerSystem.Reset answers 204 and the machine is left as it is. */
  ignoreResets(on: boolean): void;
  /** Status.Health (and HealthRollup) of a system. */
  setHealth(health: Health, systemId?: string): void;
  /** A firmware component's version, as after an update done out of band. */
  setFirmwareVersion(componentId: string, version: string, systemId?: string): void;
  /** Switches every fault off. */
  clearFaults(): void;
  /** Every request answered so far, oldest first. */
  readonly requests: readonly RequestRecord[];
}

export interface RedfishBmc {
  /** e.g. http://127.0.0.1:41234 (the service root is at /redfish/v1/). */
  readonly url: string;
  readonly username: string;
  readonly password: string;
  readonly control: RedfishBmcControl;
  close(): Promise<void>;
}

export async function startRedfishBmc(options: RedfishBmcOptions): Promise<RedfishBmc> {
  if (options.systems.length === 0) throw new Error('a Redfish BMC needs at least one system');
  const ids = options.systems.map((s) => s.id);
  if (new Set(ids).size !== ids.length) throw new Error(`system Ids must differ: ${ids.join(', ')}`);
  const bad = ids.find((id) => !/^[A-Za-z0-9._-]+$/.test(id));
  if (bad !== undefined) throw new Error(`system Id ${JSON.stringify(bad)} is not a plain path segment`);

  const username = options.username ?? 'admin';
  const password = options.password ?? randomBytes(9).toString('base64url');
  const ownStateDir = options.virtualMedia?.stateDir === undefined;
  const virtualMedia: VirtualMediaSettings = {
    ...options.virtualMedia,
    stateDir: options.virtualMedia?.stateDir ?? join(tmpdir(), `bmaas-redfish-bmc-${randomUUID()}`),
  };
  const systems = options.systems.map((s) => new ManagedSystem(s, { virtualMedia }));
  // one BIOS attribute registry per system, named after it when the service has several
  if (systems.length > 1) {
    for (const system of systems) {
      system.biosRegistryId = `BiosAttributeRegistry${system.id.replace(/[^A-Za-z0-9]/g, '')}.v1_0_0`;
    }
    const registries = systems.map((s) => s.biosRegistryId);
    if (new Set(registries).size !== registries.length) {
      throw new Error(`system Ids too alike for their BIOS registries: ${ids.join(', ')}`);
    }
  }
  const sessions = new SessionStore({ username, password }, options.sessionTimeoutSeconds ?? 1800);
  const faults = new FaultSwitches();
  const requests: RequestRecord[] = [];
  const app = createRedfishApp({
    systems,
    sessions,
    faults,
    uuid: randomUUID(),
    logger: options.logger,
    onRequest: (record) => requests.push(record),
  });
  const server = options.tls ? https.createServer({ ...options.tls }, app) : http.createServer(app);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;

  const system = (id?: string): ManagedSystem => {
    const found = id === undefined ? systems[0] : systems.find((s) => s.id === id);
    if (!found) throw new Error(`no system ${id} in this Redfish BMC`);
    return found;
  };
  const control: RedfishBmcControl = {
    system,
    slowAnswers: (delayMs) => {
      faults.delayMs = delayMs;
    },
    failRequests: (count, status = 503) => {
      faults.failuresLeft = count;
      faults.failStatus = status;
    },
    expireSessions: () => sessions.expireAll(),
    ignoreResets: (on) => {
      faults.ignoreResets = on;
    },
    setHealth: (health, systemId) => {
      system(systemId).health = health;
    },
    setFirmwareVersion: (componentId, version, systemId) => {
      const component = system(systemId).firmwareComponent(componentId);
      if (!component) throw new Error(`no firmware component ${componentId}`);
      component.version = version;
    },
    clearFaults: () => faults.clear(),
    requests,
  };

  return {
    url: `${options.tls ? 'https' : 'http'}://${host}:${address.port}`,
    username,
    password,
    control,
    close: async () => {
      await new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      });
      if (ownStateDir) await rm(virtualMedia.stateDir, { recursive: true, force: true });
    },
  };
}
