import {
  findTransition,
  InvalidApiVersion,
  InvalidParameterValue,
  InvalidStateRequested,
  NodeLocked,
  type NodeRecord,
  POWER_TARGETS,
  PowerState,
  PROVISION_TARGETS,
  ProvisionState,
} from '@bmaas/common';
import type { Request, Response, Router } from 'express';
import { requireMinor, versionTooLow } from '../errors.js';
import { buildUrl } from '../links.js';
import { onlyQuery } from '../list-query.js';
import { baseUrlOf, callNodeConductor, type RouteDeps, resourceRouter } from '../route-deps.js';
import { compileSchema } from '../validation.js';
import { Minor } from '../versions.js';
import { nodeStatesView } from '../views/node-view.js';

/** Provision targets added after 1.1, with the version that added each (Ironic's MIN_VERB_VERSIONS). */
const TARGET_MIN_MINOR: Readonly<Record<string, number>> = {
  manage: Minor.MANAGEABLE_STATE,
  provide: Minor.MANAGEABLE_STATE,
  inspect: Minor.INSPECT_STATE,
  abort: Minor.ABORT_VERB,
  clean: Minor.MANUAL_CLEAN,
  adopt: Minor.ADOPT_VERB,
  rescue: Minor.RESCUE,
  unrescue: Minor.RESCUE,
  deploy: Minor.DEPLOY_UNDEPLOY_VERBS,
  undeploy: Minor.DEPLOY_UNDEPLOY_VERBS,
  unhold: Minor.UNHOLD_VERB,
  service: Minor.SERVICE_VERB,
};

interface ProvisionBody {
  target: string;
  clean_steps?: unknown[] | null;
  service_steps?: unknown[] | null;
  deploy_steps?: unknown[] | null;
  disable_ramdisk?: boolean | null;
  rescue_password?: string | null;
  configdrive?: string | Record<string, unknown> | null;
}

/** Config drive forms and the versions that brought them (Ironic). */
const CONFIGDRIVE_REBUILD_MINOR = 35;
const CONFIGDRIVE_OBJECT_MINOR = 56;
const CONFIGDRIVE_VENDOR_DATA_MINOR = 59;
/** The agent takes a config drive of at most 64 MiB (gzipped ISO, before base64). */
const CONFIGDRIVE_MAX_CHARS = Math.ceil((64 * 1024 * 1024 * 4) / 3);

/** Interfaces a user step may name (Ironic's CLEANING_INTERFACE_PRIORITY). */
const STEP_INTERFACES = ['vendor', 'power', 'management', 'firmware', 'deploy', 'bios', 'raid'];

/** A user step, as Ironic's steps schema checks it. */
const USER_STEP_SCHEMA = {
  type: 'object',
  properties: {
    interface: { enum: STEP_INTERFACES },
    step: { type: 'string', minLength: 1 },
    args: { type: 'object' },
    order: {
      anyOf: [
        { type: 'integer', minimum: 0 },
        { type: 'string', minLength: 1, pattern: '^[0-9]+$' },
      ],
    },
    execute_on_child_nodes: { type: 'boolean' },
    limit_child_node_execution: { type: 'array' },
  },
  required: ['interface', 'step'],
  additionalProperties: false,
} as const;
/** A user deploy step, as Ironic's DEPLOY_STEP_SCHEMA checks it. */
const DEPLOY_STEP_SCHEMA = {
  type: 'object',
  properties: {
    args: { type: 'object' },
    interface: { enum: STEP_INTERFACES },
    priority: USER_STEP_SCHEMA.properties.order,
    step: { type: 'string', minLength: 1 },
  },
  required: ['interface', 'step', 'args', 'priority'],
  additionalProperties: false,
} as const;

const checkProvisionBody = compileSchema<ProvisionBody>('provision state request', {
  type: 'object',
  properties: {
    target: { type: 'string' },
    clean_steps: { type: ['array', 'null'], items: { type: 'object' } },
    service_steps: { type: ['array', 'null'], items: USER_STEP_SCHEMA },
    deploy_steps: { type: ['array', 'null'], items: DEPLOY_STEP_SCHEMA },
    disable_ramdisk: { type: ['boolean', 'null'] },
    rescue_password: { type: ['string', 'null'] },
    configdrive: {
      anyOf: [
        { type: 'string', maxLength: CONFIGDRIVE_MAX_CHARS },
        { type: 'null' },
        {
          type: 'object',
          properties: {
            meta_data: { type: 'object' },
            network_data: { type: 'object' },
            user_data: { type: ['object', 'array', 'string', 'null'] },
            vendor_data: { type: 'object' },
          },
          additionalProperties: false,
        },
      ],
    },
  },
  required: ['target'],
  additionalProperties: false,
});

const checkPowerBody = compileSchema<{ target: string; timeout?: number | null }>('power state request', {
  type: 'object',
  properties: { target: { type: 'string' }, timeout: { type: ['integer', 'null'], minimum: 1 } },
  required: ['target'],
  additionalProperties: false,
});

function invalidState(target: string, node: NodeRecord, state: string | null): InvalidStateRequested {
  return new InvalidStateRequested(
    `The requested action "${target}" can not be performed on node "${node.uuid}" while it is in state "${state}".`,
    { node: node.uuid, action: target, state },
  );
}

/** Checks a provision request as Ironic's API does before asking the conductor. */
function checkProvisionRequest(node: NodeRecord, body: ProvisionBody, minor: number): string {
  const { target } = body;
  const since = TARGET_MIN_MINOR[target];
  if (since !== undefined) requireMinor(minor, since);
  const event = PROVISION_TARGETS[target];
  if (event === undefined) {
    throw new InvalidStateRequested(`The requested action "${target}" could not be understood.`, { action: target });
  }
  if ((event === 'deploy' || event === 'rebuild') && node.maintenance) {
    throw new InvalidParameterValue(
      `The provisioning operation can't be performed on node ${node.uuid} because it's in maintenance mode.`,
    );
  }
  if (!findTransition(node.provisionState, event)) {
    // A node busy in another operation is locked: say so (409), as Ironic does, rather than 400.
    if (node.reservation) throw new NodeLocked(node.uuid, node.reservation);
    throw invalidState(target, node, node.provisionState);
  }
  if (event === 'clean' && !body.clean_steps?.length) {
    throw new InvalidParameterValue('"clean_steps" is required when setting target provision state to clean');
  }
  if (body.clean_steps?.length && event !== 'clean') {
    throw new InvalidParameterValue('"clean_steps" is only valid when setting target provision state to clean');
  }
  if (event === 'service' && !body.service_steps?.length) {
    throw new InvalidParameterValue('"service_steps" is required when setting target provision state to service');
  }
  if (body.service_steps?.length && event !== 'service') {
    throw new InvalidParameterValue('"service_steps" is only valid when setting target provision state to service');
  }
  checkDeploySteps(body.deploy_steps, target, minor);
  checkDisableRamdisk(body.disable_ramdisk, target, minor);
  if (event === 'rescue' && !body.rescue_password?.trim()) {
    throw new InvalidParameterValue(
      'A non-empty "rescue_password" is required when setting target provision state to rescue',
    );
  }
  if (body.rescue_password != null && event !== 'rescue') {
    throw new InvalidParameterValue('"rescue_password" is only valid when setting target provision state to rescue');
  }
  checkConfigDrive(body.configdrive, event, minor);
  if (event === 'abort' && node.provisionState === ProvisionState.DEPLOY_WAIT && minor < Minor.DEPLOY_WAIT_ABORT) {
    throw versionTooLow(Minor.DEPLOY_WAIT_ABORT);
  }
  return event;
}

/** deploy_steps come with active or rebuild, from 1.69 (Ironic's check_allow_deploy_steps). */
function checkDeploySteps(steps: ProvisionBody['deploy_steps'], target: string, minor: number): void {
  if (!steps?.length) return;
  requireMinor(minor, Minor.USER_DEPLOY_STEPS);
  if (target !== 'active' && target !== 'rebuild') {
    throw new InvalidParameterValue(
      '"deploy_steps" is only valid when setting target provision state to active or rebuild',
    );
  }
}

/** disable_ramdisk comes with clean (1.70) or service (1.108) (Ironic's check_allow_disable_ramdisk). */
function checkDisableRamdisk(disableRamdisk: ProvisionBody['disable_ramdisk'], target: string, minor: number): void {
  if (disableRamdisk === undefined || disableRamdisk === null) return;
  const since =
    target === 'clean' ? Minor.CLEAN_DISABLE_RAMDISK : target === 'service' ? Minor.SERVICE_DISABLE_RAMDISK : undefined;
  if (since === undefined) {
    throw new InvalidParameterValue('disable_ramdisk is supported only with manual cleaning or servicing');
  }
  if (minor < since) throw new InvalidApiVersion('disable_ramdisk is not acceptable in this API version');
}

/** A config drive only comes with active/rebuild, in a form the version knows (Ironic's checks). */
function checkConfigDrive(configdrive: ProvisionBody['configdrive'], event: string, minor: number): void {
  if (configdrive === undefined || configdrive === null) return;
  if (event !== 'deploy' && event !== 'rebuild') {
    throw new InvalidParameterValue(
      'A configdrive is only valid when setting target provision state to active or rebuild',
    );
  }
  if (event === 'rebuild') requireMinor(minor, CONFIGDRIVE_REBUILD_MINOR);
  if (typeof configdrive === 'string') {
    if (!configdrive.includes('://') && !/^[A-Za-z0-9+/=\s]*$/.test(configdrive)) {
      throw new InvalidParameterValue(
        'The configdrive must be base64 of a gzipped ISO 9660 image, a URL, or an object (meta_data, network_data, user_data, vendor_data)',
      );
    }
    return;
  }
  requireMinor(minor, CONFIGDRIVE_OBJECT_MINOR);
  if (configdrive.vendor_data !== undefined) requireMinor(minor, CONFIGDRIVE_VENDOR_DATA_MINOR);
}

function accepted(deps: RouteDeps, req: Request, res: Response): void {
  res.location(buildUrl(baseUrlOf(req, deps), 'nodes', `${req.params.ident}/states`));
  res.status(202).end();
}

/** /v1/nodes/{id}/states: read both states; change them through the owning conductor. */
export function nodeStatesRouter(deps: RouteDeps): Router {
  const { router, allow } = resourceRouter();

  router.get('/v1/nodes/:ident/states', onlyQuery(), async (req, res) => {
    const node = await deps.nodes.find(req.params.ident as string, req.context.minor);
    res.json(nodeStatesView(node, req.context.minor));
  });

  router.put('/v1/nodes/:ident/states/provision', onlyQuery(), async (req, res) => {
    const minor = req.context.minor;
    const node = await deps.nodes.find(req.params.ident as string, minor);
    const body = checkProvisionBody(req.body);
    const event = checkProvisionRequest(node, body, minor);
    const params = {
      node_id: node.uuid,
      event,
      ...(body.clean_steps ? { clean_steps: body.clean_steps } : {}),
      ...(body.service_steps ? { service_steps: body.service_steps } : {}),
      ...(body.deploy_steps?.length ? { deploy_steps: body.deploy_steps } : {}),
      ...(body.disable_ramdisk ? { disable_ramdisk: true } : {}),
      ...(body.rescue_password ? { rescue_password: body.rescue_password } : {}),
      ...(body.configdrive ? { configdrive: body.configdrive } : {}),
    };
    await deps.conductors.callForNode(node, 'do_provisioning_action', params, { requestId: req.context.requestId });
    req.context.logger.debug('provision action requested', { nodeUuid: node.uuid, target: body.target, event });
    accepted(deps, req, res);
  });

  router.get('/v1/nodes/:ident/validate', onlyQuery(), async (req, res) => {
    const node = await deps.nodes.find(req.params.ident as string, req.context.minor);
    const results = await callNodeConductor(deps, req, node, 'validate_driver_interfaces', {});
    res.json(results);
  });

  router.put('/v1/nodes/:ident/states/power', onlyQuery(), async (req, res) => {
    const minor = req.context.minor;
    const node = await deps.nodes.find(req.params.ident as string, minor);
    const { target, timeout } = checkPowerBody(req.body);
    if (timeout != null && minor < Minor.SOFT_POWER_OFF) throw versionTooLow(Minor.SOFT_POWER_OFF);
    if ((target === PowerState.SOFT_REBOOT || target === PowerState.SOFT_POWER_OFF) && minor < Minor.SOFT_POWER_OFF) {
      throw versionTooLow(Minor.SOFT_POWER_OFF);
    }
    if (!(POWER_TARGETS as readonly string[]).includes(target)) throw invalidState(target, node, node.powerState);
    if (node.provisionState === ProvisionState.CLEANING || node.provisionState === ProvisionState.CLEAN_WAIT) {
      throw invalidState(target, node, node.provisionState);
    }
    await callNodeConductor(deps, req, node, 'change_node_power_state', {
      new_state: target,
      ...(timeout != null ? { timeout } : {}),
    });
    req.context.logger.info('power change requested', { nodeUuid: node.uuid, target });
    accepted(deps, req, res);
  });

  allow('/v1/nodes/:ident/states', ['GET']);
  allow('/v1/nodes/:ident/states/provision', ['PUT']);
  allow('/v1/nodes/:ident/states/power', ['PUT']);
  allow('/v1/nodes/:ident/validate', ['GET']);
  return router;
}
