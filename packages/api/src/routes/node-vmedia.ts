import { InvalidParameterValue, VMEDIA_DEVICES } from '@bmaas/common';
import type { Router } from 'express';
import { requireResourceMinor } from '../errors.js';
import { onlyQuery } from '../list-query.js';
import { callNodeConductor, type RouteDeps, resourceRouter } from '../route-deps.js';
import { compileSchema } from '../validation.js';
import { Minor } from '../versions.js';

/** URL schemes a BMC can fetch a virtual medium from (Ironic's VMEDIA_SUPPORTED_URL_SCHEMES). */
const VMEDIA_URL_SCHEMES: readonly string[] = ['http', 'https', 'nfs', 'cifs', 'smb'];

interface VmediaAttachBody {
  device_type: string;
  image_url: string;
  image_download_source?: string;
}
const checkAttachBody = compileSchema<VmediaAttachBody>('virtual media attachment', {
  type: 'object',
  properties: {
    device_type: { type: 'string', enum: [...VMEDIA_DEVICES] },
    image_url: { type: 'string' },
    image_download_source: { type: 'string', enum: ['http', 'local', 'swift'] },
  },
  required: ['device_type', 'image_url'],
  additionalProperties: false,
});

/** The scheme of `url` as urlparse reads it: letters before the first ':', else none. */
function schemeOf(url: string): string {
  return /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(url)?.[1]?.toLowerCase() ?? '';
}

/** `?device_types=cdrom,floppy`: a comma-separated list of virtual media devices. */
function deviceTypesOf(query: unknown): string[] | undefined {
  if (query === undefined) return undefined;
  const items = (Array.isArray(query) ? query : [query])
    .flatMap((item) => String(item).split(','))
    .map((item) => item.trim())
    .filter((item) => item !== '');
  const invalid = items.filter((item) => !(VMEDIA_DEVICES as readonly string[]).includes(item));
  if (invalid.length > 0) {
    throw new InvalidParameterValue(
      `Invalid device type(s) ${invalid.join(', ')} (valid are ${VMEDIA_DEVICES.join(', ')})`,
    );
  }
  return items.length > 0 ? items : undefined;
}

/**
 * /v1/nodes/{id}/vmedia: virtual media of a node, attached (1.89), detached
 * (1.89) and listed (1.93) by the owning conductor's management interface.
 * Older requests see no such resource (404), as in Ironic.
 */
export function nodeVmediaRouter(deps: RouteDeps): Router {
  const { router, allow } = resourceRouter();
  const path = '/v1/nodes/:ident/vmedia';

  router.get(path, onlyQuery(), async (req, res) => {
    requireResourceMinor(req.context.minor, Minor.VMEDIA_LIST);
    const node = await deps.nodes.find(req.params.ident as string, req.context.minor);
    res.json(await callNodeConductor(deps, req, node, 'get_virtual_media', {}));
  });

  router.post(path, onlyQuery(), async (req, res) => {
    requireResourceMinor(req.context.minor, Minor.VMEDIA_ATTACH);
    const body = checkAttachBody(req.body);
    const scheme = schemeOf(body.image_url);
    if (!VMEDIA_URL_SCHEMES.includes(scheme)) {
      throw new InvalidParameterValue(`Unsupported or missing URL scheme: ${scheme}`);
    }
    const node = await deps.nodes.find(req.params.ident as string, req.context.minor);
    await callNodeConductor(deps, req, node, 'attach_virtual_media', {
      device_type: body.device_type,
      image_url: body.image_url,
      image_download_source: body.image_download_source ?? 'local',
    });
    req.context.logger.info('virtual media attachment requested', { nodeUuid: node.uuid, device: body.device_type });
    res.status(204).end();
  });

  router.delete(path, onlyQuery('device_types'), async (req, res) => {
    requireResourceMinor(req.context.minor, Minor.VMEDIA_ATTACH);
    const deviceTypes = deviceTypesOf(req.query.device_types);
    const node = await deps.nodes.find(req.params.ident as string, req.context.minor);
    await callNodeConductor(deps, req, node, 'detach_virtual_media', {
      ...(deviceTypes ? { device_types: deviceTypes } : {}),
    });
    req.context.logger.info('virtual media detachment requested', { nodeUuid: node.uuid, devices: deviceTypes });
    res.status(204).end();
  });

  allow(path, ['GET', 'POST', 'DELETE']);
  return router;
}
