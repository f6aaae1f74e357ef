/** Timestamps as Python's isoformat() writes them (what Ironic clients see). */
export { ironicTimestamp as timestamp } from '@bmaas/common';

/**
 * Key fragments that mark a secret, as upstream masks them (oslo.utils'
 * _SANITIZE_KEYS, matched anywhere in the key, any case) plus "pass", "pwd"
 * and "cred" so every *_password, *_passwd and credential field is covered.
 */
const SECRET_KEY_FRAGMENTS = [
  'pass',
  'pwd',
  'pswd',
  'cred',
  'secret',
  'token',
  'configdrive',
  'encrypted_key',
  'private_key',
  'encryption_key_id',
  'fernetkey',
  'sslkey',
  'cephclusterfsid',
  'octaviaheartbeatkey',
  'rabbitcookie',
  'cephmanilaclientkey',
  'pacemakerremoteauthkey',
  'designaterndckey',
  'cephadminkey',
  'heatauthencryptionkey',
  'cephclientkey',
  'barbicansimplecryptokek',
  'cephrgwkey',
  'swifthashsuffix',
  'migrationsshkey',
  'cephmdskey',
  'cephmonkey',
];
const SECRET_KEY = new RegExp(SECRET_KEY_FRAGMENTS.join('|'), 'i');
const FRAGMENT = `(?:${SECRET_KEY_FRAGMENTS.join('|')})[A-Za-z0-9_-]*`;
/** Secrets written inside a string value: "password=x", "'password': 'x'", "--password x". */
const SECRET_IN_TEXT = [
  new RegExp(`(${FRAGMENT}['"]?\\s*[=:]\\s*u?['"]?)[^\\s'",&;]+`, 'gi'),
  new RegExp(`(--${FRAGMENT}\\s+)[^\\s'"]+`, 'gi'),
];
export const MASK = '******';

function maskText(text: string): string {
  return SECRET_IN_TEXT.reduce((masked, pattern) => masked.replace(pattern, `$1${MASK}`), text);
}

function maskValue(value: unknown): unknown {
  if (typeof value === 'string') return maskText(value);
  if (Array.isArray(value)) return value.map(maskValue);
  if (value && typeof value === 'object') return maskSecrets(value as Record<string, unknown>);
  return value;
}

/**
 * Copy of a JSON object with secrets masked as upstream's mask_dict_password
 * does: a value whose key looks secret reads "******" (at any depth, lists
 * included), and a secret written inside a string value is masked in place.
 */
export function maskSecrets(value: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(value)) out[key] = SECRET_KEY.test(key) ? MASK : maskValue(child);
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
