import os from 'node:os';
import type convict from 'convict';

/** `a, b,c` -> ['a', 'b', 'c'] (empty items dropped); anything but a string as is. */
function splitList(value: unknown): unknown {
  return typeof value === 'string'
    ? value
        .split(',')
        .map((v) => v.trim())
        .filter((v) => v !== '')
    : value;
}

/**
 * Custom formats, registered on the convict instance we create (no global
 * registration at import time).
 */
export const CONFIG_FORMATS: Record<string, convict.Format> = {
  'optional-url': {
    name: 'optional-url',
    validate(value: unknown) {
      if (value === null || value === '') return;
      if (typeof value !== 'string') throw new Error('must be an http(s) URL');
      let url: URL;
      try {
        url = new URL(value);
      } catch {
        throw new Error('must be an http(s) URL such as http://192.0.2.1:6385');
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('must be an http(s) URL');
    },
    coerce: (value: unknown) => (value === '' ? null : value),
  },
  'optional-nat': {
    name: 'optional-nat',
    validate(value: unknown) {
      if (value !== null && !(Number.isInteger(value) && (value as number) >= 0)) {
        throw new Error('must be a whole number >= 0, or empty');
      }
    },
    coerce: (value: unknown) => (value === '' || value === null ? null : Number(value)),
  },
  'optional-string': {
    name: 'optional-string',
    validate(value: unknown) {
      if (value !== null && typeof value !== 'string') throw new Error('must be a string');
    },
    coerce: (value: unknown) => (value === '' ? null : value),
  },
  'string-list': {
    name: 'string-list',
    validate(value: unknown) {
      if (!Array.isArray(value) || value.some((v) => typeof v !== 'string' || v === '')) {
        throw new Error('must be a comma-separated list of names');
      }
    },
    coerce: splitList,
  },
  'absolute-path-list': {
    name: 'absolute-path-list',
    validate(value: unknown) {
      if (!Array.isArray(value) || value.some((v) => typeof v !== 'string' || !v.startsWith('/'))) {
        throw new Error('must be a comma-separated list of absolute paths');
      }
    },
    coerce: splitList,
  },
  'optional-auth-strategy': {
    name: 'optional-auth-strategy',
    validate(value: unknown) {
      if (value !== null && value !== 'noauth' && value !== 'http_basic') {
        throw new Error('must be noauth or http_basic (or unset)');
      }
    },
    coerce: (value: unknown) => (value === '' ? null : value),
  },
  'positive-int': {
    name: 'positive-int',
    validate(value: unknown) {
      if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0) {
        throw new Error('must be a whole number greater than 0');
      }
    },
    coerce: (value: unknown) => (typeof value === 'string' && value.trim() !== '' ? Number(value) : value),
  },
  'positive-number': {
    name: 'positive-number',
    validate(value: unknown) {
      if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
        throw new Error('must be a number greater than 0');
      }
    },
    coerce: (value: unknown) => (typeof value === 'string' && value.trim() !== '' ? Number(value) : value),
  },
};

interface ListOption {
  doc: string;
  format: string;
  default: string[];
  env: string;
}
interface OptionalStringOption {
  doc: string;
  format: string;
  default: string | null;
  env: string;
}

/** enabled_<kind>_interfaces and default_<kind>_interface, typed per kind. */
function interfaceOptions<K extends string>(
  kind: K,
  enabled: string[],
): Record<`enabled_${K}_interfaces`, ListOption> & Record<`default_${K}_interface`, OptionalStringOption> {
  return {
    [`enabled_${kind}_interfaces`]: {
      doc: `${capitalise(kind)} interfaces this conductor loads. An unknown name stops the conductor.`,
      format: 'string-list',
      default: enabled,
      env: `BMAAS_DEFAULT__ENABLED_${kind.toUpperCase()}_INTERFACES`,
    },
    [`default_${kind}_interface`]: {
      doc: `${capitalise(kind)} interface given to new nodes that name none; unset = the first enabled one the hardware type supports.`,
      format: 'optional-string',
      default: null,
      env: `BMAAS_DEFAULT__DEFAULT_${kind.toUpperCase()}_INTERFACE`,
    },
  } as Record<`enabled_${K}_interfaces`, ListOption> & Record<`default_${K}_interface`, OptionalStringOption>;
}

function capitalise(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/**
 * The one configuration schema of every process. Sections and option names
 * follow Ironic's ironic.conf, so an operator's habits carry over. Environment
 * variables are named BMAAS_<SECTION>__<OPTION>, upper case.
 */
export const configSchema = {
  DEFAULT: {
    host: {
      doc: 'Name of this conductor: unique among conductors, and the name the API uses to reach its JSON-RPC server (with [json_rpc]port).',
      format: String,
      default: os.hostname(),
      env: 'BMAAS_DEFAULT__HOST',
    },
    state_path: {
      doc: 'Directory for local state (the embedded PostgreSQL data, stack bookkeeping). Relative paths are taken from the working directory.',
      format: String,
      default: '.state',
      env: 'BMAAS_DEFAULT__STATE_PATH',
    },
    default_conductor_group: {
      doc: 'Conductor group this conductor serves; nodes are routed to conductors of their own group. Lower-cased.',
      format: String,
      default: '',
      env: 'BMAAS_DEFAULT__DEFAULT_CONDUCTOR_GROUP',
    },
    default_portgroup_mode: {
      doc: 'Bonding mode of a portgroup created without one (Linux bonding modes: active-backup, 802.3ad, balance-rr, …).',
      format: String,
      default: 'active-backup',
      env: 'BMAAS_DEFAULT__DEFAULT_PORTGROUP_MODE',
    },
    enabled_hardware_types: {
      doc: 'Hardware types (drivers) this conductor loads and registers.',
      format: 'string-list',
      default: ['fake-hardware'],
      env: 'BMAAS_DEFAULT__ENABLED_HARDWARE_TYPES',
    },
    // The plug-ins a conductor loads add the interfaces they enable by default (its registry's descriptors).
    ...interfaceOptions('boot', ['fake']),
    ...interfaceOptions('deploy', ['fake']),
    ...interfaceOptions('power', ['fake']),
    ...interfaceOptions('management', ['fake']),
    ...interfaceOptions('bios', ['no-bios', 'fake']),
    ...interfaceOptions('console', ['no-console', 'fake']),
    ...interfaceOptions('firmware', ['no-firmware', 'fake']),
    ...interfaceOptions('inspect', ['no-inspect', 'fake', 'agent']),
    ...interfaceOptions('network', ['noop']),
    ...interfaceOptions('raid', ['no-raid', 'fake']),
    ...interfaceOptions('rescue', ['no-rescue', 'fake']),
    ...interfaceOptions('storage', ['noop', 'fake']),
    ...interfaceOptions('vendor', ['no-vendor', 'fake']),
    hash_ring_reset_interval: {
      doc: 'Seconds a cached hash ring is trusted before it is rebuilt from the conductors table.',
      format: 'positive-number',
      default: 15,
      env: 'BMAAS_DEFAULT__HASH_RING_RESET_INTERVAL',
    },
    auth_strategy: {
      doc: 'Authentication of the REST API: noauth, or http_basic against [DEFAULT]http_basic_auth_user_file.',
      format: ['noauth', 'http_basic'],
      default: 'noauth',
      env: 'BMAAS_DEFAULT__AUTH_STRATEGY',
    },
    http_basic_auth_user_file: {
      doc: 'Apache htpasswd file with bcrypt entries, used when auth_strategy is http_basic.',
      format: String,
      default: '/etc/ironic/htpasswd',
      env: 'BMAAS_DEFAULT__HTTP_BASIC_AUTH_USER_FILE',
    },
    log_level: {
      doc: 'Lowest level logged.',
      format: ['error', 'warn', 'info', 'debug'],
      default: 'info',
      env: 'BMAAS_DEFAULT__LOG_LEVEL',
    },
    log_format: {
      doc: 'auto = readable text on a terminal, JSON lines otherwise.',
      format: ['auto', 'json', 'text'],
      default: 'auto',
      env: 'BMAAS_DEFAULT__LOG_FORMAT',
    },
    force_raw_images: {
      doc: 'Convert instance images the conductor downloads itself ([agent]image_download_source = local) to raw with qemu-img before serving them, so the agent streams them straight to the disk.',
      format: Boolean,
      default: true,
      env: 'BMAAS_DEFAULT__FORCE_RAW_IMAGES',
    },
    parallel_young_gc: {
      doc: "Let V8 collect the API's or conductor's young generation with helper threads (V8's default). Off, the process collects it on its main thread alone: where the API and conductors share a few busy cores, a parallel collection can stop the process until its helper threads get a core, and off halved the time they stopped for young collections (docs/performance.md).",
      format: Boolean,
      default: true,
      env: 'BMAAS_DEFAULT__PARALLEL_YOUNG_GC',
    },
  },
  api: {
    host_ip: {
      doc: 'Address the API listens on.',
      format: String,
      default: '0.0.0.0',
      env: 'BMAAS_API__HOST_IP',
    },
    port: {
      doc: 'Port the API listens on.',
      format: 'port',
      default: 6385,
      env: 'BMAAS_API__PORT',
    },
    public_endpoint: {
      doc: 'Public URL of the API used in links and given to agents and boot scripts; unset = derived from each request.',
      format: 'optional-url',
      default: null as string | null,
      env: 'BMAAS_API__PUBLIC_ENDPOINT',
    },
    restrict_boot_config: {
      doc: 'Serve /v1/boot only for nodes in a "* wait" provision state. Fast-track users may turn this off.',
      format: Boolean,
      default: true,
      env: 'BMAAS_API__RESTRICT_BOOT_CONFIG',
    },
    restrict_lookup: {
      doc: 'Answer agent lookups only for nodes in a lookup state (deploying, wait call-back, cleaning, …).',
      format: Boolean,
      default: true,
      env: 'BMAAS_API__RESTRICT_LOOKUP',
    },
    ramdisk_heartbeat_timeout: {
      doc: 'Seconds given to agents at lookup as heartbeat_timeout: they heartbeat every 30-60% of it.',
      format: 'positive-number',
      default: 300,
      env: 'BMAAS_API__RAMDISK_HEARTBEAT_TIMEOUT',
    },
    max_limit: {
      doc: 'Largest page a list request may ask for.',
      format: 'nat',
      default: 1000,
      env: 'BMAAS_API__MAX_LIMIT',
    },
    bulk_enrolment_max_nodes: {
      doc: 'Most nodes one POST /v1/nodes/bulk may create (each with its ports); a longer list is refused with 400.',
      format: 'positive-int',
      default: 1000,
      env: 'BMAAS_API__BULK_ENROLMENT_MAX_NODES',
    },
    boot_config_rpc_timeout: {
      doc: 'Seconds /v1/boot may take, database lookup and owning conductor together, before it answers its 404, so firmware is never kept waiting.',
      format: 'positive-number',
      default: 5,
      env: 'BMAAS_API__BOOT_CONFIG_RPC_TIMEOUT',
    },
  },
  conductor: {
    heartbeat_interval: {
      doc: 'Seconds between conductor heartbeats; less than heartbeat_timeout, which is how long a heartbeat keeps the conductor acting on its nodes.',
      format: 'positive-number',
      default: 10,
      env: 'BMAAS_CONDUCTOR__HEARTBEAT_INTERVAL',
    },
    heartbeat_timeout: {
      doc: 'Seconds after the last heartbeat a conductor is considered dead and leaves the hash ring.',
      format: 'positive-number',
      default: 60,
      env: 'BMAAS_CONDUCTOR__HEARTBEAT_TIMEOUT',
    },
    node_locked_retry_attempts: {
      doc: "Attempts to take a node's exclusive lock before answering NodeLocked.",
      format: 'nat',
      default: 3,
      env: 'BMAAS_CONDUCTOR__NODE_LOCKED_RETRY_ATTEMPTS',
    },
    node_locked_retry_interval: {
      doc: "Seconds between attempts to take a node's exclusive lock.",
      format: Number,
      default: 1,
      env: 'BMAAS_CONDUCTOR__NODE_LOCKED_RETRY_INTERVAL',
    },
    deploy_callback_timeout: {
      doc: 'Seconds a node may wait in "wait call-back" before the deploy fails; 0 = forever.',
      format: 'nat',
      default: 1800,
      env: 'BMAAS_CONDUCTOR__DEPLOY_CALLBACK_TIMEOUT',
    },
    clean_callback_timeout: {
      doc: 'Seconds a node may wait in "clean wait" before cleaning fails; 0 = forever.',
      format: 'nat',
      default: 1800,
      env: 'BMAAS_CONDUCTOR__CLEAN_CALLBACK_TIMEOUT',
    },
    inspect_wait_timeout: {
      doc: 'Seconds a node may wait in "inspect wait" for its ramdisk\'s inventory before inspection fails; 0 = forever.',
      format: 'nat',
      default: 1800,
      env: 'BMAAS_CONDUCTOR__INSPECT_WAIT_TIMEOUT',
    },
    check_allocations_interval: {
      doc: 'Seconds between runs of the periodic task that adopts the allocations a dead conductor left in allocating and processes them; 0 = never.',
      format: 'nat',
      default: 60,
      env: 'BMAAS_CONDUCTOR__CHECK_ALLOCATIONS_INTERVAL',
    },
    check_provision_state_interval: {
      doc: 'Seconds between runs of the periodic task that fails timed-out waits and checks ring changes.',
      format: 'positive-number',
      default: 60,
      env: 'BMAAS_CONDUCTOR__CHECK_PROVISION_STATE_INTERVAL',
    },
    image_download_concurrency: {
      doc: 'Instance image downloads and raw conversions of the image cache that run at once; more wait their turn. Concurrent requests for the same image share one download.',
      format: 'positive-int',
      default: 20,
      env: 'BMAAS_CONDUCTOR__IMAGE_DOWNLOAD_CONCURRENCY',
    },
    instance_image_cache_path: {
      doc: "Directory of the conductor's instance image cache (images downloaded with [agent]image_download_source = local, keyed by checksum); unset = master_images beside [deploy]http_root. On the file system of http_root, agents' URLs are hard links to it.",
      format: 'optional-string',
      default: null as string | null,
      env: 'BMAAS_CONDUCTOR__INSTANCE_IMAGE_CACHE_PATH',
    },
    instance_image_cache_size: {
      doc: 'Most MiB the instance image cache holds; the least recently used images are removed to make room, and an image larger than the whole cache is refused.',
      format: 'positive-int',
      default: 20480,
      env: 'BMAAS_CONDUCTOR__INSTANCE_IMAGE_CACHE_SIZE',
    },
    permitted_image_formats: {
      doc: 'Image formats (as told from their bytes) an instance image the conductor downloads may have; raw admits partitioned disks (gpt, mbr) too. Anything else is refused before it is converted or served.',
      format: 'string-list',
      default: ['raw', 'gpt', 'qcow2', 'iso'],
      env: 'BMAAS_CONDUCTOR__PERMITTED_IMAGE_FORMATS',
    },
    file_url_allowed_paths: {
      doc: 'Directories that local image paths and file:// URLs in driver_info (deploy_kernel, deploy_ramdisk, …) must lie under, checked after resolving symbolic links; anything else is refused when the node is validated or deployed. /dev, /sys, /proc, /boot, /run and /etc are refused whatever is listed.',
      format: 'absolute-path-list',
      default: ['/var/lib/ironic', '/shared/html', '/opt/cache/files', '/vagrant', '/templates'],
      env: 'BMAAS_CONDUCTOR__FILE_URL_ALLOWED_PATHS',
    },
    boot_path_cache_nodes: {
      doc: 'Most nodes a conductor keeps in memory for boot configuration requests ([database]boot_path_cache), each a few KiB; the oldest go first.',
      format: 'positive-int',
      default: 20000,
      env: 'BMAAS_CONDUCTOR__BOOT_PATH_CACHE_NODES',
    },
    node_history: {
      doc: 'Record node history (state changes, errors, power events, boot configurations served). When false nothing is recorded; old entries are still pruned.',
      format: Boolean,
      default: true,
      env: 'BMAAS_CONDUCTOR__NODE_HISTORY',
    },
    node_history_max_entries: {
      doc: 'History entries kept per node; older ones are pruned (entries younger than node_history_minimum_days are always kept).',
      format: 'nat',
      default: 300,
      env: 'BMAAS_CONDUCTOR__NODE_HISTORY_MAX_ENTRIES',
    },
    node_history_cleanup_interval: {
      doc: 'Seconds between prunings of node history by each conductor; 0 = never prune.',
      format: 'nat',
      default: 86400,
      env: 'BMAAS_CONDUCTOR__NODE_HISTORY_CLEANUP_INTERVAL',
    },
    node_history_cleanup_batch_count: {
      doc: 'Most node history entries one pruning deletes (oldest first); 0 = none.',
      format: 'nat',
      default: 1000,
      env: 'BMAAS_CONDUCTOR__NODE_HISTORY_CLEANUP_BATCH_COUNT',
    },
    node_history_minimum_days: {
      doc: 'Days of node history always kept, whatever node_history_max_entries says.',
      format: 'nat',
      default: 0,
      env: 'BMAAS_CONDUCTOR__NODE_HISTORY_MINIMUM_DAYS',
    },
    automated_clean: {
      doc: 'Run automated cleaning on provide and undeploy (the node waits in "clean wait" for its agent).',
      format: Boolean,
      default: true,
      env: 'BMAAS_CONDUCTOR__AUTOMATED_CLEAN',
    },
    power_state_change_timeout: {
      doc: 'Seconds a power change may take until the hardware reports the requested state (a request may give its own timeout).',
      format: 'positive-number',
      default: 60,
      env: 'BMAAS_CONDUCTOR__POWER_STATE_CHANGE_TIMEOUT',
    },
    sync_power_state_interval: {
      doc: "How old an owned node's power state reading may get: the power state sync reads every owned node from its hardware at least this often (half an interval after its last reading, on a tick every sixth of it, so that a lost request is tried again in time) and records changes made outside the service.",
      format: 'positive-number',
      default: 60,
      env: 'BMAAS_CONDUCTOR__SYNC_POWER_STATE_INTERVAL',
    },
    sync_power_state_workers: {
      doc: "Nodes whose power state the sync reads at the same time, over the whole conductor (each BMC's requests still go one at a time by its interface's limit).",
      format: 'positive-number',
      default: 64,
      env: 'BMAAS_CONDUCTOR__SYNC_POWER_STATE_WORKERS',
    },
    power_state_sync_max_retries: {
      doc: 'Consecutive failed power state reads after which the sync puts the node in maintenance with fault "power failure".',
      format: 'nat',
      default: 3,
      env: 'BMAAS_CONDUCTOR__POWER_STATE_SYNC_MAX_RETRIES',
    },
    power_failure_recovery_interval: {
      doc: 'Seconds between checks of nodes in maintenance for a power failure: when their BMC answers again, maintenance and the fault are cleared.',
      format: 'positive-number',
      default: 300,
      env: 'BMAAS_CONDUCTOR__POWER_FAILURE_RECOVERY_INTERVAL',
    },
  },
  json_rpc: {
    host_ip: {
      doc: "Address the conductor's JSON-RPC server listens on.",
      format: String,
      default: '0.0.0.0',
      env: 'BMAAS_JSON_RPC__HOST_IP',
    },
    port: {
      doc: "Port of the conductor's JSON-RPC server. A conductor on a non-default port registers as host:port.",
      format: 'port',
      default: 8089,
      env: 'BMAAS_JSON_RPC__PORT',
    },
    auth_strategy: {
      doc: 'Authentication of JSON-RPC: noauth or http_basic; unset = the same as [DEFAULT]auth_strategy.',
      format: 'optional-auth-strategy',
      default: null as 'noauth' | 'http_basic' | null,
      env: 'BMAAS_JSON_RPC__AUTH_STRATEGY',
    },
    allow_unauthenticated_remote_access: {
      doc: 'Let a conductor serve JSON-RPC without authentication (noauth) on an address other than loopback. Anyone who reaches that port can then power machines on and off and deploy them: only for a network nothing else can reach.',
      format: Boolean,
      default: false,
      env: 'BMAAS_JSON_RPC__ALLOW_UNAUTHENTICATED_REMOTE_ACCESS',
    },
    http_basic_auth_user_file: {
      doc: 'htpasswd file (bcrypt) the JSON-RPC server checks when auth_strategy is http_basic.',
      format: String,
      default: '/etc/ironic/htpasswd-json-rpc',
      env: 'BMAAS_JSON_RPC__HTTP_BASIC_AUTH_USER_FILE',
    },
    username: {
      doc: 'User name the JSON-RPC client sends with http_basic.',
      format: 'optional-string',
      default: null as string | null,
      env: 'BMAAS_JSON_RPC__USERNAME',
    },
    password: {
      doc: 'Password the JSON-RPC client sends with http_basic.',
      format: 'optional-string',
      default: null as string | null,
      sensitive: true,
      env: 'BMAAS_JSON_RPC__PASSWORD',
    },
    use_ssl: {
      doc: 'Serve (conductor) and call (API) JSON-RPC over TLS only: a conductor refuses plain HTTP, a caller checks the certificate against cafile.',
      format: Boolean,
      default: false,
      env: 'BMAAS_JSON_RPC__USE_SSL',
    },
    cert_file: {
      doc: "PEM certificate of the conductor's JSON-RPC server (use_ssl); its subjectAltName must name [DEFAULT]host as callers dial it.",
      format: 'optional-string',
      default: null as string | null,
      env: 'BMAAS_JSON_RPC__CERT_FILE',
    },
    key_file: {
      doc: "PEM private key of the conductor's JSON-RPC server (use_ssl), readable by the conductor alone.",
      format: 'optional-string',
      default: null as string | null,
      env: 'BMAAS_JSON_RPC__KEY_FILE',
    },
    cafile: {
      doc: 'CA bundle (PEM) the JSON-RPC client trusts (use_ssl); unset = the system store. A certificate it does not trust, or naming another host, fails the call.',
      format: 'optional-string',
      default: null as string | null,
      env: 'BMAAS_JSON_RPC__CAFILE',
    },
    timeout: {
      doc: 'Seconds the JSON-RPC client waits for an answer (the boot path uses [api]boot_config_rpc_timeout).',
      format: 'positive-number',
      default: 120,
      env: 'BMAAS_JSON_RPC__TIMEOUT',
    },
  },
  deploy: {
    http_root: {
      doc: 'Directory the conductor writes boot files to and its HTTP server serves.',
      format: String,
      default: '/httpboot',
      env: 'BMAAS_DEPLOY__HTTP_ROOT',
    },
    http_url: {
      doc: 'URL at which http_root is served to booting machines, e.g. http://192.0.2.10:8080.',
      format: 'optional-url',
      default: null as string | null,
      env: 'BMAAS_DEPLOY__HTTP_URL',
    },
    serve_http_root: {
      doc: "Run the conductor's built-in static file server for http_root at the port of http_url.",
      format: Boolean,
      default: false,
      env: 'BMAAS_DEPLOY__SERVE_HTTP_ROOT',
    },
    http_server_sendfile: {
      doc: "Send the built-in file server's bodies with sendfile(2), from the page cache to the socket without a copy through user space, as nginx's sendfile on (Linux, where the native module of @bmaas/sendfile was built; else the server copies and logs why). false = read and write every 1 MiB chunk in Node.js.",
      format: Boolean,
      default: true,
      env: 'BMAAS_DEPLOY__HTTP_SERVER_SENDFILE',
    },
    http_server_send_buffer: {
      doc: "Bytes of kernel send buffer (SO_SNDBUF) the built-in file server sets on a connection once it sends a body by sendfile; 0 = the kernel's autotuning (up to net.ipv4.tcp_wmem's maximum, 4 MiB by default). Hundreds of downloads with autotuned buffers drive a host into TCP memory pressure; 256 KiB per connection carries about 10 Gb/s at a 0.2 ms round trip: raise it for longer round trips.",
      format: 'nat',
      default: 262144,
      env: 'BMAAS_DEPLOY__HTTP_SERVER_SEND_BUFFER',
    },
    boot_config_cache_bytes: {
      doc: "Most bytes of nodes' rendered boot configurations (those getBootConfig serves) a conductor keeps in memory for the boot configuration API; one is served from memory only while lstat shows its file unchanged, else the file is read again. 0 = read the file for every request.",
      format: 'nat',
      default: 16777216,
      env: 'BMAAS_DEPLOY__BOOT_CONFIG_CACHE_BYTES',
    },
    boot_config_cache_check_interval: {
      doc: "Seconds after a held boot configuration's file was found unchanged during which it is served from memory without an lstat, like nginx's open_file_cache_valid: an edit by hand under http_root shows up to this much later (the conductor's own writes and removals at once). 0 = lstat on every request.",
      format: 'nat',
      default: 2,
      env: 'BMAAS_DEPLOY__BOOT_CONFIG_CACHE_CHECK_INTERVAL',
    },
    configdrive_max_size: {
      doc: 'Largest config drive (bytes, gzipped and base64 as stored) accepted; the agent takes at most 64 MiB.',
      format: 'nat',
      default: 67108864,
      env: 'BMAAS_DEPLOY__CONFIGDRIVE_MAX_SIZE',
    },
    http_server_host_ip: {
      doc: 'Address the built-in file server listens on.',
      format: String,
      default: '0.0.0.0',
      env: 'BMAAS_DEPLOY__HTTP_SERVER_HOST_IP',
    },
  },
  agent: {
    require_tls: {
      doc: 'Refuse heartbeats whose callback_url is not https:// (agents advertising auto-TLS serve HTTPS), as Ironic does since 26.0.',
      format: Boolean,
      default: true,
      env: 'BMAAS_AGENT__REQUIRE_TLS',
    },
  },
  inspector: {
    add_ports: {
      doc: "Ports inspection creates from the inventory's interfaces: all, active (those with an IP address), pxe (only the booting one; all when the ramdisk did not say), disabled.",
      format: ['all', 'active', 'pxe', 'disabled'],
      default: 'pxe',
      env: 'BMAAS_INSPECTOR__ADD_PORTS',
    },
    keep_ports: {
      doc: 'Ports inspection keeps: all, present (delete ports whose MAC is not in the inventory), added (delete every port inspection did not just add or find).',
      format: ['all', 'present', 'added'],
      default: 'all',
      env: 'BMAAS_INSPECTOR__KEEP_PORTS',
    },
    callback_endpoint_override: {
      doc: 'Base URL of the API the inspection ramdisk posts its inventory to (…/v1/continue_inspection); unset = [api]public_endpoint.',
      format: 'optional-url',
      default: null as string | null,
      env: 'BMAAS_INSPECTOR__CALLBACK_ENDPOINT_OVERRIDE',
    },
  },
  inspection_rules: {
    built_in_rules: {
      doc: "YAML (or JSON) file of inspection rules every conductor applies besides the API's (a list of {uuid?, description?, priority?, phase?, sensitive?, conditions?, actions}); a broken file stops the conductor from starting.",
      format: 'optional-string',
      default: null as string | null,
      env: 'BMAAS_INSPECTION_RULES__BUILT_IN_RULES',
    },
    mask_secrets: {
      doc: 'Whether rules see password, auth_token and bmc_password of the inventory and plugin data as ******: always, never, or sensitive (masked for rules that are not marked sensitive).',
      format: ['always', 'never', 'sensitive'],
      default: 'always',
      env: 'BMAAS_INSPECTION_RULES__MASK_SECRETS',
    },
  },
  discovery: {
    enabled: {
      doc: 'Enrol unknown machines: a MAC no port has gets the inspection ramdisk from /v1/boot, and its inventory creates a node in enroll with its ports and properties. Anyone on the provisioning network can then create nodes.',
      format: Boolean,
      default: false,
      env: 'BMAAS_DISCOVERY__ENABLED',
    },
    driver: {
      doc: 'Hardware type of discovered nodes; it must be enabled on a conductor.',
      format: String,
      default: 'fake-hardware',
      env: 'BMAAS_DISCOVERY__DRIVER',
    },
    interfaces: {
      doc: "Interfaces of discovered nodes as kind:name pairs (e.g. power:<name>,inspect:agent); kinds not named get the hardware type's default.",
      format: 'string-list',
      default: ['inspect:agent'],
      env: 'BMAAS_DISCOVERY__INTERFACES',
    },
    deploy_kernel: {
      doc: "URL of the inspection ramdisk's kernel that unknown machines boot (http or https, reachable by the machines).",
      format: 'optional-url',
      default: null as string | null,
      env: 'BMAAS_DISCOVERY__DEPLOY_KERNEL',
    },
    deploy_ramdisk: {
      doc: "URL of the inspection ramdisk's initrd that unknown machines boot.",
      format: 'optional-url',
      default: null as string | null,
      env: 'BMAAS_DISCOVERY__DEPLOY_RAMDISK',
    },
    kernel_append_params: {
      doc: 'Extra kernel command-line parameters of the inspection ramdisk unknown machines boot.',
      format: String,
      default: 'nofb vga=normal',
      env: 'BMAAS_DISCOVERY__KERNEL_APPEND_PARAMS',
    },
    name_template: {
      doc: 'Name of a discovered node, from its inventory: {serial} (system serial number), {bmc_address}, {mac} (booting MAC, with dashes), {hostname}; characters a node name may not hold become "-". Unset, or a template whose fields are missing = no name.',
      format: 'optional-string',
      default: null as string | null,
      env: 'BMAAS_DISCOVERY__NAME_TEMPLATE',
    },
  },
  database: {
    connection: {
      doc: 'PostgreSQL URL (postgresql://user:pass@host:5432/db). Unset = an embedded PostgreSQL under [DEFAULT]state_path.',
      format: 'optional-string',
      default: null as string | null,
      sensitive: true,
      env: 'BMAAS_DATABASE__CONNECTION',
    },
    max_pool_size: {
      doc: 'Most connections one process keeps to the database.',
      format: 'nat',
      default: 10,
      env: 'BMAAS_DATABASE__MAX_POOL_SIZE',
    },
    statement_timeout: {
      doc: 'Seconds a statement of the API or a conductor may run before it is cancelled; a server that does not answer at all is given up one second later and the connection replaced. Requests then answer 503 (the boot configuration API its usual 404) until the database answers again.',
      format: 'positive-number',
      default: 10,
      env: 'BMAAS_DATABASE__STATEMENT_TIMEOUT',
    },
    pool_timeout: {
      doc: 'Seconds a query waits for a free pooled connection, or for a new connection to open, before it fails.',
      format: 'positive-number',
      default: 5,
      env: 'BMAAS_DATABASE__POOL_TIMEOUT',
    },
    boot_path_cache: {
      doc: 'Answer boot configuration requests from memory: the API keeps a MAC index and each conductor the nodes it served, both following a change log in the database (boot_path_changes). Off: every boot request reads PostgreSQL twice.',
      format: Boolean,
      default: true,
      env: 'BMAAS_DATABASE__BOOT_PATH_CACHE',
    },
    boot_path_poll_interval: {
      doc: 'Seconds between two reads of the change log by the API and each conductor: how long a node that left a "* wait" state may still be served from memory.',
      format: 'positive-number',
      default: 0.2,
      env: 'BMAAS_DATABASE__BOOT_PATH_POLL_INTERVAL',
    },
    embedded_port: {
      doc: 'Port of the embedded PostgreSQL (loopback only).',
      format: 'port',
      default: 5433,
      env: 'BMAAS_DATABASE__EMBEDDED_PORT',
    },
  },
};

export type ConfigSchema = typeof configSchema;

/**
 * Core sections a plug-in may add options to, as Ironic's own interfaces
 * read options of [deploy] and [agent] that the core does not: the deploy
 * interface's clean step priorities, its agent client's settings. A process
 * that loads no plug-in leaves options it does not know there to the
 * conductor, which checks them; every other core section stays strict.
 */
export const PLUGIN_EXTENSIBLE_SECTIONS = ['deploy', 'agent'] as const;
export type PluginExtensibleSection = (typeof PLUGIN_EXTENSIBLE_SECTIONS)[number];
