import type { BmaasConfig, InstallCredentials } from '@bmaas/common';
import { enabledBootDescriptors } from '@bmaas/conductor';
import type { Stack } from './stack.js';

/** How the `baremetal` CLI authenticates: the install's generated user, the operator's own, or none. */
function cliLogin(stack: Stack, config: BmaasConfig, credentials: InstallCredentials | undefined): string {
  if (config.DEFAULT.auth_strategy === 'noauth') return `export OS_AUTH_TYPE=none OS_ENDPOINT=${stack.apiUrl}`;
  const own = credentials && config.DEFAULT.http_basic_auth_user_file.startsWith(`${credentials.directory}/`);
  const login = own
    ? `OS_USERNAME=${credentials.apiUser} OS_PASSWORD="$(cat ${credentials.passwordFile})"`
    : `OS_USERNAME=<user> OS_PASSWORD=<password>  # from ${config.DEFAULT.http_basic_auth_user_file}`;
  return `export OS_AUTH_TYPE=http_basic OS_ENDPOINT=${stack.apiUrl} ${login}`;
}

/** What runs where (with PIDs), and how to enrol a first node with the `baremetal` CLI. */
export function renderStackBanner(stack: Stack, config: BmaasConfig, credentials?: InstallCredentials): string {
  const database = stack.embeddedDatabase
    ? `embedded PostgreSQL 127.0.0.1:${config.database.embedded_port}, data under ${config.DEFAULT.state_path}`
    : 'PostgreSQL at [database]connection';
  const rows = stack.conductors.map(
    (c) =>
      `  ${c.name.padEnd(13)} ${c.hostname.padEnd(16)} JSON-RPC ${c.jsonRpc}  files ${c.httpUrl}  http_root ${c.httpRoot}`,
  );
  const interfaces = config.DEFAULT;
  // What the enabled boot interfaces serve, as their descriptors say (root files, and names served by the API).
  const boot = enabledBootDescriptors(config);
  const names = boot.flatMap((d) => d.bootConfigNames.map((name) => `${name} (${d.name})`));
  const rootFiles = boot.flatMap((d) => d.rootFiles.map((file) => `${file} (${d.name})`));
  const pids = stack.processes.map((p) =>
    p.name === 'database' && stack.postmasterPid
      ? `database ${p.pid} (postgres ${stack.postmasterPid})`
      : `${p.name} ${p.pid}`,
  );
  return `
The stack is running.
  database      ${database}
  API           ${stack.apiUrl}  (boot configuration API: ${stack.apiUrl}/v1/boot/<MAC>/<NAME>)
  boot configs  ${names.length ? names.join(', ') : '(none)'}; root files on each file server: ${rootFiles.length ? rootFiles.join(', ') : '(none)'}
${rows.join('\n')}
  machines      reach the API and the file servers at ${new URL(stack.machineApiUrl).hostname} (same ports): ${stack.machineApiUrl}
  drivers       ${interfaces.enabled_hardware_types.join(', ')}; boot ${interfaces.enabled_boot_interfaces.join(', ')}; deploy ${interfaces.enabled_deploy_interfaces.join(', ')}; power ${interfaces.enabled_power_interfaces.join(', ')}
  PIDs          stack ${process.pid}, ${pids.join(', ')}

Enrol a first node with the baremetal CLI (Debian/Ubuntu: apt install python3-ironicclient):
  ${cliLogin(stack, config, credentials)}
  NODE=$(baremetal node create --driver fake-hardware --name node-1 -f value -c uuid)
  baremetal port create 52:54:00:12:34:56 --node "$NODE"
  baremetal node manage node-1 --wait && baremetal node provide node-1 --wait
  baremetal node deploy node-1 --wait && baremetal node list

Or start virtual machines behind IPMI BMCs, enrolled as nodes, and deploy one (docs/lab.md):
  npm run lab -- --machines 3

Press Ctrl-C (or \`kill ${process.pid}\`) to stop everything.
`;
}
