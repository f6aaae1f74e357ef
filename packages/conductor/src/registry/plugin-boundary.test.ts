import { readdirSync, readFileSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const repo = fileURLToPath(new URL('../../../../', import.meta.url));
/** The packages that make the product around its plug-ins. */
const CORE_PACKAGES = ['api', 'conductor', 'common', 'db', 'rpc-client', 'stack'];
/** The one file that names the plug-ins: the registry. */
const REGISTRY_FILE = 'packages/conductor/src/registry/enabled-interfaces.ts';
/**
 * Files of the core that still name a plug-in, and why; each is a debt to pay
 * (the test fails when a file here no longer names one, so the list only shrinks).
 */
const KNOWN_EXCEPTIONS: Readonly<Record<string, string>> = {
  'packages/stack/src/machine-config.ts': "npm start's machines.conf sets [pxe] and ipmitool power and management",
  'packages/common/src/errors.ts':
    'the domain errors of the Redfish protocol (RedfishError, …), mapped in the one error module',
  // The firmware and boot loader of the same names, not the plug-ins:
  'packages/common/src/mac.ts': 'the MAC forms iPXE (the firmware) puts in URLs',
  'packages/conductor/src/http-file-server.ts': "GRUB's (the boot loader's) HTTP client and its header names",
};

/** Plug-in packages: packages/*-interface and *-interfaces. */
const pluginPackages = readdirSync(join(repo, 'packages')).filter((dir) => /-interfaces?$/.test(dir));

/** Names a plug-in goes by: its package, its descriptors' names, the boot configuration files it serves. */
async function pluginTerms(): Promise<string[]> {
  const terms = new Set<string>();
  for (const dir of pluginPackages) {
    const { name } = JSON.parse(readFileSync(join(repo, 'packages', dir, 'package.json'), 'utf8')) as { name: string };
    terms.add(name);
    terms.add(dir);
    const exports = (await import(name)) as Record<string, unknown>;
    for (const value of Object.values(exports)) {
      if (!value || typeof value !== 'object' || !('create' in value) || !('name' in value)) continue;
      const descriptor = value as { name: string; bootConfigNames?: string[]; rootFiles?: string[] };
      terms.add(descriptor.name);
      for (const file of [...(descriptor.bootConfigNames ?? []), ...(descriptor.rootFiles ?? [])]) {
        terms.add(basename(file));
      }
    }
  }
  return [...terms];
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'testing' ? [] : sourceFiles(path);
    // Tests and their helpers may use real plug-ins; production code may not name them.
    return /\.ts$/.test(entry.name) && !/\.test(-support)?\.ts$|fixtures?\.ts$/.test(entry.name) ? [path] : [];
  });
}

const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe('the plug-in boundary', () => {
  it('finds the plug-ins and what they are called', async () => {
    const terms = await pluginTerms();
    expect(pluginPackages.length).toBeGreaterThanOrEqual(5);
    expect(terms).toEqual(expect.arrayContaining(['ipxe', 'grub', 'direct', '@bmaas/ipxe-boot-interface', 'grub.cfg']));
  });

  it(`no core package (${CORE_PACKAGES.join(', ')}) names a plug-in outside ${REGISTRY_FILE}`, async () => {
    const pattern = new RegExp(`(?<![\\w-])(${(await pluginTerms()).map(literal).join('|')})(?![\\w-])`, 'i');
    const naming = new Map<string, string>();
    for (const pkg of CORE_PACKAGES) {
      for (const file of sourceFiles(join(repo, 'packages', pkg, 'src'))) {
        const path = relative(repo, file);
        if (path === REGISTRY_FILE) continue;
        const lines = readFileSync(file, 'utf8').split('\n');
        const at = lines.findIndex((line) => pattern.test(line));
        if (at >= 0) naming.set(path, `${path}:${at + 1}: ${lines[at]?.trim()}`);
      }
    }
    const unexpected = [...naming.keys()].filter((path) => !Object.hasOwn(KNOWN_EXCEPTIONS, path));
    expect(
      unexpected.map((path) => naming.get(path)),
      'a core file names a plug-in',
    ).toEqual([]);
    const paid = Object.keys(KNOWN_EXCEPTIONS).filter((path) => !naming.has(path));
    expect(paid, 'these no longer name a plug-in: remove them from KNOWN_EXCEPTIONS').toEqual([]);
  });
});
