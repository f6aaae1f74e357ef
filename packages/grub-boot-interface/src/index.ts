export { GrubBootInterface, grubBootInterface, NODE_CONFIG_NAME, ROOT_CONFIG_PATH } from './grub-boot.js';
export {
  checkKernelParams,
  DEFAULT_KERNEL_APPEND_PARAMS,
  type GrubConfigEntry,
  grubHttpLocation,
  renderNodeConfig,
  renderRootConfig,
} from './grub-config.js';
export { GRUB_OPTIONS, type GrubSettings } from './grub-options.js';
