// Checks of docker-compose.yml, docker/Dockerfile and the services' configuration
// files without a Docker engine: the compose file against the Compose
// Specification's JSON schema, each bmaas service's configuration through the
// product's own loader, and the wiring between services.
// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${…} is iPXE's and Compose's own syntax in the expected text.
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, posix, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Script } from 'node:vm';
import {
  assertJsonRpcExposureAllowed,
  type BmaasConfig,
  configFilesFromArgs,
  ensureInstallCredentials,
  jsonRpcAuthStrategy,
  loadConfig,
  type PluginSections,
  pluginSection,
} from '@bmaas/common';
import { PXE_OPTIONS, renderRootBootScript } from '@bmaas/ipxe-boot-interface';
import { ensureCertificate, parseCertificateArgument } from '@bmaas/pki';
import { SERVER_NODE_FLAGS } from '@bmaas/stack';
import { Ajv } from 'ajv';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { missingPrerequisite } from '../support/prerequisites.js';
import { InterpolationError, interpolateDocument } from './compose-interpolation.js';
import { type DockerfileStage, parseDockerfile } from './dockerfile-stages.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const require = createRequire(import.meta.url);

/** What an operator would export; 192.0.2.0/24 is a documentation range, nothing is contacted. */
const VARIABLES = {
  PROVISIONING_IP: '192.0.2.10',
  PROVISIONING_INTERFACE: 'br-prov',
  PROVISIONING_DHCP_RANGE: '192.0.2.100,192.0.2.200,12h',
  POSTGRES_PASSWORD: 'compose-test',
};
const CONDUCTORS = ['conductor-1', 'conductor-2', 'conductor-3'];
const BMAAS_SERVICES = ['dbsync', 'api', ...CONDUCTORS];

interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile: string; target?: string; args?: Record<string, string> };
  command?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  ports?: string[];
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
  network_mode?: string;
  cap_add?: string[];
  restart?: string;
}
interface ComposeDocument {
  services: Record<string, ComposeService>;
  volumes: Record<string, unknown>;
}

const composeText = readFileSync(join(REPO, 'docker-compose.yml'), 'utf8');
/** Parsed as Compose does: YAML 1.1 merge keys (`<<: *anchor`), then variables interpolated. */
function loadCompose(variables: Record<string, string>): ComposeDocument {
  return interpolateDocument(parse(composeText, { merge: true }), variables) as ComposeDocument;
}
const compose = loadCompose(VARIABLES);

function service(name: string): ComposeService {
  const found = compose.services[name];
  if (!found) throw new Error(`docker-compose.yml has no service ${name}`);
  return found;
}

/** The Compose Specification schema as the dclint package ships it (a copy of compose-spec's schema/compose-spec.json). */
function compileComposeSpec() {
  const schemaPath = join(dirname(require.resolve('dclint/package.json')), 'schemas', 'compose.schema.json');
  const schema = JSON.parse(readFileSync(schemaPath, 'utf8'));
  // Only the authoring checks of ajv's strict mode are relaxed: the schema uses union types.
  const ajv = new Ajv({ allErrors: true, allowUnionTypes: true, strictTypes: false });
  // The schema names draft-07 by its https address; ajv knows the meta-schema by its http one.
  ajv.addMetaSchema({ ...require('ajv/dist/refs/json-schema-draft-07.json'), $id: schema.$schema });
  return { schema, validate: ajv.compile(schema) };
}
let composeSpec: ReturnType<typeof compileComposeSpec> | undefined;
function composeSpecValidator() {
  composeSpec ??= compileComposeSpec();
  return composeSpec;
}

/** Bind mounts `host:container[:mode]` of a service, host paths resolved from the repository root. */
function bindMounts(name: string): Array<{ host: string; container: string; readOnly: boolean }> {
  return (service(name).volumes ?? [])
    .map((entry) => entry.split(':'))
    .filter(([source]) => source?.startsWith('.') || source?.startsWith('/'))
    .map(([source = '', container = '', mode = '']) => ({
      host: resolve(REPO, source),
      container,
      readOnly: mode.split(',').includes('ro'),
    }));
}

/** The credentials volume, made here as the credentials service makes it in its container. */
const CREDENTIALS_VOLUME = '/var/lib/bmaas/credentials';
let credentialsDir: string | undefined;
function generatedCredentials(): string {
  credentialsDir ??= ensureInstallCredentials(
    join(mkdtempSync(join(tmpdir(), 'bmaas-compose-')), 'credentials'),
  ).directory;
  return credentialsDir;
}
afterAll(() => {
  if (credentialsDir) rmSync(dirname(credentialsDir), { recursive: true, force: true });
});

/** The host file behind a path inside the container, through the service's bind mounts. */
function hostPathOf(name: string, containerPath: string): string {
  if (containerPath.startsWith(`${CREDENTIALS_VOLUME}/`)) {
    expect(service(name).volumes, `${name} mounts the credentials read-only`).toContain(
      `credentials:${CREDENTIALS_VOLUME}:ro`,
    );
    return join(generatedCredentials(), posix.relative(CREDENTIALS_VOLUME, containerPath));
  }
  for (const mount of bindMounts(name)) {
    const inside = posix.relative(mount.container, containerPath);
    if (!inside.startsWith('..') && !posix.isAbsolute(inside)) {
      expect(mount.readOnly, `${name}: ${mount.container} is mounted read-only`).toBe(true);
      return join(mount.host, inside);
    }
  }
  throw new Error(`${name}: ${containerPath} is not mounted from the repository`);
}

/**
 * A service's configuration, loaded the way its process loads it: its --config-file files, then its
 * environment; a conductor with its boot interfaces' sections ([pxe]), the others leaving those unread.
 */
function serviceConfig(name: string): { config: BmaasConfig; files: string[] } {
  const files = configFilesFromArgs(service(name).command ?? []).map((path) => hostPathOf(name, path));
  return {
    config: loadConfig({ configFiles: files, env: service(name).environment ?? {}, pluginSections: sectionsOf(name) }),
    files,
  };
}

function sectionsOf(name: string): PluginSections {
  return CONDUCTORS.includes(name) ? { pxe: PXE_OPTIONS } : 'ignore';
}

function ipxeConfigOf(config: BmaasConfig) {
  return { ...config, pxe: pluginSection<typeof PXE_OPTIONS>(config, 'pxe') };
}

/** Published ports `[ip:]host:container` of a service. */
function publishedPorts(name: string): Array<{ ip: string | undefined; host: number; container: number }> {
  return (service(name).ports ?? []).map((entry) => {
    const parts = entry.split(':');
    const container = Number(parts.at(-1));
    const host = Number(parts.at(-2) ?? container);
    return { ip: parts.length === 3 ? parts[0] : undefined, host, container };
  });
}

function dnsmasqArgs(): string[] {
  return service('dnsmasq').command ?? [];
}

describe('docker-compose.yml', () => {
  it('is valid under the Compose Specification schema', () => {
    const { schema, validate } = composeSpecValidator();
    expect(schema.title).toBe('Compose Specification');
    expect(validate(compose), JSON.stringify(validate.errors, null, 2)).toBe(true);
  });

  it('would be refused by the schema with a misspelt key', () => {
    const { validate } = composeSpecValidator();
    const broken = structuredClone(compose) as unknown as { services: Record<string, Record<string, unknown>> };
    (broken.services.api as Record<string, unknown>).helthcheck = { test: ['CMD', 'true'] };
    expect(validate(broken)).toBe(false);
    expect(validate.errors?.[0]?.params).toEqual({ additionalProperty: 'helthcheck' });
  });

  it('stops at once when PROVISIONING_IP or PROVISIONING_DHCP_RANGE is not set', () => {
    for (const missing of ['PROVISIONING_IP', 'PROVISIONING_DHCP_RANGE']) {
      const variables = Object.fromEntries(Object.entries(VARIABLES).filter(([name]) => name !== missing));
      expect(() => loadCompose(variables)).toThrow(InterpolationError);
      expect(() => loadCompose(variables)).toThrow(`required variable ${missing}`);
    }
  });

  it.each(BMAAS_SERVICES)('%s: its configuration files and environment load through loadConfig', (name) => {
    const { config, files } = serviceConfig(name);
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) {
      const generated = credentialsDir !== undefined && file.startsWith(`${credentialsDir}/`);
      expect(generated || !relative(join(REPO, 'docker'), file).startsWith('..'), `${file} lives under docker/`).toBe(
        true,
      );
    }
    expect(config.database.connection).toBe('postgresql://bmaas:compose-test@postgres:5432/bmaas');
    expect(compose.services[new URL(config.database.connection ?? '').hostname]).toBeDefined();
  });

  it('a misspelt option name in a service environment fails the load', () => {
    const { files } = serviceConfig('api');
    expect(() =>
      loadConfig({
        configFiles: files,
        env: { ...service('api').environment, BMAAS_API__PUBLIC_ENDPIONT: 'x' },
        pluginSections: 'ignore',
      }),
    ).toThrow(/BMAAS_API__PUBLIC_ENDPIONT names no known option/);
  });

  it('the API and the conductors link boot scripts to the API on the provisioning address', () => {
    for (const name of ['api', ...CONDUCTORS]) {
      const { config } = serviceConfig(name);
      if (CONDUCTORS.includes(name)) expect(ipxeConfigOf(config).pxe.ipxe_use_boot_config_api, name).toBe(true);
      expect(config.api.public_endpoint, name).toBe('http://192.0.2.10:6385');
    }
    const api = serviceConfig('api').config;
    expect(publishedPorts('api')).toContainEqual({ ip: undefined, host: api.api.port, container: api.api.port });
    expect(api.api.port).toBe(6385);
    // The wildcard script each conductor renders sends every NIC to the API.
    const rootScript = renderRootBootScript(ipxeConfigOf(serviceConfig('conductor-1').config));
    expect(rootScript).toContain('chain http://192.0.2.10:6385/v1/boot/${net${nic}/mac:hexhyp}/boot.ipxe');
  });

  it('each conductor has its own name, JSON-RPC endpoint, file server and http_root volume', () => {
    const seen = { host: new Set<string>(), url: new Set<string>(), volume: new Set<string>() };
    for (const name of CONDUCTORS) {
      const { config } = serviceConfig(name);
      // The API calls http://<[DEFAULT]host>:<[json_rpc]port>: the service name resolves on the compose network.
      expect(config.DEFAULT.host).toBe(name);
      expect(config.json_rpc.port).toBe(8089);
      expect(config.json_rpc.host_ip).toBe('0.0.0.0');
      expect(config.deploy.serve_http_root).toBe(true);
      expect(config.deploy.http_server_host_ip).toBe('0.0.0.0');
      const httpUrl = new URL(config.deploy.http_url ?? '');
      expect(httpUrl.hostname).toBe(VARIABLES.PROVISIONING_IP);
      const port = Number(httpUrl.port);
      expect(publishedPorts(name)).toEqual([{ ip: VARIABLES.PROVISIONING_IP, host: port, container: port }]);
      const httpRootVolume = (service(name).volumes ?? []).find((entry) =>
        entry.endsWith(`:${config.deploy.http_root}`),
      );
      const volumeName = httpRootVolume?.split(':')[0] ?? '';
      expect(compose.volumes, `${name}: ${config.deploy.http_root} is a named volume`).toHaveProperty([volumeName]);
      seen.host.add(config.DEFAULT.host);
      seen.url.add(httpUrl.href);
      seen.volume.add(volumeName);
    }
    for (const values of Object.values(seen)) expect(values.size).toBe(CONDUCTORS.length);
  });

  it('starts in order: postgres healthy, then dbsync completed, then the API and conductors', () => {
    expect(service('dbsync').depends_on).toEqual({ postgres: { condition: 'service_healthy' } });
    expect(service('dbsync').restart).toBe('no');
    expect(service('dbsync').command?.at(-1)).toBe('upgrade');
    expect(service('credentials').restart).toBe('no');
    expect(service('certificates').restart).toBe('no');
    for (const name of ['api', ...CONDUCTORS]) {
      expect(service(name).depends_on, name).toEqual({
        dbsync: { condition: 'service_completed_successfully' },
        credentials: { condition: 'service_completed_successfully' },
        certificates: { condition: 'service_completed_successfully' },
      });
    }
  });

  it('is authenticated end to end with the credentials made once per install', () => {
    expect(service('credentials').volumes).toEqual([`credentials:${CREDENTIALS_VOLUME}`]);
    expect(service('credentials').command?.slice(1)).toEqual([
      'packages/common/dist/credentials-main.js',
      CREDENTIALS_VOLUME,
    ]);
    expect(compose.volumes).toHaveProperty(['credentials']);
    const api = serviceConfig('api').config;
    expect(api.DEFAULT.auth_strategy).toBe('http_basic');
    expect(api.DEFAULT.http_basic_auth_user_file.startsWith(`${generatedCredentials()}/`)).toBe(true);
    expect(jsonRpcAuthStrategy(api)).toBe('http_basic');
    expect(api.json_rpc.username).toBe('conductor');
    for (const name of CONDUCTORS) {
      const { config } = serviceConfig(name);
      expect(jsonRpcAuthStrategy(config), name).toBe('http_basic');
      expect(config.json_rpc.http_basic_auth_user_file.startsWith(`${generatedCredentials()}/`), name).toBe(true);
      // Listening on the compose network is allowed because it is authenticated.
      expect(() => assertJsonRpcExposureAllowed(config), name).not.toThrow();
      expect(config.json_rpc.allow_unauthenticated_remote_access, name).toBe(false);
    }
  });

  it('speaks TLS on JSON-RPC: each conductor serves a certificate of the install CA naming the host the API dials', () => {
    // The certificates service, run here as in its container (its command, the volume's path mapped to ours).
    const command = service('certificates').command ?? [];
    expect(command.slice(0, 2)).toEqual(['node', 'packages/pki/dist/certificates-main.js']);
    expect(service('certificates').volumes).toEqual([`credentials:${CREDENTIALS_VOLUME}`]);
    const [directory = '', ...names] = command.slice(2);
    expect(directory.startsWith(`${CREDENTIALS_VOLUME}/`)).toBe(true);
    const hostDirectory = join(generatedCredentials(), posix.relative(CREDENTIALS_VOLUME, directory));
    for (const name of names) ensureCertificate({ directory: hostDirectory, ...parseCertificateArgument(name) });

    const api = serviceConfig('api').config;
    expect(api.json_rpc.use_ssl).toBe(true);
    const ca = new X509Certificate(readFileSync(hostPathOf('api', api.json_rpc.cafile ?? '')));
    expect(ca.ca).toBe(true);
    for (const name of CONDUCTORS) {
      const { config } = serviceConfig(name);
      expect(config.json_rpc.use_ssl, name).toBe(true);
      const certificate = new X509Certificate(readFileSync(hostPathOf(name, config.json_rpc.cert_file ?? '')));
      expect(certificate.checkIssued(ca) && certificate.verify(ca.publicKey), `${name} is signed by the CA`).toBe(true);
      // The API dials https://<[DEFAULT]host>:8089 and checks that name against the certificate.
      expect(certificate.checkHost(config.DEFAULT.host), name).toBe(config.DEFAULT.host);
      expect(existsSync(hostPathOf(name, config.json_rpc.key_file ?? '')), name).toBe(true);
    }
    // One conductor's certificate is not another's.
    const first = serviceConfig('conductor-1').config;
    const other = new X509Certificate(
      readFileSync(hostPathOf('conductor-2', serviceConfig('conductor-2').config.json_rpc.cert_file ?? '')),
    );
    expect(other.checkHost(first.DEFAULT.host)).toBeUndefined();
  });

  it('runs the entry points the packages declare', () => {
    const binOf = (pkg: string, bin: string) => {
      const manifest = JSON.parse(readFileSync(join(REPO, 'packages', pkg, 'package.json'), 'utf8'));
      return posix.join('packages', pkg, manifest.bin[bin]);
    };
    expect(service('dbsync').command?.slice(0, 2)).toEqual(['node', binOf('db', 'bmaas-dbsync')]);
    // The API and the conductors with the servers' node flags, as npm start runs them.
    const server = (bin: string) => ['node', ...SERVER_NODE_FLAGS, bin];
    const head = (name: string) => service(name).command?.slice(0, 2 + SERVER_NODE_FLAGS.length);
    expect(head('api')).toEqual(server(binOf('api', 'bmaas-api')));
    for (const name of CONDUCTORS) expect(head(name), name).toEqual(server(binOf('conductor', 'bmaas-conductor')));
  });

  it('has health checks that probe what each service serves', () => {
    expect(service('postgres').healthcheck?.test.slice(0, 2)).toEqual(['CMD', 'pg_isready']);
    const probe = (name: string) => {
      const [kind, program, flag, script = ''] = service(name).healthcheck?.test ?? [];
      expect([kind, program, flag], name).toEqual(['CMD', 'node', '-e']);
      new Script(script); // throws on a syntax error
      return script;
    };
    expect(probe('api')).toContain(`fetch('http://127.0.0.1:${serviceConfig('api').config.api.port}/')`);
    for (const name of CONDUCTORS) {
      const port = new URL(serviceConfig(name).config.deploy.http_url ?? '').port;
      expect(probe(name)).toContain(`fetch('http://127.0.0.1:${port}/boot.ipxe')`);
    }
  });

  it('dnsmasq: one static configuration, the wildcard script of conductor-1, and the boot-speed settings', () => {
    const dnsmasq = service('dnsmasq');
    expect(dnsmasq.network_mode).toBe('host');
    expect(dnsmasq.cap_add).toEqual(expect.arrayContaining(['NET_ADMIN', 'NET_RAW']));
    const wildcardScript = new URL('boot.ipxe', serviceConfig('conductor-1').config.deploy.http_url ?? '').href;
    expect(dnsmasqArgs()).toEqual(
      expect.arrayContaining([
        '--port=0',
        '--bind-interfaces',
        '--interface=br-prov',
        '--dhcp-range=192.0.2.100,192.0.2.200,12h',
        '--dhcp-match=set:ipxe,175',
        `--dhcp-boot=tag:ipxe,${wildcardScript}`,
        // Each of these saves every boot seconds of waiting.
        '--enable-ra',
        '--dhcp-range=fd77::,ra-only,64',
        '--dhcp-option=tag:ipxe,175,b0:01:01',
        '--no-ping',
      ]),
    );
  });

  const dnsmasqBinary = ['/usr/sbin/dnsmasq', '/usr/bin/dnsmasq'].find((path) => existsSync(path));
  const noDnsmasq = missingPrerequisite(
    'compose dnsmasq --test',
    dnsmasqBinary ? null : 'dnsmasq is not installed (dnsmasq-base)',
  );
  it.skipIf(noDnsmasq)('dnsmasq accepts the command line (dnsmasq --test)', async () => {
    const output = await new Promise<string>((done, fail) => {
      execFile(dnsmasqBinary as string, ['--test', ...dnsmasqArgs()], { timeout: 10_000 }, (error, stdout, stderr) =>
        error ? fail(new Error(`${error.message}\n${stderr}`)) : done(`${stdout}${stderr}`),
      );
    });
    expect(output).toContain('syntax check OK');
  });
});

describe('docker/Dockerfile', () => {
  const dockerfile = parseDockerfile(readFileSync(join(REPO, 'docker', 'Dockerfile'), 'utf8'));
  const stage = (name: string): DockerfileStage => {
    const found = dockerfile.stages.find((candidate) => candidate.name === name);
    if (!found) throw new Error(`docker/Dockerfile has no stage ${name}`);
    return found;
  };
  const runs = (name: string) =>
    stage(name)
      .instructions.filter((i) => i.keyword === 'RUN')
      .map((i) => i.args);

  it('builds with the pinned pnpm and the frozen lockfile, then installs production dependencies', () => {
    const build = stage('build');
    expect(build.base).toBe('node:20-bookworm');
    const packageManager = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')).packageManager;
    expect(`pnpm@${dockerfile.globalArgs.PNPM_VERSION}`).toBe(packageManager);
    expect(runs('build').join('\n')).toMatch(/npm install --global pnpm@\$\{PNPM_VERSION\}/);
    expect(runs('build')).toContain('pnpm install --frozen-lockfile');
    expect(runs('build').join('\n')).toContain('pnpm install --prod --frozen-lockfile --offline --no-optional');
  });

  it('takes its base images as build arguments whose defaults are the upstream images, as the compose file does', () => {
    const defaults = {
      BMAAS_BUILD_IMAGE: 'node:20-bookworm',
      BMAAS_RUNTIME_BASE_IMAGE: 'node:20-bookworm-slim',
      BMAAS_DEBIAN_IMAGE: 'debian:bookworm-slim',
    };
    for (const [name, image] of Object.entries(defaults)) expect(dockerfile.globalArgs[name], name).toBe(image);
    expect(stage('dnsmasq').base).toBe('debian:bookworm-slim');
    // Unset, the compose variables give the same defaults to every build; postgres is upstream's too.
    const unset = loadCompose({ PROVISIONING_IP: '192.0.2.10', PROVISIONING_DHCP_RANGE: '192.0.2.100,192.0.2.200' });
    for (const name of [...BMAAS_SERVICES, 'dnsmasq']) {
      expect(unset.services[name]?.build?.args, name).toEqual(defaults);
    }
    expect(unset.services.postgres?.image).toBe('postgres:16-bookworm');
    // No `# syntax=` directive: it makes BuildKit pull a frontend image from a registry.
    expect(readFileSync(join(REPO, 'docker', 'Dockerfile'), 'utf8')).not.toMatch(/^#\s*syntax=/m);
  });

  it('ships the files compiled code reads from beside dist/ (packages/*/static, e.g. the fleet page)', () => {
    const withStatic = readdirSync(join(REPO, 'packages')).filter((name) =>
      existsSync(join(REPO, 'packages', name, 'static')),
    );
    expect(withStatic).toContain('api');
    for (const name of withStatic) {
      expect(runs('build').join('\n')).toContain(`cp -r packages/${name}/static /out/packages/${name}/static`);
    }
  });

  it('runs as a non-root user in a slim runtime stage without build tools', () => {
    expect(dockerfile.stages.length).toBeGreaterThanOrEqual(3);
    const runtime = stage('runtime');
    // Debian's slim image and the Node.js binary alone (no npm, corepack or yarn), stripped.
    expect(runtime.base).toBe('debian:bookworm-slim');
    expect(stage('node-base').base).toBe('node:20-bookworm-slim');
    expect(stage('node-binary').instructions).toContainEqual({
      keyword: 'COPY',
      args: '--from=node-base /usr/local/bin/node /node',
    });
    expect(runs('node-binary').join('\n')).toMatch(/strip --strip-all \/node/);
    const users = runtime.instructions.filter((i) => i.keyword === 'USER').map((i) => i.args);
    expect(users.at(-1)?.split(':')[0]).toBe('10001');
    expect(runtime.instructions).toContainEqual({ keyword: 'WORKDIR', args: '/opt/bmaas' });
    const runtimeRuns = runs('runtime').join('\n');
    expect(runtimeRuns).not.toMatch(/build-essential|pnpm|gcc|make/);
    // The Debian packages a conductor runs: ipmitool (IPMI BMCs), genisoimage (config drives given as objects),
    // qemu-utils (instance images converted to raw), and the redfish-virtual-media boot ISO's builders.
    for (const install of runtimeRuns.match(/apt-get install[^&\\]*/g) ?? []) {
      expect(install.trim()).toBe(
        'apt-get install -y --no-install-recommends ipmitool genisoimage qemu-utils ' +
          'xorriso isolinux syslinux-common grub-efi-amd64-bin mtools dosfstools',
      );
    }
    const copies = runtime.instructions.filter((i) => i.keyword === 'COPY').map((i) => i.args);
    expect(copies).toContain('--from=node-binary /node /usr/local/bin/node');
    for (const copy of copies) expect(copy).toMatch(/^--from=(build|node-binary) /);
  });

  it('ships the packages the API, the conductor and the commands run, with their production dependencies only', () => {
    const build = runs('build').join('\n');
    const filter = stage('build').instructions.find(
      (i) => i.keyword === 'ARG' && i.args.startsWith('RUNTIME_PACKAGES='),
    );
    for (const name of ['api', 'conductor', 'pki']) expect(filter?.args).toContain(`--filter-prod @bmaas/${name}...`);
    expect(build).toContain('pnpm install --prod --frozen-lockfile --offline --no-optional $RUNTIME_PACKAGES');
    // Each entry point the compose file runs is there, or the build fails.
    for (const command of Object.values(compose.services).map((definition) => definition.command)) {
      const entry = (command as string[] | undefined)?.find((word) => /^packages\/.*\.js$/.test(word));
      if (entry) expect(build, entry).toContain(`test -f /out/${entry}`);
    }
  });

  it('has every stage docker-compose.yml builds; dnsmasq from dnsmasq-base', () => {
    for (const [name, definition] of Object.entries(compose.services)) {
      if (!definition.build) continue;
      expect(definition.build.dockerfile, name).toBe('docker/Dockerfile');
      expect(stage(definition.build.target ?? '').name, name).toBe(definition.build.target);
    }
    expect(service('dnsmasq').build?.target).toBe('dnsmasq');
    expect(runs('dnsmasq').join('\n')).toMatch(/apt-get install -y --no-install-recommends dnsmasq-base/);
  });

  it('is given a build context without node_modules, dist, .state, bench/results or .git', () => {
    const ignored = readFileSync(join(REPO, '.dockerignore'), 'utf8')
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line !== '' && !line.startsWith('#'));
    expect(ignored).toEqual(expect.arrayContaining(['**/node_modules', '**/dist', '.state', 'bench/results', '.git']));
  });
});
