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

abstract class ClientError extends BmaasError {
  static override readonly status: number = 400;
}
abstract class NotFound extends BmaasError {
  static override readonly status: number = 404;
}
abstract class Conflict extends BmaasError {
  static override readonly status: number = 409;
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

export class NodeNotFound extends NotFound {
  constructor(node: string) {
    super(`Node ${node} could not be found.`, { node });
  }
}
export class PortNotFound extends NotFound {
  constructor(port: string) {
    super(`Port ${port} could not be found.`, { port });
  }
}
export class ConductorNotFound extends NotFound {
  constructor(conductor: string) {
    super(`Conductor ${conductor} could not be found.`, { conductor });
  }
}
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
export class MACAlreadyExists extends Conflict {
  constructor(mac: string) {
    super(`A port with MAC address ${mac} already exists.`, { mac });
  }
}
export class DuplicateName extends Conflict {
  constructor(name: string) {
    super(`A node with name ${name} already exists.`, { name });
  }
}
export class NodeAlreadyExists extends Conflict {
  constructor(uuid: string) {
    super(`A node with UUID ${uuid} already exists.`, { uuid });
  }
}
export class PortAlreadyExists extends Conflict {
  constructor(uuid: string) {
    super(`A port with UUID ${uuid} already exists.`, { uuid });
  }
}
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
      RpcTimeout,
      IPMIFailure,
      PowerStateFailure,
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

/** Every public error class with its status, for docs/errors.md. */
export const DOCUMENTED_ERRORS: ReadonlyArray<{ code: string; status: number; meaning: string }> = [
  { code: 'InvalidParameterValue', status: 400, meaning: 'A field or parameter has a value that is not allowed.' },
  { code: 'MissingParameterValue', status: 400, meaning: 'A required field or parameter is missing.' },
  { code: 'InvalidMAC', status: 400, meaning: 'A MAC address is not in an accepted form.' },
  { code: 'InvalidUUID', status: 400, meaning: 'A UUID is malformed.' },
  {
    code: 'InvalidStateRequested',
    status: 400,
    meaning: "The requested provision or power action is not possible in the node's current state.",
  },
  {
    code: 'NoValidHost',
    status: 400,
    meaning: "No alive conductor serves the node's hardware type and conductor group (404 on read paths).",
  },
  {
    code: 'UnsupportedDriverExtension',
    status: 400,
    meaning: "The node's interface does not implement the requested extension (e.g. get_boot_config).",
  },
  { code: 'NotAuthorized', status: 401, meaning: 'HTTP basic credentials are missing or wrong.' },
  { code: 'NodeNotFound', status: 404, meaning: 'No node with that UUID or name.' },
  { code: 'PortNotFound', status: 404, meaning: 'No port with that UUID or address.' },
  { code: 'ConductorNotFound', status: 404, meaning: 'No conductor with that hostname.' },
  { code: 'DriverNotFound', status: 404, meaning: 'No alive conductor has that hardware type.' },
  {
    code: 'ResourceNotFound',
    status: 404,
    meaning: 'Generic answer of the boot and lookup endpoints, which deliberately say nothing more.',
  },
  {
    code: 'BootConfigNotFound',
    status: 404,
    meaning: 'The boot interface cannot produce the named configuration for the node.',
  },
  {
    code: 'InventoryNotRecorded',
    status: 404,
    meaning: 'The node has no hardware inventory stored (not inspected yet).',
  },
  { code: 'InvalidApiVersion', status: 406, meaning: 'The requested microversion is outside the supported range.' },
  {
    code: 'NodeLocked',
    status: 409,
    meaning: "Another conductor or task holds the node's exclusive lock; retry later.",
  },
  { code: 'MACAlreadyExists', status: 409, meaning: 'A port with that MAC address exists (MACs are globally unique).' },
  { code: 'DuplicateName', status: 409, meaning: 'A node with that name exists.' },
  { code: 'NodeAlreadyExists', status: 409, meaning: 'A node with that UUID exists.' },
  { code: 'PortAlreadyExists', status: 409, meaning: 'A port with that UUID exists.' },
  { code: 'NodeAssociated', status: 409, meaning: 'The node is associated with an instance.' },
  {
    code: 'NodeInWrongState',
    status: 409,
    meaning: 'The change is refused while the node is in its current (busy) state.',
  },
  {
    code: 'NodeProtected',
    status: 403,
    meaning: 'The node is protected: it is not undeployed, rebuilt or deleted.',
  },
  { code: 'NodeIsRetired', status: 400, meaning: 'The operation is refused on a retired node (provide).' },
  { code: 'VifNotAttached', status: 400, meaning: 'The VIF to detach is not attached to the node.' },
  { code: 'TemporaryFailure', status: 503, meaning: 'No alive conductor at all; retry later.' },
  {
    code: 'DatabaseUnavailable',
    status: 503,
    meaning: 'The database did not answer within [database]statement_timeout or pool_timeout; retry later.',
  },
  { code: 'RpcTimeout', status: 504, meaning: 'The owning conductor did not answer in time.' },
  {
    code: 'IPMIFailure',
    status: 500,
    meaning: "A command to the node's BMC failed; the message names the BMC and the likely causes.",
  },
  {
    code: 'PowerStateFailure',
    status: 500,
    meaning: 'The hardware did not reach the requested power state within the power timeout.',
  },
  {
    code: 'UnexpectedRpcError',
    status: 500,
    meaning: 'A conductor answered with an error that is not on the allow-list.',
  },
];
