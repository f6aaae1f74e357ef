import type { Router } from 'express';
import type { RouteDeps } from '../route-deps.js';
import { allocationsRouter } from './allocations.js';
import { chassisRouter } from './chassis.js';
import { driverPropertiesRouter } from './driver-properties.js';
import { inspectionRulesRouter } from './inspection-rules.js';
import { nodePortgroupsRouter, portgroupsRouter } from './portgroups.js';
import { deployTemplatesRouter, runbooksRouter } from './step-templates.js';
import { nodeVolumeRouters, volumeConnectorsRouter, volumeRootRouter, volumeTargetsRouter } from './volume.js';

/** The routers of the resources around nodes, in the order the app mounts them. */
export function resourceRouters(deps: RouteDeps): Router[] {
  return [
    chassisRouter(deps),
    portgroupsRouter(deps),
    allocationsRouter(deps),
    deployTemplatesRouter(deps),
    runbooksRouter(deps),
    inspectionRulesRouter(deps),
    volumeRootRouter(deps),
    volumeConnectorsRouter(deps),
    volumeTargetsRouter(deps),
    driverPropertiesRouter(deps),
    nodePortgroupsRouter(deps),
    ...nodeVolumeRouters(deps),
  ];
}
