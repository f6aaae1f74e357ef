// The command line of `npm run lab`: up (default), --status, --down, and the lab process itself.
import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { copyFile, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { ApiClient } from '@bmaas/api-client';
import { INSTALL_API_USER, until, waitFor } from '@bmaas/common';
import { endpointsFile, labImagesDir, lockHolder, type StackEndpoints } from '@bmaas/stack';
import { buildInstanceImage } from './instance-image.js';
import { askLab, waitForLabProcess } from './lab-control.js';
import { LAB_BMC_KINDS, type LabBmcKind, type LabDescription } from './lab-machines.js';
import { deployMachines, enrolMachines, nodeRows, removeNodes, renderTable } from './lab-nodes.js';
import { IMAGE_CACHE_DIR, type LabPaths, labPaths } from './lab-paths.js';
import { runLabProcess } from './lab-process.js';
import { netnsUnavailableReason } from './netns.js';
import { buildTestRamdisk } from './ramdisk.js';

export const LAB_USAGE = `usage: npm run lab -- [--machines N] [--bmc ipmi|redfish] [--deploy] [--status] [--down] [--user-mode] [--state-dir DIR]

Starts N virtual machines (default 3), each behind its own BMC, next to the stack
\`npm start\` runs from the same state directory, and enrols each as a node (the BMC's
hardware type, iPXE, direct deploy). As root the machines are on a lab network (a namespace with a
bridge and dnsmasq); otherwise on QEMU user-mode networking. Running it again adds what is
missing. Everything stops with the stack, or with --down (which also deletes the nodes).

  --machines N     how many machines (1-20, default 3)
  --bmc KIND       ipmi (default): ipmi_sim, the ipmi hardware type; redfish: a Redfish
                   service per machine, the redfish hardware type (chosen when the lab starts)
  --deploy         then deploy every available lab machine with the lab's instance image
                   and wait until each is active (exit status 1 when one fails)
  --status         the machines, their nodes and owning conductors
  --down           stop every machine, BMC and dnsmasq, remove the namespace and the nodes
  --user-mode      QEMU user-mode networking even as root (no namespace, no dnsmasq)
  --state-dir DIR  the stack's state directory (default [DEFAULT]state_path: .state)`;

const MAIN_SCRIPT = fileURLToPath(new URL('./main.js', import.meta.url));
const LAB_START_TIMEOUT_MS = 120_000;
/** A deploy under TCG on a busy machine: ramdisk boot, image write, reboot (about a minute each here). */
const DEPLOY_TIMEOUT_MS = 900_000;

export interface LabArgs {
  command: 'up' | 'status' | 'down' | 'help' | 'process';
  machines: number;
  stateDir: string;
  network: 'netns' | 'user';
  userMode: boolean;
  deploy: boolean;
  bmc: LabBmcKind;
}

const LAB_OPTIONS = {
  help: { type: 'boolean', short: 'h' },
  status: { type: 'boolean' },
  down: { type: 'boolean' },
  machines: { type: 'string' },
  'user-mode': { type: 'boolean' },
  deploy: { type: 'boolean' },
  bmc: { type: 'string' },
  'state-dir': { type: 'string' },
  // the lab process itself, started detached by `up`
  'run-lab-process': { type: 'boolean' },
  network: { type: 'string' },
} as const satisfies ParseArgsConfig['options'];

/** The command line of `npm run lab` (LAB_USAGE); throws with the usage on a wrong one. */
export function parseLabArgs(argv: readonly string[]): LabArgs {
  const values = (() => {
    try {
      return parseArgs({ args: [...argv], options: LAB_OPTIONS, strict: true, allowPositionals: false }).values;
    } catch (error) {
      throw new Error(`${(error as Error).message}\n${LAB_USAGE}`);
    }
  })();
  let machines = 3;
  if (values.machines !== undefined) {
    machines = Number(values.machines);
    if (!Number.isInteger(machines) || machines < 1 || machines > 20)
      throw new Error('--machines expects a whole number from 1 to 20');
  }
  const bmc = (values.bmc ?? 'ipmi') as LabBmcKind;
  if (!LAB_BMC_KINDS.includes(bmc)) throw new Error(`--bmc expects ${LAB_BMC_KINDS.join(' or ')}\n${LAB_USAGE}`);
  const command: LabArgs['command'] = values.help
    ? 'help'
    : values['run-lab-process']
      ? 'process'
      : values.down
        ? 'down'
        : values.status
          ? 'status'
          : 'up';
  return {
    command,
    machines,
    stateDir: values['state-dir'] ?? process.env.BMAAS_DEFAULT__STATE_PATH ?? '.state',
    network: values.network === 'user' ? 'user' : 'netns',
    userMode: values['user-mode'] ?? false,
    deploy: values.deploy ?? false,
    bmc,
  };
}

/** The stack running from the state directory, or undefined. */
async function runningStack(paths: LabPaths): Promise<StackEndpoints | undefined> {
  const pid = lockHolder(join(paths.stateDir, 'stack.pid'));
  if (pid === undefined) return undefined;
  try {
    const endpoints = JSON.parse(await readFile(endpointsFile(paths.stateDir), 'utf8')) as StackEndpoints;
    return endpoints.pid === pid ? endpoints : undefined;
  } catch {
    return undefined;
  }
}

/** The API as the install's own user (the password npm start generated), if the stack asks for one. */
async function apiClient(paths: LabPaths, endpoints: StackEndpoints): Promise<ApiClient> {
  let password: string;
  try {
    password = (await readFile(join(paths.stateDir, 'credentials', 'api-password'), 'utf8')).trim();
  } catch {
    // no generated credentials: an API without authentication, or the operator's own
    return new ApiClient(endpoints.apiUrl);
  }
  return new ApiClient(endpoints.apiUrl, { basicAuth: { username: INSTALL_API_USER, password } });
}

const noStack = (paths: LabPaths) =>
  `No stack is running from ${paths.stateDir}: start it with \`npm start\` first (or pass --state-dir).\n`;

export async function runLab(argv: readonly string[]): Promise<number> {
  const args = parseLabArgs(argv);
  const paths = labPaths(args.stateDir);
  if (args.command === 'help') {
    process.stdout.write(`${LAB_USAGE}\n`);
    return 0;
  }
  if (args.command === 'down') return down(paths);
  const endpoints = await runningStack(paths);
  if (!endpoints) {
    process.stderr.write(noStack(paths));
    return 1;
  }
  if (args.command === 'process') {
    const image = JSON.parse(await readFile(join(paths.dir, 'image.json'), 'utf8')) as { path: string; sha256: string };
    await runLabProcess({
      paths,
      endpoints,
      network: args.network,
      imageFile: image.path,
      imageSha256: image.sha256,
      bmc: args.bmc,
    });
    return 0;
  }
  const api = await apiClient(paths, endpoints);
  if (args.command === 'status') return status(paths, api);
  return up(paths, endpoints, api, args);
}

async function up(paths: LabPaths, endpoints: StackEndpoints, api: ApiClient, args: LabArgs): Promise<number> {
  const { machines: count, userMode } = args;
  await mkdir(paths.dir, { recursive: true });
  let lab = await askLab(paths, 'GET', '/lab');
  if (!lab) {
    const unavailable = userMode ? '--user-mode' : await netnsUnavailableReason();
    if (unavailable) {
      process.stdout.write(
        `No lab network (${unavailable}): the machines use QEMU user-mode networking; their BMCs listen on 127.0.0.1.\n`,
      );
    }
    process.stdout.write(`Building or reusing the test ramdisk and instance image (cache ${IMAGE_CACHE_DIR})…\n`);
    const ramdisk = await buildTestRamdisk(IMAGE_CACHE_DIR);
    const image = await buildInstanceImage(IMAGE_CACHE_DIR);
    // The deploy kernel and ramdisk as local files the conductors may read ([conductor]file_url_allowed_paths).
    const imagesDir = labImagesDir(paths.stateDir);
    await mkdir(imagesDir, { recursive: true });
    for (const file of [ramdisk.kernel, ramdisk.initrd]) await copyIfChanged(file, join(imagesDir, basename(file)));
    await writeFile(
      join(paths.dir, 'image.json'),
      JSON.stringify({
        path: image.path,
        sha256: image.sha256,
        kernel: join(imagesDir, basename(ramdisk.kernel)),
        ramdisk: join(imagesDir, basename(ramdisk.initrd)),
      }),
    );
    lab = await startLabProcess(paths, unavailable ? 'user' : 'netns', args.bmc);
  } else if (lab.bmc !== args.bmc) {
    process.stderr.write(`The lab runs with ${lab.bmc} BMCs; stop it (--down) to start one with ${args.bmc} BMCs.\n`);
    return 1;
  }
  process.stdout.write(
    `Lab process ${lab.pid} (${lab.network} networking, ${lab.bmc} BMCs); starting ${count} machine(s)…\n`,
  );
  lab = (await askLab(paths, 'POST', `/machines?count=${count}`)) as LabDescription;
  const image = JSON.parse(await readFile(join(paths.dir, 'image.json'), 'utf8')) as {
    kernel: string;
    ramdisk: string;
  };
  await enrolMachines(api, paths, lab.machines, { deploy_kernel: image.kernel, deploy_ramdisk: image.ramdisk });
  process.stdout.write(`${renderTable(await nodeRows(api, lab))}\n`);
  if (!args.deploy) {
    process.stdout.write(deployHint(endpoints, lab));
    return 0;
  }
  process.stdout.write(`\nDeploying the lab's instance image (${lab.instanceInfo.image_source})…\n`);
  const failures = await deployMachines(api, lab, DEPLOY_TIMEOUT_MS, (line) => process.stdout.write(`  ${line}\n`));
  process.stdout.write(`${renderTable(await nodeRows(api, lab))}\n`);
  for (const failure of failures) process.stderr.write(`deploy failed: ${failure}\n`);
  return failures.length === 0 ? 0 : 1;
}

async function copyIfChanged(from: string, to: string): Promise<void> {
  const [a, b] = await Promise.all([stat(from), stat(to).catch(() => undefined)]);
  if (b && b.size === a.size && b.mtimeMs >= a.mtimeMs) return;
  await copyFile(from, to);
}

/** Starts the lab process detached (it outlives this command), waits for its control socket. */
async function startLabProcess(paths: LabPaths, network: 'netns' | 'user', bmc: LabBmcKind): Promise<LabDescription> {
  const logFd = openSync(paths.log, 'a');
  const child = spawn(
    process.execPath,
    [MAIN_SCRIPT, '--run-lab-process', '--network', network, '--bmc', bmc, '--state-dir', paths.stateDir],
    { detached: true, stdio: ['ignore', logFd, logFd] },
  );
  closeSync(logFd);
  let exited = false;
  child.once('exit', () => {
    exited = true;
  });
  child.unref();
  return waitForLabProcess(paths, () => exited, LAB_START_TIMEOUT_MS);
}

async function status(paths: LabPaths, api: ApiClient): Promise<number> {
  const lab = await askLab(paths, 'GET', '/lab');
  if (!lab) {
    process.stdout.write('No lab is running (start one with npm run lab).\n');
    return 1;
  }
  process.stdout.write(
    `Lab process ${lab.pid}, ${lab.network} networking${lab.namespace ? ` (namespace ${lab.namespace}, dnsmasq pid ${lab.dnsmasqPid})` : ''}\n`,
  );
  process.stdout.write(`${renderTable(await nodeRows(api, lab))}\n`);
  return 0;
}

async function down(paths: LabPaths): Promise<number> {
  const pid = lockHolder(paths.pidFile);
  if (pid !== undefined) {
    process.kill(pid, 'SIGTERM');
    await waitFor(
      `the lab process ${pid} to stop`,
      until(() => lockHolder(paths.pidFile) === undefined),
      {
        timeoutMs: 60_000,
        intervalMs: 200,
      },
    );
    process.stdout.write(`Stopped the lab process ${pid}: machines, BMCs, dnsmasq and the namespace are gone.\n`);
  } else {
    process.stdout.write('No lab process was running.\n');
  }
  const endpoints = await runningStack(paths);
  if (!endpoints) {
    process.stdout.write(noStack(paths).replace('first (or pass --state-dir).', 'to delete the lab nodes.'));
    return 0;
  }
  const removed = await removeNodes(await apiClient(paths, endpoints), paths);
  process.stdout.write(removed.length ? `Deleted nodes: ${removed.join(', ')}\n` : 'No lab nodes to delete.\n');
  return 0;
}

function deployHint(endpoints: StackEndpoints, lab: LabDescription): string {
  const info = Object.entries(lab.instanceInfo)
    .map(([key, value]) => `--instance-info ${key}=${value}`)
    .join(' \\\n      ');
  const name = lab.machines[0]?.name ?? 'lab-1';
  return `
Deploy a machine with the lab's instance image (the baremetal login is in npm start's banner; OS_ENDPOINT=${endpoints.apiUrl}):
  baremetal node set ${name} \\
      ${info}
  baremetal node deploy ${name} --wait 900
Watch it boot: tail -f ${lab.machines[0]?.serialLog ?? ''}
`;
}
