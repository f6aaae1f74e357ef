export { buildConfigDrive, type ConfigDriveNode, type ConfigDriveObject, configDriveForAgent } from './configdrive.js';
export { DIRECT_DEPLOY_OPTIONS, type DirectDeploySettings } from './deploy-options.js';
export { DirectDeployInterface, directDeployInterface } from './direct-deploy.js';
export { DISK_FORMATS, HASH_ALGORITHMS, imageInfoFor, instanceImageOf } from './image-info.js';
export { type AskedImage, checkWrittenImage, InstanceDeployFailure } from './written-image.js';
