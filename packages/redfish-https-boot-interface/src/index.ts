export {
  BOOT_ARTEFACT_NAME,
  RedfishHttpsBootInterface,
  type RedfishHttpsBootOptions,
  redfishHttpsBootInterface,
} from './redfish-https-boot.js';
export { buildUnifiedKernelImage, cmdlineOf, UKI_STUB, type UkiParts } from './unified-kernel-image.js';
