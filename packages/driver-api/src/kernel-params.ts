import { InvalidParameterValue } from '@bmaas/common';

/**
 * Plain words separated by single spaces: a ramdisk's command line goes into boot loader
 * configurations (iPXE, GRUB, isolinux) and into a UKI's section, where a newline or a quote
 * taken from driver_info would add a line or a command.
 */
const PLAIN_WORDS = /^[A-Za-z0-9_.,:=/+@%-]+( [A-Za-z0-9_.,:=/+@%-]+)*$/;

/**
 * Kernel parameters of a ramdisk, from driver_info.kernel_append_params or the configured
 * default (`fallback`, when the value is unset or empty); InvalidParameterValue unless plain words.
 */
export function checkKernelAppendParams(value: unknown, fallback: string): string {
  if (value === undefined || value === null || value === '') return fallback;
  if (typeof value !== 'string' || !PLAIN_WORDS.test(value)) {
    throw new InvalidParameterValue(
      'driver_info.kernel_append_params must be plain words (letters, digits and _.,:=/+@%-) separated by single spaces.',
    );
  }
  return value;
}
