import type { RequestHandler, Router } from 'express';

/**
 * The path's first two segments, lower-cased, without a trailing slash:
 * `/V1/Nodes/abc/states` → `/v1/nodes`. Routes match case-insensitively and
 * with or without a trailing slash (express's defaults), and so does this.
 */
export function pathPrefix(path: string): string {
  const [, first = '', second] = path.toLowerCase().split('/', 3);
  return second === undefined || second === '' ? `/${first}` : `/${first}/${second}`;
}

/** Literal prefixes: a parameter, wildcard or group in the first two segments makes a route's prefix unknown. */
const NOT_LITERAL = /[:*(){}?+\\]/;

/**
 * The prefixes (pathPrefix) of every route of `router`, or undefined when
 * some request could reach the router without one of them: a middleware of
 * its own (`router.use`), a route path that is not a string, or one whose
 * first two segments are not literal.
 */
export function routePrefixes(router: Router): Set<string> | undefined {
  const prefixes = new Set<string>();
  for (const layer of router.stack as Array<{ route?: { path: unknown } }>) {
    const paths = layer.route ? [layer.route.path].flat() : [undefined];
    for (const path of paths) {
      if (typeof path !== 'string' || !path.startsWith('/')) return undefined;
      const prefix = pathPrefix(path);
      if (NOT_LITERAL.test(prefix)) return undefined;
      prefixes.add(prefix);
    }
  }
  return prefixes;
}

/**
 * `router`, entered only by requests under one of its routes' prefixes.
 * express offers a request to every router mounted at `/` in turn, and each
 * tries its every route on it: POST /v1/ports went past every route of the
 * node routers before the ports one, a measurable part of the API's CPU per
 * request (docs/performance.md). Here a router the request cannot match
 * costs one set lookup. A router whose prefixes are not all known is always
 * entered.
 */
export function enteredByPrefix(router: Router): RequestHandler {
  const prefixes = routePrefixes(router);
  if (prefixes === undefined) return router;
  return (req, res, next) => {
    if (prefixes.has(pathPrefix(req.path))) {
      router(req, res, next);
      return;
    }
    next();
  };
}
