import { InvalidApiVersion, InvalidParameterValue } from '@bmaas/common';
import type { RequestHandler } from 'express';
import {
  isSupported,
  MAX_VERSION,
  MAX_VERSION_HEADER,
  MIN_VERSION,
  MIN_VERSION_HEADER,
  parseRequestedVersion,
  VERSION_HEADER,
} from '../versions.js';

/**
 * Microversion negotiation. Every answer carries the minimum and maximum
 * versions; a supported request also gets the version it is served with.
 * Paths under `unversionedPrefixes` (firmware and ramdisk endpoints, which
 * cannot negotiate) are left alone.
 */
export function negotiateVersion(unversionedPrefixes: readonly string[]): RequestHandler {
  return (req, res, next) => {
    if (unversionedPrefixes.some((prefix) => req.path === prefix || req.path.startsWith(`${prefix}/`))) {
      next();
      return;
    }
    res.setHeader(MIN_VERSION_HEADER, MIN_VERSION);
    res.setHeader(MAX_VERSION_HEADER, MAX_VERSION);
    const requested = parseRequestedVersion(req.get(VERSION_HEADER), req.get('OpenStack-API-Version'));
    if (requested.kind === 'malformed') {
      throw new InvalidParameterValue(`Invalid value for ${VERSION_HEADER} header`);
    }
    if (!isSupported(requested)) {
      throw new InvalidApiVersion(
        `Version ${requested.major}.${requested.minor} was requested but the minor version is not supported by this service. The supported version range is: [${MIN_VERSION}, ${MAX_VERSION}].`,
      );
    }
    req.context.minor = requested.minor;
    res.setHeader(VERSION_HEADER, `1.${requested.minor}`);
    next();
  };
}
