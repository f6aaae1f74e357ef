/**
 * The conductor's JSON-RPC methods: one typed table shared by the server
 * (packages/conductor) and the client. Parameter names follow Ironic's RPC
 * API (snake_case; `node_id` is the node's uuid); every call also carries
 * `context` ({ request_id }), added by the client.
 */
export interface RequestContext {
  request_id: string;
}

export interface ConductorRpcMethods {
  /**
   * Fires a provisioning event (deploy, delete, manage, provide, …) on a node.
   * The conductor takes the exclusive lock, checks the transition, moves the
   * node to the transient state and answers; the work then goes on in the
   * background under the lock. Throws NodeLocked, InvalidStateRequested.
   */
  do_provisioning_action: {
    params: {
      node_id: string;
      event: string;
      clean_steps?: unknown[];
      /** clean (1.70): run only the steps that need no ramdisk, without booting it. */
      disable_ramdisk?: boolean;
      /** deploy/rebuild (1.69): {interface, step, args, priority} merged with the deploy interface's steps. */
      deploy_steps?: unknown[];
      /** Required for `service`: the steps to run on the active node, in order. */
      service_steps?: unknown[];
      rescue_password?: string;
      /** deploy/rebuild: base64 of a gzipped ISO, a URL, or the object form; stored in instance_info.configdrive. */
      configdrive?: string | Record<string, unknown>;
    };
    result: null;
  };
  /**
   * Every interface's validate() for the node, under a shared lock (Ironic's
   * validate_driver_interfaces): per interface `result` (true, false, or null
   * when the node has no such interface) and `reason` when not true.
   */
  validate_driver_interfaces: {
    params: { node_id: string };
    result: Record<string, { result: boolean | null; reason?: string }>;
  };
  /**
   * Sets the node's power state (power on, power off, rebooting, …), asynchronously like the above.
   * `timeout`: seconds the power interface waits for the hardware to report the new state.
   */
  change_node_power_state: { params: { node_id: string; new_state: string; timeout?: number }; result: null };
  /** Boot configuration file `name` of a node, read under a shared lock. Throws BootConfigNotFound, UnsupportedDriverExtension. */
  get_boot_config: { params: { node_id: string; name: string }; result: { content: string } };
  /**
   * Discovery configuration `name` for a machine no node has ([discovery]enabled): rendered by the
   * enabled boot interface that lists the name among its discoveryConfigNames. No lock. Throws BootConfigNotFound.
   */
  get_discovery_config: { params: { name: string }; result: { content: string } };
  /**
   * The node's agent called back. The conductor takes the exclusive lock,
   * checks the token (when given; the API always gives it: it must equal the
   * one issued at lookup, compared in constant time), TLS ([agent]require_tls)
   * and that `agent_verify_ca` did not change (else InvalidParameterValue),
   * records the agent's URL, version and certificate and answers. In `wait
   * call-back`, `clean wait`, `rescue wait` or `service wait` it then checks in the
   * background whether the step that waited finished and goes on with the
   * action; in deploying, cleaning or rescuing it only records. Throws
   * InvalidStateRequested in any other state, NodeLocked.
   */
  heartbeat: {
    params: {
      node_id: string;
      callback_url?: string;
      agent_version?: string;
      agent_token?: string;
      agent_verify_ca?: string;
    };
    result: null;
  };
  /**
   * The node as its agent sees it at lookup, with the agent token (Ironic's
   * get_node_with_token). The first call for a node generates the token,
   * stores it in driver_internal_info.agent_secret_token under the exclusive
   * lock and returns it; later calls return "******" until a new provision or
   * power action clears it. Throws NodeLocked.
   */
  get_node_with_token: { params: { node_id: string }; result: AgentLookupNode };
  /**
   * The properties (driver_info keys, with what each means) the default
   * interfaces of a hardware type this conductor enabled read (Ironic's
   * get_driver_properties). Throws DriverNotFound for a type not enabled here.
   */
  get_driver_properties: { params: { driver_name: string }; result: Record<string, string> };
  /**
   * Takes a new allocation (stored by the API in `allocating`, by uuid) as
   * this conductor's (its conductor_affinity) and answers; a node is then
   * chosen and claimed in the background, and the allocation ends `active`
   * or `error` (Ironic's create_allocation). The API sends it to any alive
   * conductor (callAny). Throws ResourceNotFound when it is gone or
   * already taken by a conductor.
   */
  create_allocation: { params: { allocation_id: string }; result: null };
  /**
   * Sets the node's next boot device through its management interface, under
   * the exclusive lock, and answers when the hardware took it. Throws
   * InvalidParameterValue (device not supported), NodeLocked, IPMIFailure.
   */
  set_boot_device: { params: { node_id: string; device: string; persistent?: boolean }; result: null };
  /** The boot device the hardware reports (shared lock); null fields where it cannot tell. */
  get_boot_device: { params: { node_id: string }; result: { boot_device: string | null; persistent: boolean | null } };
  /** The boot devices set_boot_device accepts for the node (shared lock, no hardware access). */
  get_supported_boot_devices: { params: { node_id: string }; result: string[] };
  /** Sends a non-maskable interrupt (exclusive lock). Throws UnsupportedDriverExtension, IPMIFailure. */
  inject_nmi: { params: { node_id: string }; result: null };
  /**
   * The node's indicators (LEDs), of every component or of `component` only:
   * component -> indicator id -> { readonly, states } (shared lock, after the
   * management interface's validate). Throws UnsupportedDriverExtension when
   * the management interface has no indicators, InvalidParameterValue.
   */
  get_supported_indicators: {
    params: { node_id: string; component?: string };
    result: Record<string, Record<string, { readonly: boolean; states: string[] }>>;
  };
  /**
   * The state (on, off, blinking, unknown) of one indicator of a component
   * (shared lock). Throws UnsupportedDriverExtension, InvalidParameterValue
   * (unknown component or indicator).
   */
  get_indicator_state: { params: { node_id: string; component: string; indicator: string }; result: string };
  /**
   * Sets an indicator to a state (exclusive lock). Throws
   * UnsupportedDriverExtension, InvalidParameterValue (unknown component,
   * indicator or state; a read-only indicator), NodeLocked.
   */
  set_indicator_state: {
    params: { node_id: string; component: string; indicator: string; state: string };
    result: null;
  };
  /** Attaches a VIF with the node's network interface, under the exclusive lock. Throws what the interface throws. */
  vif_attach: { params: { node_id: string; vif_info: { id: string; [key: string]: unknown } }; result: null };
  /** Detaches a VIF with the node's network interface (VifNotAttached where the interface tracks VIFs). */
  vif_detach: { params: { node_id: string; vif_id: string }; result: null };
  /** The VIFs the node's network interface lists, under a shared lock. */
  vif_list: { params: { node_id: string }; result: Array<{ id: string; [key: string]: unknown }> };
  /**
   * Stores a target RAID configuration after the node's RAID interface
   * validated it (an empty one clears it without validation, as Ironic).
   * Throws UnsupportedDriverExtension (no-raid), InvalidParameterValue, NodeLocked.
   */
  set_target_raid_config: { params: { node_id: string; target_raid_config: Record<string, unknown> }; result: null };
  /** The vendor passthru methods of the node's vendor interface, by name. */
  get_node_vendor_passthru_methods: { params: { node_id: string }; result: Record<string, VendorMethodInfo> };
  /**
   * Runs a vendor passthru method under the exclusive lock. Throws
   * UnsupportedDriverExtension (no-vendor), InvalidParameterValue for an
   * unknown method or HTTP method.
   */
  vendor_passthru: {
    params: { node_id: string; driver_method: string; http_method: string; info: Record<string, unknown> };
    result: { return: unknown; async: boolean };
  };
  /**
   * Turns the console on or off: validates the console interface (no-console:
   * UnsupportedDriverExtension), then starts or stops it and records
   * console_enabled.
   */
  set_console_mode: { params: { node_id: string; enabled: boolean }; result: null };
  /** Console state and, when enabled, how to reach it. */
  get_console_information: {
    params: { node_id: string };
    result: { console_enabled: boolean; console_info: { type: string; url: string } | null };
  };
  /** Sets the boot mode with the management interface and records it (UnsupportedDriverExtension when it cannot). */
  set_boot_mode: { params: { node_id: string; mode: 'bios' | 'uefi' }; result: null };
  /** Turns UEFI secure boot on or off with the management interface and records it. */
  set_secure_boot_state: { params: { node_id: string; state: boolean }; result: null };
  /**
   * Attaches an image as a virtual device through the management interface
   * (Ironic's attach_virtual_media). The conductor validates the interface
   * under the exclusive lock, clears last_error and answers; the attachment
   * goes on in the background and a failure lands in last_error. Throws
   * UnsupportedDriverExtension when the management interface has no virtual
   * media, NodeLocked, TemporaryFailure (maintenance after a power failure).
   */
  attach_virtual_media: {
    params: { node_id: string; device_type: string; image_url: string; image_download_source: string };
    result: null;
  };
  /** Detaches the media of the given devices (all when none), like attach_virtual_media. */
  detach_virtual_media: { params: { node_id: string; device_types?: string[] }; result: null };
  /** The virtual media devices as the management interface reports them (shared lock). */
  get_virtual_media: { params: { node_id: string }; result: Record<string, unknown> };
  /**
   * The inspection ramdisk posted its inventory (already checked by the API:
   * at least one interface, each with a MAC). In `inspect wait` the node
   * moves to `inspecting` and the conductor answers; in the background it
   * stores the inventory, sets the properties, creates the ports, tidies up
   * the ramdisk boot and powers off, then `manageable` (or `inspect failed`).
   * A node in `enroll` (just discovered) only has its inventory processed.
   * Throws InvalidStateRequested in any other state, NodeLocked.
   */
  continue_inspection: {
    params: { node_id: string; inventory: Record<string, unknown>; plugin_data: Record<string, unknown> };
    result: null;
  };
}

/** A vendor passthru method as listed. */
export interface VendorMethodInfo {
  http_methods: string[];
  async: boolean;
  description: string;
  attach: boolean;
  require_exclusive_lock: boolean;
}

/** What get_node_with_token answers: the fields a lookup shows, and the token (or "******"). */
export interface AgentLookupNode {
  uuid: string;
  properties: Record<string, unknown>;
  instance_info: Record<string, unknown>;
  /** agent_secret_token in it is always "******": the token travels in agent_token only. */
  driver_internal_info: Record<string, unknown>;
  agent_token: string;
}

export type RpcMethodName = keyof ConductorRpcMethods;
export type RpcParams<M extends RpcMethodName> = ConductorRpcMethods[M]['params'];
export type RpcResult<M extends RpcMethodName> = ConductorRpcMethods[M]['result'];
