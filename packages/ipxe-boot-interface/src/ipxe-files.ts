import type { HttpRootLayout } from '@bmaas/http-root';

/** File name of the root script, the same for every machine. */
export const ROOT_SCRIPT_NAME = 'boot.ipxe';
/** File name of a node's own script inside its directory. */
export const NODE_SCRIPT_NAME = 'config';

/**
 * Where iPXE's files live in the HTTP root (see @bmaas/http-root):
 *
 *   <root>/boot.ipxe                      root script (every machine)
 *   <root>/<uuid>/config                  the node's script
 *   <root>/<uuid>/deploy_kernel, …        the node's images
 *   <root>/<pxe_config_subdir>/<mac>      relative link to ../<uuid>/config
 */
export class IpxeFiles {
  /** Directory of the per-MAC links ([pxe]pxe_config_subdir, inside the root). */
  readonly pxeConfigDir: string;

  constructor(
    readonly layout: HttpRootLayout,
    pxeConfigSubdir: string,
  ) {
    this.pxeConfigDir = layout.subdir(pxeConfigSubdir, '[pxe]pxe_config_subdir');
  }

  get rootScript(): string {
    return this.layout.file(ROOT_SCRIPT_NAME);
  }

  nodeScript(nodeUuid: string): string {
    return this.layout.nodeFile(nodeUuid, NODE_SCRIPT_NAME);
  }

  /** `<root>/<subdir>/52-54-00-12-34-56` for any accepted MAC form. */
  macLink(mac: string): string {
    return this.layout.macFile(this.pxeConfigDir, mac);
  }

  /** What a MAC link of the node points at: the node script, relative to the link's directory. */
  macLinkTarget(nodeUuid: string): string {
    return this.layout.relativeFrom(this.pxeConfigDir, this.nodeScript(nodeUuid));
  }
}
