// "Hosts" on one lab bridge: PostgreSQL, the API replicas and the conductors each in a network
// namespace of their own, with their own address; any host's cable can be pulled and plugged
// back. The test process reaches them all from the root namespace through one more veth.
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CertificateFiles } from '@bmaas/pki';
import { conductorCertificate } from '@bmaas/stack';
import { run, waitForOutputLine } from './child-process.js';
import { LabNetwork, type NetworkHost } from './netns.js';

/** Debian 12's PostgreSQL (package postgresql): what runs on the database host. */
export const POSTGRES_BIN = '/usr/lib/postgresql/15/bin';
export const POSTGRES_PORT = 5432;

export interface HostsTopologyOptions {
  apis?: number;
  conductors?: number;
  /** Name prefix of the namespaces (default bmaas-hosts). */
  prefix?: string;
  /**
   * The first three octets of the hosts' /24 (default 192.168.80). The root namespace takes .2
   * of it, so topologies that exist at the same time (test files run in parallel) need
   * subnets of their own, apart from the lab's 192.168.77.0/24.
   */
  subnet?: string;
  /**
   * JSON-RPC over TLS between the hosts: the install CA in this directory (made on first use)
   * and a certificate signed by it for each conductor host: subject CN its name (`cond0`…), valid
   * for its address, which it registers as and the APIs dial.
   */
  tlsDirectory?: string;
}

/** The topology's CA and its conductor hosts' certificates ([json_rpc]cafile, cert_file, key_file). */
export interface HostsTls {
  /** Where the CA and the certificates are: ServicesOptions.jsonRpcTlsDirectory. */
  directory: string;
  /** The CA certificate every JSON-RPC client trusts. */
  caFile: string;
  /** The certificate of a conductor host, for ConductorStart.certificate. */
  certificateOf(host: NetworkHost): CertificateFiles;
}

export interface HostsTopology {
  network: LabNetwork;
  database: NetworkHost;
  apis: NetworkHost[];
  conductors: NetworkHost[];
  /** With options.tlsDirectory: the CA and the conductor hosts' certificates. */
  tls: HostsTls | undefined;
  /** The root namespace's own address on the bridge (where tests send requests from). */
  rootAddress: string;
  /** `.n` of the topology's subnet, for hosts a test adds itself. */
  address(n: number): string;
  close(): Promise<void>;
}

/**
 * The network of the multi-host scenarios: database at .10, APIs from .20, conductors
 * from .30 of `options.subnet`, and the root namespace at .2.
 */
export async function startHostsTopology(options: HostsTopologyOptions = {}): Promise<HostsTopology> {
  const subnet = options.subnet ?? '192.168.80';
  const address = (n: number) => `${subnet}.${n}`;
  const network = await LabNetwork.create(options.prefix ?? 'bmaas-hosts');
  try {
    const database = await network.addHost('db', address(10));
    const apis: NetworkHost[] = [];
    for (let i = 0; i < (options.apis ?? 2); i++) apis.push(await network.addHost(`api${i}`, address(20 + i)));
    const conductors: NetworkHost[] = [];
    for (let i = 0; i < (options.conductors ?? 3); i++) {
      conductors.push(await network.addHost(`cond${i}`, address(30 + i)));
    }
    const rootAddress = address(2);
    await network.linkToHost(`bh${process.pid % 100_000}`, rootAddress);
    const tls = options.tlsDirectory === undefined ? undefined : hostsTls(options.tlsDirectory, conductors);
    return { network, database, apis, conductors, tls, rootAddress, address, close: () => network.destroy() };
  } catch (error) {
    await network.destroy();
    throw error;
  }
}

/** A certificate for each conductor host, made at once: CN its name (`cond0`…), subjectAltName its address. */
function hostsTls(directory: string, conductors: readonly NetworkHost[]): HostsTls {
  const certificates = new Map(
    conductors.map((host) => [host, conductorCertificate(directory, host.name, host.address)] as const),
  );
  const first = certificates.values().next().value;
  if (!first) throw new Error('a TLS topology needs at least one conductor host');
  return {
    directory,
    caFile: first.caFile,
    certificateOf(host) {
      const files = certificates.get(host);
      if (!files) throw new Error(`${host.name} is not a conductor host of this topology`);
      return files;
    },
  };
}

export interface HostPostgres {
  /** postgresql://bmaas@<address>:5432/postgres (trust on the lab subnet only). */
  url: string;
  dataDir: string;
  /** SIGKILL of the postmaster (a crashed host), or a clean stop. */
  stop(): Promise<void>;
}

/**
 * A throwaway PostgreSQL (Debian's binaries, as the postgres OS user) on `host`, listening on
 * its address only; its /24 may connect as `bmaas` without a password.
 */
export async function startPostgresOnHost(host: NetworkHost): Promise<HostPostgres> {
  const dir = await mkdtemp(join(tmpdir(), 'bmaas-hosts-pg-'));
  await chmod(dir, 0o777);
  const dataDir = join(dir, 'data');
  await run('runuser', [
    '-u',
    'postgres',
    '--',
    join(POSTGRES_BIN, 'initdb'),
    '-D',
    dataDir,
    '-U',
    'bmaas',
    '-A',
    'trust',
  ]);
  await writeFile(
    join(dataDir, 'pg_hba.conf'),
    `local all all trust\nhost all all 127.0.0.1/32 trust\nhost all all ${subnetOf(host.address)} trust\n`,
  );
  // Its log (stderr) on stdout, where the readiness line is waited for.
  const child = host.spawn(
    'sh',
    [
      '-c',
      'exec "$@" 2>&1',
      'sh',
      'runuser',
      '-u',
      'postgres',
      '--',
      join(POSTGRES_BIN, 'postgres'),
      '-D',
      dataDir,
      '-c',
      `listen_addresses=${host.address}`,
      '-c',
      `port=${POSTGRES_PORT}`,
      '-c',
      `unix_socket_directories=${dir}`,
      '-c',
      'max_connections=200',
      '-c',
      'fsync=off',
    ],
    { stdio: ['ignore', 'pipe', 'ignore'] },
  );
  await waitForOutputLine(child, /ready to accept connections/, 30_000);
  return {
    url: `postgresql://bmaas@${host.address}:${POSTGRES_PORT}/postgres`,
    dataDir,
    async stop() {
      child.kill('SIGKILL');
      await rm(dir, { recursive: true, force: true }).catch(() => {});
    },
  };
}

/** The /24 an address is in, as pg_hba.conf writes it. */
export function subnetOf(address: string): string {
  return `${address.split('.').slice(0, 3).join('.')}.0/24`;
}
