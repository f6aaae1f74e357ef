import { InvalidParameterValue } from '@bmaas/common';
import { describe, expect, it } from 'vitest';
import { HardwareInspectionFailure, type RuleSubject } from './actions.js';
import { applyRules, type InspectionRule, parseBuiltInRules, validateRule } from './engine.js';

/** An inventory as the lab's ramdisk (packages/lab/assets/ramdisk-inventory.sh) reports a QEMU machine. */
const INVENTORY = {
  interfaces: [
    {
      name: 'ens3',
      mac_address: '52:54:00:12:34:56',
      ipv4_address: '10.10.0.23',
      ipv6_address: null,
      has_carrier: true,
      driver: 'virtio_net',
    },
    {
      name: 'ens4',
      mac_address: '52:54:00:12:34:57',
      ipv4_address: null,
      ipv6_address: null,
      has_carrier: false,
      driver: 'virtio_net',
    },
  ],
  cpu: { count: 2, architecture: 'x86_64', model_name: 'QEMU Virtual CPU version 2.5+' },
  memory: { total: 2147483648, physical_mb: 2048 },
  disks: [
    {
      name: '/dev/vda',
      size: 10737418240,
      rotational: true,
      model: null,
      vendor: '0x1af4',
      serial: null,
      wwn: null,
      by_path: '/dev/disk/by-path/pci-0000:00:04.0',
    },
  ],
  boot: { current_boot_mode: 'bios', pxe_interface: '52:54:00:12:34:56' },
  system_vendor: { product_name: 'Standard PC (i440FX + PIIX, 1996)', serial_number: null, manufacturer: 'QEMU' },
  bmc_address: null,
  hostname: 'ramdisk',
};

function subject(): RuleSubject & { logged: string[] } {
  const logged: string[] = [];
  return {
    node: { driver_info: {}, properties: { cpu_arch: 'x86_64' }, extra: {}, resource_class: null },
    traits: new Set(['CUSTOM_OLD']),
    ports: new Map([['11111111-2222-4333-8444-555555555555', { extra: {}, physical_network: null }]]),
    pluginData: { password: 'sekret' },
    logged,
    log: (level, message) => logged.push(`${level}: ${message}`),
  };
}

const rule = (fields: Partial<InspectionRule>): InspectionRule => ({
  uuid: crypto.randomUUID(),
  description: null,
  priority: 0,
  phase: 'main',
  sensitive: false,
  conditions: [],
  ...fields,
  actions: fields.actions ?? [{ op: 'log', args: { msg: 'x' } }],
});

describe('inspection rules on a QEMU inventory', () => {
  it('applies the rules whose conditions hold, highest priority first', () => {
    const s = subject();
    const applied = applyRules(
      [
        rule({
          uuid: 'low',
          priority: 1,
          conditions: [{ op: 'eq', args: { values: ['{inventory[system_vendor][manufacturer]}', 'QEMU'] } }],
          actions: [{ op: 'set-attribute', args: { path: 'resource_class', value: 'qemu-small' } }],
        }),
        rule({
          uuid: 'high',
          priority: 50,
          conditions: [
            { op: 'gt', args: { values: [4096, 2048] } },
            { op: 'contains', args: { value: '{inventory[cpu][model_name]}', regex: 'QEMU' } },
            { op: 'in-net', args: { address: '{inventory[interfaces][0][ipv4_address]}', subnet: '10.10.0.0/24' } },
          ],
          actions: [
            { op: 'set-attribute', args: { path: 'resource_class', value: 'first' } },
            {
              op: 'set-attribute',
              args: { path: 'driver_info/deploy_kernel', value: 'http://x/{inventory[hostname]}' },
            },
            { op: 'add-trait', args: { name: 'CUSTOM_QEMU' } },
            { op: 'remove-trait', args: { name: 'CUSTOM_OLD' } },
            { op: 'set-capability', args: { name: 'boot_mode', value: '{inventory[boot][current_boot_mode]}' } },
            {
              op: 'extend-attribute',
              args: { path: 'extra.disks', value: '{inventory[disks][0][name]}', unique: true },
            },
          ],
        }),
        rule({
          uuid: 'never',
          conditions: [{ op: '!is-empty', args: { value: '{inventory[bmc_address]}' } }],
          actions: [{ op: 'fail', args: { msg: 'has a BMC' } }],
        }),
      ],
      s,
      INVENTORY,
      { maskSecrets: 'always' },
    );
    expect(applied).toEqual(['high', 'low']);
    expect(s.node).toEqual({
      driver_info: { deploy_kernel: 'http://x/ramdisk' },
      properties: { cpu_arch: 'x86_64', capabilities: 'boot_mode:bios' },
      extra: { disks: ['/dev/vda'] },
      resource_class: 'qemu-small',
    });
    expect([...s.traits]).toEqual(['CUSTOM_QEMU']);
  });

  it('loops over items: a condition by any/all, an action once per item', () => {
    const s = subject();
    applyRules(
      [
        rule({
          conditions: [
            {
              op: 'eq',
              args: { values: ['{item[driver]}', 'virtio_net'] },
              loop: INVENTORY.interfaces,
              multiple: 'all',
            },
            { op: 'is-true', args: { value: '{item[has_carrier]}' }, loop: INVENTORY.interfaces, multiple: 'any' },
          ],
          actions: [
            {
              op: 'extend-plugin-data',
              args: { path: 'macs', value: '{item[mac_address]}' },
              loop: INVENTORY.interfaces,
            },
            {
              op: 'set-port-attribute',
              args: { port_id: '11111111-2222-4333-8444-555555555555', path: 'physical_network', value: 'physnet1' },
            },
          ],
        }),
      ],
      s,
      INVENTORY,
      { maskSecrets: 'never' },
    );
    expect(s.pluginData.macs).toEqual(['52:54:00:12:34:56', '52:54:00:12:34:57']);
    expect(s.ports.get('11111111-2222-4333-8444-555555555555')?.physical_network).toBe('physnet1');
  });

  it('fail ends inspection with its message; a broken rule names itself, not its secrets when sensitive', () => {
    const failing = rule({
      conditions: [{ op: 'lt', args: { values: ['{inventory[memory][physical_mb]}', '4096'] } }],
      actions: [{ op: 'fail', args: { msg: 'not enough memory' } }],
    });
    expect(() => applyRules([failing], subject(), INVENTORY, { maskSecrets: 'always' })).toThrow(
      new HardwareInspectionFailure('not enough memory'),
    );
    const broken = rule({
      uuid: 'secret-rule',
      sensitive: true,
      actions: [{ op: 'del-attribute', args: { path: 'nope.x' } }],
    });
    expect(() => applyRules([broken], subject(), INVENTORY, { maskSecrets: 'always' })).toThrow(
      'Failed to apply rule secret-rule: the rule is sensitive: details are not shown',
    );
  });

  it('masks secrets from rules unless the rule is sensitive and mask_secrets says so', () => {
    const copy = rule({
      actions: [{ op: 'set-attribute', args: { path: 'extra', value: '{plugin_data[password]}' } }],
    });
    const seen = (maskSecrets: 'always' | 'sensitive', sensitive: boolean) => {
      const s = subject();
      applyRules([{ ...copy, sensitive }], s, INVENTORY, { maskSecrets });
      return s.node.extra;
    };
    expect(seen('always', true)).toBe('******');
    expect(seen('sensitive', false)).toBe('******');
    expect(seen('sensitive', true)).toBe('sekret');
  });

  it('validates operators, actions, arguments, phase and priority as Ironic does', () => {
    expect(() => validateRule(rule({}))).not.toThrow();
    const invalid = (fields: Partial<InspectionRule>, message: string) =>
      expect(() => validateRule(rule(fields))).toThrow(new InvalidParameterValue(message));
    invalid({ phase: 'early' }, 'Invalid phase: early. Valid phases are: main');
    invalid({ priority: 10000 }, 'Priority must be between 0 and 9999 for user-defined rules.');
    invalid({ conditions: [{ op: 'like', args: {} }] }, 'Unsupported condition operator: like');
    invalid(
      { actions: [{ op: 'set-attribute', args: { path: 'x', colour: 1 } }] },
      'Invalid parameters for action operator set-attribute: missing required argument(s): value; unexpected argument(s): colour',
    );
    expect(() => validateRule(rule({ priority: 10000 }), true)).not.toThrow();
  });

  it('reads built-in rules from YAML, numbering the ones without a uuid', () => {
    const rules = parseBuiltInRules(
      '- priority: 10000\n  actions:\n    - op: add-trait\n      args: {name: CUSTOM_BUILT_IN}\n- uuid: 0e1a2b3c-0000-4000-8000-000000000001\n  actions: [{op: log, args: {msg: hi}}]\n',
      'rules.yaml',
    );
    expect(rules.map((r) => [r.uuid, r.priority, r.phase])).toEqual([
      ['00000000-0000-0000-0000-000000000000', 10000, 'main'],
      ['0e1a2b3c-0000-4000-8000-000000000001', 0, 'main'],
    ]);
    expect(() => parseBuiltInRules('{a: 1}', 'bad.yaml')).toThrow('should contain a list of rules');
  });
});
