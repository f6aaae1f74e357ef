import { setFlagsFromString } from 'node:v8';
import type { ConfigSection } from './config/load.js';

/**
 * Applies the garbage-collector settings of [DEFAULT] to this process. The
 * API and the conductors call it first thing in main, before they serve
 * anything: V8 reads the flag at each young collection. `setFlags` is V8's
 * own unless a test passes another.
 */
export function applyGcSettings(
  settings: Pick<ConfigSection<'DEFAULT'>, 'parallel_young_gc'>,
  setFlags: (flags: string) => void = setFlagsFromString,
): void {
  setFlags(settings.parallel_young_gc ? '--parallel-scavenge' : '--no-parallel-scavenge');
}
