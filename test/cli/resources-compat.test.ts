import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { ApiClient } from '@bmaas/api-client';
import { waitFor } from '@bmaas/common';
import { createTestDatabase, type TestDatabase } from '@bmaas/db/testing';
import type { Services } from '@bmaas/stack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BAREMETAL, baremetal } from '../support/baremetal-cli.js';
import { hasOpenstacksdk, openstacksdk } from '../support/openstacksdk.js';
import { missingPrerequisite } from '../support/prerequisites.js';
import { startTestServices } from '../support/test-services.js';

/**
 * The resources around nodes (chassis, portgroups, volume connectors and
 * targets, deploy templates, allocations, runbooks) driven by the real
 * clients: the `baremetal` CLI (python3-ironicclient) and openstacksdk
 * (python3-openstacksdk), against the API and one real conductor.
 */

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '../..');
const SDK = await hasOpenstacksdk();
const MISSING = [BAREMETAL ? '' : 'baremetal (python3-ironicclient)', SDK ? '' : 'openstacksdk (python3-openstacksdk)']
  .filter((m) => m !== '')
  .join(', ');

type Json = Record<string, unknown>;

describe.skipIf(missingPrerequisite('the resources through the real clients', MISSING ? `missing ${MISSING}` : null))(
  `the resources through the real clients${MISSING ? ` (skipped: no ${MISSING})` : ''}`,
  // Each test runs several CLI and Python processes: generous on a busy machine.
  { timeout: 240_000 },
  () => {
    let database: TestDatabase;
    let stack: Services;
    let endpoint: string;
    let rest: ApiClient;
    let nodeUuid: string;

    const cli = async (...args: string[]) => (await baremetal(endpoint, [...args, '-f', 'json'])) as Json;
    const cliNoOutput = (...args: string[]) => baremetal(endpoint, args);
    const sdk = (script: string, apiVersion?: string) => openstacksdk(endpoint, script, { apiVersion });

    beforeAll(async () => {
      await run('npx', ['tsc', '-b', 'packages/api', 'packages/conductor'], { cwd: ROOT, timeout: 240_000 });
      database = await createTestDatabase();
      stack = await startTestServices({
        databaseUrl: database.url,
        conductors: 1,
        api: true,
        startTimeoutMs: 60_000,
        // The qemu power interface as the default: the hardware type then has properties to list.
        env: { BMAAS_DEFAULT__ENABLED_POWER_INTERFACES: 'qemu,fake', BMAAS_DEFAULT__DEFAULT_POWER_INTERFACE: 'qemu' },
      });
      endpoint = stack.apiUrl as string;
      rest = new ApiClient(endpoint);
      const node = (await rest.createNode({
        driver: 'fake-hardware',
        name: 'compat-1',
        power_interface: 'fake',
      })) as Json;
      nodeUuid = node.uuid as string;
    }, 300_000);

    afterAll(async () => {
      await stack?.stop();
      await database?.drop();
    });

    it('chassis with the CLI and the SDK', async () => {
      const created = await cli('chassis', 'create', '--description', 'rack 1', '--extra', 'row=a');
      expect(created).toMatchObject({ description: 'rack 1', extra: { row: 'a' } });
      const uuid = created.uuid as string;
      await cliNoOutput('chassis', 'set', uuid, '--description', 'rack 2');
      expect(await cli('chassis', 'show', uuid)).toMatchObject({ description: 'rack 2' });
      expect(await baremetal(endpoint, ['chassis', 'list', '-f', 'json'])).toEqual([
        { UUID: uuid, Description: 'rack 2' },
      ]);
      await cliNoOutput('chassis', 'delete', uuid);

      const viaSdk = (await sdk(`
c = conn.baremetal.create_chassis(description='sdk rack')
n = conn.baremetal.create_node(driver='fake-hardware', name='in-sdk-chassis', chassis_id=c.id, power_interface='fake')
node_chassis = conn.baremetal.get_node('in-sdk-chassis').chassis_id
conn.baremetal.update_chassis(c, description='sdk rack 2')
listed = [x.id for x in conn.baremetal.chassis()]
shown = conn.baremetal.get_chassis(c.id)
conn.baremetal.update_node(n, chassis_id=None)
conn.baremetal.delete_node(n)
conn.baremetal.delete_chassis(c, ignore_missing=False)
emit({'id': c.id, 'node_chassis': node_chassis, 'listed': listed, 'description': shown.description,
      'after': [x.id for x in conn.baremetal.chassis()]})
`)) as Json;
      expect(viaSdk).toMatchObject({
        node_chassis: viaSdk.id,
        listed: [viaSdk.id],
        description: 'sdk rack 2',
        after: [],
      });
    });

    it('port groups and their ports with the CLI and the SDK', async () => {
      const group = await cli(
        'port',
        'group',
        'create',
        '--node',
        nodeUuid,
        '--name',
        'bond0',
        '--address',
        '52:54:00:12:00:01',
        '--mode',
        '802.3ad',
        '--property',
        'miimon=100',
      );
      expect(group).toMatchObject({
        name: 'bond0',
        mode: '802.3ad',
        properties: { miimon: 100 },
        node_uuid: nodeUuid,
      });
      const port = await cli(
        'port',
        'create',
        '52:54:00:12:00:02',
        '--node',
        nodeUuid,
        '--port-group',
        group.uuid as string,
      );
      expect(port.portgroup_uuid).toBe(group.uuid);
      const members = (await baremetal(endpoint, ['port', 'list', '--port-group', 'bond0', '-f', 'json'])) as Json[];
      expect(members.map((p) => p.Address)).toEqual(['52:54:00:12:00:02']);
      await cliNoOutput('port', 'group', 'set', 'bond0', '--name', 'bond1');
      expect((await baremetal(endpoint, ['port', 'group', 'list', '-f', 'json'])) as Json[]).toEqual([
        { UUID: group.uuid, Address: '52:54:00:12:00:01', Name: 'bond1' },
      ]);
      await cliNoOutput('port', 'delete', port.uuid as string);
      await cliNoOutput('port', 'group', 'delete', 'bond1');

      const viaSdk = (await sdk(`
pg = conn.baremetal.create_port_group(node_id='${nodeUuid}', name='sdk-bond', address='52:54:00:12:00:03')
p = conn.baremetal.create_port(node_id='${nodeUuid}', address='52:54:00:12:00:04', port_group_id=pg.id)
conn.baremetal.update_port_group(pg, mode='balance-rr')
out = {'pg': pg.id, 'port_group_of_port': p.port_group_id,
       'listed': [x.name for x in conn.baremetal.port_groups(details=True)],
       'mode': conn.baremetal.get_port_group('sdk-bond').mode}
conn.baremetal.delete_port(p)
conn.baremetal.delete_port_group(pg, ignore_missing=False)
out['after'] = [x.id for x in conn.baremetal.port_groups()]
emit(out)
`)) as Json;
      expect(viaSdk).toMatchObject({
        port_group_of_port: viaSdk.pg,
        listed: ['sdk-bond'],
        mode: 'balance-rr',
        after: [],
      });
    });

    it('volume connectors and targets with the CLI and the SDK', async () => {
      const connector = await cli(
        'volume',
        'connector',
        'create',
        '--node',
        nodeUuid,
        '--type',
        'iqn',
        '--connector-id',
        'iqn.2017-07.org.example:01',
      );
      expect(connector).toMatchObject({ type: 'iqn', node_uuid: nodeUuid });
      await cliNoOutput('volume', 'connector', 'set', connector.uuid as string, '--extra', 'a=b');
      expect(await cli('volume', 'connector', 'show', connector.uuid as string)).toMatchObject({ extra: { a: 'b' } });
      expect(((await baremetal(endpoint, ['volume', 'connector', 'list', '-f', 'json'])) as Json[]).length).toBe(1);
      await cliNoOutput('volume', 'connector', 'delete', connector.uuid as string);

      const target = await cli(
        'volume',
        'target',
        'create',
        '--node',
        nodeUuid,
        '--type',
        'iscsi',
        '--boot-index',
        '0',
        '--volume-id',
        'vol-1',
      );
      expect(target).toMatchObject({ volume_type: 'iscsi', boot_index: 0, volume_id: 'vol-1' });
      await cliNoOutput('volume', 'target', 'set', target.uuid as string, '--volume-id', 'vol-2');
      expect(await cli('volume', 'target', 'show', target.uuid as string)).toMatchObject({ volume_id: 'vol-2' });
      expect(((await baremetal(endpoint, ['volume', 'target', 'list', '-f', 'json'])) as Json[]).length).toBe(1);
      await cliNoOutput('volume', 'target', 'delete', target.uuid as string);

      const viaSdk = (await sdk(`
c = conn.baremetal.create_volume_connector(node_id='${nodeUuid}', type='ip', connector_id='192.0.2.1')
t = conn.baremetal.create_volume_target(node_id='${nodeUuid}', volume_type='iscsi', boot_index=1, volume_id='v-9')
conn.baremetal.update_volume_connector(c, connector_id='192.0.2.2')
conn.baremetal.update_volume_target(t, boot_index=2)
out = {'connectors': [x.connector_id for x in conn.baremetal.volume_connectors(details=True)],
       'targets': [x.boot_index for x in conn.baremetal.volume_targets(details=True)]}
conn.baremetal.delete_volume_connector(c, ignore_missing=False)
conn.baremetal.delete_volume_target(t, ignore_missing=False)
out['after'] = [x.id for x in conn.baremetal.volume_connectors()] + [x.id for x in conn.baremetal.volume_targets()]
emit(out)
`)) as Json;
      expect(viaSdk).toEqual({ connectors: ['192.0.2.2'], targets: [2], after: [] });
    });

    it('deploy templates with the CLI and the SDK; runbooks through plain SDK requests', async () => {
      const steps = JSON.stringify([{ interface: 'bios', step: 'apply_configuration', args: {}, priority: 150 }]);
      const template = await cli('deploy', 'template', 'create', 'CUSTOM_HT_ON', '--steps', steps);
      expect(template).toMatchObject({ name: 'CUSTOM_HT_ON', steps: JSON.parse(steps) });
      await cliNoOutput('deploy', 'template', 'set', 'CUSTOM_HT_ON', '--name', 'CUSTOM_HT_OFF');
      expect(await cli('deploy', 'template', 'show', 'CUSTOM_HT_OFF')).toMatchObject({ uuid: template.uuid });
      expect(((await baremetal(endpoint, ['deploy', 'template', 'list', '-f', 'json'])) as Json[]).length).toBe(1);
      await cliNoOutput('deploy', 'template', 'delete', 'CUSTOM_HT_OFF');

      const viaSdk = (await sdk(`
steps = [{'interface': 'raid', 'step': 'delete_configuration', 'args': {}, 'priority': 10}]
d = conn.baremetal.create_deploy_template(name='CUSTOM_SDK', steps=steps)
conn.baremetal.update_deploy_template(d, extra={'a': 1})
out = {'templates': [(x.name, x.extra) for x in conn.baremetal.deploy_templates(details=True)]}
conn.baremetal.delete_deploy_template(d, ignore_missing=False)
# Runbooks (1.92) are newer than this SDK's resource classes: its baremetal proxy's own requests serve them.
rb = {'name': 'CUSTOM_RB', 'steps': [{'interface': 'bios', 'step': 'factory_reset', 'args': {}, 'order': 1}]}
created = conn.baremetal.post('/runbooks', json=rb, microversion='1.92').json()
conn.baremetal.patch('/runbooks/CUSTOM_RB', json=[{'op': 'replace', 'path': '/public', 'value': True}],
                     microversion='1.92').raise_for_status()
out['runbooks'] = conn.baremetal.get('/runbooks?detail=true', microversion='1.92').json()['runbooks']
out['runbook_too_old'] = conn.baremetal.get('/runbooks', microversion='1.91').status_code
conn.baremetal.delete('/runbooks/' + created['uuid'], microversion='1.92').raise_for_status()
out['after'] = conn.baremetal.get('/runbooks', microversion='1.92').json()['runbooks']
emit(out)
`)) as Json;
      expect(viaSdk.templates).toEqual([['CUSTOM_SDK', { a: 1 }]]);
      expect(viaSdk.runbooks).toEqual([expect.objectContaining({ name: 'CUSTOM_RB', public: true })]);
      expect(viaSdk).toMatchObject({ runbook_too_old: 404, after: [] });
    });

    it('driver properties with the CLI and the SDK, answered by the conductor', async () => {
      const listed = (await baremetal(endpoint, [
        'driver',
        'property',
        'list',
        'fake-hardware',
        '-f',
        'json',
      ])) as Json[];
      expect(listed).toEqual([{ Property: 'qemu_qmp_socket', Description: expect.stringContaining('QMP') }]);
      const viaSdk = await sdk(`emit(conn.baremetal.get('/drivers/fake-hardware/properties').json())`);
      expect(Object.keys(viaSdk as Json)).toEqual(['qemu_qmp_socket']);
    });

    it('allocations with the CLI and the SDK: answered allocating, a node in available chosen by the conductor, then freed', async () => {
      await rest.request('PATCH', `/v1/nodes/${nodeUuid}`, [{ op: 'add', path: '/resource_class', value: 'compat' }]);
      for (const target of ['manage', 'provide']) {
        const answer = await rest.request('PUT', `/v1/nodes/${nodeUuid}/states/provision`, { target });
        expect(answer.status, target).toBe(202);
        const stable = target === 'manage' ? 'manageable' : 'available';
        await waitFor(
          `node ${stable}`,
          async () => {
            const node = (await rest.request('GET', `/v1/nodes/${nodeUuid}`)).body as Json;
            return node.provision_state === stable && node.target_provision_state === null ? true : undefined;
          },
          { timeoutMs: 60_000 },
        );
      }
      await rest.request('PUT', `/v1/nodes/${nodeUuid}/states/power`, { target: 'power off' });
      await waitFor(
        'a known power state',
        async () => {
          const node = (await rest.request('GET', `/v1/nodes/${nodeUuid}`)).body as Json;
          return node.power_state === 'power off' ? true : undefined;
        },
        { timeoutMs: 60_000 },
      );

      // Answered at once in allocating, as Ironic's; the conductor then finds no node of the class.
      const started = await cli('allocation', 'create', '--resource-class', 'none-such', '--name', 'job-0');
      expect(started).toMatchObject({ state: 'allocating', node_uuid: null, last_error: null });
      // A waiting client sees the failure the conductor recorded.
      await expect(
        cli('allocation', 'create', '--resource-class', 'none-such', '--name', 'job-failed', '--wait', '30'),
      ).rejects.toThrow('no available nodes match the resource class none-such');
      const failed = await cli('allocation', 'show', 'job-0');
      expect(failed).toMatchObject({
        state: 'error',
        last_error: `Failed to process allocation ${started.uuid}: no available nodes match the resource class none-such.`,
      });
      await cliNoOutput('allocation', 'delete', 'job-0');
      await cliNoOutput('allocation', 'delete', 'job-failed');

      const allocation = await cli(
        'allocation',
        'create',
        '--resource-class',
        'compat',
        '--name',
        'job-1',
        '--wait',
        '30',
      );
      expect(allocation).toMatchObject({ state: 'active', node_uuid: nodeUuid, resource_class: 'compat' });
      await cliNoOutput('allocation', 'set', 'job-1', '--extra', 'who=cli');
      expect(await cli('allocation', 'show', 'job-1')).toMatchObject({ extra: { who: 'cli' } });
      expect(((await baremetal(endpoint, ['allocation', 'list', '-f', 'json'])) as Json[]).length).toBe(1);
      expect(((await rest.request('GET', `/v1/nodes/${nodeUuid}`)).body as Json).instance_uuid).toBe(allocation.uuid);
      await cliNoOutput('allocation', 'delete', 'job-1');

      const viaSdk = (await sdk(`
a = conn.baremetal.create_allocation(resource_class='compat', name='sdk-job')
answered = a.state
a = conn.baremetal.wait_for_allocation(a, timeout=30)
conn.baremetal.update_allocation(a, extra={'who': 'sdk'})
out = {'answered': answered, 'state': a.state, 'node': a.node_id, 'listed': [(x.name, x.extra) for x in conn.baremetal.allocations()]}
busy = conn.baremetal.create_allocation(resource_class='compat')
try:
    conn.baremetal.wait_for_allocation(busy, timeout=30)
    out['second'] = 'active'
except Exception as error:
    out['second'] = str(error)
conn.baremetal.delete_allocation(busy, ignore_missing=False)
out['instance'] = conn.baremetal.get_node('${nodeUuid}').instance_id == a.id
conn.baremetal.delete_allocation(a, ignore_missing=False)
out['after'] = [x.id for x in conn.baremetal.allocations()]
out['freed'] = conn.baremetal.get_node('${nodeUuid}').instance_id
emit(out)
`)) as Json;
      expect(viaSdk).toEqual({
        answered: 'allocating',
        second: expect.stringContaining('no available nodes match the resource class compat'),
        state: 'active',
        node: nodeUuid,
        listed: [['sdk-job', { who: 'sdk' }]],
        instance: true,
        after: [],
        freed: null,
      });
    });

    it('the resources of 1.96-1.115 through plain SDK requests (the SDK has no calls for them yet)', async () => {
      const out = (await sdk(`
rule = {'description': 'QEMU machines', 'priority': 10, 'sensitive': True,
        'conditions': [{'op': 'eq', 'args': {'values': ['{inventory[system_vendor][manufacturer]}', 'QEMU']}}],
        'actions': [{'op': 'add-trait', 'args': {'name': 'CUSTOM_QEMU'}}]}
created = conn.baremetal.post('/inspection_rules', json=rule, microversion='1.96').json()
out = {'created': created, 'listed': conn.baremetal.get('/inspection_rules', microversion='1.96').json()['inspection_rules']}
out['old'] = conn.baremetal.get('/inspection_rules', microversion='1.95').status_code
conn.baremetal.delete('/inspection_rules/' + created['uuid'], microversion='1.96')
rb = {'name': 'fw-update', 'description': 'firmware', 'steps': [{'interface': 'bios', 'step': 'apply_configuration', 'args': {}, 'order': 1}]}
conn.baremetal.post('/runbooks', json=rb, microversion='1.112')
conn.baremetal.put('/runbooks/fw-update/traits', json={'traits': ['CUSTOM_FW']}, microversion='1.112')
out['runbook'] = conn.baremetal.get('/runbooks/fw-update', microversion='1.112').json()
conn.baremetal.delete('/runbooks/fw-update', microversion='1.112')
out['node'] = conn.baremetal.get('/nodes/${nodeUuid}?fields=uuid,health,instance_name', microversion='1.115').json()
emit(out)
`)) as Json;
      expect(out.created).toMatchObject({ sensitive: true, conditions: null, actions: null, phase: 'main' });
      expect(out.listed).toEqual([expect.objectContaining({ priority: 10, description: 'QEMU machines' })]);
      expect(out.old).toBe(404);
      expect(out.runbook).toMatchObject({ name: 'fw-update', description: 'firmware', traits: ['CUSTOM_FW'] });
      // health is null until the power sync's first reading, then the fake hardware's 'OK'.
      expect(out.node).toMatchObject({ uuid: nodeUuid, instance_name: null });
      expect([null, 'OK']).toContain((out.node as { health: unknown }).health);
    });
  },
);
