import type { SectionValues } from '@bmaas/common';

/** The option this interface adds to the core's [deploy], under Ironic's name. */
export const VMEDIA_DEPLOY_OPTIONS = {
  ramdisk_image_download_source: {
    doc: 'How a prebuilt driver_info/deploy_iso (or rescue_iso) reaches the BMC: "local" = the conductor places it under [deploy]http_root (hard link, copy or download) and inserts its own [deploy]http_url URL; "http" = an http(s) deploy_iso URL is inserted as it is, for the BMC to fetch from its origin. ISOs the conductor builds itself are always served from [deploy]http_root.',
    format: ['local', 'http'],
    default: 'local',
    env: 'BMAAS_DEPLOY__RAMDISK_IMAGE_DOWNLOAD_SOURCE',
  },
} satisfies Record<string, { doc: string; format: unknown; default: unknown; env: string }>;

export type VmediaDeploySettings = SectionValues<typeof VMEDIA_DEPLOY_OPTIONS>;
