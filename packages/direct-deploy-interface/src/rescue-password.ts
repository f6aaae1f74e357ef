import { createHash, randomBytes } from 'node:crypto';

const ITOA64 = './0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
/** Byte order of SHA-512 crypt's output encoding (Drepper's specification). */
const GROUPS: ReadonlyArray<readonly [number, number, number]> = Array.from({ length: 21 }, (_, i) => {
  const triple = [i, i + 21, i + 42] as const;
  const shift = i % 3; // (0,21,42), (22,43,1), (44,2,23), (3,24,45), …
  return [triple[shift % 3], triple[(shift + 1) % 3], triple[(shift + 2) % 3]] as [number, number, number];
});

function sha512(...parts: Buffer[]): Buffer {
  const hash = createHash('sha512');
  for (const part of parts) hash.update(part);
  return hash.digest();
}

/** `length` bytes of `block` repeated. */
function repeated(block: Buffer, length: number): Buffer {
  const out = Buffer.alloc(length);
  for (let offset = 0; offset < length; offset += block.length)
    block.copy(out, offset, 0, Math.min(block.length, length - offset));
  return out;
}

function encode24(b2: number, b1: number, b0: number, chars: number): string {
  let word = (b2 << 16) | (b1 << 8) | b0;
  let out = '';
  for (let i = 0; i < chars; i++) {
    out += ITOA64[word & 0x3f];
    word >>>= 6;
  }
  return out;
}

/**
 * SHA-512 crypt (`$6$salt$…`, 5000 rounds), the hash Ironic sends the agent
 * in rescue.finalize_rescue (`[conductor]rescue_password_hash_algorithm`
 * sha512) so the password itself never reaches the ramdisk.
 */
export function sha512Crypt(
  password: string,
  salt = randomBytes(12).toString('base64').replace(/[+=]/g, '.').slice(0, 16),
): string {
  const p = Buffer.from(password, 'utf8');
  const s = Buffer.from(salt.slice(0, 16), 'utf8');
  const b = sha512(p, s, p);
  const parts = [p, s, repeated(b, p.length)];
  for (let length = p.length; length > 0; length >>= 1) parts.push(length & 1 ? b : p);
  const a = sha512(...parts);
  const pBytes = repeated(sha512(...Array.from({ length: p.length }, () => p)), p.length);
  const sBytes = repeated(sha512(...Array.from({ length: 16 + (a[0] as number) }, () => s)), s.length);
  let c = a;
  for (let round = 0; round < 5000; round++) {
    const step: Buffer[] = [round & 1 ? pBytes : c];
    if (round % 3 !== 0) step.push(sBytes);
    if (round % 7 !== 0) step.push(pBytes);
    step.push(round & 1 ? c : pBytes);
    c = sha512(...step);
  }
  let encoded = '';
  for (const [x, y, z] of GROUPS) encoded += encode24(c[x] as number, c[y] as number, c[z] as number, 4);
  encoded += encode24(0, 0, c[63] as number, 2);
  return `$6$${s.toString('utf8')}$${encoded}`;
}
