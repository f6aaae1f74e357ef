import type { Request, Router } from 'express';
import { type Link, selfAndBookmark } from '../links.js';
import { baseUrlOf, type RouteDeps, resourceRouter } from '../route-deps.js';
import { MAX_VERSION, MIN_VERSION, Minor } from '../versions.js';

function defaultVersion(baseUrl: string): Record<string, unknown> {
  return {
    id: 'v1',
    links: [{ href: `${baseUrl}/v1/`, rel: 'self' }],
    status: 'CURRENT',
    min_version: MIN_VERSION,
    version: MAX_VERSION,
  };
}

function resourceLinks(baseUrl: string, resource: string): Link[] {
  return selfAndBookmark(baseUrl, resource, '');
}

/** `GET /` (the versions document) and `GET /v1` (the resources of v1). */
export function rootRouter(deps: RouteDeps): Router {
  const { router, allow } = resourceRouter();

  router.get('/', (req, res) => {
    const baseUrl = baseUrlOf(req, deps);
    res.json({
      name: 'OpenStack Ironic API',
      description: 'Ironic is an OpenStack project which enables the provision and management of baremetal machines.',
      default_version: defaultVersion(baseUrl),
      versions: [defaultVersion(baseUrl)],
    });
  });

  router.get('/v1', (req: Request, res) => {
    const baseUrl = baseUrlOf(req, deps);
    const body: Record<string, unknown> = {
      id: 'v1',
      links: [
        { href: `${baseUrl}/v1/`, rel: 'self' },
        {
          href: 'https://docs.openstack.org/ironic/latest/contributor/webapi.html',
          rel: 'describedby',
          type: 'text/html',
        },
      ],
      media_types: { base: 'application/json', type: 'application/vnd.openstack.ironic.v1+json' },
      chassis: resourceLinks(baseUrl, 'chassis'),
      nodes: resourceLinks(baseUrl, 'nodes'),
      ports: resourceLinks(baseUrl, 'ports'),
      drivers: resourceLinks(baseUrl, 'drivers'),
      version: defaultVersion(baseUrl),
    };
    if (req.context.minor >= Minor.CONDUCTORS) body.conductors = resourceLinks(baseUrl, 'conductors');
    const versioned: Array<[string, number]> = [
      ['portgroups', Minor.PORTGROUPS],
      ['volume', Minor.VOLUME],
      ['allocations', Minor.ALLOCATION],
      ['deploy_templates', Minor.DEPLOY_TEMPLATES],
      ['runbooks', Minor.RUNBOOKS],
      ['inspection_rules', Minor.INSPECTION_RULES],
    ];
    for (const [name, since] of versioned) if (req.context.minor >= since) body[name] = resourceLinks(baseUrl, name);
    res.json(body);
  });

  allow('/', ['GET']);
  allow('/v1', ['GET']);
  return router;
}
