import { InvalidApiVersion, InvalidParameterValue } from '@bmaas/common';
import type { RequestHandler } from 'express';
import {
  MAX_MINOR,
  MAX_VERSION_HEADER,
  MIN_MINOR,
  MIN_VERSION,
  MIN_VERSION_HEADER,
  parseRequestedVersion,
  VERSION_HEADER,
} from '../versions.js';

/**
 * Microversion negotiation. Every answer carries the minimum and maximum
 * versions; a supported request also gets the version it is served with.
 * Paths under `unversionedPrefixes` (firmware and ramdisk endpoints, which
 * cannot negotiate) are left alone. `maxMinor` is the highest version
 * answered and advertised (the honest maximum unless a test reaches further).
 */
export function negotiateVersion(unversionedPrefixes: readonly string[], maxMinor = MAX_MINOR): RequestHandler {
  const maxVersion = `1.${maxMinor}`;
  return (req, res, next) => {
    if (unversionedPrefixes.some((prefix) => req.path === prefix || req.path.startsWith(`${prefix}/`))) {
      next();
      return;
    }
    res.setHeader(MIN_VERSION_HEADER, MIN_VERSION);
    res.setHeader(MAX_VERSION_HEADER, maxVersion);
    const requested = parseRequestedVersion(req.get(VERSION_HEADER), req.get('OpenStack-API-Version'), maxMinor);
    if (requested.kind === 'malformed') {
      throw new InvalidParameterValue(`Invalid value for ${VERSION_HEADER} header`);
    }
    if (requested.major !== 1 || requested.minor < MIN_MINOR || requested.minor > maxMinor) {
      throw new InvalidApiVersion(
        `Version ${requested.major}.${requested.minor} was requested but the minor version is not supported by this service. The supported version range is: [${MIN_VERSION}, ${maxVersion}].`,
      );
    }
    req.context.minor = requested.minor;
    res.setHeader(VERSION_HEADER, `1.${requested.minor}`);
    next();
  };
}
