export {
  BOOT_IMAGE_NAMES,
  type BootImageName,
  HttpRootLayout,
  NODE_SCRIPT_NAME,
  ROOT_SCRIPT_NAME,
} from './http-root-layout.js';
export {
  DEFAULT_IMAGE_DOWNLOAD_TIMEOUT_MS,
  IpxeBootInterface,
  type IpxeBootOptions,
  ipxeBootInterface,
  writeRootBootScript,
} from './ipxe-boot.js';
export {
  type NodeScriptEntry,
  type NodeScriptOptions,
  nodeScriptOptions,
  renderNodeScript,
} from './node-script.js';
export { nodeScriptLocation, renderRootBootScript } from './root-script.js';
