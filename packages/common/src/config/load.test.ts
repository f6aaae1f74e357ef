import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../errors.js';
import { configFileArgs, configFilesFromArgs, loadConfig, pluginSection } from './load.js';

/** A plug-in's own section, as an interface descriptor carries it. */
const PLUGIN_SECTIONS = {
  pxe: {
    ipxe_use_boot_config_api: {
      doc: 'Use the API.',
      format: Boolean,
      default: false,
      env: 'BMAAS_PXE__IPXE_USE_BOOT_CONFIG_API',
    },
    ipxe_config_api_root_url: {
      doc: 'Root URL.',
      format: 'optional-url',
      default: null as string | null,
      env: 'BMAAS_PXE__IPXE_CONFIG_API_ROOT_URL',
    },
  },
};
const pxeOf = (config: Parameters<typeof pluginSection>[0]) =>
  pluginSection<(typeof PLUGIN_SECTIONS)['pxe']>(config, 'pxe');

const dir = mkdtempSync(join(tmpdir(), 'bmaas-config-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let counter = 0;
function file(text: string): string {
  const path = join(dir, `test-${counter++}.conf`);
  writeFileSync(path, text);
  return path;
}

function errorOf(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('gives the documented defaults', () => {
    const config = loadConfig({ env: {} });
    expect(config.api.port).toBe(6385);
    expect(config.api.restrict_boot_config).toBe(true);
    expect(config.api.restrict_lookup).toBe(true);
    expect(config.api.max_limit).toBe(1000);
    expect(config.conductor.heartbeat_interval).toBe(10);
    expect(config.conductor.heartbeat_timeout).toBe(60);
    expect(config.json_rpc.port).toBe(8089);
    expect(config.database.connection).toBeNull();
    // The core names no plug-in: the plug-ins a process loads add theirs (pluginDefaults).
    expect(config.DEFAULT.enabled_boot_interfaces).toEqual(['fake']);
  });

  it('takes the defaults plug-ins give core options, and refuses one for an option the core lacks', () => {
    const pluginDefaults = { DEFAULT: { enabled_boot_interfaces: ['fake', 'net'] } };
    expect(loadConfig({ env: {}, pluginDefaults }).DEFAULT.enabled_boot_interfaces).toEqual(['fake', 'net']);
    const configured = loadConfig({
      env: { BMAAS_DEFAULT__ENABLED_BOOT_INTERFACES: 'fake' },
      pluginDefaults,
    });
    expect(configured.DEFAULT.enabled_boot_interfaces).toEqual(['fake']);
    expect(errorOf(() => loadConfig({ env: {}, pluginDefaults: { DEFAULT: { enabled_net: ['x'] } } })).message).toBe(
      'plug-in default for [DEFAULT]enabled_net: no such core option',
    );
  });

  it('reads an ironic.conf-style file with typed values', () => {
    const path = file(`
# a comment
[DEFAULT]
host = conductor-1
enabled_boot_interfaces = ipxe, fake
default_conductor_group = RackA

[api]
port = 7000
restrict_boot_config = False

[pxe]
ipxe_use_boot_config_api = true
ipxe_config_api_root_url = http://192.0.2.1:6385
`);
    const config = loadConfig({ configFiles: [path], env: {}, pluginSections: PLUGIN_SECTIONS });
    expect(config.DEFAULT.host).toBe('conductor-1');
    expect(config.DEFAULT.enabled_boot_interfaces).toEqual(['ipxe', 'fake']);
    expect(config.DEFAULT.default_conductor_group).toBe('racka');
    expect(config.api.port).toBe(7000);
    expect(config.api.restrict_boot_config).toBe(false);
    expect(pxeOf(config).ipxe_use_boot_config_api).toBe(true);
    expect(pxeOf(config).ipxe_config_api_root_url).toBe('http://192.0.2.1:6385');
  });

  it("checks a plug-in's section only when given its schema, or leaves it unread in a process that loads no plug-in", () => {
    const path = file('[pxe]\nipxe_use_boot_config_api = true\n');
    expect(pxeOf(loadConfig({ env: {}, pluginSections: PLUGIN_SECTIONS })).ipxe_use_boot_config_api).toBe(false);
    expect(errorOf(() => loadConfig({ configFiles: [path], env: {} })).message).toContain('unknown section [pxe]');
    expect(errorOf(() => loadConfig({ env: { BMAAS_PXE__IPXE_TIMEOUT: '1' } })).message).toContain(
      'BMAAS_PXE__IPXE_TIMEOUT',
    );
    const api = loadConfig({
      configFiles: [path],
      env: { BMAAS_PXE__IPXE_TIMEOUT: '1', BMAAS_API__PORT: '7005' },
      pluginSections: 'ignore',
    });
    expect(api.api.port).toBe(7005);
    expect(pxeOf(api)).toEqual({});
    // Core sections stay strict there too.
    expect(errorOf(() => loadConfig({ env: { BMAAS_API__PROT: '1' }, pluginSections: 'ignore' })).message).toContain(
      'BMAAS_API__PROT',
    );
    // Within a known plug-in section, unknown options are refused like core ones.
    expect(
      errorOf(() => loadConfig({ env: { BMAAS_PXE__IPXE_TIMEOUT: '1' }, pluginSections: PLUGIN_SECTIONS })).message,
    ).toContain('BMAAS_PXE__IPXE_TIMEOUT');
  });

  it('adds plug-in options to [deploy] and [agent], and leaves them unread in a process that loads no plug-in', () => {
    const probe = { probe_priority: { doc: 'Probe.', format: 'nat', default: 0, env: 'BMAAS_DEPLOY__PROBE_PRIORITY' } };
    const path = file('[deploy]\nprobe_priority = 3\nhttp_root = /srv/boot\n');
    const conductor = loadConfig({ configFiles: [path], env: {}, pluginSections: { deploy: probe } });
    expect(conductor.deploy.http_root).toBe('/srv/boot');
    expect((conductor.deploy as unknown as Record<string, unknown>).probe_priority).toBe(3);
    const api = loadConfig({ configFiles: [path], env: { BMAAS_AGENT__PROBE: '1' }, pluginSections: 'ignore' });
    expect(api.deploy.http_root).toBe('/srv/boot');
    expect(api.deploy).not.toHaveProperty('probe_priority');
    // The core's own options stay checked there.
    expect(
      errorOf(() => loadConfig({ env: { BMAAS_AGENT__REQUIRE_TLS: 'maybe' }, pluginSections: 'ignore' })).message,
    ).toContain('BMAAS_AGENT__REQUIRE_TLS');
    expect(errorOf(() => loadConfig({ configFiles: [path], env: {} })).message).toContain(
      '[deploy] unknown option "probe_priority"',
    );
    expect(
      errorOf(() => loadConfig({ env: {}, pluginSections: { deploy: { http_url: probe.probe_priority } } })).message,
    ).toBe('plug-in option [deploy]http_url is a core option');
  });

  it('refuses a plug-in section that takes a core section', () => {
    expect(errorOf(() => loadConfig({ env: {}, pluginSections: { api: PLUGIN_SECTIONS.pxe } })).message).toBe(
      'plug-in section [api] is a core section',
    );
  });

  it('applies files in order, then the environment, then overrides', () => {
    const first = file('[api]\nport = 7001\nmax_limit = 10\n');
    const second = file('[api]\nport = 7002\n');
    const config = loadConfig({
      configFiles: [first, second],
      env: { BMAAS_API__MAX_LIMIT: '20', BMAAS_CONDUCTOR__HEARTBEAT_TIMEOUT: '50' },
      overrides: { conductor: { heartbeat_timeout: 70 } },
    });
    expect(config.api.port).toBe(7002);
    expect(config.api.max_limit).toBe(20);
    expect(config.conductor.heartbeat_timeout).toBe(70);
  });

  it('refuses a heartbeat interval not shorter than the heartbeat timeout (the conductor would fence itself)', () => {
    const error = errorOf(() => loadConfig({ env: {}, overrides: { conductor: { heartbeat_timeout: 5 } } }));
    expect(error.message).toContain('[conductor] heartbeat_interval = 10 must be less than heartbeat_timeout = 5');
    expect(
      loadConfig({ env: {}, overrides: { conductor: { heartbeat_timeout: 5, heartbeat_interval: 1 } } }).conductor
        .heartbeat_interval,
    ).toBe(1);
  });

  it('stops on an unknown section with one line naming the file', () => {
    const path = file('[apii]\nport = 1\n');
    const error = errorOf(() => loadConfig({ configFiles: [path], env: {} }));
    expect(error.message).toContain(path);
    expect(error.message).toContain('unknown section [apii]');
    expect(error.message).toContain('did you mean "api"');
    expect(error.message).not.toContain('\n');
  });

  it('stops on an unknown option naming file, section and option', () => {
    const path = file('[api]\nprot = 1\n');
    const error = errorOf(() => loadConfig({ configFiles: [path], env: {} }));
    expect(error.message).toBe(`${path}: [api] unknown option "prot"; did you mean "port"?`);
  });

  it.each([
    ['[api]\nport = seventy\n', '[api] port = "seventy"', 'a port number 0-65535'],
    ['[api]\nport = 70000\n', '[api] port = "70000"', '65535'],
    ['[api]\nrestrict_boot_config = maybe\n', '[api] restrict_boot_config = "maybe"', 'true or false'],
    ['[DEFAULT]\nauth_strategy = keystone\n', '[DEFAULT] auth_strategy = "keystone"', 'noauth, http_basic'],
    ['[pxe]\nipxe_config_api_root_url = ftp://x\n', '[pxe] ipxe_config_api_root_url = "ftp://x"', 'http(s) URL'],
    ['[conductor]\nheartbeat_interval = 0\n', '[conductor] heartbeat_interval = "0"', 'greater than 0'],
    ['[api]\nbulk_enrolment_max_nodes = 0\n', '[api] bulk_enrolment_max_nodes = "0"', 'whole number greater than 0'],
    [
      '[api]\nbulk_enrolment_max_nodes = 2.5\n',
      '[api] bulk_enrolment_max_nodes = "2.5"',
      'whole number greater than 0',
    ],
  ])('stops on a bad value: %j', (text, where, expected) => {
    const path = file(text);
    const error = errorOf(() => loadConfig({ configFiles: [path], env: {}, pluginSections: PLUGIN_SECTIONS }));
    expect(error.message.startsWith(`${path}: ${where}: `)).toBe(true);
    expect(error.message).toContain(expected);
    expect(error.message).not.toContain('\n');
  });

  it('names the environment variable holding a bad value, and refuses unknown BMAAS_ options', () => {
    expect(errorOf(() => loadConfig({ env: { BMAAS_API__PORT: 'x' } })).message).toMatch(
      /^environment BMAAS_API__PORT: \[api\] port = "x": /,
    );
    expect(errorOf(() => loadConfig({ env: { BMAAS_API__PROT: '1' } })).message).toContain('BMAAS_API__PROT');
  });

  it('hides sensitive values in errors', () => {
    const path = file('[json_rpc]\nusername = 1\n[database]\nmax_pool_size = -1\n');
    expect(errorOf(() => loadConfig({ configFiles: [path], env: {} })).message).toContain('max_pool_size = "-1"');
  });

  it('returns a frozen object', () => {
    const config = loadConfig({ env: {} });
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.api)).toBe(true);
    expect(Object.isFrozen(config.DEFAULT.enabled_boot_interfaces)).toBe(true);
  });

  it('reads --config-file arguments in order', () => {
    expect(configFilesFromArgs(['--config-file', 'a.conf', 'x', '--config-file=b.conf'])).toEqual(['a.conf', 'b.conf']);
    expect(() => configFilesFromArgs(['--config-file'])).toThrow(ConfigError);
    expect(configFileArgs(['--config-file', 'a.conf', 'upgrade', '--verbose'])).toEqual({
      configFiles: ['a.conf'],
      positionals: ['upgrade'],
    });
  });

  it('says when a file cannot be read', () => {
    expect(errorOf(() => loadConfig({ configFiles: [join(dir, 'missing.conf')], env: {} })).message).toContain(
      'cannot read config file (ENOENT)',
    );
  });
});
