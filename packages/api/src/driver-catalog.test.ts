import { type HardwareInterfaceRecord, InvalidParameterValue, loadConfig } from '@bmaas/common';
import { describe, expect, it } from 'vitest';
import { CachedHardwareTypeCatalog } from './driver-catalog.js';

function registered(bootInterfaces: string[]): HardwareInterfaceRecord[] {
  const row = (interfaceType: string, interfaceName: string, isDefault: boolean) =>
    ({ hardwareType: 'fake-hardware', interfaceType, interfaceName, isDefault }) as HardwareInterfaceRecord;
  return [
    ...bootInterfaces.map((name, i) => row('boot', name, i === 0)),
    row('deploy', 'fake', true),
    row('power', 'fake', true),
    row('management', 'fake', true),
    row('inspect', 'fake', true),
  ];
}

describe('CachedHardwareTypeCatalog', () => {
  const config = loadConfig({ env: {}, overrides: { DEFAULT: { hash_ring_reset_interval: 15 } } });

  function fixture() {
    const state = { rows: registered(['fake']), reads: 0, now: 0 };
    const catalog = new CachedHardwareTypeCatalog(
      {
        aliveInterfaces: async () => {
          state.reads++;
          return state.rows;
        },
      },
      config,
      () => state.now,
    );
    return { state, catalog };
  }

  it('reads the registered interfaces once per reset interval', async () => {
    const { state, catalog } = fixture();
    for (let i = 0; i < 5; i++) {
      expect(await catalog.resolve('fake-hardware', {})).toMatchObject({ bootInterface: 'fake' });
    }
    expect(state.reads).toBe(1);
    state.now = 15_000;
    await catalog.resolve('fake-hardware', {});
    expect(state.reads).toBe(2);
  });

  it('reads again before refusing: an interface may just have been registered', async () => {
    const { state, catalog } = fixture();
    await catalog.resolve('fake-hardware', {});
    state.rows = registered(['fake', 'ipxe']);
    expect(await catalog.resolve('fake-hardware', { boot: 'ipxe' })).toMatchObject({ bootInterface: 'ipxe' });
    expect(state.reads).toBe(2);
    await expect(catalog.resolve('fake-hardware', { boot: 'pxe' })).rejects.toBeInstanceOf(InvalidParameterValue);
    expect(state.reads).toBe(3);
  });
});
