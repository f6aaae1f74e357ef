import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkImage, DEFAULT_PERMITTED_FORMATS, InvalidImage } from './check.js';
import { inspectImageFile } from './inspect.js';
import { convertToRaw } from './qemu-img.js';

const MIB = 1024 * 1024;
let dir: string;

/** Every image is made by qemu-img (or the disk tools) in the test, as an operator would get it. */
function qemuImg(...args: string[]): void {
  execFileSync('qemu-img', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}
function path(name: string): string {
  return join(dir, name);
}
/** A 4 MiB raw disk with a partition table (sfdisk script) and a marker in its first partition. */
function partitioned(name: string, script: string): string {
  const file = path(name);
  qemuImg('create', '-f', 'raw', file, '4M');
  execFileSync('sfdisk', ['-q', file], { input: script });
  const marker = Buffer.from('instance-marker');
  const image = readFileSync(file);
  marker.copy(image, 2048 * 512);
  writeFileSync(file, image);
  return file;
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'image-format-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('inspectImageFile tells the format from the bytes', () => {
  it('raw: bytes no format claims, the file size as virtual size', async () => {
    qemuImg('create', '-f', 'raw', path('plain.img'), '3M');
    expect(await inspectImageFile(path('plain.img'))).toEqual({ format: 'raw', virtualSize: 3 * MIB, violations: [] });
  });

  it('mbr and gpt: a partition table in the first sector', async () => {
    const mbr = partitioned('mbr.img', 'start=2048, type=83, bootable\n');
    expect(await inspectImageFile(mbr)).toEqual({ format: 'mbr', virtualSize: 4 * MIB, violations: [] });
    const gpt = partitioned('gpt.img', 'label: gpt\nstart=2048, size=2048\n');
    expect(await inspectImageFile(gpt)).toEqual({ format: 'gpt', virtualSize: 4 * MIB, violations: [] });
  });

  it('qcow2 (version 3 and 2) with its virtual size, whatever the file is named', async () => {
    qemuImg('create', '-f', 'qcow2', path('v3.raw'), '64M');
    expect(await inspectImageFile(path('v3.raw'))).toEqual({ format: 'qcow2', virtualSize: 64 * MIB, violations: [] });
    qemuImg('create', '-f', 'qcow2', '-o', 'compat=0.10', path('v2.qcow2'), '5M');
    expect(await inspectImageFile(path('v2.qcow2'))).toEqual({ format: 'qcow2', virtualSize: 5 * MIB, violations: [] });
  });

  it.each([
    ['vhd', ['-f', 'vpc'], 'vhd'],
    ['vhdx', ['-f', 'vhdx'], 'vhdx'],
    ['vdi', ['-f', 'vdi'], 'vdi'],
    ['vmdk', ['-f', 'vmdk'], 'vmdk'],
    ['vmdk-stream', ['-f', 'vmdk', '-o', 'subformat=streamOptimized'], 'vmdk'],
  ])('%s with its virtual size', async (name, options, format) => {
    qemuImg('create', ...options, path(name), '8M');
    const inspection = await inspectImageFile(path(name));
    expect(inspection.format).toBe(format);
    expect(inspection.violations).toEqual([]);
    // vpc rounds the size to its CHS geometry
    expect(inspection.virtualSize).toBeGreaterThanOrEqual(format === 'vhd' ? 8 * MIB - 64 * 1024 : 8 * MIB);
    expect(inspection.virtualSize).toBeLessThanOrEqual(8 * MIB + 64 * 1024);
  });

  it('iso, also with a partition table in front (a hybrid ISO is an ISO)', async () => {
    execFileSync('genisoimage', ['-quiet', '-o', path('cd.iso'), '-V', 'test', '/etc/hostname']);
    const inspection = await inspectImageFile(path('cd.iso'));
    expect(inspection).toMatchObject({ format: 'iso', violations: [] });
    expect(inspection.virtualSize).toBe(readFileSync(path('cd.iso')).length);
    const hybrid = readFileSync(path('cd.iso'));
    readFileSync(partitioned('for-hybrid.img', 'start=2048, type=83\n')).copy(hybrid, 0, 0, 512);
    writeFileSync(path('hybrid.iso'), hybrid);
    expect((await inspectImageFile(path('hybrid.iso'))).format).toBe('iso');
  });

  it('luks (version 1)', async () => {
    qemuImg(
      'create',
      '-f',
      'luks',
      '--object',
      'secret,id=s0,data=pw',
      '-o',
      'key-secret=s0,iter-time=10',
      path('x.luks'),
      '1M',
    );
    expect(await inspectImageFile(path('x.luks'))).toMatchObject({ format: 'luks', violations: [] });
  });
});

describe('the refusals', () => {
  const expectations = { permittedFormats: DEFAULT_PERMITTED_FORMATS, name: 'http://images/x' };
  const refusal = async (file: string, declaredFormat: string) => {
    try {
      checkImage(await inspectImageFile(file), { ...expectations, declaredFormat });
    } catch (error) {
      expect(error).toBeInstanceOf(InvalidImage);
      return (error as Error).message;
    }
    throw new Error(`${file} was accepted as ${declaredFormat}`);
  };

  it('qcow2 with a backing file pointing at a host file', async () => {
    qemuImg('create', '-f', 'qcow2', '-b', '/etc/hostname', '-F', 'raw', path('backed.qcow2'), '1M');
    expect(await refusal(path('backed.qcow2'), 'qcow2')).toMatch(/unsafe \(qcow2\): qcow2 image has a backing file/);
  });

  it('qcow2 with an external data file', async () => {
    qemuImg('create', '-f', 'qcow2', '-o', `data_file=${path('outside.data')}`, path('data.qcow2'), '1M');
    expect(await refusal(path('data.qcow2'), 'qcow2')).toMatch(/qcow2 image has an external data file/);
  });

  it('qcow2 with an incompatible feature bit nobody knows', async () => {
    qemuImg('create', '-f', 'qcow2', path('future.qcow2'), '1M');
    const image = readFileSync(path('future.qcow2'));
    image.writeUInt8(0x80, 72 + 7 - 1); // bit 15 of the incompatible features
    writeFileSync(path('future.qcow2'), image);
    expect(await refusal(path('future.qcow2'), 'qcow2')).toMatch(/unknown incompatible features/);
  });

  it('QED, whatever it holds', async () => {
    qemuImg('create', '-f', 'qed', path('x.qed'), '1M');
    expect(await refusal(path('x.qed'), 'raw')).toMatch(/QED images are not allowed/);
  });

  it.each([
    ['monolithicFlat', /subformat monolithicflat keeps its data in other files/],
    ['twoGbMaxExtentSparse', /subformat twogbmaxextentsparse keeps its data in other files/],
  ])('VMDK %s: a descriptor naming other files', async (subformat, message) => {
    const file = path(`${subformat}.vmdk`);
    qemuImg('create', '-f', 'vmdk', '-o', `subformat=${subformat}`, file, '1M');
    expect(await inspectImageFile(file)).toMatchObject({ format: 'vmdk' });
    expect(await refusal(file, 'vmdk')).toMatch(message);
  });

  it('a VMDK extent with a path in it', async () => {
    qemuImg('create', '-f', 'vmdk', path('pathy.vmdk'), '1M');
    const image = readFileSync(path('pathy.vmdk'));
    const at = image.indexOf('"pathy.vmdk"');
    Buffer.from('"/etc/shadow"').copy(image, at);
    writeFileSync(path('pathy.vmdk'), image);
    expect(await refusal(path('pathy.vmdk'), 'vmdk')).toMatch(/VMDK extent names a path/);
  });

  it('a protective MBR with other partitions beside it', async () => {
    const image = readFileSync(partitioned('gpt2.img', 'label: gpt\nstart=2048, size=2048\n'));
    image.writeUInt8(0x83, 446 + 16 + 4); // a second, Linux entry
    writeFileSync(path('gpt2.img'), image);
    expect(await refusal(path('gpt2.img'), 'raw')).toMatch(/protective MBR defines other partitions/);
  });

  it('a format that is not permitted (vmdk, vhd, vdi, luks by default)', async () => {
    expect(await refusal(path('vmdk'), 'vmdk')).toMatch(
      /is vmdk, which \[conductor\]permitted_image_formats does not permit/,
    );
    expect(await refusal(path('vhd'), 'vhd')).toMatch(/is vhd, which/);
    expect(await refusal(path('x.luks'), 'raw')).toMatch(/is luks, which/);
  });

  it('a real format other than the declared one, both ways', async () => {
    expect(await refusal(path('v3.raw'), 'raw')).toMatch(/is qcow2 but image_disk_format says raw/);
    expect(await refusal(path('plain.img'), 'qcow2')).toMatch(/is raw but image_disk_format says qcow2/);
    expect(await refusal(path('cd.iso'), 'raw')).toMatch(/is iso but image_disk_format says raw/);
  });

  it('accepts what it should: raw as raw (partitioned or not), qcow2 as qcow2', async () => {
    for (const [file, declaredFormat] of [
      ['plain.img', 'raw'],
      ['mbr.img', 'raw'],
      ['gpt.img', 'raw'],
      ['v2.qcow2', 'qcow2'],
    ] as const) {
      expect(checkImage(await inspectImageFile(path(file)), { ...expectations, declaredFormat }).violations).toEqual(
        [],
      );
    }
  });
});

describe('convertToRaw', () => {
  it('turns a qcow2 into the raw disk it was made from', async () => {
    const raw = partitioned('source.img', 'start=2048, type=83, bootable\n');
    qemuImg('convert', '-f', 'raw', '-O', 'qcow2', raw, path('source.qcow2'));
    await convertToRaw(path('source.qcow2'), path('back.img'), 'qcow2');
    expect(readFileSync(path('back.img')).equals(readFileSync(raw))).toBe(true);
    expect((await inspectImageFile(path('back.img'))).format).toBe('mbr');
  });

  it('names qemu-img’s complaint when the bytes are not the format given', async () => {
    await expect(convertToRaw(path('plain.img'), path('never.img'), 'qcow2')).rejects.toThrow(
      /qemu-img could not convert the qcow2 image to raw: .*qcow2/i,
    );
  });
});
