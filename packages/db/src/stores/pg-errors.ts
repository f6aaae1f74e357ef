/** The constraint name when `error` is a PostgreSQL unique violation (23505). */
export function isUniqueViolation(error: unknown): string | undefined {
  const e = error as { code?: string; constraint?: string };
  return e?.code === '23505' ? (e.constraint ?? 'unknown') : undefined;
}

/** True for a foreign-key violation (23503). */
export function isForeignKeyViolation(error: unknown): boolean {
  return (error as { code?: string })?.code === '23503';
}
