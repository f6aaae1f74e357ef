import type { SectionValues } from '@bmaas/common';
import type { BootFileSettings } from '@bmaas/driver-api';

/**
 * The options of `[deploy]` only the `direct` deploy interface reads (the
 * agent's erase clean steps), added to the core's `[deploy]` under Ironic's
 * names and environment variables.
 */
export const DIRECT_DEPLOY_OPTIONS = {
  erase_devices_priority: {
    doc: "Priority of the agent's erase_devices clean step in automated cleaning (0 = skip); unset = the agent's own.",
    format: 'optional-nat',
    default: 0 as number | null,
    env: 'BMAAS_DEPLOY__ERASE_DEVICES_PRIORITY',
  },
  erase_devices_metadata_priority: {
    doc: "Priority of the agent's erase_devices_metadata clean step (0 = skip); unset = the agent's own (99).",
    format: 'optional-nat',
    default: null as number | null,
    env: 'BMAAS_DEPLOY__ERASE_DEVICES_METADATA_PRIORITY',
  },
} satisfies Record<string, { doc: string; format: unknown; default: unknown; env: string }>;

/** The `[deploy]` values the interface reads: its own options, and the core's http_root and http_url (local images). */
export type DirectDeploySettings = SectionValues<typeof DIRECT_DEPLOY_OPTIONS> &
  Pick<BootFileSettings, 'http_root' | 'http_url'>;
