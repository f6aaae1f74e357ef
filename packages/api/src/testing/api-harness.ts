import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type BmaasConfig,
  createMetricsRegistry,
  createSilentLogger,
  type DeepPartial,
  type Logger,
  loadConfig,
  type NodeRecord,
  OPTIONAL_INTERFACE_GENERIC,
  OPTIONAL_INTERFACE_TYPES,
} from '@bmaas/common';
import { createStores, type NewNode, type NodeChanges, type Stores } from '@bmaas/db';
import { createNode, createTestDatabase, type TestDatabase } from '@bmaas/db/testing';
import { FakeConductorClient } from '@bmaas/rpc-client';
import { createApiListener } from '../app.js';
import { ApiMetrics } from '../metrics/api-metrics.js';

/** The interfaces a fake-hardware conductor registers in these tests. */
export const FAKE_HARDWARE_INTERFACES = [
  { hardwareType: 'fake-hardware', interfaceType: 'boot', interfaceName: 'fake', isDefault: true },
  { hardwareType: 'fake-hardware', interfaceType: 'boot', interfaceName: 'ipxe', isDefault: false },
  { hardwareType: 'fake-hardware', interfaceType: 'deploy', interfaceName: 'fake', isDefault: true },
  { hardwareType: 'fake-hardware', interfaceType: 'deploy', interfaceName: 'direct', isDefault: false },
  { hardwareType: 'fake-hardware', interfaceType: 'power', interfaceName: 'fake', isDefault: true },
  { hardwareType: 'fake-hardware', interfaceType: 'management', interfaceName: 'fake', isDefault: true },
  ...OPTIONAL_INTERFACE_TYPES.flatMap((kind) => [
    {
      hardwareType: 'fake-hardware',
      interfaceType: kind,
      interfaceName: OPTIONAL_INTERFACE_GENERIC[kind],
      isDefault: true,
    },
    ...(kind === 'network'
      ? []
      : [{ hardwareType: 'fake-hardware', interfaceType: kind, interfaceName: 'fake', isDefault: false }]),
  ]),
  { hardwareType: 'fake-hardware', interfaceType: 'inspect', interfaceName: 'agent', isDefault: false },
] as const;

/** Answers are read freely in tests. */
// biome-ignore lint/suspicious/noExplicitAny: test answers are JSON of many shapes
type Json = any;

export interface ApiResponse<T = Json> {
  status: number;
  headers: Headers;
  /** Parsed JSON, or undefined for an empty body. */
  body: T;
}

export interface RequestOptions {
  body?: unknown;
  /** Raw body text (sent as application/json), for malformed documents. */
  rawBody?: string;
  /** Microversion header; null = none. Default: the CLI's 1.78. */
  version?: string | null;
  headers?: Record<string, string>;
}

/** An `Authorization` header value for HTTP basic. */
export function basicAuthorization(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
}

/** A test database, the app on a loopback port, and a fake conductor client routing over the test DB. */
export class ApiHarness {
  private constructor(
    readonly database: TestDatabase,
    readonly stores: Stores,
    readonly conductors: FakeConductorClient,
    readonly config: BmaasConfig,
    private readonly server: Server,
    readonly baseUrl: string,
    /** What the API recorded (its registry is the one served at /metrics). */
    readonly metrics: ApiMetrics,
    private readonly tempDir: string | undefined,
  ) {}

  /**
   * `htpasswd`: the content of an htpasswd file; when given, the API runs
   * with [DEFAULT]auth_strategy = http_basic against it (a temporary file,
   * removed by close()).
   */
  static async start(
    options: { overrides?: DeepPartial<BmaasConfig>; logger?: Logger; htpasswd?: string } = {},
  ): Promise<ApiHarness> {
    const database = await createTestDatabase();
    const stores = createStores(database.db);
    let overrides = options.overrides ?? {};
    let tempDir: string | undefined;
    if (options.htpasswd !== undefined) {
      tempDir = mkdtempSync(join(tmpdir(), 'bmaas-htpasswd-'));
      const file = join(tempDir, 'htpasswd');
      writeFileSync(file, options.htpasswd);
      overrides = {
        ...overrides,
        DEFAULT: { ...overrides.DEFAULT, auth_strategy: 'http_basic', http_basic_auth_user_file: file },
      };
    }
    const config = loadConfig({ env: {}, overrides });
    const conductors = new FakeConductorClient({
      conductors: stores.conductors,
      heartbeatTimeout: config.conductor.heartbeat_timeout,
    });
    const metrics = new ApiMetrics(createMetricsRegistry());
    const server = createServer(
      createApiListener({
        config,
        logger: options.logger ?? createSilentLogger(),
        db: database.db,
        conductors,
        metrics,
      }),
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    return new ApiHarness(database, stores, conductors, config, server, `http://127.0.0.1:${port}`, metrics, tempDir);
  }

  /**
   * A fake-hardware node written straight to the store (iPXE boot, direct
   * deploy unless `create` says otherwise), then put in `provisionState` with
   * `update`'s changes, with one port per MAC.
   */
  async storeNode(
    provisionState: string,
    macs: readonly string[],
    fields: { create?: Partial<NewNode>; update?: NodeChanges } = {},
  ): Promise<NodeRecord> {
    const node = await createNode(
      this.stores,
      { bootInterface: 'ipxe', deployInterface: 'direct', ...fields.create },
      { provisionState, ...fields.update },
    );
    for (const mac of macs) await this.stores.ports.create({ uuid: randomUUID(), address: mac, nodeId: node.id });
    return node;
  }

  /** Registers an alive conductor serving fake-hardware (or the given drivers) in `group`. */
  async registerConductor(hostname: string, group = '', drivers: string[] = ['fake-hardware']): Promise<void> {
    await this.stores.conductors.register({
      hostname,
      conductorGroup: group,
      drivers,
      interfaces: FAKE_HARDWARE_INTERFACES.filter((i) => drivers.includes(i.hardwareType)).map((i) => ({ ...i })),
    });
  }

  /** A fake-hardware node enrolled through REST with one port (a conductor must be registered). */
  /** Creates a fake-hardware node through POST /v1/nodes, as a client would, and returns its uuid. */
  async createNode(fields: Record<string, unknown>, version?: string): Promise<string> {
    const node = await this.request('POST', '/v1/nodes', { body: { driver: 'fake-hardware', ...fields }, version });
    if (node.status !== 201) throw new Error(`node create answered ${node.status}: ${JSON.stringify(node.body)}`);
    return node.body.uuid as string;
  }

  async enrolNode(name: string, mac: string): Promise<{ nodeUuid: string; portUuid: string }> {
    const nodeUuid = await this.createNode({ name });
    const port = await this.request('POST', '/v1/ports', { body: { address: mac, node_uuid: nodeUuid } });
    if (port.status !== 201) throw new Error(`port create answered ${port.status}: ${JSON.stringify(port.body)}`);
    return { nodeUuid, portUuid: port.body.uuid };
  }

  async request<T = Json>(method: string, path: string, options: RequestOptions = {}): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { Accept: 'application/json', ...options.headers };
    const version = options.version === undefined ? '1.78' : options.version;
    if (version !== null) headers['X-OpenStack-Ironic-API-Version'] = version;
    let body: string | undefined;
    if (options.rawBody !== undefined) body = options.rawBody;
    else if (options.body !== undefined) body = JSON.stringify(options.body);
    if (body !== undefined) headers['Content-Type'] ??= 'application/json';
    const response = await fetch(`${this.baseUrl}${path}`, { method, headers, body });
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined };
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    await this.database.drop();
    if (this.tempDir) rmSync(this.tempDir, { recursive: true, force: true });
  }
}

/** The Ironic fault inside an error answer. */
export function faultOf(body: unknown): { faultcode: string; faultstring: string; debuginfo: null } {
  return JSON.parse((body as { error_message: string }).error_message);
}

/** The faultstring of an Ironic error answer: what the tests compare with upstream's wording. */
export function faultString(res: { body: unknown }): string {
  return faultOf(res.body).faultstring;
}
