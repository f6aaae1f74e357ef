// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${name} is iPXE's own setting expansion, expected in the scripts as is.
import { InvalidParameterValue, MissingParameterValue } from '@bmaas/common';
import { describe, expect, it } from 'vitest';
import { ipxeConfigOf } from './ipxe-config.js';
import { type NodeScriptEntry, nodeScriptEntry, nodeScriptOptions, renderNodeScript } from './node-script.js';
import { ipxeScriptProblems } from './testing/script-check.js';
import { testConfig, testDeps } from './testing/test-config.js';

const NODE = '1be26c0b-03f2-4d2e-ae87-c02d7f33c123';
const config = (ipxeTimeout = 0) =>
  testConfig({
    deploy: { http_url: 'http://192.0.2.10:8080/' },
    api: { public_endpoint: 'http://192.0.2.1:6385/' },
    pxe: { ipxe_timeout: ipxeTimeout, boot_retry_attempts: 4 },
  });
const render = (entry: NodeScriptEntry, ipxeTimeout = 0) =>
  renderNodeScript(nodeScriptOptions(config(ipxeTimeout), NODE.toUpperCase(), entry));

describe('renderNodeScript', () => {
  it.each([
    ['deploy', 0, 'node-deploy.ipxe'],
    ['deploy', 30, 'node-deploy-timeout.ipxe'],
    ['rescue', 0, 'node-rescue.ipxe'],
    ['rescue', 30, 'node-rescue-timeout.ipxe'],
    ['boot_instance', 0, 'node-instance.ipxe'],
  ] as const)('renders the %s script (ipxe_timeout %i) as in %s', async (entry, timeout, golden) => {
    const script = render(entry, timeout);
    await expect(script).toMatchFileSnapshot(`./__golden__/${golden}`);
    expect(ipxeScriptProblems(script)).toEqual([]);
    expect(nodeScriptEntry(script)).toBe(entry);
  });

  it('points the ramdisk at the node directory and the agent at the API', () => {
    const script = render('deploy');
    expect(script).toContain(`kernel http://192.0.2.10:8080/${NODE}/deploy_kernel nofb vga=normal BOOTIF=\${mac} `);
    expect(script).toContain('ipa-api-url=http://192.0.2.1:6385 initrd=deploy_ramdisk || goto retry');
    expect(script).toContain(`initrd http://192.0.2.10:8080/${NODE}/deploy_ramdisk || goto retry`);
    expect(script).toContain('set attempts:int32 4');
    expect(script).not.toContain('poweroff\n');
  });

  it('tells an inspection ramdisk where to post its inventory', () => {
    const script = renderNodeScript(nodeScriptOptions(config(), NODE, 'deploy', true));
    expect(script).toContain(
      'ipa-api-url=http://192.0.2.1:6385 ipa-inspection-callback-url=http://192.0.2.1:6385/v1/continue_inspection initrd=deploy_ramdisk',
    );
    expect(ipxeScriptProblems(script)).toEqual([]);
    // [inspector]callback_endpoint_override, as the registry passes it (InterfaceDeps.inspectionCallbackEndpoint).
    const override = ipxeConfigOf(
      testDeps(
        testConfig({
          deploy: { http_url: 'http://192.0.2.10:8080/' },
          api: { public_endpoint: 'http://192.0.2.1:6385/' },
          inspector: { callback_endpoint_override: 'http://198.51.100.7:6385/' },
        }),
      ),
    );
    expect(renderNodeScript(nodeScriptOptions(override, NODE, 'deploy', true))).toContain(
      'ipa-inspection-callback-url=http://198.51.100.7:6385/v1/continue_inspection ',
    );
    expect(render('deploy')).not.toContain('ipa-inspection-callback-url');
  });

  it('gives kernel and initrd the timeout in milliseconds', () => {
    const script = render('rescue', 7);
    expect(script.match(/ --timeout 7000 /g)).toHaveLength(2);
    expect(render('rescue', 0)).not.toContain('--timeout');
  });

  it('needs http_url and public_endpoint for a ramdisk, not for the instance', () => {
    const noHttp = testConfig({ api: { public_endpoint: 'http://192.0.2.1:6385' } });
    const noApi = testConfig({ deploy: { http_url: 'http://192.0.2.10:8080' } });
    expect(() => nodeScriptOptions(noHttp, NODE, 'deploy')).toThrow(MissingParameterValue);
    expect(() => nodeScriptOptions(noHttp, NODE, 'deploy')).toThrow(/\[deploy\]http_url/);
    expect(() => nodeScriptOptions(noApi, NODE, 'rescue')).toThrow(/\[api\]public_endpoint/);
    expect(renderNodeScript(nodeScriptOptions(testConfig(), NODE, 'boot_instance'))).toBe(render('boot_instance'));
  });

  it('refuses kernel parameters that would break the script into more lines', () => {
    const bad = testConfig({
      deploy: { http_url: 'http://192.0.2.10:8080' },
      api: { public_endpoint: 'http://192.0.2.1:6385' },
      pxe: { kernel_append_params: 'quiet\nreboot' },
    });
    expect(() => nodeScriptOptions(bad, NODE, 'deploy')).toThrow(InvalidParameterValue);
  });

  it("takes the node's driver_info.kernel_append_params over [pxe]kernel_append_params", () => {
    const own = renderNodeScript(
      nodeScriptOptions(config(), NODE, 'deploy', false, 'console=ttyS0 ipa-advertise-port=40001'),
    );
    expect(own).toContain(' console=ttyS0 ipa-advertise-port=40001');
    expect(own).not.toContain(config().pxe.kernel_append_params);
    expect(renderNodeScript(nodeScriptOptions(config(), NODE, 'deploy', false, ''))).toBe(render('deploy'));
    expect(() => nodeScriptOptions(config(), NODE, 'deploy', false, 'quiet\nreboot')).toThrow(InvalidParameterValue);
    expect(() => nodeScriptOptions(config(), NODE, 'deploy', false, 42)).toThrow(InvalidParameterValue);
  });

  it('gives up at once with zero retries', () => {
    const script = renderNodeScript({ ...nodeScriptOptions(config(), NODE, 'deploy'), retryAttempts: 0 });
    expect(script).toContain('set attempts:int32 0\n');
    expect(script).toContain('iseq ${i} ${attempts} && goto fail ||\n');
  });

  it('finds no entry in text it did not write', () => {
    expect(nodeScriptEntry('#!ipxe\nchain http://x/\n')).toBeUndefined();
  });
});
