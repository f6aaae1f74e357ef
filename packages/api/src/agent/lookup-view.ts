import type { BmaasConfig } from '@bmaas/common';
import type { AgentLookupNode } from '@bmaas/rpc-client';
import { selfAndBookmark } from '../links.js';
import { maskSecrets } from '../views/format.js';
import { maskInstanceInfo } from '../views/node-view.js';

/**
 * The `config` an agent gets at lookup, with the keys Ironic 21.4 answers.
 * There is no agent metrics collector here, so metrics are upstream's
 * defaults (noop); nothing writes bootloaders, so that install is off.
 */
export function agentConfig(config: BmaasConfig, agentToken: string): Record<string, unknown> {
  return {
    metrics: {
      backend: 'noop',
      prepend_host: false,
      prepend_uuid: false,
      prepend_host_reverse: true,
      global_prefix: null,
    },
    metrics_statsd: { statsd_host: 'localhost', statsd_port: 8125 },
    heartbeat_timeout: config.api.ramdisk_heartbeat_timeout,
    agent_token: agentToken,
    agent_token_required: true,
    disable_deep_image_inspection: false,
    permitted_image_formats: ['raw', 'qcow2', 'iso'],
    enable_bios_bootloader_install: false,
  };
}

/** The whole lookup answer: the node's agent-facing fields (secrets masked) with links, and the config. */
export function lookupView(node: AgentLookupNode, config: BmaasConfig, baseUrl: string): Record<string, unknown> {
  return {
    node: {
      uuid: node.uuid,
      properties: node.properties,
      instance_info: maskInstanceInfo(node.instance_info),
      driver_internal_info: maskSecrets(node.driver_internal_info),
      links: selfAndBookmark(baseUrl, 'nodes', node.uuid),
    },
    config: agentConfig(config, node.agent_token),
  };
}
