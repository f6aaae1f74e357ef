import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { InvalidParameterValue, MissingParameterValue } from '@bmaas/common';
import { describe, expect, it } from 'vitest';
import { buildConfigDrive } from './configdrive.js';
import { imageInfoFor, instanceImageOf } from './image-info.js';

const NODE = { uuid: '1be26c0b-03f2-4d2e-ae87-c02d7f33c123', driverInfo: {} };
const SHA = 'ab'.repeat(32);

describe('instance_info of the direct deploy', () => {
  it('takes an http(s) image with os_hash_* or the legacy checksum', () => {
    const info = {
      image_source: 'https://img.example/os/disk.raw',
      image_os_hash_algo: 'sha256',
      image_os_hash_value: SHA,
    };
    expect(imageInfoFor({ ...NODE, instanceInfo: info }, { streamRawImages: true })).toEqual({
      id: 'disk.raw',
      urls: ['https://img.example/os/disk.raw'],
      disk_format: 'raw',
      container_format: 'bare',
      stream_raw_images: true,
      node_uuid: NODE.uuid,
      os_hash_algo: 'sha256',
      os_hash_value: SHA,
    });
    const legacy = { image_source: 'http://i/x.qcow2', image_checksum: 'c'.repeat(32), image_disk_format: 'qcow2' };
    expect(imageInfoFor({ ...NODE, instanceInfo: legacy }, { streamRawImages: false })).toMatchObject({
      checksum: 'c'.repeat(32),
      disk_format: 'qcow2',
    });
  });

  it.each([
    [{}, MissingParameterValue, /image_source is required/],
    [{ image_source: 'glance-uuid', image_checksum: SHA }, InvalidParameterValue, /must be an http\(s\) URL/],
    [{ image_source: 'http://i/x' }, MissingParameterValue, /image_os_hash_algo \+ image_os_hash_value/],
    [{ image_source: 'http://i/x', image_os_hash_algo: 'sha256' }, MissingParameterValue, /go together/],
    [
      { image_source: 'http://i/x', image_os_hash_algo: 'crc32', image_os_hash_value: 'ab' },
      InvalidParameterValue,
      /crc32/,
    ],
    [{ image_source: 'http://i/x', image_checksum: 'nope' }, InvalidParameterValue, /hex digest or an http/],
    [{ image_source: 'http://i/x', image_checksum: SHA, image_disk_format: 'vmdk' }, InvalidParameterValue, /vmdk/],
    [
      { image_source: 'http://i/x', image_checksum: SHA, kernel: 'http://i/k' },
      InvalidParameterValue,
      /Partition images/,
    ],
  ])('refuses %j', (instanceInfo, type, message) => {
    expect(() => instanceImageOf({ instanceInfo })).toThrow(type);
    expect(() => instanceImageOf({ instanceInfo })).toThrow(message);
  });
});

describe('config drive from the object form', () => {
  it('is a gzipped, base64 ISO 9660 image labelled config-2 with the OpenStack layout', async () => {
    const encoded = await buildConfigDrive(
      {
        meta_data: { hostname: 'web-1' },
        network_data: { links: [] },
        user_data: { runcmd: ['true'] },
        vendor_data: { v: 1 },
      },
      { uuid: NODE.uuid, name: 'node-1' },
    );
    const iso = gunzipSync(Buffer.from(encoded, 'base64'));
    // primary volume descriptor: sector 16, volume identifier at offset 40
    expect(iso.toString('latin1', 16 * 2048 + 40, 16 * 2048 + 48)).toBe('config-2');
    const dir = mkdtempSync(join(tmpdir(), 'cd-test-'));
    try {
      writeFileSync(join(dir, 'cd.iso'), iso);
      const listing = execFileSync('isoinfo', ['-R', '-f', '-i', join(dir, 'cd.iso')], { encoding: 'utf8' });
      for (const version of ['2012-08-10', 'latest']) {
        for (const file of ['meta_data.json', 'network_data.json', 'vendor_data2.json', 'user_data']) {
          expect(listing).toContain(`/openstack/${version}/${file}`);
        }
      }
      const meta = execFileSync(
        'isoinfo',
        ['-R', '-i', join(dir, 'cd.iso'), '-x', '/openstack/latest/meta_data.json'],
        {
          encoding: 'utf8',
        },
      );
      expect(JSON.parse(meta)).toEqual({ uuid: NODE.uuid, name: 'node-1', hostname: 'web-1' });
      const userData = execFileSync('isoinfo', ['-R', '-i', join(dir, 'cd.iso'), '-x', '/openstack/latest/user_data']);
      expect(JSON.parse(userData.toString())).toEqual({ runcmd: ['true'] });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("carries the node's network_data when the object gives none, and the object's when it does", async () => {
    const nodeNetwork = { links: [{ id: 'port0', type: 'phy', ethernet_mac_address: '52:54:00:00:00:01' }] };
    const networkOf = async (drive: Record<string, unknown>, networkData: Record<string, unknown>) => {
      const iso = gunzipSync(
        Buffer.from(await buildConfigDrive(drive, { uuid: NODE.uuid, name: null, networkData }), 'base64'),
      );
      const dir = mkdtempSync(join(tmpdir(), 'cd-test-'));
      try {
        writeFileSync(join(dir, 'cd.iso'), iso);
        const listing = execFileSync('isoinfo', ['-R', '-f', '-i', join(dir, 'cd.iso')], { encoding: 'utf8' });
        if (!listing.includes('/openstack/latest/network_data.json')) return undefined;
        const path = '/openstack/latest/network_data.json';
        return JSON.parse(execFileSync('isoinfo', ['-R', '-i', join(dir, 'cd.iso'), '-x', path], { encoding: 'utf8' }));
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    };
    expect(await networkOf({ meta_data: {} }, nodeNetwork)).toEqual(nodeNetwork);
    expect(await networkOf({ network_data: { links: [] } }, nodeNetwork)).toEqual({ links: [] });
    expect(await networkOf({ meta_data: {} }, {})).toBeUndefined();
  });
});
