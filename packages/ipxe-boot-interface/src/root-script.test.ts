// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${name} is iPXE's own setting expansion, expected in the scripts as is.
import { InvalidParameterValue, MissingParameterValue } from '@bmaas/common';
import { describe, expect, it } from 'vitest';
import { nodeScriptLocation, renderRootBootScript } from './root-script.js';
import { ipxeScriptProblems } from './testing/script-check.js';
import { testConfig } from './testing/test-config.js';

describe('renderRootBootScript', () => {
  it.each([
    ['links to the HTTP server', 'root-http-server.ipxe', testConfig()],
    [
      'links to the API at public_endpoint',
      'root-api-public-endpoint.ipxe',
      testConfig({
        pxe: { ipxe_use_boot_config_api: true },
        api: { public_endpoint: 'https://api.example.org:6385/' },
      }),
    ],
    [
      'links to the API at ipxe_config_api_root_url',
      'root-api-root-url.ipxe',
      testConfig({
        pxe: { ipxe_use_boot_config_api: true, ipxe_config_api_root_url: 'http://192.0.2.5:8080/ironic/' },
        api: { public_endpoint: 'https://api.example.org:6385' },
      }),
    ],
    [
      'chains the fallback script',
      'root-fallback.ipxe',
      testConfig({ pxe: { ipxe_fallback_script: 'inspector.ipxe' } }),
    ],
  ])('%s (%s)', async (_what, golden, config) => {
    const script = renderRootBootScript(config);
    await expect(script).toMatchFileSnapshot(`./__golden__/${golden}`);
    expect(ipxeScriptProblems(script)).toEqual([]);
  });

  it('walks every NIC and stops the walk when a chained script returns', () => {
    const script = renderRootBootScript(testConfig());
    expect(script).toContain('isset ${net${nic}/mac} || goto no_config\n');
    expect(script).toContain('chain pxelinux.cfg/${net${nic}/mac:hexhyp} && exit 0 ||\n');
    expect(script).toContain('iseq ${tries} 3 && goto next_nic ||\n');
    expect(script.trimEnd().endsWith('reboot')).toBe(true);
  });

  it('uses the configured links directory', () => {
    expect(nodeScriptLocation(testConfig({ pxe: { pxe_config_subdir: 'ipxe/macs/' } }))).toEqual({
      prefix: 'ipxe/macs/',
      suffix: '',
    });
  });

  it('prefers ipxe_config_api_root_url over public_endpoint', () => {
    const config = testConfig({
      pxe: { ipxe_use_boot_config_api: true, ipxe_config_api_root_url: 'http://proxy.example.org' },
      api: { public_endpoint: 'https://api.example.org' },
    });
    expect(nodeScriptLocation(config)).toEqual({ prefix: 'http://proxy.example.org/v1/boot/', suffix: '/boot.ipxe' });
  });

  it('needs a root URL when linking to the API', () => {
    const config = testConfig({ pxe: { ipxe_use_boot_config_api: true } });
    expect(() => renderRootBootScript(config)).toThrow(MissingParameterValue);
  });

  it('refuses a fallback script that is not one word', () => {
    const config = testConfig({ pxe: { ipxe_fallback_script: 'inspector.ipxe\nreboot' } });
    expect(() => renderRootBootScript(config)).toThrow(InvalidParameterValue);
  });
});

describe('ipxeScriptProblems', () => {
  it('finds what would break a script', () => {
    expect(ipxeScriptProblems('#!ipxe\n:a\n:a\ngoto b\npoweroff\necho ${mac\n')).toEqual([
      'label a defined twice',
      'line 4: goto b has no label',
      'line 5: unknown command poweroff',
      'line 6: unbalanced ${…}',
    ]);
    expect(ipxeScriptProblems('echo hi')).toEqual(['first line is not #!ipxe', 'no newline at the end']);
  });
});
