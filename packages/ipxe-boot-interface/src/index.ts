export {
  DEFAULT_IMAGE_DOWNLOAD_TIMEOUT_MS,
  IpxeBootInterface,
  type IpxeBootOptions,
  ipxeBootInterface,
  writeRootBootScript,
} from './ipxe-boot.js';
export { type IpxeConfig, ipxeConfigOf, PXE_OPTIONS, type PxeSettings } from './ipxe-config.js';
export { IpxeFiles, NODE_SCRIPT_NAME, ROOT_SCRIPT_NAME } from './ipxe-files.js';
export {
  type NodeScriptEntry,
  type NodeScriptOptions,
  nodeScriptOptions,
  renderNodeScript,
} from './node-script.js';
export { nodeScriptLocation, renderRootBootScript } from './root-script.js';
