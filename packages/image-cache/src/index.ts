export type { ImageHash } from './download.js';
export { type CachedImage, type ImageRequest, InstanceImageCache } from './instance-image-cache.js';
export { type InstanceImageCacheSettings, instanceImageCacheSettingsOf } from './settings.js';
