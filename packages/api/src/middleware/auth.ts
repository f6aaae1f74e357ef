import { type HtpasswdUsers, NotAuthorized, parseBasicAuthorization } from '@bmaas/common';
import type { RequestHandler } from 'express';

/** Paths anyone may read: version discovery, and what firmware and ramdisks call. */
const PUBLIC_EXACT = new Set(['/', '/v1', '/v1/']);
const PUBLIC_PREFIXES = ['/v1/lookup', '/v1/heartbeat/', '/v1/boot/', '/v1/continue_inspection'];

export function isPublicPath(path: string): boolean {
  return PUBLIC_EXACT.has(path) || PUBLIC_PREFIXES.some((prefix) => path.startsWith(prefix));
}

/**
 * HTTP basic authentication of every request against an htpasswd file: a
 * caller without valid credentials gets 401 with a Basic challenge (so a
 * browser asks for them).
 */
export function requireBasicAuth(users: HtpasswdUsers): RequestHandler {
  return async (req, res, next) => {
    const credentials = parseBasicAuthorization(req.get('Authorization'));
    if (credentials && (await users.verify(credentials.user, credentials.password))) {
      next();
      return;
    }
    res.setHeader('WWW-Authenticate', 'Basic realm="Baremetal API"');
    throw new NotAuthorized(credentials ? 'Incorrect username or password' : 'Authorization required');
  };
}

/**
 * HTTP basic authentication ([DEFAULT]auth_strategy = http_basic) of every
 * path but the public ones. With noauth no middleware is installed and
 * X-Auth-Token is ignored.
 */
export function httpBasicAuth(users: HtpasswdUsers): RequestHandler {
  const authenticate = requireBasicAuth(users);
  return (req, res, next) => {
    if (isPublicPath(req.path)) {
      next();
      return;
    }
    return authenticate(req, res, next);
  };
}
