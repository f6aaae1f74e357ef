import type { SectionValues } from '@bmaas/common';

/** The option this interface adds to the core's [deploy], under Ironic's name. */
export const VMEDIA_DEPLOY_OPTIONS = {
  ramdisk_image_download_source: {
    doc: 'How a prebuilt driver_info/deploy_iso (or rescue_iso) reaches the BMC: "local" = the conductor places it under [deploy]http_root (hard link, copy or download) and inserts its own [deploy]http_url URL; "http" = an http(s) deploy_iso URL is inserted as it is, for the BMC to fetch from its origin. ISOs the conductor builds itself are always served from [deploy]http_root.',
    format: ['local', 'http'],
    default: 'local',
    env: 'BMAAS_DEPLOY__RAMDISK_IMAGE_DOWNLOAD_SOURCE',
  },
  external_http_url: {
    doc: "URL at which BMCs reach [deploy]http_root, for the virtual media ISOs they fetch, when it is not [deploy]http_url (the BMCs' network is not the provisioning network); driver_info.external_http_url overrides it per node. Unset = [deploy]http_url.",
    format: 'optional-url',
    default: null as string | null,
    env: 'BMAAS_DEPLOY__EXTERNAL_HTTP_URL',
  },
} satisfies Record<string, { doc: string; format: unknown; default: unknown; env: string }>;

export type VmediaDeploySettings = SectionValues<typeof VMEDIA_DEPLOY_OPTIONS>;
