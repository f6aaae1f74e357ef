import {
  type BmaasConfig,
  CORE_INTERFACE_TYPES,
  ConfigError,
  createSilentLogger,
  type DeepPartial,
  DriverNotFound,
  InvalidParameterValue,
  loadConfig,
  type NodeRecord,
  OPTIONAL_INTERFACE_GENERIC,
  OPTIONAL_INTERFACE_TYPES,
} from '@bmaas/common';
import {
  type BootInterfaceDescriptor,
  type DeployInterface,
  FakeBootInterface,
  FakeDeployInterface,
  fakeBootInterface,
  fakeDeployInterface,
  fakeManagementInterface,
  fakePowerInterface,
  type InterfaceDeps,
  type InterfaceDescriptor,
} from '@bmaas/driver-api';
import { ipxeBootInterface } from '@bmaas/ipxe-boot-interface';
import { describe, expect, it } from 'vitest';
import type { DriverCatalog } from './catalog.js';
import { DriverRegistry } from './driver-registry.js';
import { DRIVER_CATALOG } from './enabled-interfaces.js';
import { loadConductorConfig, pluginConfigDefaults, pluginConfigSections } from './plugin-config.js';

function configWith(overrides: DeepPartial<BmaasConfig>['DEFAULT']): BmaasConfig {
  return loadConductorConfig({
    env: {},
    overrides: { DEFAULT: { enabled_boot_interfaces: ['fake'], ...overrides } },
  });
}

function create(config: BmaasConfig, catalog: DriverCatalog = DRIVER_CATALOG): DriverRegistry {
  return DriverRegistry.create(catalog, { config, logger: createSilentLogger(), conductorHostname: 'c1' });
}

/** The one line a conductor would print, or undefined when it starts. */
function refusal(config: BmaasConfig, catalog?: DriverCatalog): string | undefined {
  try {
    create(config, catalog);
    return undefined;
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).not.toContain('\n');
    return (error as Error).message;
  }
}

const secondFakeBoot: BootInterfaceDescriptor = { ...fakeBootInterface, create: () => new FakeBootInterface() };
const netBoot: BootInterfaceDescriptor = { ...fakeBootInterface, name: 'net', create: () => new FakeBootInterface() };

function node(fields: Partial<NodeRecord> = {}): NodeRecord {
  return {
    uuid: '11111111-2222-4333-8444-555555555555',
    driver: 'fake-hardware',
    bootInterface: 'fake',
    deployInterface: 'fake',
    powerInterface: 'fake',
    managementInterface: 'fake',
    ...Object.fromEntries(
      OPTIONAL_INTERFACE_TYPES.map((kind) => [`${kind}Interface`, OPTIONAL_INTERFACE_GENERIC[kind]]),
    ),
    ...fields,
  } as NodeRecord;
}

describe('DriverRegistry', () => {
  it('enables the configured interfaces and registers each per hardware type, default first', () => {
    const registry = create(configWith({ enabled_deploy_interfaces: ['fake', 'direct'] }));
    expect(registry.hardwareTypeNames()).toEqual(['fake-hardware']);
    const deploy = registry.registrationInterfaces().filter((i) => i.interfaceType === 'deploy');
    expect(deploy).toEqual([
      { hardwareType: 'fake-hardware', interfaceType: 'deploy', interfaceName: 'fake', isDefault: true },
      { hardwareType: 'fake-hardware', interfaceType: 'deploy', interfaceName: 'direct', isDefault: false },
    ]);
    const core = registry
      .registrationInterfaces()
      .filter((i) => CORE_INTERFACE_TYPES.includes(i.interfaceType as never));
    expect(core).toHaveLength(5);
  });

  it('registers the generic and fake implementation of every optional kind, the generic one as default', () => {
    const registry = create(configWith({}));
    const optional = registry
      .registrationInterfaces()
      .filter((i) => OPTIONAL_INTERFACE_TYPES.includes(i.interfaceType as never));
    for (const kind of OPTIONAL_INTERFACE_TYPES) {
      const names = optional.filter((i) => i.interfaceType === kind);
      expect(names.find((i) => i.isDefault)?.interfaceName, kind).toBe(OPTIONAL_INTERFACE_GENERIC[kind]);
      if (kind !== 'network')
        expect(
          names.map((i) => i.interfaceName),
          kind,
        ).toContain('fake');
    }
    const driver = registry.driverFor(node({ raidInterface: 'fake', vendorInterface: 'no-vendor' }));
    expect(driver.raid.constructor.name).toBe('FakeRaid');
    expect(driver.vendor.methods()).toEqual({});
    expect(() => registry.driverFor(node({ biosInterface: 'idrac' }))).toThrow(
      'bios_interface "idrac" is not enabled for hardware type fake-hardware (enabled: no-bios, fake)',
    );
  });

  it('gives a hardware type that names no optional kind their generic implementations only', () => {
    const catalog: DriverCatalog = {
      interfaces: DRIVER_CATALOG.interfaces,
      hardwareTypes: [
        { name: 'plain', supported: { boot: ['fake'], deploy: ['fake'], power: ['fake'], management: ['fake'] } },
      ],
    };
    const registry = create(configWith({ enabled_hardware_types: ['plain'] }), catalog);
    const raid = registry.registrationInterfaces().filter((i) => i.interfaceType === 'raid');
    expect(raid).toEqual([{ hardwareType: 'plain', interfaceType: 'raid', interfaceName: 'no-raid', isDefault: true }]);
  });

  it('makes the configured default the default', () => {
    const registry = create(
      configWith({ enabled_deploy_interfaces: ['fake', 'direct'], default_deploy_interface: 'direct' }),
    );
    const defaults = registry.registrationInterfaces().filter((i) => i.isDefault);
    expect(defaults.find((i) => i.interfaceType === 'deploy')?.interfaceName).toBe('direct');
  });

  it.each([
    [
      { enabled_boot_interfaces: ['fake', 'pxe'] },
      `[DEFAULT]enabled_boot_interfaces: unknown boot interface "pxe" (known: ${DRIVER_CATALOG.interfaces.boot.map((d) => d.name).join(', ')})`,
    ],
    [
      { enabled_deploy_interfaces: ['direct', 'direct'] },
      '[DEFAULT]enabled_deploy_interfaces: "direct" is listed twice',
    ],
    [
      { enabled_hardware_types: ['idrac'] },
      '[DEFAULT]enabled_hardware_types: unknown hardware type "idrac" (known: fake-hardware, ipmi, redfish, manual-management)',
    ],
    [
      { enabled_hardware_types: ['fake-hardware', 'fake-hardware'] },
      '[DEFAULT]enabled_hardware_types: "fake-hardware" is listed twice',
    ],
    [
      { enabled_deploy_interfaces: ['fake'], default_deploy_interface: 'direct' },
      '[DEFAULT]default_deploy_interface: "direct" is not in enabled_deploy_interfaces (fake)',
    ],
  ])('refuses %j with one clear line', (overrides, message) => {
    expect(refusal(configWith(overrides as DeepPartial<BmaasConfig>['DEFAULT']))).toBe(message);
  });

  it('accepts the default config: every default interface is in the catalog', () => {
    expect(refusal(loadConductorConfig({ env: {} }))).toBeUndefined();
  });

  it('enables by default the fakes and the descriptors that declare enabledByDefault', () => {
    const config = loadConductorConfig({ env: {} });
    expect(config.DEFAULT.enabled_boot_interfaces).toEqual([
      'fake',
      ...DRIVER_CATALOG.interfaces.boot.filter((d) => d.enabledByDefault).map((d) => d.name),
    ]);
    expect(config.DEFAULT.enabled_boot_interfaces).toEqual(['fake', 'ipxe']);
    expect(config.DEFAULT.enabled_deploy_interfaces).toEqual(['fake', 'direct']);
    expect(pluginConfigDefaults()).toEqual({
      DEFAULT: { enabled_boot_interfaces: ['fake', 'ipxe'], enabled_deploy_interfaces: ['fake', 'direct'] },
    });
  });

  it('gives each interface its own section, and refuses a configuration loaded without it', () => {
    expect(pluginConfigSections()).toHaveProperty('pxe');
    const withoutSections = loadConfig({
      env: {},
      overrides: { DEFAULT: { enabled_boot_interfaces: ['fake', 'ipxe'] } },
    });
    expect(refusal(withoutSections)).toBe(
      '[pxe] of interface "ipxe" is not in the configuration (load it with loadConductorConfig)',
    );
  });

  /** A deploy interface that keeps what the registry created it with, declaring options of [agent] and [deploy]. */
  function probeDeploy(seen: InterfaceDeps[]): InterfaceDescriptor<DeployInterface> {
    return {
      name: 'probe',
      config: {
        section: 'agent',
        options: { probe_level: { doc: 'Probe.', format: 'nat', default: 1, env: 'BMAAS_AGENT__PROBE_LEVEL' } },
      },
      coreOptions: {
        deploy: { probe_priority: { doc: 'Probe.', format: 'nat', default: 0, env: 'BMAAS_DEPLOY__PROBE_PRIORITY' } },
      },
      create: (deps) => {
        seen.push(deps);
        return new FakeDeployInterface();
      },
    };
  }
  const withDeploy = (...deploy: InterfaceDescriptor<DeployInterface>[]): DriverCatalog => ({
    ...DRIVER_CATALOG,
    interfaces: { ...DRIVER_CATALOG.interfaces, deploy: [...DRIVER_CATALOG.interfaces.deploy, ...deploy] },
  });

  it("hands an interface just the options it declares, in its own section and in core ones, and the core's boot file options", () => {
    const seen: InterfaceDeps[] = [];
    const catalog = withDeploy(probeDeploy(seen));
    const config = loadConductorConfig(
      {
        env: { BMAAS_DEPLOY__PROBE_PRIORITY: '7' },
        overrides: { DEFAULT: { enabled_boot_interfaces: ['fake'], enabled_deploy_interfaces: ['fake', 'probe'] } },
      },
      catalog,
    );
    create(config, catalog);
    expect(seen).toHaveLength(1);
    const [deps] = seen as [InterfaceDeps];
    // Not [agent]require_tls (the core's), nor the direct interface's options of [agent].
    expect(deps.settings).toEqual({ probe_level: 1 });
    expect(deps.coreSettings).toEqual({ deploy: { probe_priority: 7 } });
    expect(Object.keys(deps.deploy).sort()).toEqual([
      'boot_config_cache_bytes',
      'boot_config_cache_check_interval',
      'http_root',
      'http_url',
    ]);
  });

  it("refuses a plug-in option of a core section that is the core's or another plug-in's", () => {
    const takesCore: InterfaceDescriptor<DeployInterface> = {
      ...fakeDeployInterface,
      name: 'takes-core',
      coreOptions: {
        deploy: { http_root: { doc: 'Mine.', format: String, default: '/', env: 'BMAAS_DEPLOY__HTTP_ROOT' } },
      },
    };
    expect(() => loadConductorConfig({ env: {} }, withDeploy(takesCore))).toThrow(
      'plug-in option [deploy]http_root is a core option',
    );
    const second = { ...probeDeploy([]), name: 'second', config: undefined };
    expect(() => pluginConfigSections(withDeploy(probeDeploy([]), second))).toThrow(
      '[deploy]probe_priority is claimed by deploy interface "probe" and by deploy interface "second"',
    );
    const inPlainCore: InterfaceDescriptor<DeployInterface> = {
      ...fakeDeployInterface,
      name: 'in-api',
      coreOptions: { api: { mine: { doc: 'Mine.', format: String, default: '', env: 'BMAAS_API__MINE' } } },
    };
    expect(() => loadConductorConfig({ env: {} }, withDeploy(inPlainCore))).toThrow(
      'plug-in section [api] is a core section',
    );
  });

  it('refuses two descriptors claiming one section with schemas of their own (one schema object may be shared)', () => {
    const ipxeConfig = ipxeBootInterface.config as NonNullable<typeof ipxeBootInterface.config>;
    const claiming = {
      ...fakeBootInterface,
      name: 'other',
      config: { ...ipxeConfig, options: { ...ipxeConfig.options } },
    };
    expect(
      pluginConfigSections({
        ...DRIVER_CATALOG,
        interfaces: {
          ...DRIVER_CATALOG.interfaces,
          boot: [...DRIVER_CATALOG.interfaces.boot, { ...claiming, config: ipxeConfig }],
        },
      }),
    ).toHaveProperty('pxe');
    const catalog: DriverCatalog = {
      ...DRIVER_CATALOG,
      interfaces: { ...DRIVER_CATALOG.interfaces, boot: [...DRIVER_CATALOG.interfaces.boot, claiming] },
    };
    expect(() => pluginConfigSections(catalog)).toThrow(
      '[pxe] is claimed by boot interface "ipxe" and by boot interface "other"',
    );
  });

  it('refuses a catalog that names an implementation twice', () => {
    const broken: DriverCatalog = {
      ...DRIVER_CATALOG,
      interfaces: { ...DRIVER_CATALOG.interfaces, boot: [fakeBootInterface, secondFakeBoot] },
    };
    expect(refusal(configWith({}), broken)).toBe('boot interface "fake" is registered twice');
  });

  it('enables the agent inspect interface beside no-inspect and fake, no-inspect staying the default', () => {
    const registry = create(configWith({}));
    const inspect = registry.registrationInterfaces().filter((i) => i.interfaceType === 'inspect');
    expect(inspect.map((i) => [i.interfaceName, i.isDefault])).toEqual([
      ['no-inspect', true],
      ['fake', false],
      ['agent', false],
    ]);
    const driver = registry.driverFor(node({ inspectInterface: 'agent' }));
    expect(driver.inspect.constructor.name).toBe('AgentInspectInterface');
  });

  it('refuses a hardware type that supports none of the enabled interfaces of a kind', () => {
    const catalog: DriverCatalog = {
      interfaces: {
        boot: [fakeBootInterface, netBoot],
        deploy: [fakeDeployInterface],
        power: [fakePowerInterface],
        management: [fakeManagementInterface],
      },
      hardwareTypes: [
        { name: 'net-only', supported: { boot: ['net'], deploy: ['fake'], power: ['fake'], management: ['fake'] } },
      ],
    };
    expect(
      refusal(
        configWith({
          enabled_hardware_types: ['net-only'],
          enabled_deploy_interfaces: ['fake'],
          enabled_inspect_interfaces: ['no-inspect', 'fake'],
        }),
        catalog,
      ),
    ).toBe('hardware type "net-only" supports none of the enabled boot interfaces (enabled: fake; supported: net)');
  });

  it('gives a node its interface instances and refuses what is not enabled', () => {
    const registry = create(configWith({ enabled_deploy_interfaces: ['fake', 'direct'] }));
    const driver = registry.driverFor(node({ deployInterface: 'direct' }));
    expect(driver.deploy.constructor.name).toBe('DirectDeployInterface');
    expect(registry.driverFor(node({ deployInterface: 'direct' }))).toBe(driver);
    expect(() => registry.driverFor(node({ driver: 'redfish' }))).toThrow(DriverNotFound);
    expect(() => registry.driverFor(node({ powerInterface: 'ipmitool' }))).toThrow(InvalidParameterValue);
    expect(() => registry.driverFor(node({ powerInterface: 'ipmitool' }))).toThrow(
      'power_interface "ipmitool" is not enabled for hardware type fake-hardware (enabled: fake)',
    );
  });

  it("answers the properties of a hardware type's default interfaces", () => {
    const qemu = create(configWith({ enabled_power_interfaces: ['qemu', 'fake'], default_power_interface: 'qemu' }));
    expect(Object.keys(qemu.propertiesOf('fake-hardware'))).toEqual(['qemu_qmp_socket']);
    const fake = create(configWith({ enabled_power_interfaces: ['fake', 'qemu'] }));
    expect(fake.propertiesOf('fake-hardware')).toEqual({});
    expect(() => fake.propertiesOf('ipmi')).toThrow(DriverNotFound);
  });
});

describe('ipmi and manual-management hardware types', () => {
  it('loads ipmi with ipmitool power and management, and manual-management with fake power and noop management', () => {
    const registry = create(
      loadConductorConfig({
        env: {},
        overrides: {
          DEFAULT: {
            enabled_hardware_types: ['ipmi', 'manual-management'],
            enabled_power_interfaces: ['fake', 'ipmitool'],
            enabled_management_interfaces: ['ipmitool', 'noop'],
          },
        },
      }),
    );
    const defaults = registry.registrationInterfaces().filter((i) => i.isDefault);
    const pick = (type: string) =>
      Object.fromEntries(
        defaults.filter((i) => i.hardwareType === type).map((i) => [i.interfaceType, i.interfaceName]),
      );
    expect(pick('ipmi')).toMatchObject({ boot: 'ipxe', deploy: 'direct', power: 'ipmitool', management: 'ipmitool' });
    expect(pick('manual-management')).toMatchObject({
      boot: 'ipxe',
      deploy: 'direct',
      power: 'fake',
      management: 'noop',
    });
    const boot = (type: string) =>
      registry
        .registrationInterfaces()
        .filter((i) => i.hardwareType === type && i.interfaceType === 'boot')
        .map((i) => i.interfaceName);
    expect(boot('ipmi')).toEqual(['ipxe']);
    expect(boot('manual-management')).toEqual(['ipxe']);
    const driver = registry.driverFor(
      node({
        driver: 'ipmi',
        bootInterface: 'ipxe',
        deployInterface: 'direct',
        powerInterface: 'ipmitool',
        managementInterface: 'ipmitool',
      }),
    );
    expect(driver.power.constructor.name).toBe('IpmitoolPowerInterface');
    expect(driver.management.constructor.name).toBe('IpmitoolManagementInterface');
  });
});

describe('boot interfaces of the hardware types that drive real machines', () => {
  it('are every enabled boot interface that declares networkBoot, with no list to edit', () => {
    const httpBoot: BootInterfaceDescriptor = {
      ...fakeBootInterface,
      name: 'http-boot',
      networkBoot: true,
      create: () => new FakeBootInterface(),
    };
    const catalog: DriverCatalog = {
      ...DRIVER_CATALOG,
      interfaces: { ...DRIVER_CATALOG.interfaces, boot: [...DRIVER_CATALOG.interfaces.boot, httpBoot] },
    };
    const registry = create(
      loadConductorConfig({
        env: {},
        overrides: {
          DEFAULT: {
            enabled_hardware_types: ['ipmi', 'manual-management', 'fake-hardware'],
            enabled_boot_interfaces: ['fake', 'http-boot', 'grub', 'ipxe'],
            enabled_power_interfaces: ['fake', 'ipmitool'],
            enabled_management_interfaces: ['fake', 'ipmitool', 'noop'],
          },
        },
      }),
      catalog,
    );
    const boot = (type: string) =>
      registry
        .registrationInterfaces()
        .filter((i) => i.hardwareType === type && i.interfaceType === 'boot')
        .map((i) => i.interfaceName);
    // Catalog order, the fake (which boots nothing) left out.
    expect(boot('ipmi')).toEqual(['ipxe', 'grub', 'http-boot']);
    expect(boot('manual-management')).toEqual(['ipxe', 'grub', 'http-boot']);
    expect(boot('fake-hardware')).toEqual(['fake', 'ipxe', 'grub']);
  });

  it('and the boot interfaces that name the hardware type: those that boot through its BMC', () => {
    const bmcBoot: BootInterfaceDescriptor = {
      ...fakeBootInterface,
      name: 'bmc-boot',
      networkBoot: false,
      hardwareTypes: ['redfish'],
      create: () => new FakeBootInterface(),
    };
    const catalog: DriverCatalog = {
      ...DRIVER_CATALOG,
      interfaces: { ...DRIVER_CATALOG.interfaces, boot: [...DRIVER_CATALOG.interfaces.boot, bmcBoot] },
    };
    const registry = create(
      loadConductorConfig({
        env: {},
        overrides: {
          DEFAULT: {
            enabled_hardware_types: ['ipmi', 'redfish'],
            enabled_boot_interfaces: ['ipxe', 'bmc-boot'],
            enabled_power_interfaces: ['ipmitool', 'redfish'],
            enabled_management_interfaces: ['ipmitool', 'redfish'],
          },
        },
      }),
      catalog,
    );
    const boot = (type: string) =>
      registry
        .registrationInterfaces()
        .filter((i) => i.hardwareType === type && i.interfaceType === 'boot')
        .map((i) => i.interfaceName);
    expect(boot('ipmi')).toEqual(['ipxe']);
    expect(boot('redfish')).toEqual(['ipxe', 'bmc-boot']);
  });
});

describe('the redfish-virtual-media boot interface of the registry', () => {
  it('is taken by redfish (through its BMC) and fake-hardware, not by ipmi', () => {
    const registry = create(
      loadConductorConfig({
        env: {},
        overrides: {
          DEFAULT: {
            enabled_hardware_types: ['ipmi', 'redfish', 'fake-hardware'],
            enabled_boot_interfaces: ['fake', 'ipxe', 'redfish-virtual-media'],
            enabled_power_interfaces: ['fake', 'ipmitool', 'redfish'],
            enabled_management_interfaces: ['fake', 'ipmitool', 'redfish', 'noop'],
          },
        },
      }),
      DRIVER_CATALOG,
    );
    const boot = (type: string) =>
      registry
        .registrationInterfaces()
        .filter((i) => i.hardwareType === type && i.interfaceType === 'boot')
        .map((i) => i.interfaceName);
    expect(boot('redfish')).toEqual(['ipxe', 'redfish-virtual-media']);
    expect(boot('ipmi')).toEqual(['ipxe']);
    expect(boot('fake-hardware')).toEqual(['fake', 'ipxe', 'redfish-virtual-media']);
  });
});

describe('an interface option that falls back to another section', () => {
  const HTTP_OPTIONS = {
    kernel_append_params: {
      doc: 'Kernel parameters; unset = [pxe]kernel_append_params.',
      format: 'optional-string',
      default: null as string | null,
      env: 'BMAAS_HTTP__KERNEL_APPEND_PARAMS',
    },
  };
  /** The settings the registry creates an http boot interface with. */
  const settingsGiven = (overrides: Record<string, Record<string, unknown>>) => {
    let given: unknown;
    const httpBoot: BootInterfaceDescriptor<typeof HTTP_OPTIONS> = {
      ...fakeBootInterface,
      name: 'http',
      config: { section: 'http', options: HTTP_OPTIONS, fallbacks: { kernel_append_params: 'pxe' } },
      create: (deps) => {
        given = deps.settings;
        return new FakeBootInterface();
      },
    };
    const catalog: DriverCatalog = {
      ...DRIVER_CATALOG,
      interfaces: { ...DRIVER_CATALOG.interfaces, boot: [...DRIVER_CATALOG.interfaces.boot, httpBoot] },
    };
    create(
      loadConductorConfig(
        { env: {}, overrides: { ...overrides, DEFAULT: { enabled_boot_interfaces: ['fake', 'http'] } } },
        catalog,
      ),
      catalog,
    );
    return given;
  };

  it("takes [pxe]kernel_append_params when the interface's own is unset, and its own when set", () => {
    expect(settingsGiven({ pxe: { kernel_append_params: 'console=ttyS0' } })).toEqual({
      kernel_append_params: 'console=ttyS0',
    });
    expect(
      settingsGiven({ pxe: { kernel_append_params: 'console=ttyS0' }, http: { kernel_append_params: 'quiet' } }),
    ).toEqual({ kernel_append_params: 'quiet' });
    expect(settingsGiven({})).toEqual({ kernel_append_params: 'nofb vga=normal' });
  });
});
