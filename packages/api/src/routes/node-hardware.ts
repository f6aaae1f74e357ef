import { InvalidParameterValue, ResourceNotFound } from '@bmaas/common';
import type { Request, Response, Router } from 'express';
import { requireMinor, requireResourceMinor } from '../errors.js';
import { buildUrl } from '../links.js';
import { commaList, onlyQuery, optionalBoolean, queryString } from '../list-query.js';
import { baseUrlOf, callNodeConductor, queryOf, type RouteDeps, resourceRouter } from '../route-deps.js';
import { compileSchema, isUuid } from '../validation.js';
import { Minor } from '../versions.js';
import { pickFields } from '../views/format.js';
import { biosSettingView, firmwareComponentView } from '../views/hardware-settings-view.js';

interface VifBody {
  id: string;
  port_uuid?: string;
  portgroup_uuid?: string;
  [key: string]: unknown;
}

const checkVifBody = compileSchema<VifBody>('vif', {
  type: 'object',
  properties: {
    id: { type: 'string', minLength: 1, maxLength: 255 },
    port_uuid: { type: 'string' },
    portgroup_uuid: { type: 'string' },
  },
  required: ['id'],
});
const checkBootModeBody = compileSchema<{ target: 'bios' | 'uefi' }>('boot mode', {
  type: 'object',
  properties: { target: { type: 'string', enum: ['bios', 'uefi'] } },
  required: ['target'],
  additionalProperties: false,
});
const checkSecureBootBody = compileSchema<{ target: boolean }>('secure boot', {
  type: 'object',
  properties: { target: { type: 'boolean' } },
  required: ['target'],
  additionalProperties: false,
});
const checkConsoleBody = compileSchema<{ enabled: boolean | string }>('console', {
  type: 'object',
  properties: { enabled: { anyOf: [{ type: 'boolean' }, { type: 'string', format: 'boolean-word' }] } },
  required: ['enabled'],
  additionalProperties: false,
});
const checkRaidBody = compileSchema<Record<string, unknown>>('RAID config', { type: 'object' });

/** 202 with the node's states as Location, as Ironic answers asynchronous state changes. */
function acceptedStates(deps: RouteDeps, req: Request, res: Response): void {
  res.location(buildUrl(baseUrlOf(req, deps), 'nodes', `${req.params.ident}/states`));
  res.status(202).end();
}

/**
 * Node sub-resources answered by the node's own interfaces through the
 * owning conductor (vifs, RAID, boot mode, secure boot, console, vendor
 * passthru), and the BIOS settings and firmware components the conductor
 * caches (the bios and firmware interfaces report them; the API reads the cache).
 */
export function nodeHardwareRouter(deps: RouteDeps): Router {
  const { router, allow } = resourceRouter();
  const find = (req: Request) => deps.nodes.find(req.params.ident as string, req.context.minor);

  // VIFs (1.28; port_uuid and portgroup_uuid 1.67).
  router.get('/v1/nodes/:ident/vifs', onlyQuery(), async (req, res) => {
    requireResourceMinor(req.context.minor, Minor.VIFS);
    const node = await find(req);
    const vifs = await callNodeConductor(deps, req, node, 'vif_list', {});
    res.json({ vifs: vifs.map((vif) => ({ id: vif.id })) });
  });
  router.post('/v1/nodes/:ident/vifs', onlyQuery(), async (req, res) => {
    requireResourceMinor(req.context.minor, Minor.VIFS);
    const node = await find(req);
    const vif = checkVifBody(req.body);
    for (const field of ['port_uuid', 'portgroup_uuid'] as const) {
      const value = vif[field];
      if (value === undefined) continue;
      requireMinor(req.context.minor, Minor.VIF_PORT_UUID);
      if (!isUuid(value)) throw new InvalidParameterValue(`Expected UUID for ${field}: ${value}`);
    }
    if (vif.port_uuid && vif.portgroup_uuid) {
      throw new InvalidParameterValue('Cannot specify both port_uuid and portgroup_uuid');
    }
    await callNodeConductor(deps, req, node, 'vif_attach', { vif_info: vif });
    req.context.logger.info('vif attached', { nodeUuid: node.uuid, vif: vif.id });
    res.status(204).end();
  });
  router.delete('/v1/nodes/:ident/vifs/:vif', onlyQuery(), async (req, res) => {
    requireResourceMinor(req.context.minor, Minor.VIFS);
    const node = await find(req);
    await callNodeConductor(deps, req, node, 'vif_detach', { vif_id: req.params.vif as string });
    req.context.logger.info('vif detached', { nodeUuid: node.uuid, vif: req.params.vif });
    res.status(204).end();
  });

  // Target RAID configuration (1.12).
  router.put('/v1/nodes/:ident/states/raid', onlyQuery(), async (req, res) => {
    requireMinor(req.context.minor, Minor.RAID_CONFIG);
    const node = await find(req);
    const config = checkRaidBody(req.body);
    await callNodeConductor(deps, req, node, 'set_target_raid_config', { target_raid_config: config });
    req.context.logger.info('target RAID config set', { nodeUuid: node.uuid });
    res.status(204).end();
  });

  // Boot mode and secure boot (1.76).
  router.put('/v1/nodes/:ident/states/boot_mode', onlyQuery(), async (req, res) => {
    requireMinor(req.context.minor, Minor.BOOT_MODE_CHANGE);
    const node = await find(req);
    const { target } = checkBootModeBody(req.body);
    await callNodeConductor(deps, req, node, 'set_boot_mode', { mode: target });
    acceptedStates(deps, req, res);
  });
  router.put('/v1/nodes/:ident/states/secure_boot', onlyQuery(), async (req, res) => {
    requireMinor(req.context.minor, Minor.BOOT_MODE_CHANGE);
    const node = await find(req);
    const { target } = checkSecureBootBody(req.body);
    await callNodeConductor(deps, req, node, 'set_secure_boot_state', { state: target });
    acceptedStates(deps, req, res);
  });

  // Console.
  router.get('/v1/nodes/:ident/states/console', onlyQuery(), async (req, res) => {
    const node = await find(req);
    res.json(await callNodeConductor(deps, req, node, 'get_console_information', {}));
  });
  router.put('/v1/nodes/:ident/states/console', onlyQuery(), async (req, res) => {
    const node = await find(req);
    const { enabled } = checkConsoleBody(req.body);
    const on = enabled === true || (typeof enabled === 'string' && /^(1|t|true|on|y|yes)$/i.test(enabled));
    await callNodeConductor(deps, req, node, 'set_console_mode', { enabled: on });
    acceptedStates(deps, req, res);
  });

  // Vendor passthru: any HTTP method, ?method= names the vendor method.
  router.get('/v1/nodes/:ident/vendor_passthru/methods', onlyQuery(), async (req, res) => {
    const node = await find(req);
    res.json(await callNodeConductor(deps, req, node, 'get_node_vendor_passthru_methods', {}));
  });
  // The method in the path (what ironicclient sends) or in ?method=.
  const passthru = async (req: Request, res: Response) => {
    const node = await find(req);
    const method = (req.params.method as string | undefined) ?? queryString(queryOf(req), 'method');
    if (!method) throw new InvalidParameterValue('Method not specified');
    const body = req.body === undefined || req.body === null ? {} : req.body;
    if (typeof body !== 'object' || Array.isArray(body))
      throw new InvalidParameterValue('Expected a JSON object body.');
    const result = await callNodeConductor(deps, req, node, 'vendor_passthru', {
      driver_method: method,
      http_method: req.method,
      info: body as Record<string, unknown>,
    });
    res.status(result.async ? 202 : 200).json(result.return ?? null);
  };
  router.all('/v1/nodes/:ident/vendor_passthru', onlyQuery('method'), passthru);
  router.all('/v1/nodes/:ident/vendor_passthru/:method', onlyQuery(), passthru);

  // BIOS settings (1.40; ?detail and ?fields 1.74) and firmware components (1.86): what the conductor cached.
  router.get('/v1/nodes/:ident/bios', onlyQuery('detail', 'fields'), async (req, res) => {
    requireResourceMinor(req.context.minor, Minor.BIOS_INTERFACE);
    const query = queryOf(req);
    const detail = optionalBoolean(query, 'detail');
    const fields = queryString(query, 'fields');
    if (detail !== undefined || fields !== undefined) requireMinor(req.context.minor, Minor.BIOS_REGISTRY);
    if (detail && fields !== undefined) {
      throw new InvalidParameterValue('Can not specify ?detail=True and fields in the same request.');
    }
    const node = await find(req);
    const base = baseUrlOf(req, deps);
    const wanted = fields === undefined ? undefined : commaList(fields);
    const settings = await deps.stores.hardwareSettings.listBiosSettings(node.id);
    res.json({
      bios: settings.map((s) => pickFields(biosSettingView(s, node.uuid, base, detail === true || !!wanted), wanted)),
    });
  });
  router.get('/v1/nodes/:ident/bios/:setting', onlyQuery(), async (req, res) => {
    requireResourceMinor(req.context.minor, Minor.BIOS_INTERFACE);
    const node = await find(req);
    const name = req.params.setting as string;
    const setting = await deps.stores.hardwareSettings.getBiosSetting(node.id, name);
    if (!setting) throw new ResourceNotFound(`Node ${node.uuid} doesn't have a BIOS setting '${name}'`);
    const detail = req.context.minor >= Minor.BIOS_REGISTRY;
    res.json({ [name]: biosSettingView(setting, node.uuid, baseUrlOf(req, deps), detail) });
  });
  router.get('/v1/nodes/:ident/firmware', onlyQuery(), async (req, res) => {
    requireResourceMinor(req.context.minor, Minor.FIRMWARE_INTERFACE);
    const node = await find(req);
    const components = await deps.stores.hardwareSettings.listFirmwareComponents(node.id);
    res.json({ firmware: components.map((c) => firmwareComponentView(c, req.context.minor)) });
  });

  allow('/v1/nodes/:ident/vifs', ['GET', 'POST']);
  allow('/v1/nodes/:ident/vifs/:vif', ['DELETE']);
  allow('/v1/nodes/:ident/states/raid', ['PUT']);
  allow('/v1/nodes/:ident/states/boot_mode', ['PUT']);
  allow('/v1/nodes/:ident/states/secure_boot', ['PUT']);
  allow('/v1/nodes/:ident/states/console', ['GET', 'PUT']);
  allow('/v1/nodes/:ident/vendor_passthru/methods', ['GET']);
  allow('/v1/nodes/:ident/bios', ['GET']);
  allow('/v1/nodes/:ident/bios/:setting', ['GET']);
  allow('/v1/nodes/:ident/firmware', ['GET']);
  return router;
}
