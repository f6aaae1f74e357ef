import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { ImageFormat } from './inspect.js';

const run = promisify(execFile);

/**
 * Converts an inspected image to raw with qemu-img. The source format is
 * always given (-f): qemu-img never probes an image, so a raw image that
 * looks like a qcow2 cannot make it open a backing file.
 */
export async function convertToRaw(source: string, target: string, sourceFormat: ImageFormat): Promise<void> {
  // qemu-img calls GPT and MBR disks raw, and vhd "vpc".
  const format =
    sourceFormat === 'gpt' || sourceFormat === 'mbr' ? 'raw' : sourceFormat === 'vhd' ? 'vpc' : sourceFormat;
  try {
    await run('qemu-img', ['convert', '-q', '-f', format, '-O', 'raw', source, target], { maxBuffer: 1024 * 1024 });
  } catch (error) {
    const { stderr, message } = error as { stderr?: string; message: string };
    throw new Error(`qemu-img could not convert the ${sourceFormat} image to raw: ${(stderr || message).trim()}`);
  }
}
