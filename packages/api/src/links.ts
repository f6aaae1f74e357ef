import type { Request } from 'express';

export interface Link {
  href: string;
  rel: string;
}

/** Base URL of links: [api]public_endpoint, else the scheme and host the client used. */
export function publicUrl(req: Request, configured: string | null): string {
  if (configured) return configured.replace(/\/+$/, '');
  return `${req.protocol}://${req.get('host') ?? 'localhost'}`;
}

/** `<base>/v1/<resource>/<args>` (or without /v1 for a bookmark), as Ironic builds links. */
export function buildUrl(base: string, resource: string, args: string, bookmark = false): string {
  const prefix = bookmark ? `${base}/${resource}` : `${base}/v1/${resource}`;
  return args.startsWith('?') ? `${prefix}${args}` : `${prefix}/${args}`;
}

/** The usual pair: a versioned self link and a bookmark. */
export function selfAndBookmark(base: string, resource: string, args: string): Link[] {
  return [
    { href: buildUrl(base, resource, args), rel: 'self' },
    { href: buildUrl(base, resource, args, true), rel: 'bookmark' },
  ];
}
