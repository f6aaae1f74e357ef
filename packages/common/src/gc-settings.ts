import { setFlagsFromString } from 'node:v8';
import type { ConfigSection } from './config/load.js';

/**
 * Applies the garbage-collector settings of [DEFAULT] to this process, and
 * turns allocation-site pretenuring off. The API and the conductors call it
 * first thing in main, before they serve anything: V8 reads these flags at
 * each collection and allocation-site decision. `setFlags` is V8's own unless
 * a test passes another.
 */
export function applyGcSettings(
  settings: Pick<ConfigSection<'DEFAULT'>, 'parallel_young_gc'>,
  setFlags: (flags: string) => void = setFlagsFromString,
): void {
  // V8 allocates an allocation site's objects straight into the old generation once most of
  // them have outlived a young collection. Provisioning's slow RPC calls teach that to sites
  // the boot path shares (JSON-RPC client and server, node:http); every boot request's
  // short-lived objects then fill the old generation: in the API, young collections twice
  // as long; in a conductor, a full collection (10-20 ms stopped) about every 20 s under a
  // boot storm instead of every two minutes (docs/performance.md).
  setFlags('--no-allocation-site-pretenuring');
  setFlags(settings.parallel_young_gc ? '--parallel-scavenge' : '--no-parallel-scavenge');
}
