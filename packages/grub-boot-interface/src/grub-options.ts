import type { SectionValues } from '@bmaas/common';

/** The `[grub]` section, owned by this interface. */
export const GRUB_OPTIONS = {
  kernel_append_params: {
    doc: "Kernel command-line parameters of the ramdisks GRUB boots, when driver_info.kernel_append_params is unset; unset = [pxe]kernel_append_params, as Ironic's per-interface options fall back to [pxe].",
    format: 'optional-string',
    default: null as string | null,
    env: 'BMAAS_GRUB__KERNEL_APPEND_PARAMS',
  },
} satisfies Record<string, { doc: string; format: unknown; default: unknown; env: string }>;

export type GrubSettings = SectionValues<typeof GRUB_OPTIONS>;
