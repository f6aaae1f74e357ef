import {
  type BmaasConfig,
  ConfigError,
  createSilentLogger,
  type DeepPartial,
  DriverNotFound,
  InvalidParameterValue,
  loadConfig,
  type NodeRecord,
} from '@bmaas/common';
import {
  FakeBootInterface,
  fakeBootInterface,
  fakeDeployInterface,
  fakeInspectInterface,
  fakeManagementInterface,
  fakePowerInterface,
  type InterfaceDescriptor,
} from '@bmaas/driver-api';
import { describe, expect, it } from 'vitest';
import type { DriverCatalog } from './catalog.js';
import { DriverRegistry } from './driver-registry.js';
import { DRIVER_CATALOG } from './enabled-interfaces.js';

function configWith(overrides: DeepPartial<BmaasConfig>['DEFAULT']): BmaasConfig {
  return loadConfig({
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

const secondFakeBoot: InterfaceDescriptor<FakeBootInterface> = { name: 'fake', create: () => new FakeBootInterface() };
const netBoot: InterfaceDescriptor<FakeBootInterface> = { name: 'net', create: () => new FakeBootInterface() };

function node(fields: Partial<NodeRecord> = {}): NodeRecord {
  return {
    uuid: '11111111-2222-4333-8444-555555555555',
    driver: 'fake-hardware',
    bootInterface: 'fake',
    deployInterface: 'fake',
    powerInterface: 'fake',
    managementInterface: 'fake',
    inspectInterface: 'fake',
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
    // boot, power, management: fake; deploy: fake, direct; inspect: fake, no-inspect, agent.
    expect(registry.registrationInterfaces()).toHaveLength(8);
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
      '[DEFAULT]enabled_boot_interfaces: unknown boot interface "pxe" (known: fake, ipxe)',
    ],
    [
      { enabled_deploy_interfaces: ['direct', 'direct'] },
      '[DEFAULT]enabled_deploy_interfaces: "direct" is listed twice',
    ],
    [
      { enabled_hardware_types: ['ipmi'] },
      '[DEFAULT]enabled_hardware_types: unknown hardware type "ipmi" (known: fake-hardware)',
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
    expect(refusal(loadConfig({ env: {} }))).toBeUndefined();
  });

  it('refuses a catalog that names an implementation twice', () => {
    const broken: DriverCatalog = {
      ...DRIVER_CATALOG,
      interfaces: { ...DRIVER_CATALOG.interfaces, boot: [fakeBootInterface, secondFakeBoot] },
    };
    expect(refusal(configWith({}), broken)).toBe('boot interface "fake" is registered twice');
  });

  it('refuses a hardware type that supports none of the enabled interfaces of a kind', () => {
    const catalog: DriverCatalog = {
      interfaces: {
        boot: [fakeBootInterface, netBoot],
        deploy: [fakeDeployInterface],
        power: [fakePowerInterface],
        management: [fakeManagementInterface],
        inspect: [fakeInspectInterface],
      },
      hardwareTypes: [
        {
          name: 'net-only',
          supported: { boot: ['net'], deploy: ['fake'], power: ['fake'], management: ['fake'], inspect: ['fake'] },
        },
      ],
    };
    expect(
      refusal(
        configWith({
          enabled_hardware_types: ['net-only'],
          enabled_deploy_interfaces: ['fake'],
          enabled_inspect_interfaces: ['fake'],
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
    expect(() => registry.driverFor(node({ driver: 'ipmi' }))).toThrow(DriverNotFound);
    expect(() => registry.driverFor(node({ powerInterface: 'ipmitool' }))).toThrow(InvalidParameterValue);
    expect(() => registry.driverFor(node({ powerInterface: 'ipmitool' }))).toThrow(
      'power_interface "ipmitool" is not enabled for hardware type fake-hardware (enabled: fake)',
    );
  });
});
