export {
  type BootIsoSpec,
  buildBootIso,
  grubConfig,
  ISO_PATHS,
  ISO_TOOL_FILES,
  isolinuxConfig,
  requireIsoTools,
} from './boot-iso.js';
export { DEFAULT_KERNEL_APPEND_PARAMS, kernelAppendParams, ramdiskCommandLine } from './kernel-command-line.js';
export {
  CONFIG_DRIVE_LABEL,
  ISO_KEYS,
  NETWORK_DATA_PATH,
  PLAIN_ISO_LABEL,
  RedfishVirtualMediaBootInterface,
  redfishVirtualMediaBootInterface,
} from './vmedia-boot.js';
export { VMEDIA_DEPLOY_OPTIONS, type VmediaDeploySettings } from './vmedia-options.js';
