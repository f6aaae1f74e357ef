import { InvalidMAC } from './errors.js';

const SEPARATED = /^([0-9a-f]{2})([:-])([0-9a-f]{2})\2([0-9a-f]{2})\2([0-9a-f]{2})\2([0-9a-f]{2})\2([0-9a-f]{2})$/i;
const RAW = /^[0-9a-f]{12}$/i;
const ENCODED_COLON = /%3a/gi;

/**
 * Canonical MAC form (lower case, colons), or undefined when the text is not a
 * MAC in a form we accept: `aa:bb:cc:dd:ee:ff`, `aa-bb-cc-dd-ee-ff`, the
 * percent-encoded colon form iPXE puts in URLs (`aa%3Abb%3A…`), or 12 raw hex
 * digits; any case. Separators may not be mixed.
 */
export function tryParseMac(text: string): string | undefined {
  if (typeof text !== 'string' || text.length > 64) return undefined;
  const decoded = text.replace(ENCODED_COLON, ':');
  if (RAW.test(decoded)) {
    return decoded.toLowerCase().replace(/(..)(?!$)/g, '$1:');
  }
  const m = SEPARATED.exec(decoded);
  if (!m) return undefined;
  return [m[1], m[3], m[4], m[5], m[6], m[7]].join(':').toLowerCase();
}

/** Like tryParseMac, but throws InvalidMAC. */
export function parseMac(text: string): string {
  const mac = tryParseMac(text);
  if (mac === undefined) throw new InvalidMAC(text);
  return mac;
}

/** `52-54-00-12-34-56`: the file name iPXE asks for with `${mac:hexhyp}`. */
export function macToHyphens(mac: string): string {
  return mac.replace(/:/g, '-');
}
