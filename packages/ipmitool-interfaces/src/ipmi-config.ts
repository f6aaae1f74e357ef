import type { SectionValues } from '@bmaas/common';

/** The `[ipmi]` section, owned by the ipmitool power and management interfaces (names as in Ironic). */
export const IPMI_OPTIONS = {
  command_retry_timeout: {
    doc: 'Seconds an IPMI operation may take, retries of retryable BMC errors (busy, out of sessions, timeout) included; an ipmitool still running then is killed.',
    format: 'positive-number',
    default: 60,
    env: 'BMAAS_IPMI__COMMAND_RETRY_TIMEOUT',
  },
  min_command_interval: {
    doc: 'Seconds between two ipmitool commands sent to the same BMC (commands to one BMC also never overlap). Some BMCs crash when driven faster.',
    format: Number,
    default: 5,
    env: 'BMAAS_IPMI__MIN_COMMAND_INTERVAL',
  },
  lan_timeout: {
    doc: 'Seconds ipmitool waits for each answer of the BMC (its -N, with one retransmission, -R 1): a BMC that does not answer fails a command after about twice this.',
    format: 'positive-number',
    default: 2,
    env: 'BMAAS_IPMI__LAN_TIMEOUT',
  },
  ipmitool_path: {
    doc: 'The ipmitool program run for IPMI operations (a name looked up in PATH, or a path).',
    format: String,
    default: 'ipmitool',
    env: 'BMAAS_IPMI__IPMITOOL_PATH',
  },
} satisfies Record<string, { doc: string; format: unknown; default: unknown; env: string }>;

export type IpmiSettings = SectionValues<typeof IPMI_OPTIONS>;

/** The section both ipmitool descriptors declare (one schema object: the registry accepts it twice). */
export const IPMI_SECTION = { section: 'ipmi', options: IPMI_OPTIONS } as const;
