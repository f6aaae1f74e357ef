import type { BiosSetting } from '@bmaas/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNode, createTestDatabase, type TestDatabase } from '../testing/index.js';
import { HardwareSettingsStore } from './hardware-settings-store.js';
import { createStores } from './index.js';

const setting = (name: string, value: string, extra: Partial<BiosSetting> = {}): BiosSetting => ({
  name,
  value,
  attributeType: null,
  allowableValues: null,
  lowerBound: null,
  upperBound: null,
  minLength: null,
  maxLength: null,
  readOnly: null,
  resetRequired: null,
  unique: null,
  ...extra,
});

describe('HardwareSettingsStore', () => {
  let db: TestDatabase;
  let store: HardwareSettingsStore;
  let nodeId: number;

  beforeAll(async () => {
    db = await createTestDatabase();
    store = new HardwareSettingsStore(db.db);
    nodeId = (await createNode(createStores(db.db))).id;
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('replaces the BIOS settings of a node as a whole, keeping created_at of the names kept', async () => {
    await store.replaceBiosSettings(nodeId, [
      setting('BootMode', 'Uefi', {
        attributeType: 'Enumeration',
        allowableValues: ['Bios', 'Uefi'],
        resetRequired: true,
      }),
      setting('ProcTurboMode', 'Enabled'),
    ]);
    const first = await store.getBiosSetting(nodeId, 'BootMode');
    expect(first).toMatchObject({
      value: 'Uefi',
      allowableValues: ['Bios', 'Uefi'],
      resetRequired: true,
      updatedAt: null,
    });
    await store.replaceBiosSettings(nodeId, [
      setting('BootMode', 'Bios'),
      setting('NumLock', 'On', { lowerBound: 0, upperBound: 2 }),
    ]);
    const list = await store.listBiosSettings(nodeId);
    expect(list.map((s) => [s.name, s.value])).toEqual([
      ['BootMode', 'Bios'],
      ['NumLock', 'On'],
    ]);
    expect(list[0]?.createdAt).toEqual(first?.createdAt);
    expect(list[0]?.updatedAt).toBeInstanceOf(Date);
    expect(list[1]).toMatchObject({ lowerBound: 0, upperBound: 2 });
    await store.replaceBiosSettings(nodeId, []);
    expect(await store.listBiosSettings(nodeId)).toEqual([]);
  });

  it('keeps the first version seen of a firmware component as its initial version', async () => {
    const bmc = { component: 'bmc', lastVersionFlashed: null, vendor: 'Lab', model: 'RF-1', serialNumber: 'S1' };
    await store.replaceFirmwareComponents(nodeId, [
      { ...bmc, initialVersion: '1.0', currentVersion: '1.0' },
      {
        component: 'bios',
        initialVersion: '2.0',
        currentVersion: '2.0',
        lastVersionFlashed: null,
        vendor: null,
        model: null,
        serialNumber: null,
      },
    ]);
    await store.replaceFirmwareComponents(nodeId, [{ ...bmc, initialVersion: '1.1', currentVersion: '1.1' }]);
    const list = await store.listFirmwareComponents(nodeId);
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({ component: 'bmc', initialVersion: '1.0', currentVersion: '1.1', model: 'RF-1' });
  });
});
