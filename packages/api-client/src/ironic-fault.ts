/** The inner fault of Ironic's error body (`error_message` is a JSON document encoded as a string). */
export interface IronicFault {
  faultcode: 'Client' | 'Server';
  faultstring: string;
  debuginfo: null;
}

/** The fault of an Ironic error body; throws when the body is not one. */
export function ironicFault(answer: { status: number; body: unknown; text: string }): IronicFault {
  const message = (answer.body as { error_message?: unknown } | undefined)?.error_message;
  if (typeof message !== 'string') throw new Error(`not an Ironic error body (${answer.status}): ${answer.text}`);
  return JSON.parse(message) as IronicFault;
}

/** What an answer says went wrong, for an error message: the faultstring, else the start of the body. */
export function describeFault(answer: { status: number; body: unknown; text: string }): string {
  try {
    return ironicFault(answer).faultstring;
  } catch {
    return answer.text.slice(0, 300);
  }
}

/** An answer other than the one expected, with Ironic's faultstring as its message. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly status: number,
    message: string,
    /** The fault of the error body, when it was one. */
    readonly fault: IronicFault | undefined,
  ) {
    super(message);
  }
}
