import { describe, it } from 'vitest';

/** CI=true: the machine is meant to have every prerequisite (test/debian-packages.txt). */
export const PREREQUISITES_REQUIRED = process.env.CI === 'true';

/**
 * Whether a suite must skip for want of `problem` (null = nothing missing).
 * Elsewhere it skips and says so; under CI=true it does not skip silently: a
 * failing test names what is missing, so a green CI run means the suite ran.
 * Use as `describe.skipIf(missingPrerequisite(label, problem))(…)`.
 */
export function missingPrerequisite(label: string, problem: string | null): boolean {
  if (problem === null) return false;
  if (PREREQUISITES_REQUIRED) {
    describe(`${label}: prerequisites`, () => {
      it('are present (CI=true: a missing prerequisite is a failure, not a skip)', () => {
        throw new Error(`${label}: ${problem}`);
      });
    });
  } else {
    console.warn(`[${label}] SKIPPING: ${problem}`);
  }
  return true;
}
