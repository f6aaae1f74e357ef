import { ironicFault, type NodeAnswer } from '@bmaas/api-client';
import { waitFor } from '@bmaas/common';
import { describe, expect, it } from 'vitest';
import { useApiStack } from '../support/api-stack-suite.js';

/**
 * Servicing (1.87, unhold 1.85) and virtual media (1.89, listing 1.93) the
 * way a client at 1.95 (Metal3's baremetal-operator) drives them: REST calls
 * to the API, which routes each to the owning conductor process, on fake
 * hardware.
 */

const suite = useApiStack('1.95', {
  conductors: 1,
  env: {
    BMAAS_DEFAULT__ENABLED_BOOT_INTERFACES: 'fake',
    BMAAS_DEFAULT__ENABLED_DEPLOY_INTERFACES: 'fake,direct',
    BMAAS_DEFAULT__ENABLED_MANAGEMENT_INTERFACES: 'fake,noop',
  },
});

/** A fake-hardware node driven to active through REST. */
async function activeNode(name: string, fields: Record<string, unknown> = {}): Promise<NodeAnswer> {
  const node = await suite.rest.createNode({ driver: 'fake-hardware', name, ...fields });
  for (const [target, state] of [
    ['manage', 'manageable'],
    ['provide', 'available'],
    ['active', 'active'],
  ] as const) {
    const answer = await suite.rest.provision(name, target);
    expect(answer.status, `${target}: ${answer.text}`).toBe(202);
    await suite.rest.settled(name, state);
  }
  return node;
}

describe('servicing through the API and a conductor', () => {
  it('runs service steps on an active fake node and ends active, service_step {} again', async () => {
    await activeNode('svc-fake');
    const steps = [
      { interface: 'deploy', step: 'update_firmware', args: { force: true } },
      { interface: 'deploy', step: 'hold' },
      { interface: 'bios', step: 'apply_configuration' },
    ];
    expect((await suite.rest.provision('svc-fake', 'service', { service_steps: steps })).status).toBe(202);
    const held = await suite.rest.settled('svc-fake', 'service hold');
    expect(held).toMatchObject({ target_provision_state: 'active', service_step: steps[1], last_error: null });
    expect((await suite.rest.provision('svc-fake', 'unhold')).status).toBe(202);
    const done = await suite.rest.settled('svc-fake', 'active');
    expect(done).toMatchObject({ target_provision_state: null, last_error: null, service_step: {} });
    expect(done.driver_internal_info).toMatchObject({
      fake_service_steps: ['deploy.update_firmware', 'bios.apply_configuration'],
    });
  }, 60_000);

  it('fails a service the direct deploy interface cannot run, then aborts it back to active', async () => {
    await activeNode('svc-direct');
    // An active node's deploy interface changes in maintenance only, as in Ironic.
    expect((await suite.rest.request('PUT', '/v1/nodes/svc-direct/maintenance', {})).status).toBe(202);
    const patched = await suite.rest.request('PATCH', '/v1/nodes/svc-direct', [
      { op: 'replace', path: '/deploy_interface', value: 'direct' },
    ]);
    expect(patched.status, patched.text).toBe(200);
    expect((await suite.rest.request('DELETE', '/v1/nodes/svc-direct/maintenance')).status).toBe(202);
    const step = { interface: 'deploy', step: 'update_firmware' };
    expect((await suite.rest.provision('svc-direct', 'service', { service_steps: [step] })).status).toBe(202);
    const failed = await suite.rest.settled('svc-direct', 'service failed');
    expect(failed.last_error).toBe(
      `Failed to service node ${failed.uuid}: node does not support this service step: deploy.update_firmware`,
    );
    expect((await suite.rest.provision('svc-direct', 'abort')).status).toBe(202);
    expect(await suite.rest.settled('svc-direct', 'active')).toMatchObject({
      last_error: 'By request, the service operation was aborted.',
    });
  }, 60_000);

  it('refuses a service without steps, and below 1.87', async () => {
    const missing = await suite.rest.provision('svc-fake', 'service');
    expect(missing.status).toBe(400);
    expect(ironicFault(missing).faultstring).toContain('"service_steps" is required');
    const old = await suite.at('1.86').provision('svc-fake', 'service', {
      service_steps: [{ interface: 'deploy', step: 'x' }],
    });
    expect(old.status).toBe(406);
  });
});

describe('virtual media through the API and a conductor', () => {
  it('attaches, lists and detaches with the fake management interface', async () => {
    const node = await suite.rest.createNode({ driver: 'fake-hardware', name: 'vm-fake' });
    const attach = await suite.rest.request('POST', '/v1/nodes/vm-fake/vmedia', {
      device_type: 'cdrom',
      image_url: 'https://images.example/boot.iso',
    });
    expect(attach.status, attach.text).toBe(204);
    const listed = await waitFor(
      'the cdrom to be attached',
      async () => {
        const answer = await suite.rest.request<Record<string, { inserted: boolean }>>(
          'GET',
          '/v1/nodes/vm-fake/vmedia',
        );
        return answer.body?.cdrom?.inserted ? answer : undefined;
      },
      { timeoutMs: 15_000, intervalMs: 50 },
    );
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual({
      disk: { inserted: false, image_url: null },
      cdrom: { inserted: true, image_url: 'https://images.example/boot.iso' },
      floppy: { inserted: false, image_url: null },
    });
    expect((await suite.rest.request('DELETE', '/v1/nodes/vm-fake/vmedia?device_types=cdrom')).status).toBe(204);
    await waitFor(
      'the cdrom to be detached',
      async () => {
        const shown = await suite.rest.node(node.uuid);
        const media = (shown.driver_internal_info as { fake_vmedia?: Record<string, string> }).fake_vmedia;
        return media && !('cdrom' in media) && shown.reservation === null ? true : undefined;
      },
      { timeoutMs: 15_000, intervalMs: 50 },
    );
  }, 60_000);

  it('answers UnsupportedDriverExtension (400) for a management interface without virtual media', async () => {
    await suite.rest.createNode({ driver: 'fake-hardware', name: 'vm-noop', management_interface: 'noop' });
    const attach = await suite.rest.request('POST', '/v1/nodes/vm-noop/vmedia', {
      device_type: 'cdrom',
      image_url: 'http://images.example/boot.iso',
    });
    expect(attach.status).toBe(400);
    expect(ironicFault(attach).faultstring).toBe(
      'Driver fake-hardware does not support attach_virtual_media (disabled or not implemented).',
    );
    expect((await suite.rest.request('GET', '/v1/nodes/vm-noop/vmedia')).status).toBe(400);
    expect((await suite.rest.request('DELETE', '/v1/nodes/vm-noop/vmedia')).status).toBe(400);
  });

  it('is not found below 1.89, and listing below 1.93', async () => {
    const at88 = suite.at('1.88');
    expect((await at88.request('DELETE', '/v1/nodes/vm-fake/vmedia')).status).toBe(404);
    const at92 = suite.at('1.92');
    expect((await at92.request('GET', '/v1/nodes/vm-fake/vmedia')).status).toBe(404);
  });
});
