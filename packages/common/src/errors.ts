/**
 * Domain errors. They know nothing of HTTP transports: each carries a stable
 * code (its class name, as Ironic names them) and the status an edge should
 * map it to. The API's error middleware and the JSON-RPC layer are the only
 * places that translate them.
 */
export class BmaasError extends Error {
  /** HTTP-like status an edge maps errors of this class to. */
  static readonly status: number = 500;
  /** Extra facts that may be shown to a client (never secrets). */
  readonly details: Record<string, unknown>;

  constructor(message: string, details: Record<string, unknown> = {}) {
    super(message);
    this.details = details;
  }

  /** HTTP-like status; a property of the class, so rebuilt errors have it too. */
  get status(): number {
    return (this.constructor as typeof BmaasError).status;
  }

  /** Stable code: the class name, identical on both sides of the RPC wire. */
  get code(): string {
    return this.constructor.name;
  }

  override get name(): string {
    return this.code;
  }
}

/** The request is wrong: a value, a missing field, an action the node's state does not allow. */
export abstract class ClientError extends BmaasError {
  static override readonly status: number = 400;
}
/** What the request names does not exist. */
export abstract class NotFound extends BmaasError {
  static override readonly status: number = 404;

  /** The base of an error saying "<what> <id> could not be found.", the id in its details under `key`. */
  static of(what: string, key: string) {
    abstract class NamedNotFound extends NotFound {
      constructor(id: string, message = `${what} ${id} could not be found.`) {
        super(message, { [key]: id });
      }
    }
    return NamedNotFound;
  }
}
/** The request conflicts with what exists: a lock held, a value taken, a busy node. */
export abstract class Conflict extends BmaasError {
  static override readonly status: number = 409;

  /** The base of an error saying "A <what> <value> already exists.", the value in its details under `key`. */
  static alreadyExists(what: string, key: string) {
    abstract class NamedAlreadyExists extends Conflict {
      constructor(value: string) {
        super(`A ${what} ${value} already exists.`, { [key]: value });
      }
    }
    return NamedAlreadyExists;
  }
}

export class InvalidParameterValue extends ClientError {}
export class MissingParameterValue extends ClientError {}
export class InvalidMAC extends ClientError {
  constructor(mac: unknown) {
    super(`Expected a MAC address but received ${JSON.stringify(mac)}.`, { mac });
  }
}
export class InvalidUUID extends ClientError {
  constructor(value: unknown) {
    super(`Expected a UUID but received ${JSON.stringify(value)}.`, { value });
  }
}
export class InvalidStateRequested extends ClientError {
  constructor(message: string, details: Record<string, unknown> = {}) {
    super(message, details);
  }
}
/** Ironic's NoValidHost: no alive conductor serves the node's driver and group. */
export class NoValidHost extends ClientError {
  constructor(reason: string) {
    super(`No valid host was found. Reason: ${reason}`);
  }
}
export class UnsupportedDriverExtension extends ClientError {
  constructor(driver: string, extension: string) {
    super(`Driver ${driver} does not support ${extension} (disabled or not implemented).`, {
      driver,
      extension,
    });
  }
}
export class InvalidApiVersion extends BmaasError {
  static override readonly status: number = 406;
}
export class NotAuthorized extends BmaasError {
  static override readonly status: number = 401;
}

export class NodeNotFound extends NotFound.of('Node', 'node') {}
export class PortNotFound extends NotFound.of('Port', 'port') {}
export class ConductorNotFound extends NotFound.of('Conductor', 'conductor') {}
export class DriverNotFound extends NotFound {
  constructor(driver: string) {
    super(`Could not find the following driver(s) or hardware type(s): ${driver}.`, { driver });
  }
}
/** Generic "nothing here", used where the answer must not say more (boot, lookup). */
export class ResourceNotFound extends NotFound {
  constructor(message = 'Resource could not be found.') {
    super(message);
  }
}
/** A boot interface cannot produce the named configuration. */
export class BootConfigNotFound extends NotFound {
  constructor(node: string, name: string) {
    super(`Boot configuration ${JSON.stringify(name)} is not available for node ${node}.`, {
      node,
      name,
    });
  }
}
/** The node has no inventory stored (never inspected, or inspected before inventories were kept). */
export class InventoryNotRecorded extends NotFound {
  constructor(node: string) {
    super(`Inventory not found for node ${node}.`, { node });
  }
}

export class NodeLocked extends Conflict {
  constructor(node: string, host: string) {
    super(`Node ${node} is locked by host ${host}, please retry after the current operation is completed.`, {
      node,
      host,
    });
  }
}
export class MACAlreadyExists extends Conflict.alreadyExists('port with MAC address', 'mac') {}
export class DuplicateName extends Conflict.alreadyExists('node with name', 'name') {}
export class NodeAlreadyExists extends Conflict.alreadyExists('node with UUID', 'uuid') {}
export class PortAlreadyExists extends Conflict.alreadyExists('port with UUID', 'uuid') {}
export class NodeAssociated extends Conflict {
  constructor(node: string, instance: string) {
    super(`Node ${node} is associated with instance ${instance}.`, { node, instance });
  }
}
export class NodeInWrongState extends Conflict {}
/** Ironic's NodeProtected: a protected node is not undeployed, rebuilt or deleted. */
export class NodeProtected extends BmaasError {
  static override readonly status: number = 403;
  constructor(node: string) {
    super(`Node ${node} is protected and cannot be undeployed, rebuilt or deleted`, { node });
  }
}
export class NodeIsRetired extends ClientError {
  constructor(operation: string, node: string) {
    super(`The ${operation} operation can't be performed on node ${node} because it is retired.`, { node });
  }
}
export class VifNotAttached extends ClientError {
  constructor(vif: string, node: string) {
    super(`Unable to detach VIF ${vif} from node ${node} because it is not attached to it.`, { vif, node });
  }
}

export class TemporaryFailure extends BmaasError {
  static override readonly status: number = 503;
  constructor(message = 'Resource temporarily unavailable, please retry.') {
    super(message);
  }
}
export class DatabaseUnavailable extends BmaasError {
  static override readonly status: number = 503;
  constructor(message = 'The database is not answering; retry later.') {
    super(message);
  }
}
/**
 * This conductor could not renew its registration within [conductor]heartbeat_timeout (or
 * reach the database): others may own its nodes now, so it acts on none (no power change,
 * no state write, no agent command) until a renewal succeeds again.
 */
export class ConductorFenced extends BmaasError {
  static override readonly status: number = 503;
  constructor(host: string, sinceSeconds: number) {
    super(
      `Conductor ${host} could not renew its registration for ${sinceSeconds.toFixed(1)} s and does not act on nodes; retry later.`,
      { host },
    );
  }
}
export class RpcTimeout extends BmaasError {
  static override readonly status: number = 504;
}
/** Anything that crossed the RPC wire and is not on the allow-list. */
export class UnexpectedRpcError extends BmaasError {
  static override readonly status: number = 500;
}
export class ConfigError extends BmaasError {}
/** A BMC command failed (no answer, refused session, error reply); the message names the BMC. */
export class IPMIFailure extends BmaasError {}
/** The hardware did not reach the requested power state in time. */
export class PowerStateFailure extends BmaasError {}
/** A Redfish BMC answered with an error, or without what the request needs; the message names the BMC and the resource. */
export class RedfishError extends BmaasError {}
/**
 * No usable answer from a Redfish BMC after the retries: unreachable, timed
 * out, 5xx, wrong credentials or an untrusted certificate (the message says which).
 */
export class RedfishConnectionError extends RedfishError {}

type ErrorClass = abstract new (...args: never[]) => BmaasError;

/**
 * The errors that may be rebuilt from a remote error name (JSON-RPC). Keep it an
 * explicit list: a name not here becomes UnexpectedRpcError.
 */
export const REMOTE_ERROR_CLASSES: ReadonlyMap<string, ErrorClass> = new Map<string, ErrorClass>(
  (
    [
      InvalidParameterValue,
      MissingParameterValue,
      InvalidMAC,
      InvalidUUID,
      InvalidStateRequested,
      NoValidHost,
      UnsupportedDriverExtension,
      NodeNotFound,
      PortNotFound,
      ConductorNotFound,
      DriverNotFound,
      ResourceNotFound,
      BootConfigNotFound,
      InventoryNotRecorded,
      NodeLocked,
      MACAlreadyExists,
      DuplicateName,
      NodeAlreadyExists,
      PortAlreadyExists,
      NodeAssociated,
      NodeInWrongState,
      NodeProtected,
      NodeIsRetired,
      VifNotAttached,
      TemporaryFailure,
      DatabaseUnavailable,
      ConductorFenced,
      RpcTimeout,
      IPMIFailure,
      PowerStateFailure,
      RedfishError,
      RedfishConnectionError,
    ] as ErrorClass[]
  ).map((cls) => [cls.name, cls]),
);

/** Serialisable form of a domain error, as sent over JSON-RPC. */
export interface ErrorPayload {
  class: string;
  message: string;
  status: number;
  details: Record<string, unknown>;
}

export function toErrorPayload(error: BmaasError): ErrorPayload {
  return { class: error.code, message: error.message, status: error.status, details: error.details };
}

/** Rebuilds a domain error from its payload, only for classes on the allow-list. */
export function fromErrorPayload(payload: Partial<ErrorPayload> | undefined, fallbackMessage: string): BmaasError {
  const cls = payload?.class ? REMOTE_ERROR_CLASSES.get(payload.class) : undefined;
  const message = payload?.message ?? fallbackMessage;
  if (!cls) {
    return new UnexpectedRpcError(`Unexpected error from conductor: ${message}`);
  }
  // Rebuild without re-running the subclass constructor's message formatting.
  const error = Object.create(cls.prototype) as BmaasError;
  Object.defineProperty(error, 'message', { value: message, enumerable: false, writable: true });
  Object.assign(error, { details: payload?.details ?? {} });
  Error.captureStackTrace?.(error, fromErrorPayload);
  return error;
}

export function isBmaasError(error: unknown): error is BmaasError {
  return error instanceof BmaasError;
}

/** A row of docs/errors.md. */
export interface DocumentedError {
  code: string;
  status: number;
  meaning: string;
}

/** An error class's row of docs/errors.md: its code and status are the class's own. */
export function describeError(cls: ErrorClass & { status: number }, meaning: string): DocumentedError {
  return { code: cls.name, status: cls.status, meaning };
}

/** Every public error class with its status, for docs/errors.md. */
export const DOCUMENTED_ERRORS: readonly DocumentedError[] = [
  describeError(InvalidParameterValue, 'A field or parameter has a value that is not allowed.'),
  describeError(MissingParameterValue, 'A required field or parameter is missing.'),
  describeError(InvalidMAC, 'A MAC address is not in an accepted form.'),
  describeError(InvalidUUID, 'A UUID is malformed.'),
  describeError(
    InvalidStateRequested,
    "The requested provision or power action is not possible in the node's current state.",
  ),
  describeError(
    NoValidHost,
    "No alive conductor serves the node's hardware type and conductor group (404 on read paths).",
  ),
  describeError(
    UnsupportedDriverExtension,
    "The node's interface does not implement the requested extension (e.g. get_boot_config).",
  ),
  describeError(NotAuthorized, 'HTTP basic credentials are missing or wrong.'),
  describeError(NodeNotFound, 'No node with that UUID or name.'),
  describeError(PortNotFound, 'No port with that UUID or address.'),
  describeError(ConductorNotFound, 'No conductor with that hostname.'),
  describeError(DriverNotFound, 'No alive conductor has that hardware type.'),
  describeError(
    ResourceNotFound,
    'Generic answer of the boot and lookup endpoints, which deliberately say nothing more.',
  ),
  describeError(BootConfigNotFound, 'The boot interface cannot produce the named configuration for the node.'),
  describeError(InventoryNotRecorded, 'The node has no hardware inventory stored (not inspected yet).'),
  describeError(InvalidApiVersion, 'The requested microversion is outside the supported range.'),
  describeError(NodeLocked, "Another conductor or task holds the node's exclusive lock; retry later."),
  describeError(MACAlreadyExists, 'A port with that MAC address exists (MACs are globally unique).'),
  describeError(DuplicateName, 'A node with that name exists.'),
  describeError(NodeAlreadyExists, 'A node with that UUID exists.'),
  describeError(PortAlreadyExists, 'A port with that UUID exists.'),
  describeError(NodeAssociated, 'The node is associated with an instance.'),
  describeError(NodeInWrongState, 'The change is refused while the node is in its current (busy) state.'),
  describeError(NodeProtected, 'The node is protected: it is not undeployed, rebuilt or deleted.'),
  describeError(NodeIsRetired, 'The operation is refused on a retired node (provide).'),
  describeError(VifNotAttached, 'The VIF to detach is not attached to the node.'),
  describeError(TemporaryFailure, 'No alive conductor at all; retry later.'),
  describeError(
    DatabaseUnavailable,
    'The database did not answer within [database]statement_timeout or pool_timeout; retry later.',
  ),
  describeError(
    ConductorFenced,
    'The owning conductor could not renew its registration within heartbeat_timeout and acts on no node; retry later.',
  ),
  describeError(RpcTimeout, 'The owning conductor did not answer in time.'),
  describeError(IPMIFailure, "A command to the node's BMC failed; the message names the BMC and the likely causes."),
  describeError(PowerStateFailure, 'The hardware did not reach the requested power state within the power timeout.'),
  describeError(
    RedfishError,
    'A Redfish BMC refused a request or lacks what it needs; the message names the BMC and the resource.',
  ),
  describeError(
    RedfishConnectionError,
    'A Redfish BMC gave no usable answer after the retries: unreachable, 5xx, wrong credentials or an untrusted certificate.',
  ),
  describeError(UnexpectedRpcError, 'A conductor answered with an error that is not on the allow-list.'),
];
