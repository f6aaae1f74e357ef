export { checkImage, DEFAULT_PERMITTED_FORMATS, formatMatches, type ImageExpectations, InvalidImage } from './check.js';
export { IMAGE_FORMATS, type ImageFormat, type ImageInspection, inspectImageFile, RAW_FORMATS } from './inspect.js';
export { convertToRaw } from './qemu-img.js';
