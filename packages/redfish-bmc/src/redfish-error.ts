// The errors the service answers with, as the DMTF Base message registry names them; one
// middleware (app.ts) turns them into Redfish's error body.

/** Base message registry version the message ids below come from. */
export const BASE_REGISTRY = 'Base.1.8';

export class RedfishError extends Error {
  override name = 'RedfishError';
  constructor(
    readonly status: number,
    /** A message id of the Base registry, without the registry prefix (e.g. `PropertyValueNotInList`). */
    readonly messageKey: string,
    message: string,
    /** What the message is about, as a JSON pointer into the request (`#/Boot/BootSourceOverrideTarget`). */
    readonly relatedProperties: readonly string[] = [],
  ) {
    super(message);
  }

  get messageId(): string {
    return `${BASE_REGISTRY}.${this.messageKey}`;
  }
}

export const notFound = (path: string) =>
  new RedfishError(404, 'ResourceMissingAtURI', `The resource at the URI ${path} was not found.`);

export const valueNotInList = (property: string, value: unknown, allowed: readonly string[]) =>
  new RedfishError(
    400,
    'PropertyValueNotInList',
    `The value ${JSON.stringify(value)} for the property ${property} is not in the list of acceptable values (${allowed.join(', ')}).`,
    [`#/${property.replaceAll('.', '/')}`],
  );

export const propertyUnknown = (property: string) =>
  new RedfishError(
    400,
    'PropertyUnknown',
    `The property ${property} is not in the list of valid properties for the resource.`,
    [`#/${property.replaceAll('.', '/')}`],
  );

export const propertyNotWritable = (property: string) =>
  new RedfishError(
    400,
    'PropertyNotWritable',
    `The property ${property} is a read only property and cannot be assigned a value.`,
    [`#/${property.replaceAll('.', '/')}`],
  );

export const valueTypeError = (property: string, value: unknown) =>
  new RedfishError(
    400,
    'PropertyValueTypeError',
    `The value ${JSON.stringify(value)} for the property ${property} is of a different type than the property can accept.`,
    [`#/${property.replaceAll('.', '/')}`],
  );

/** The Redfish error body (Redfish specification, "Error responses"). */
export function errorBody(error: RedfishError): Record<string, unknown> {
  return {
    error: {
      code: error.messageId,
      message: error.message,
      '@Message.ExtendedInfo': [
        {
          '@odata.type': '#Message.v1_1_1.Message',
          MessageId: error.messageId,
          Message: error.message,
          RelatedProperties: [...error.relatedProperties],
          Severity: error.status >= 500 ? 'Critical' : 'Warning',
          MessageSeverity: error.status >= 500 ? 'Critical' : 'Warning',
          Resolution:
            error.status >= 500 ? 'Retry the operation.' : 'Correct the request body and resubmit the request.',
        },
      ],
    },
  };
}

/** 401: no live session's token and no good basic credentials. */
export function unauthorized(): RedfishError {
  return new RedfishError(
    401,
    'InsufficientPrivilege',
    'There are insufficient privileges for the account or credentials associated with the current session to perform the requested operation.',
  );
}
