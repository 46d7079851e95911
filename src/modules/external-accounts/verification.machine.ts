/**
 * How a verification of a crypto external account moves: pure, no I/O. Every status change of a verification goes
 * through `nextVerificationStatus`; the repository then writes it conditionally on the status it moved from, so two
 * answers at once can never both complete the same verification.
 *
 * ```
 *    start            prove (a proof that holds)
 *   ───────▶ pending ────────────────────────────▶ completed
 *              │  ▲
 *              └──┘ a refused proof changes nothing
 * ```
 * Each level (`declared`, `verified`) is started once per external account and completed once; a completed level
 * is final. Starting a level that exists is no move: the existing verification is the answer.
 */

export const VERIFICATION_LEVELS = ['declared', 'verified'] as const
export type VerificationLevel = (typeof VERIFICATION_LEVELS)[number]

export type VerificationStatus = 'pending' | 'completed'

export type VerificationEvent =
  /** The verification is asked for: the user has a proof to give. */
  | 'start'
  /** A proof was given and holds: a self-declaration that matches its schema, or a signature that verifies. */
  | 'prove'

/** `null` is "no verification of that level yet". */
const MOVES: Record<VerificationStatus | 'none', Partial<Record<VerificationEvent, VerificationStatus>>> = {
  none: { start: 'pending' },
  pending: { prove: 'completed' },
  completed: {},
}

/** The status after `event`, or null when the move is not allowed from `from` (a completed level allows none). */
export function nextVerificationStatus(from: VerificationStatus | null, event: VerificationEvent): VerificationStatus | null {
  return MOVES[from ?? 'none'][event] ?? null
}

/** A completed verification never changes again. */
export function isFinal(status: VerificationStatus): boolean {
  return status === 'completed'
}

/** The type of the request for information behind each level. */
export const REQUEST_TYPES: Record<VerificationLevel, 'crypto-address-travel-rule' | 'crypto-address-verification'> = {
  declared: 'crypto-address-travel-rule',
  verified: 'crypto-address-verification',
}

/** The request for information's status for a verification's: `ok` once answered, `pending` before. */
export function requestStatus(status: VerificationStatus): 'ok' | 'pending' {
  return status === 'completed' ? 'ok' : 'pending'
}

export function isVerificationLevel(value: string): value is VerificationLevel {
  return (VERIFICATION_LEVELS as readonly string[]).includes(value)
}
