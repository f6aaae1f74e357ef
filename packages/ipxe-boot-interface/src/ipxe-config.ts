import type { BmaasConfig, SectionValues } from '@bmaas/common';
import type { InterfaceDeps } from '@bmaas/driver-api';

/** The `[pxe]` section, owned by this interface (names as in Ironic's ironic.conf). */
export const PXE_OPTIONS = {
  ipxe_use_boot_config_api: {
    doc: 'When true, the root boot.ipxe links to the boot configuration API (/v1/boot/<MAC>/boot.ipxe) instead of pxelinux.cfg/ files on this HTTP server.',
    format: Boolean,
    default: false,
    env: 'BMAAS_PXE__IPXE_USE_BOOT_CONFIG_API',
  },
  ipxe_config_api_root_url: {
    doc: 'Root URL used in those links (e.g. a plain-HTTP proxy in front of a TLS API); unset = [api]public_endpoint.',
    format: 'optional-url',
    default: null as string | null,
    env: 'BMAAS_PXE__IPXE_CONFIG_API_ROOT_URL',
  },
  ipxe_timeout: {
    doc: "Seconds iPXE waits for an HTTP download before retrying; 0 = iPXE's default.",
    format: 'nat',
    default: 0,
    env: 'BMAAS_PXE__IPXE_TIMEOUT',
  },
  kernel_append_params: {
    doc: 'Extra kernel command-line parameters of the deploy ramdisk.',
    format: String,
    default: 'nofb vga=normal',
    env: 'BMAAS_PXE__KERNEL_APPEND_PARAMS',
  },
  pxe_config_subdir: {
    doc: 'Directory under http_root holding the per-MAC links.',
    format: String,
    default: 'pxelinux.cfg',
    env: 'BMAAS_PXE__PXE_CONFIG_SUBDIR',
  },
  ipxe_fallback_script: {
    doc: 'Script chained by boot.ipxe when no NIC matched (e.g. inspector.ipxe); unset = print a message and reboot.',
    format: 'optional-string',
    default: null as string | null,
    env: 'BMAAS_PXE__IPXE_FALLBACK_SCRIPT',
  },
  boot_retry_attempts: {
    doc: 'Times the node script retries a failed kernel/initrd download before giving up.',
    format: 'nat',
    default: 5,
    env: 'BMAAS_PXE__BOOT_RETRY_ATTEMPTS',
  },
} satisfies Record<string, { doc: string; format: unknown; default: unknown; env: string }>;

export type PxeSettings = SectionValues<typeof PXE_OPTIONS>;

/** What the iPXE renderers read: its own [pxe] and the conductor facts it is given. */
export interface IpxeConfig {
  pxe: PxeSettings;
  deploy: Pick<
    BmaasConfig['deploy'],
    'http_root' | 'http_url' | 'boot_config_cache_bytes' | 'boot_config_cache_check_interval'
  >;
  api: Pick<BmaasConfig['api'], 'public_endpoint'>;
  /** Where an inspection ramdisk posts its inventory ([inspector]callback_endpoint_override or the API). */
  inspectionCallbackEndpoint?: string | null;
}

export function ipxeConfigOf(deps: InterfaceDeps<PxeSettings>): IpxeConfig {
  return {
    pxe: deps.settings,
    deploy: deps.deploy,
    api: { public_endpoint: deps.apiPublicEndpoint },
    inspectionCallbackEndpoint: deps.inspectionCallbackEndpoint,
  };
}
