/** Timestamps as Python's isoformat() writes them (what Ironic clients see). */
export function timestamp(value: Date | null | undefined): string | null {
  if (!value) return null;
  return value.toISOString().replace('Z', '+00:00');
}

const SECRET_KEY = /pass|secret|token|private_key|cred|configdrive|fernetkey|sslkey|encrypted_key/i;
export const MASK = '******';

/** Copy of a JSON object whose secret-looking keys (at any depth) read "******", as Ironic shows them. */
export function maskSecrets(value: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(value)) {
    if (SECRET_KEY.test(key)) out[key] = MASK;
    else if (child && typeof child === 'object' && !Array.isArray(child)) {
      out[key] = maskSecrets(child as Record<string, unknown>);
    } else out[key] = child;
  }
  return out;
}

/** Keeps the requested fields (and links), as Ironic's sanitize does. */
export function pickFields(
  item: Record<string, unknown>,
  fields: readonly string[] | undefined,
): Record<string, unknown> {
  if (!fields) return item;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(item)) {
    if (key === 'links' || fields.includes(key)) out[key] = value;
  }
  return out;
}
