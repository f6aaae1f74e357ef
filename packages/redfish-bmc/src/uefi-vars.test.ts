import { copyFileSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { HTTP_BOOT_OPTION, readGlobalVariables, setHttpBootNext, uriOfLoadOption } from './uefi-vars.js';

const TEMPLATE = '/usr/share/OVMF/OVMF_VARS_4M.fd';
let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

describe.skipIf(!existsSync(TEMPLATE) && process.env.CI !== 'true')(
  "OVMF's variable store: a one-shot HTTP boot",
  () => {
    it('adds Boot0B00 (a short-form URI device path) and BootNext naming it; again replaces both', async () => {
      dir = mkdtempSync(join(tmpdir(), 'bmaas-vars-'));
      const vars = join(dir, 'vars.fd');
      copyFileSync(TEMPLATE, vars);
      expect([...(await readGlobalVariables(vars)).keys()]).toEqual([]);

      await setHttpBootNext(vars, 'http://192.0.2.1:8080/node/boot.efi');
      let found = await readGlobalVariables(vars);
      expect([...found.keys()]).toEqual(['Boot0B00', 'BootNext']);
      expect(found.get('BootNext')?.readUInt16LE(0)).toBe(HTTP_BOOT_OPTION);
      const option = found.get('Boot0B00') as Buffer;
      expect(option.readUInt32LE(0)).toBe(1); // LOAD_OPTION_ACTIVE
      expect(uriOfLoadOption(option)).toBe('http://192.0.2.1:8080/node/boot.efi');
      // the device path: one URI node (type 3, subtype 24) and the end node
      const pathLength = option.readUInt16LE(4);
      const path = option.subarray(option.length - pathLength);
      expect([path[0], path[1]]).toEqual([3, 24]);
      expect([...path.subarray(-4)]).toEqual([0x7f, 0xff, 4, 0]);

      await setHttpBootNext(vars, 'http://192.0.2.1:8080/other/boot.efi');
      found = await readGlobalVariables(vars);
      expect([...found.keys()]).toEqual(['Boot0B00', 'BootNext']);
      expect(uriOfLoadOption(found.get('Boot0B00') as Buffer)).toBe('http://192.0.2.1:8080/other/boot.efi');
    });

    it('refuses a file that is no OVMF variable store', async () => {
      dir = mkdtempSync(join(tmpdir(), 'bmaas-vars-'));
      const file = join(dir, 'not.fd');
      writeFileSync(file, Buffer.alloc(8192));
      await expect(setHttpBootNext(file, 'http://192.0.2.1/x.efi')).rejects.toThrow(/not an OVMF variable store/);
    });
  },
);
