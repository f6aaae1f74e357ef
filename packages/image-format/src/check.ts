import { BmaasError } from '@bmaas/common';
import { type ImageFormat, type ImageInspection, RAW_FORMATS } from './inspect.js';

/** An image refused before anything reads it further: unsafe, not permitted, or not what it was declared as. */
export class InvalidImage extends BmaasError {
  static override readonly status: number = 400;
}

/** [conductor]permitted_image_formats as upstream defaults it; raw stands for every raw whole-disk form. */
export const DEFAULT_PERMITTED_FORMATS: readonly string[] = ['raw', 'gpt', 'qcow2', 'iso'];

/** True when `actual` is what `declared` (an image_disk_format) promises: raw covers a partitioned disk too. */
export function formatMatches(actual: ImageFormat, declared: string): boolean {
  return declared === 'raw' ? RAW_FORMATS.has(actual) : actual === declared;
}

export interface ImageExpectations {
  /** instance_info.image_disk_format. */
  declaredFormat: string;
  /** [conductor]permitted_image_formats; 'raw' admits gpt and mbr too. */
  permittedFormats: readonly string[];
  /** Names the image in the error (its URL, without credentials). */
  name: string;
}

/**
 * Refuses an inspected image that is unsafe, of a format not permitted, or
 * of another format than declared, with an InvalidImage whose message names
 * the rule that was broken. Returns the inspection when the image may be used.
 */
export function checkImage(inspection: ImageInspection, expected: ImageExpectations): ImageInspection {
  const { format } = inspection;
  if (inspection.violations.length > 0) {
    throw new InvalidImage(`Image ${expected.name} is unsafe (${format}): ${inspection.violations.join('; ')}.`, {
      format,
      violations: inspection.violations,
    });
  }
  const permitted = new Set(expected.permittedFormats);
  if (permitted.has('raw')) for (const raw of RAW_FORMATS) permitted.add(raw);
  if (!permitted.has(format)) {
    throw new InvalidImage(
      `Image ${expected.name} is ${format}, which [conductor]permitted_image_formats does not permit (${expected.permittedFormats.join(', ')}).`,
      { format },
    );
  }
  if (!formatMatches(format, expected.declaredFormat)) {
    throw new InvalidImage(
      `Image ${expected.name} is ${format} but image_disk_format says ${expected.declaredFormat}: refusing a mismatch.`,
      { format, declared: expected.declaredFormat },
    );
  }
  return inspection;
}
