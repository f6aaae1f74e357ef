import { BmaasError, InvalidApiVersion, ResourceNotFound } from '@bmaas/common';

/** A known resource asked with a method it does not have. */
export class MethodNotAllowed extends BmaasError {
  static override readonly status: number = 405;
  readonly allowed: readonly string[];
  constructor(method: string, allowed: readonly string[]) {
    super(`The method ${method} is not allowed for this resource.`, { allowed });
    this.allowed = allowed;
  }
}

/** A request uses something its microversion does not offer yet (Ironic's NotAcceptable). */
export function versionTooLow(minimumMinor: number): InvalidApiVersion {
  return new InvalidApiVersion(`Request not acceptable. The minimal required API version should be 1.${minimumMinor}`);
}

/** Throws when the request's minor version is below `minimumMinor`. */
export function requireMinor(minor: number, minimumMinor: number): void {
  if (minor < minimumMinor) throw versionTooLow(minimumMinor);
}

/** A resource that appeared in `minimumMinor` does not exist for older requests: the 404 of an unknown path. */
export function requireResourceMinor(minor: number, minimumMinor: number): void {
  if (minor < minimumMinor) throw new ResourceNotFound('The resource could not be found.');
}
