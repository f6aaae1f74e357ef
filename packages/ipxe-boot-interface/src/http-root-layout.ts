import { isAbsolute, join, normalize, relative, resolve, sep } from 'node:path';
import { type BmaasConfig, ConfigError, InvalidUUID, macToHyphens, parseMac } from '@bmaas/common';

/** The images a node directory may hold, named as iPXE fetches them. */
export const BOOT_IMAGE_NAMES = ['deploy_kernel', 'deploy_ramdisk', 'rescue_kernel', 'rescue_ramdisk'] as const;
export type BootImageName = (typeof BOOT_IMAGE_NAMES)[number];

/** File name of the root script, the same for every machine. */
export const ROOT_SCRIPT_NAME = 'boot.ipxe';
/** File name of a node's own script inside its directory. */
export const NODE_SCRIPT_NAME = 'config';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Where the iPXE files live under [deploy]http_root:
 *
 *   <root>/boot.ipxe                      root script (every machine)
 *   <root>/<uuid>/config                  the node's script
 *   <root>/<uuid>/deploy_kernel, …        the node's images
 *   <root>/<pxe_config_subdir>/<mac>      relative link to ../<uuid>/config
 *
 * Every path is built from a checked uuid or MAC, never from request input.
 */
export class HttpRootLayout {
  readonly root: string;
  /** Directory of the per-MAC links, relative to root (normalised, inside it). */
  readonly pxeConfigSubdir: string;

  constructor(root: string, pxeConfigSubdir: string) {
    const subdir = normalize(pxeConfigSubdir).replace(/[/\\]+$/, '');
    if (isAbsolute(pxeConfigSubdir) || subdir === '.' || subdir === '' || subdir.split(sep).includes('..')) {
      throw new ConfigError(
        `[pxe]pxe_config_subdir = ${JSON.stringify(pxeConfigSubdir)}: must be a directory inside [deploy]http_root`,
      );
    }
    this.root = resolve(root);
    this.pxeConfigSubdir = subdir;
  }

  static fromConfig(config: Pick<BmaasConfig, 'deploy' | 'pxe'>): HttpRootLayout {
    return new HttpRootLayout(config.deploy.http_root, config.pxe.pxe_config_subdir);
  }

  get rootScript(): string {
    return join(this.root, ROOT_SCRIPT_NAME);
  }

  get pxeConfigDir(): string {
    return join(this.root, this.pxeConfigSubdir);
  }

  nodeDir(nodeUuid: string): string {
    if (!UUID.test(nodeUuid)) throw new InvalidUUID(nodeUuid);
    return join(this.root, nodeUuid.toLowerCase());
  }

  nodeScript(nodeUuid: string): string {
    return join(this.nodeDir(nodeUuid), NODE_SCRIPT_NAME);
  }

  nodeImage(nodeUuid: string, image: BootImageName): string {
    return join(this.nodeDir(nodeUuid), image);
  }

  /** `<root>/<subdir>/52-54-00-12-34-56` for any accepted MAC form. */
  macLink(mac: string): string {
    return join(this.pxeConfigDir, macToHyphens(parseMac(mac)));
  }

  /** What a MAC link of the node points at: the node script, relative to the link's directory. */
  macLinkTarget(nodeUuid: string): string {
    return relative(this.pxeConfigDir, this.nodeScript(nodeUuid));
  }
}
