import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import express, { type Router } from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enteredByPrefix, pathPrefix, routePrefixes } from './route-prefixes.js';

function routerOf(define: (router: Router) => void): Router {
  const router = express.Router();
  define(router);
  return router;
}

describe('pathPrefix', () => {
  it('is the first two segments, lower-cased, without a trailing slash', () => {
    expect(pathPrefix('/v1/nodes/abc/states/provision')).toBe('/v1/nodes');
    expect(pathPrefix('/V1/Nodes/')).toBe('/v1/nodes');
    expect(pathPrefix('/v1/')).toBe('/v1');
    expect(pathPrefix('/v1')).toBe('/v1');
    expect(pathPrefix('/')).toBe('/');
  });
});

describe('routePrefixes', () => {
  it('names the prefix of every route, arrays of paths included', () => {
    const router = routerOf((r) => {
      r.get('/v1/ports/:ident', () => {});
      r.post(['/v1/ports', '/v1/portgroups/:ident/ports'], () => {});
    });
    expect(routePrefixes(router)).toEqual(new Set(['/v1/ports', '/v1/portgroups']));
  });

  it('gives up on a router of its own middleware, a parameter or a wildcard in the first two segments, or a regexp', () => {
    expect(routePrefixes(routerOf((r) => r.use((_req, _res, next) => next())))).toBeUndefined();
    expect(routePrefixes(routerOf((r) => r.get('/v1/:collection', () => {})))).toBeUndefined();
    expect(routePrefixes(routerOf((r) => r.get('/v1/*rest', () => {})))).toBeUndefined();
    expect(routePrefixes(routerOf((r) => r.get('/v1{/nodes}', () => {})))).toBeUndefined();
    expect(routePrefixes(routerOf((r) => r.get(/^\/v1\/nodes/, () => {})))).toBeUndefined();
  });
});

describe('enteredByPrefix', () => {
  const entered: string[] = [];
  let base: string;
  let close: () => void;

  beforeAll(async () => {
    const app = express();
    const nodes = routerOf((r) => {
      r.get('/v1/nodes/:ident', (req, res) => {
        res.json({ router: 'nodes', ident: req.params.ident });
      });
    });
    const ports = routerOf((r) => {
      r.get('/v1/ports', (_req, res) => {
        res.json({ router: 'ports' });
      });
    });
    // Guards the real routers (their prefixes are what it reads) and counts who gets in.
    const counting = (name: string, router: Router) => {
      const guarded = enteredByPrefix(router);
      // A router runs its routes in its handle method.
      const inner = router as Router & { handle: (...args: unknown[]) => unknown };
      const handle = inner.handle.bind(inner);
      inner.handle = (...args: unknown[]) => {
        entered.push(name);
        return handle(...args);
      };
      return guarded;
    };
    app.use(counting('nodes', nodes));
    app.use(counting('ports', ports));
    app.use((_req, res) => {
      res.status(404).json({ router: null });
    });
    const server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    close = () => server.close();
  });
  afterAll(() => close?.());

  const get = async (path: string) => {
    entered.length = 0;
    const res = await fetch(`${base}${path}`);
    return { status: res.status, body: (await res.json()) as { router: string | null }, entered: [...entered] };
  };

  it('enters only the router whose routes the path is under, and answers as express would', async () => {
    expect(await get('/v1/ports')).toEqual({ status: 200, body: { router: 'ports' }, entered: ['ports'] });
    expect(await get('/v1/nodes/abc')).toEqual({
      status: 200,
      body: { router: 'nodes', ident: 'abc' },
      entered: ['nodes'],
    });
  });

  it('matches as express does: in any case, with or without a trailing slash', async () => {
    expect(await get('/V1/PORTS/')).toEqual({ status: 200, body: { router: 'ports' }, entered: ['ports'] });
  });

  it('passes what no router holds to what follows, entering none', async () => {
    expect(await get('/v1/chassis')).toEqual({ status: 404, body: { router: null }, entered: [] });
    // Under a router's prefix but none of its routes: entered, then passed on as before.
    expect(await get('/v1/nodes')).toEqual({ status: 404, body: { router: null }, entered: ['nodes'] });
  });
});
