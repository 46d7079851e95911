/** PostgreSQL error codes the application reacts to (both engines report them the same way). */
export const PG_UNIQUE_VIOLATION = '23505'
export const PG_SERIALIZATION_FAILURE = '40001'
export const PG_DEADLOCK_DETECTED = '40P01'

export function pgErrorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined
}

export function isUniqueViolation(error: unknown, constraint: string): boolean {
  if (pgErrorCode(error) !== PG_UNIQUE_VIOLATION) return false
  const named = (error as { constraint?: unknown }).constraint
  const detail = String((error as { message?: unknown }).message ?? '')
  return named === constraint || detail.includes(constraint)
}
