import { type ParseArgsConfig, parseArgs } from 'node:util';

/** A command line that cannot be understood: shown as its message alone, with no stack trace. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

type OptionsConfig = NonNullable<ParseArgsConfig['options']>;
type ParsedValues<T extends OptionsConfig> = ReturnType<
  typeof parseArgs<{ args: string[]; options: T; strict: true; allowPositionals: false }>
>['values'];

/**
 * `util.parseArgs` in strict mode (no positionals), its complaints (an unknown option, a
 * missing value) rethrown as UsageError followed by `usage`.
 */
export function parseCommandLine<T extends OptionsConfig>(
  argv: readonly string[],
  options: T,
  usage: string,
): ParsedValues<T> {
  try {
    return parseArgs({ args: [...argv], options, strict: true, allowPositionals: false }).values;
  } catch (error) {
    const message = (error as Error).message.replace(/^Unknown option '([^']*)'.*$/s, 'unknown option $1');
    throw new UsageError(`${message}\n${usage}`);
  }
}

/** The value of `--<flag>` as a whole number from min to max, or a UsageError saying what was expected. */
export function wholeNumber(flag: string, text: string | undefined, min: number, max: number): number {
  const value = Number(text);
  if (!text || !Number.isInteger(value) || value < min || value > max) {
    throw new UsageError(`--${flag} expects a whole number from ${min} to ${max}, got ${JSON.stringify(text)}`);
  }
  return value;
}

/** A comma-separated list of whole numbers (`--concurrency 64,256`). */
export function wholeNumbers(flag: string, text: string, min: number, max: number): number[] {
  return text.split(',').map((item) => wholeNumber(flag, item, min, max));
}

/** The value of `--<flag>` as a number from 0 to 1 (a share: `--error-rate 0.002`). */
export function shareOption(flag: string, text: string | undefined): number {
  const value = Number(text);
  if (!text || !Number.isFinite(value) || value < 0 || value > 1) {
    throw new UsageError(`--${flag} expects a share from 0 to 1, got ${JSON.stringify(text)}`);
  }
  return value;
}
