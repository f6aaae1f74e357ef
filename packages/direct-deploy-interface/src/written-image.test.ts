import { describe, expect, it } from 'vitest';
import { type AskedImage, checkWrittenImage, InstanceDeployFailure } from './written-image.js';

const SHA = 'ab'.repeat(32);
const ASKED: AskedImage = { id: 'disk.qcow2', diskFormat: 'qcow2', osHashAlgo: 'sha256', osHashValue: SHA };
const REPORT = {
  source_format: 'qcow2',
  written_format: 'raw',
  size: 20971520,
  os_hash_algo: 'sha256',
  os_hash_value: SHA,
};

describe('checkWrittenImage', () => {
  it("takes IPA's answer when it names the image asked for", () => {
    expect(() => checkWrittenImage('image (disk.qcow2) written to device /dev/sda root_uuid=0x1', ASKED)).not.toThrow();
    expect(() => checkWrittenImage('image (other.img) written to device /dev/sda root_uuid=0x1', ASKED)).toThrow(
      /reports another image written than disk.qcow2/,
    );
  });

  it('takes a report of the format, hash and size asked for', () => {
    expect(() => checkWrittenImage({ image: REPORT }, ASKED)).not.toThrow();
    expect(() => checkWrittenImage({ image: REPORT }, { ...ASKED, virtualSize: 20971520 })).not.toThrow();
    const legacy = { id: 'x', diskFormat: 'raw', checksum: SHA.toUpperCase() };
    expect(() => checkWrittenImage({ image: { ...REPORT, source_format: 'raw' } }, legacy)).not.toThrow();
  });

  it.each([
    [undefined, ASKED, /reported no image written \(deploy_result null\)/],
    [{ image: { ...REPORT, source_format: 'raw' } }, ASKED, /read the image as raw, but qcow2 was asked/],
    [{ image: { ...REPORT, written_format: 'qcow2' } }, ASKED, /left a qcow2 image on the disk/],
    [
      { image: { ...REPORT, os_hash_value: 'cd'.repeat(32) } },
      ASKED,
      /image of sha256 (cd)+, but sha256 (ab)+ was asked/,
    ],
    [{ image: { ...REPORT, os_hash_algo: 'md5' } }, ASKED, /image of md5 .*, but sha256 .* was asked/],
    [{ image: { ...REPORT, size: 0 } }, ASKED, /reported no size written \(0\)/],
    [
      { image: REPORT },
      { ...ASKED, virtualSize: 1 << 30 },
      /wrote 20971520 bytes, but the image stands for a disk of 1073741824/,
    ],
  ])('refuses %j', (result, asked, message) => {
    expect(() => checkWrittenImage(result, asked)).toThrow(InstanceDeployFailure);
    expect(() => checkWrittenImage(result, asked)).toThrow(message);
  });
});
