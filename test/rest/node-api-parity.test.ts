import { ApiClient } from '@bmaas/api-client';
import { waitFor } from '@bmaas/common';
import { createTestDatabase, type TestDatabase } from '@bmaas/db/testing';
import type { Services } from '@bmaas/stack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BAREMETAL, baremetal } from '../support/baremetal-cli.js';
import { UNFETCHED_INSTANCE_INFO } from '../support/instance-image.js';
import { hasOpenstacksdk, openstacksdk } from '../support/openstacksdk.js';
import { missingPrerequisite } from '../support/prerequisites.js';
import { startTestServices } from '../support/test-services.js';

/**
 * The node API as Metal3, Bifrost and operators drive it: the real
 * `baremetal` CLI (python3-ironicclient) and openstacksdk (python3-openstacksdk)
 * against the API and two real conductor processes on a test database.
 * Tests run in order on one stack. Each CLI or SDK call starts a Python
 * process (a second or two on a busy machine): the CLI tests get minutes.
 */

let database: TestDatabase;
let stack: Services;
let rest: ApiClient;

async function missingClient(): Promise<string | null> {
  if (!BAREMETAL) return 'the `baremetal` CLI (apt-get install python3-ironicclient)';
  if (!(await hasOpenstacksdk())) return 'openstacksdk (apt-get install python3-openstacksdk)';
  return null;
}
const missing = await missingClient();
const skipped = missingPrerequisite('node API parity', missing);

const cli = (...args: string[]) => baremetal(stack.apiUrl as string, args);
const sdk = (script: string) => openstacksdk(stack.apiUrl as string, script);

describe.skipIf(skipped)(
  `node API parity with the baremetal CLI and openstacksdk${skipped ? ` (skipped: no ${missing})` : ''}`,
  () => {
    beforeAll(async () => {
      database = await createTestDatabase();
      stack = await startTestServices({
        databaseUrl: database.url,
        conductors: 2,
        api: true,
        startTimeoutMs: 60_000,
        env: {
          BMAAS_DEFAULT__ENABLED_BOOT_INTERFACES: 'fake',
          BMAAS_DEFAULT__ENABLED_DEPLOY_INTERFACES: 'fake,direct',
          BMAAS_CONDUCTOR__DEPLOY_CALLBACK_TIMEOUT: '600',
        },
      });
      rest = new ApiClient(stack.apiUrl as string);
    }, 180_000);

    afterAll(async () => {
      await stack?.stop();
      await database?.drop();
    });

    it('CLI: create with every interface and ownership field, show, list with filters, set, unset, delete', async () => {
      // biome-ignore format: one CLI flag and its value per pair
      const createArgs = [
        'node', 'create', '--driver', 'fake-hardware', '--name', 'cli-node',
        '--bios-interface', 'no-bios', '--console-interface', 'no-console', '--inspect-interface', 'fake',
        '--network-interface', 'noop', '--raid-interface', 'fake', '--rescue-interface', 'no-rescue',
        '--storage-interface', 'noop', '--vendor-interface', 'no-vendor',
        '--network-data', '{"links": [], "networks": [], "services": []}',
      ];
      const created = (await cli(...createArgs, '-f', 'json')) as Record<string, unknown>;
      // ironicclient 5.0 does not send owner, lessee or description on create: they are set afterwards.
      await cli('node', 'set', 'cli-node', '--owner', 'project-a', '--lessee', 'project-b', '--description', 'rack 7');
      expect(created).toMatchObject({
        name: 'cli-node',
        inspect_interface: 'fake',
        raid_interface: 'fake',
        network_data: { links: [], networks: [], services: [] },
        provision_state: 'enroll',
        power_state: null,
      });
      const listed = (await cli('node', 'list', '--owner', 'project-a', '-f', 'json')) as Array<
        Record<string, unknown>
      >;
      expect(listed.map((n) => n.Name)).toEqual(['cli-node']);
      expect(await cli('node', 'list', '--lessee', 'nobody', '-f', 'json')).toEqual([]);
      await cli('node', 'set', 'cli-node', '--retired', '--retired-reason', 'old', '--raid-interface', 'no-raid');
      await cli('node', 'set', 'cli-node', '--target-raid-config', '{}');
      const retired = (await cli('node', 'list', '--retired', '-f', 'json')) as Array<Record<string, unknown>>;
      expect(retired.map((n) => n.Name)).toEqual(['cli-node']);
      await cli('node', 'unset', 'cli-node', '--owner', '--retired-reason');
      const shown = (await cli('node', 'show', 'cli-node', '-f', 'json')) as Record<string, unknown>;
      expect(shown).toMatchObject({ owner: null, retired: true, retired_reason: null, raid_interface: 'no-raid' });
      await cli('node', 'delete', 'cli-node');
      expect((await rest.request('GET', '/v1/nodes/cli-node')).status).toBe(404);
    }, 180_000);

    it('CLI: traits, VIFs, history, boot mode, secure boot, RAID, BIOS, console and passthru refusals', async () => {
      const node = (await cli(
        'node',
        'create',
        '--driver',
        'fake-hardware',
        '--name',
        'cli-sub',
        '--raid-interface',
        'fake',
        '-f',
        'json',
      )) as Record<string, string>;
      await cli('node', 'add', 'trait', 'cli-sub', 'CUSTOM_GPU', 'CUSTOM_FAST');
      expect(await cli('node', 'trait', 'list', 'cli-sub', '-f', 'json')).toEqual([
        { Traits: 'CUSTOM_FAST' },
        { Traits: 'CUSTOM_GPU' },
      ]);
      await cli('node', 'remove', 'trait', 'cli-sub', 'CUSTOM_FAST');
      await expect(cli('node', 'add', 'trait', 'cli-sub', 'lower')).rejects.toThrow(/CUSTOM_/);

      await cli('node', 'vif', 'attach', 'cli-sub', 'vif-1');
      expect(await cli('node', 'vif', 'list', 'cli-sub', '-f', 'json')).toEqual([]);
      await cli('node', 'vif', 'detach', 'cli-sub', 'vif-1');

      await cli(
        'node',
        'set',
        'cli-sub',
        '--target-raid-config',
        '{"logical_disks": [{"size_gb": 100, "raid_level": "1"}]}',
      );
      const raid = (await cli('node', 'show', 'cli-sub', '--fields', 'target_raid_config', '-f', 'json')) as Record<
        string,
        unknown
      >;
      expect(raid.target_raid_config).toEqual({ logical_disks: [{ size_gb: 100, raid_level: '1' }] });
      await expect(
        cli('node', 'set', 'cli-sub', '--target-raid-config', '{"logical_disks": [{"size_gb": 1, "raid_level": "9"}]}'),
      ).rejects.toThrow(/RAID config validation error/);

      await cli('node', 'boot', 'mode', 'set', 'cli-sub', 'uefi');
      await cli('node', 'secure', 'boot', 'on', 'cli-sub');
      await waitFor(
        'boot mode and secure boot recorded',
        async () => {
          const states = await rest.request<Record<string, unknown>>('GET', `/v1/nodes/${node.uuid}/states`);
          return states.body.boot_mode === 'uefi' && states.body.secure_boot === true ? true : undefined;
        },
        { timeoutMs: 30_000 },
      );

      expect(await cli('node', 'bios', 'setting', 'list', 'cli-sub', '-f', 'json')).toEqual([]);
      await expect(cli('node', 'console', 'enable', 'cli-sub')).rejects.toThrow(
        /Driver fake-hardware does not support console/,
      );
      await expect(cli('node', 'passthru', 'call', 'cli-sub', 'first_method')).rejects.toThrow(
        /Driver fake-hardware does not support vendor/,
      );

      await cli('node', 'manage', 'cli-sub', '--wait', '60');
      // The conductor writes history off the request path, within a second or so.
      await waitFor(
        'the manage transitions in the node history',
        async () => {
          const answer = await rest.request<{ history: unknown[] }>('GET', `/v1/nodes/${node.uuid}/history`);
          return answer.body.history.length >= 2 ? true : undefined;
        },
        { timeoutMs: 30_000, intervalMs: 200 },
      );
      const history = (await cli('node', 'history', 'list', 'cli-sub', '--long', '-f', 'json')) as Array<
        Record<string, unknown>
      >;
      const events = history.map((h) => h['Description of the event']);
      expect(events).toContain('Provision state changed from "enroll" to "verifying" (target "manageable").');
      const hosts = stack.conductors.map((c) => c.hostname);
      for (const entry of history) expect(hosts).toContain(entry.Conductor);
      const first = history[0] as Record<string, unknown>;
      const one = (await cli('node', 'history', 'get', 'cli-sub', first.UUID as string, '-f', 'json')) as Record<
        string,
        unknown
      >;
      expect(one.severity).toBe('info');
    }, 180_000);

    it('openstacksdk: create, get, list with filters, update, traits, VIFs, delete', async () => {
      const result = (await sdk(`
# The SDK drives a new node on to the state asked for (manage, then provide for 'available').
node = conn.baremetal.create_node(driver='fake-hardware', name='sdk-node', owner='p-sdk', provision_state='manageable',
    inspect_interface='fake', raid_interface='fake', bios_interface='no-bios', vendor_interface='no-vendor')
got = conn.baremetal.get_node('sdk-node')
listed = {n.name: n.owner for n in conn.baremetal.nodes(details=True, driver='fake-hardware')}
updated = conn.baremetal.update_node(node, owner='p-other', is_retired=True, retired_reason='gone')
conn.baremetal.set_node_boot_mode(node, 'uefi')
conn.baremetal.set_node_secure_boot(node, True)
mode = conn.baremetal.get_node(node.id).boot_mode
conn.baremetal.set_node_traits(node, ['CUSTOM_A', 'CUSTOM_B'])
conn.baremetal.add_node_trait(node, 'CUSTOM_C')
conn.baremetal.remove_node_trait(node, 'CUSTOM_A')
traits = conn.baremetal.get_node(node.id).traits
conn.baremetal.attach_vif_to_node(node, 'vif-sdk')
vifs = conn.baremetal.list_node_vifs(node)
conn.baremetal.detach_vif_from_node(node, 'vif-sdk')
conn.baremetal.delete_node(node)
emit({'id': node.id, 'owner': got.owner, 'inspect': got.inspect_interface,
     'raid': got.raid_interface, 'listed': listed, 'mode': mode,
     'updated_owner': updated.owner, 'retired': updated.is_retired, 'reason': updated.retired_reason,
     'traits': sorted(traits), 'vifs': vifs})
`)) as Record<string, unknown>;
      expect(result).toMatchObject({
        owner: 'p-sdk',
        inspect: 'fake',
        raid: 'fake',
        listed: { 'sdk-node': 'p-sdk' },
        mode: 'uefi',
        updated_owner: 'p-other',
        retired: true,
        reason: 'gone',
        traits: ['CUSTOM_B', 'CUSTOM_C'],
        vifs: [],
      });
      expect((await rest.request('GET', `/v1/nodes/${result.id}`)).status).toBe(404);
    }, 180_000);

    it('openstacksdk: refusals carry Ironic messages', async () => {
      const result = (await sdk(`
from openstack import exceptions
answers = {}
try:
    conn.baremetal.create_node(driver='no-such-hardware')
except exceptions.SDKException as e:
    answers['driver'] = str(e)
try:
    conn.baremetal.create_node(driver='fake-hardware', raid_interface='megaraid')
except exceptions.SDKException as e:
    answers['raid'] = str(e)
emit(answers)
`)) as Record<string, string>;
      expect(result.driver).toContain('No valid host was found. Reason: ');
      expect(result.raid).toContain("'ironic.hardware.interfaces.raid' entrypoint: megaraid");
    });

    it('REST: the answering conductor records each served boot configuration in the history', async () => {
      const node = await rest.createNode({
        driver: 'fake-hardware',
        name: 'booted',
        deploy_interface: 'direct',
        automated_clean: false,
        instance_info: UNFETCHED_INSTANCE_INFO,
      });
      await rest.createPort(node.uuid, '52:54:00:ab:cd:01');
      for (const [target, state] of [
        ['manage', 'manageable'],
        ['provide', 'available'],
        ['active', 'wait call-back'],
      ] as const) {
        expect((await rest.provision(node.uuid, target)).status).toBe(202);
        await rest.settled(node.uuid, state, 60_000);
      }
      const served = await rest.request('GET', '/v1/boot/52-54-00-ab-cd-01/boot.fake');
      expect(served.status, served.text).toBe(200);
      const entry = await waitFor(
        'the served boot configuration in the node history',
        async () => {
          const answer = await rest.request<{ history: Array<Record<string, string>> }>(
            'GET',
            `/v1/nodes/${node.uuid}/history?detail=true`,
          );
          expect(answer.status, answer.text).toBe(200);
          return answer.body.history.find((h) => h.event_type === 'boot-config');
        },
        { timeoutMs: 30_000, intervalMs: 200 },
      );
      expect(entry).toMatchObject({ event: 'Boot configuration "boot.fake" served.', severity: 'info' });
      expect(entry.conductor).toBe((await rest.node(node.uuid)).conductor);
    });
  },
);
