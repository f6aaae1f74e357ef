export {
  isMissing,
  linkIfChanged,
  readLinkIfPresent,
  removeIfPresent,
  replaceAtomically,
  tempPathBeside,
  writeFileAtomically,
  writeFileIfChanged,
} from './atomic-files.js';
export {
  AllowedImageDirs,
  type CheckedLocalImage,
  checkLocalImage,
  checkLocalImageAllowed,
  FORBIDDEN_IMAGE_DIRS,
  type ImageSource,
  type PlaceOptions,
  type PlaceOutcome,
  parseImageSource,
  placeBootImage,
  redactUrl,
  removeBootImage,
} from './boot-images.js';
export { BOOT_IMAGE_NAMES, type BootImageName, HttpRootLayout } from './http-root-layout.js';
export {
  type CheckedRamdisks,
  type PlaceRamdiskOptions,
  placeRamdiskImages,
  RAMDISK_IMAGE_KEYS,
  RAMDISK_IMAGE_PROPERTIES,
  type RamdiskImageOptions,
  type RamdiskImageSources,
  ramdiskImageSources,
  removeRamdiskImages,
  ValidatedRamdiskImages,
  validateRamdiskImages,
} from './ramdisk-images.js';
