/**
 * How a request for information's status moves: pure, no I/O. The repository writes a move conditionally on the
 * status it moved from, so an answer and an expiry racing each other cannot both win.
 *
 * ```
 *            accept            refuse
 *   ok ◀────────────── pending ──────────────▶ failed
 *                         │
 *                         │ expire (nobody answered in time)
 *                         ▼
 *                      expired
 * ```
 * `ok` releases what it held; `failed` and `expired` fail the transaction (`travel-rule-verification-failed`).
 */
export type RequestForInformationStatus = 'pending' | 'ok' | 'expired' | 'failed'
export type RequestForInformationEvent = 'accept' | 'refuse' | 'expire'

const MOVES: Partial<Record<RequestForInformationStatus, Record<RequestForInformationEvent, RequestForInformationStatus>>> = {
  pending: { accept: 'ok', refuse: 'failed', expire: 'expired' },
}

/** The status after `event`, or null when `from` allows no such move (only a pending request moves). */
export function nextRequestStatus(from: RequestForInformationStatus, event: RequestForInformationEvent): RequestForInformationStatus | null {
  return MOVES[from]?.[event] ?? null
}
