import { describe, expect, it } from 'vitest';
import { ironicTimestamp, portDict } from './port-dict.js';
import type { PortRecord } from './records.js';

const PORT: PortRecord = {
  id: 7,
  uuid: '0b3c7e57-0000-4000-8000-000000000001',
  address: '52:54:00:12:34:56',
  nodeId: 3,
  nodeUuid: '0b3c7e57-0000-4000-8000-0000000000aa',
  pxeEnabled: true,
  physicalNetwork: 'physnet1',
  localLinkConnection: { switch_id: '00:11:22:33:44:55', port_id: 'Eth1/1' },
  extra: { rack: 'r1' },
  name: null,
  description: null,
  vendor: null,
  category: null,
  availableForDynamicPortgroup: true,
  createdAt: new Date('2026-01-02T03:04:05.678Z'),
  updatedAt: null,
};

describe('portDict', () => {
  it("is Ironic's port dict: every field in snake_case, defaults where the record has none, no database id", () => {
    expect(portDict(PORT)).toEqual({
      uuid: PORT.uuid,
      created_at: '2026-01-02T03:04:05.678+00:00',
      updated_at: null,
      address: '52:54:00:12:34:56',
      extra: { rack: 'r1' },
      internal_info: {},
      is_smartnic: false,
      local_link_connection: { switch_id: '00:11:22:33:44:55', port_id: 'Eth1/1' },
      physical_network: 'physnet1',
      pxe_enabled: true,
      node_uuid: PORT.nodeUuid,
      portgroup_uuid: null,
      name: null,
    });
    expect(portDict({ ...PORT, portgroupUuid: 'pg-1', isSmartnic: true })).toMatchObject({
      portgroup_uuid: 'pg-1',
      is_smartnic: true,
    });
  });

  it('writes timestamps as Python isoformat() does', () => {
    expect(ironicTimestamp(new Date('2026-05-06T07:08:09.000Z'))).toBe('2026-05-06T07:08:09.000+00:00');
    expect(ironicTimestamp(null)).toBeNull();
  });
});
