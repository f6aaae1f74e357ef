/**
 * MAC addresses the bench enrols: a locally administered prefix and the
 * node's index in the last three bytes, so every run uses the same, unique
 * addresses and the lookup-scaling filler (another prefix) never collides.
 */
export const ENROLLED_MAC_PREFIX = '52:54:01';

export function macForIndex(index: number, prefix = ENROLLED_MAC_PREFIX): string {
  if (!Number.isInteger(index) || index < 0 || index > 0xffffff)
    throw new RangeError(`MAC index out of range: ${index}`);
  const hex = index.toString(16).padStart(6, '0');
  return `${prefix}:${hex.slice(0, 2)}:${hex.slice(2, 4)}:${hex.slice(4, 6)}`;
}

/** `52-54-01-00-00-2a`: the form iPXE's `${mac:hexhyp}` sends and the pxelinux.cfg links are named by. */
export function toHyphens(mac: string): string {
  return mac.toLowerCase().replaceAll(':', '-');
}

/** The path a booting machine asks the boot configuration API for. */
export function bootPath(mac: string): string {
  return `/v1/boot/${toHyphens(mac)}/boot.ipxe`;
}

/**
 * The boot path as a pattern, shared by the static servers' rewrite (nginx
 * and node:http): group 1 is the hyphenated MAC, the name of the
 * pxelinux.cfg link. Written so PCRE and JavaScript read it the same way.
 */
export const BOOT_PATH_PATTERN = '^/v1/boot/([0-9a-f]{2}(?:-[0-9a-f]{2}){5})/boot\\.ipxe$';

/** Picks `count` distinct items at random (all of them when there are fewer). */
export function sample<T>(items: readonly T[], count: number, random: () => number = Math.random): T[] {
  const copy = [...items];
  const n = Math.min(count, copy.length);
  for (let i = 0; i < n; i++) {
    const j = i + Math.floor(random() * (copy.length - i));
    [copy[i], copy[j]] = [copy[j] as T, copy[i] as T];
  }
  return copy.slice(0, n);
}
