import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { InvalidParameterValue, type JsonObject } from '@bmaas/common';

const run = promisify(execFile);

/** The parts of a config drive given as an object (API >= 1.56; vendor_data >= 1.59). */
export interface ConfigDriveObject {
  meta_data?: JsonObject;
  network_data?: JsonObject;
  user_data?: unknown;
  vendor_data?: JsonObject;
}

/** Directories a config-2 drive carries, as Ironic (and openstacksdk) write them. */
const VERSIONS = ['2012-08-10', 'latest'];
/** ISO 9660 writers, first found wins; xorriso takes the same flags through its mkisofs emulation. */
const ISO_WRITERS: ReadonlyArray<readonly string[]> = [['genisoimage'], ['xorriso', '-as', 'mkisofs']];

/** The node fields a config drive takes defaults from. */
export interface ConfigDriveNode {
  uuid: string;
  name: string | null;
  /** The node's network_data (API 1.66; {} when unset): the drive's when the object gives none, as upstream. */
  networkData?: JsonObject;
}

/**
 * Builds the config drive of a node from the object form: meta_data (uuid
 * and name default to the node's), network_data (default: the node's
 * network_data, so that an instance on a network without DHCP configures
 * itself as its ramdisk did), vendor_data and user_data
 * (objects and arrays JSON-encoded) under openstack/2012-08-10/ and
 * openstack/latest/, as an ISO 9660 image (Rock Ridge + Joliet) labelled
 * config-2, then gzipped and base64-encoded: the string form the agent takes.
 */
export async function buildConfigDrive(drive: ConfigDriveObject, node: ConfigDriveNode): Promise<string> {
  const work = await mkdtemp(join(tmpdir(), 'bmaas-configdrive-'));
  try {
    const metaData = { uuid: node.uuid, ...(node.name ? { name: node.name } : {}), ...(drive.meta_data ?? {}) };
    const files: Array<[string, string]> = [['meta_data.json', JSON.stringify(metaData)]];
    const networkData =
      drive.network_data ??
      (node.networkData && Object.keys(node.networkData).length > 0 ? node.networkData : undefined);
    if (networkData) files.push(['network_data.json', JSON.stringify(networkData)]);
    if (drive.vendor_data) files.push(['vendor_data2.json', JSON.stringify(drive.vendor_data)]);
    if (drive.user_data !== undefined && drive.user_data !== null) {
      const userData = typeof drive.user_data === 'string' ? drive.user_data : JSON.stringify(drive.user_data);
      files.push(['user_data', userData]);
    }
    const root = join(work, 'root');
    for (const version of VERSIONS) {
      const dir = join(root, 'openstack', version);
      await mkdir(dir, { recursive: true });
      for (const [name, content] of files) await writeFile(join(dir, name), content);
    }
    const iso = join(work, 'configdrive.iso');
    await writeIso(root, iso);
    return gzipSync(await readFile(iso), { level: 9 }).toString('base64');
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

async function writeIso(root: string, iso: string): Promise<void> {
  const flags = ['-quiet', '-o', iso, '-V', 'config-2', '-r', '-J', '-input-charset', 'utf-8', root];
  const failures: string[] = [];
  for (const [command, ...prefix] of ISO_WRITERS) {
    try {
      await run(command as string, [...prefix, ...flags], { timeout: 60_000 });
      return;
    } catch (error) {
      failures.push(`${command}: ${(error as Error).message.split('\n')[0]}`);
    }
  }
  throw new Error(`cannot build the config drive ISO (install genisoimage or xorriso): ${failures.join('; ')}`);
}

/** The string the agent gets for the node's stored config drive (built here from the object form). */
export async function configDriveForAgent(stored: unknown, node: ConfigDriveNode): Promise<string | null> {
  if (stored === undefined || stored === null || stored === '') return null;
  if (typeof stored === 'string') return stored;
  if (typeof stored === 'object' && !Array.isArray(stored)) return buildConfigDrive(stored as ConfigDriveObject, node);
  throw new InvalidParameterValue('instance_info.configdrive must be a string or an object.');
}
