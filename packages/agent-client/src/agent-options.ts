import type { SectionValues } from '@bmaas/common';

/**
 * The agent client's options of `[agent]`: how the conductor talks to the
 * ramdisk agent (TLS, timeouts, retries). The `direct` deploy interface
 * declares them, added to the core's `[agent]` (whose require_tls the
 * conductor's heartbeat check reads), so a conductor loads them with the
 * interfaces (names as in Ironic's ironic.conf).
 */
export const AGENT_OPTIONS = {
  verify_ca: {
    doc: 'TLS verification of agent calls when the agent sent no certificate: "true" (system CAs), "false", or a CA bundle path. driver_info.agent_verify_ca overrides it per node.',
    format: String,
    default: 'true',
    env: 'BMAAS_AGENT__VERIFY_CA',
  },
  tls_minimum_version: {
    doc: 'Lowest TLS version the conductor accepts from an agent.',
    format: ['1.2', '1.3'],
    default: '1.3',
    env: 'BMAAS_AGENT__TLS_MINIMUM_VERSION',
  },
  command_timeout: {
    doc: 'Seconds one HTTP call to an agent may take.',
    format: 'positive-number',
    default: 60,
    env: 'BMAAS_AGENT__COMMAND_TIMEOUT',
  },
  max_command_attempts: {
    doc: 'Attempts of an agent call that fails to connect or times out.',
    format: 'nat',
    default: 3,
    env: 'BMAAS_AGENT__MAX_COMMAND_ATTEMPTS',
  },
  command_wait_interval: {
    doc: 'Seconds between polls of an agent command that is waited for (install_bootloader).',
    format: 'positive-number',
    default: 6,
    env: 'BMAAS_AGENT__COMMAND_WAIT_INTERVAL',
  },
  command_wait_attempts: {
    doc: 'Polls of such a command before it counts as failed.',
    format: 'nat',
    default: 100,
    env: 'BMAAS_AGENT__COMMAND_WAIT_ATTEMPTS',
  },
  post_deploy_get_power_state_retries: {
    doc: 'Power state checks after asking the agent to power off, before a hard power off.',
    format: 'nat',
    default: 6,
    env: 'BMAAS_AGENT__POST_DEPLOY_GET_POWER_STATE_RETRIES',
  },
  post_deploy_get_power_state_retry_interval: {
    doc: 'Seconds between those checks.',
    format: 'positive-number',
    default: 5,
    env: 'BMAAS_AGENT__POST_DEPLOY_GET_POWER_STATE_RETRY_INTERVAL',
  },
  image_download_source: {
    doc: "Where agents download instance images from: http = the image_source URL itself; local = the conductor downloads the image once into its cache, checks and converts it, and serves it from its own file server ([deploy]http_url). instance_info.image_download_source (then driver_info's) overrides it per node.",
    format: ['http', 'local'],
    default: 'http',
    env: 'BMAAS_AGENT__IMAGE_DOWNLOAD_SOURCE',
  },
  stream_raw_images: {
    doc: 'Tell the agent to stream raw images straight to the disk.',
    format: Boolean,
    default: true,
    env: 'BMAAS_AGENT__STREAM_RAW_IMAGES',
  },
} satisfies Record<string, { doc: string; format: unknown; default: unknown; env: string }>;

/** The `[agent]` values, checked and frozen. */
export type AgentSettings = SectionValues<typeof AGENT_OPTIONS>;
