import { InvalidApiVersion, InvalidParameterValue, ResourceNotFound } from '@bmaas/common';
import type { Request, Response } from 'express';
import {
  MAX_MINOR,
  MAX_VERSION,
  MAX_VERSION_HEADER,
  MIN_VERSION,
  MIN_VERSION_HEADER,
  parseRequestedVersion,
  VERSION_HEADER,
} from '../versions.js';

/** Microversions of the ramdisk endpoints, as upstream. */
export const RamdiskMinor = {
  /** /v1/lookup and /v1/heartbeat exist; below it they answer 404. */
  LOOKUP_HEARTBEAT: 22,
  /** heartbeat accepts agent_version. */
  AGENT_VERSION: 36,
  /** heartbeat accepts agent_verify_ca. */
  AGENT_VERIFY_CA: 68,
  /** heartbeat accepts agent_status and agent_status_message. */
  AGENT_STATUS: 72,
} as const;

/** The minimum and maximum version headers every ramdisk endpoint answers with. */
export function setVersionHeaders(res: Response): void {
  res.setHeader(MIN_VERSION_HEADER, MIN_VERSION);
  res.setHeader(MAX_VERSION_HEADER, MAX_VERSION);
}

/**
 * The microversion of a lookup or heartbeat. These paths skip the general
 * negotiation middleware because agents built for a newer Ironic ask for a
 * version above ours (ironic-python-agent sends the server's maximum it saw,
 * others a fixed 1.8x): a version above the maximum is served as the
 * maximum instead of refused, since nothing an agent uses changed after
 * 1.72. The answer still carries the usual version headers. Below 1.22 the
 * endpoints do not exist (404, as upstream); a header that is not a version
 * is a 400.
 */
export function ramdiskMinor(req: Request, res: Response): number {
  setVersionHeaders(res);
  const requested = parseRequestedVersion(req.get(VERSION_HEADER), req.get('OpenStack-API-Version'));
  if (requested.kind === 'malformed') {
    throw new InvalidParameterValue(`Invalid value for ${VERSION_HEADER} header`);
  }
  if (requested.major !== 1) {
    throw new InvalidApiVersion(
      `Version ${requested.major}.${requested.minor} was requested but the major version is not supported by this service. The supported version range is: [${MIN_VERSION}, ${MAX_VERSION}].`,
    );
  }
  const minor = Math.min(requested.minor, MAX_MINOR);
  res.setHeader(VERSION_HEADER, `1.${minor}`);
  if (minor < RamdiskMinor.LOOKUP_HEARTBEAT) throw new ResourceNotFound();
  return minor;
}
