import { InvalidParameterValue } from '@bmaas/common';

/** A parameter that must be a non-empty string. */
export function requireString(params: object, key: string): string {
  const value = (params as Record<string, unknown>)[key];
  if (typeof value !== 'string' || value === '') {
    throw new InvalidParameterValue(`Parameter ${key} must be a non-empty string.`, { parameter: key });
  }
  return value;
}

/** A parameter that may be absent but, when given, must be a string (never silently dropped). */
export function optionalString(params: object, key: string): string | undefined {
  const value = (params as Record<string, unknown>)[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') {
    throw new InvalidParameterValue(`Parameter ${key} must be a string.`, { parameter: key });
  }
  return value;
}
