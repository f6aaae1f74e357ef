import { InvalidParameterValue } from '@bmaas/common';
import type { RequestHandler } from 'express';

/** `%00` anywhere in the request target: a NUL in a path parameter or query value once decoded. */
const ENCODED_NUL = /%00/i;

/**
 * Refuses a request whose path or query would decode to a NUL character
 * (PostgreSQL cannot store or compare one): one check for every route
 * rather than one per parameter. Node's HTTP parser already refuses raw NULs.
 */
export const refuseNulInUrl: RequestHandler = (req, _res, next) => {
  if (ENCODED_NUL.test(req.url))
    throw new InvalidParameterValue('The request path and query must not contain NUL characters.');
  next();
};
