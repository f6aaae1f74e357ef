import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { createStores } from '@bmaas/db';
import { createTestDatabase, type TestDatabase } from '@bmaas/db/testing';
import type { Services } from '@bmaas/stack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BAREMETAL, baremetal as runBaremetal } from '../support/baremetal-cli.js';
import { missingPrerequisite } from '../support/prerequisites.js';
import { startTestServices } from '../support/test-services.js';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '../..');

const TITLE = BAREMETAL
  ? 'the baremetal CLI (python3-ironicclient) against the API'
  : 'the baremetal CLI against the API (skipped: no `baremetal` on PATH; apt-get install python3-ironicclient)';

describe.skipIf(
  missingPrerequisite(
    'baremetal-cli',
    BAREMETAL ? null : 'no `baremetal` on PATH (apt-get install python3-ironicclient)',
  ),
)(TITLE, () => {
  let database: TestDatabase;
  let services: Services | undefined;
  let endpoint: string;

  /** Runs `baremetal <args>` with no auth against our API; parses -f json output. */
  const baremetal = (...args: string[]): Promise<unknown> => runBaremetal(endpoint, args);

  beforeAll(async () => {
    await run('npx', ['tsc', '-b', 'packages/api'], { cwd: ROOT, timeout: 240_000 });
    database = await createTestDatabase();
    await createStores(database.db).conductors.register({
      hostname: 'cli-conductor',
      conductorGroup: '',
      drivers: ['fake-hardware'],
      interfaces: [
        { hardwareType: 'fake-hardware', interfaceType: 'boot', interfaceName: 'fake', isDefault: true },
        { hardwareType: 'fake-hardware', interfaceType: 'deploy', interfaceName: 'fake', isDefault: true },
        { hardwareType: 'fake-hardware', interfaceType: 'power', interfaceName: 'fake', isDefault: true },
        { hardwareType: 'fake-hardware', interfaceType: 'management', interfaceName: 'fake', isDefault: true },
        { hardwareType: 'fake-hardware', interfaceType: 'inspect', interfaceName: 'fake', isDefault: true },
      ],
    });
    // The API alone: the conductor row above never heartbeats, so keep it alive however long a busy machine takes.
    services = await startTestServices({
      databaseUrl: database.url,
      conductors: 0,
      env: { BMAAS_CONDUCTOR__HEARTBEAT_TIMEOUT: '3600' },
    });
    endpoint = services.apiUrl as string;
  }, 300_000);

  afterAll(async () => {
    await services?.stop();
    await database?.drop();
  });

  it('creates, shows, lists, updates and deletes a node and its port; lists conductors and drivers', async () => {
    const created = (await baremetal(
      'node',
      'create',
      '--driver',
      'fake-hardware',
      '--name',
      'n1',
      '-f',
      'json',
    )) as Record<string, unknown>;
    expect(created).toMatchObject({
      name: 'n1',
      driver: 'fake-hardware',
      provision_state: 'enroll',
      boot_interface: 'fake',
      deploy_interface: 'fake',
      bios_interface: 'no-bios',
      console_interface: 'no-console',
      conductor: 'cli-conductor',
      maintenance: false,
      properties: {},
    });
    const uuid = created.uuid as string;
    expect(uuid).toMatch(/^[0-9a-f-]{36}$/);

    const shown = (await baremetal('node', 'show', 'n1', '-f', 'json')) as Record<string, unknown>;
    expect(shown).toMatchObject({ uuid, name: 'n1', provision_state: 'enroll', conductor_group: '' });

    const listed = (await baremetal('node', 'list', '-f', 'json')) as Array<Record<string, unknown>>;
    expect(listed).toEqual([
      {
        UUID: uuid,
        Name: 'n1',
        'Instance UUID': null,
        'Power State': null,
        'Provisioning State': 'enroll',
        Maintenance: false,
      },
    ]);

    await baremetal('node', 'set', 'n1', '--property', 'x=y');
    expect(((await baremetal('node', 'show', 'n1', '-f', 'json')) as { properties: unknown }).properties).toEqual({
      x: 'y',
    });
    await baremetal('node', 'unset', 'n1', '--property', 'x');
    expect(((await baremetal('node', 'show', 'n1', '-f', 'json')) as { properties: unknown }).properties).toEqual({});

    const port = (await baremetal('port', 'create', '52:54:00:AA:BB:01', '--node', uuid, '-f', 'json')) as Record<
      string,
      unknown
    >;
    expect(port).toMatchObject({ address: '52:54:00:aa:bb:01', node_uuid: uuid, pxe_enabled: true });
    const portUuid = port.uuid as string;
    expect(await baremetal('port', 'show', portUuid, '-f', 'json')).toMatchObject({
      uuid: portUuid,
      address: '52:54:00:aa:bb:01',
    });
    expect(await baremetal('port', 'list', '-f', 'json')).toEqual([{ UUID: portUuid, Address: '52:54:00:aa:bb:01' }]);
    await baremetal('port', 'delete', portUuid);
    expect(await baremetal('port', 'list', '-f', 'json')).toEqual([]);

    expect(await baremetal('conductor', 'list', '-f', 'json')).toEqual([
      { Hostname: 'cli-conductor', 'Conductor Group': '', Alive: true },
    ]);
    expect(await baremetal('driver', 'list', '-f', 'json')).toEqual([
      { 'Supported driver(s)': 'fake-hardware', 'Active host(s)': 'cli-conductor' },
    ]);

    await baremetal('node', 'delete', 'n1');
    expect(await baremetal('node', 'list', '-f', 'json')).toEqual([]);
  }, 180_000);

  it('creates a port with OVN VTEP switch keys at 1.90, refused at 1.89 and shown empty at the CLI default', async () => {
    const node = (await baremetal('node', 'create', '--driver', 'fake-hardware', '-f', 'json')) as { uuid: string };
    const link = [
      '--local-link-connection',
      'port_id=p1',
      '--local-link-connection',
      'vtep-logical-switch=ls1',
      '--local-link-connection',
      'vtep-physical-switch=ps1',
    ];
    const vtep = { port_id: 'p1', 'vtep-logical-switch': 'ls1', 'vtep-physical-switch': 'ps1' };
    const created = (await baremetal(
      '--os-baremetal-api-version',
      '1.90',
      'port',
      'create',
      '52:54:00:aa:bb:90',
      '--node',
      node.uuid,
      ...link,
      '-f',
      'json',
    )) as { uuid: string; local_link_connection: unknown };
    expect(created.local_link_connection).toEqual(vtep);
    const shown = (await baremetal(
      '--os-baremetal-api-version',
      '1.90',
      'port',
      'show',
      created.uuid,
      '-f',
      'json',
    )) as {
      local_link_connection: unknown;
    };
    expect(shown.local_link_connection).toEqual(vtep);
    const atDefault = (await baremetal('port', 'show', created.uuid, '-f', 'json')) as {
      local_link_connection: unknown;
    };
    expect(atDefault.local_link_connection).toEqual({});
    const refused = await baremetal(
      '--os-baremetal-api-version',
      '1.89',
      'port',
      'create',
      '52:54:00:aa:bb:91',
      '--node',
      node.uuid,
      ...link,
    ).then(
      () => 'created',
      (error: Error) => error.message,
    );
    // The CLI words the API's 406 itself.
    expect(refused).toContain('Requested API version 1.89 is not supported');
    await baremetal('port', 'delete', created.uuid);
    await baremetal('node', 'delete', node.uuid);
  }, 180_000);
});
