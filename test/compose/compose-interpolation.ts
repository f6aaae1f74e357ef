/**
 * Variable interpolation as Docker Compose applies it to the values of a
 * compose file: `$VAR`, `${VAR}`, `${VAR:-default}`, `${VAR-default}`,
 * `${VAR:?message}`, `${VAR?message}`, `${VAR:+other}`, `${VAR+other}`, and
 * `$$` for a literal `$`. The `:` forms treat an empty value as unset.
 */
export class InterpolationError extends Error {
  override name = 'InterpolationError';
}

const REFERENCE = /\$(?:(\$)|\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*)|)/g;

export function interpolateString(text: string, variables: Readonly<Record<string, string>>, where: string): string {
  return text.replace(
    REFERENCE,
    (match, dollar?: string, braced?: string, operator?: string, argument?: string, bare?: string) => {
      if (dollar) return '$';
      const name = braced ?? bare;
      if (!name) throw new InterpolationError(`${where}: invalid interpolation in ${JSON.stringify(text)}`);
      const value = variables[name];
      const unset = operator?.startsWith(':') ? value === undefined || value === '' : value === undefined;
      switch (operator?.replace(':', '')) {
        case undefined:
          return value ?? '';
        case '-':
          return unset ? (argument ?? '') : (value as string);
        case '?':
          if (unset)
            throw new InterpolationError(`${where}: required variable ${name} is missing a value: ${argument}`);
          return value as string;
        case '+':
          return unset ? '' : (argument ?? '');
        default:
          throw new InterpolationError(`${where}: unsupported interpolation ${match}`);
      }
    },
  );
}

/** Interpolates every string value of a parsed compose document (keys are left alone, as Compose does). */
export function interpolateDocument(value: unknown, variables: Readonly<Record<string, string>>, where = ''): unknown {
  if (typeof value === 'string') return interpolateString(value, variables, where || '(root)');
  if (Array.isArray(value))
    return value.map((item, index) => interpolateDocument(item, variables, `${where}[${index}]`));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key, interpolateDocument(item, variables, `${where}.${key}`)]),
    );
  }
  return value;
}
