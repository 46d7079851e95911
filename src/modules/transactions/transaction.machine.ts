/**
 * How a transaction's status moves, per kind of movement: pure, no I/O. Every status change of a transaction
 * goes through `nextStatus`; the repository then writes it conditionally on the status it moved from, so two
 * writers can never both move the same transaction.
 *
 * ```
 *                 settle                                 hold
 *   processing ─────────▶ completed       processing ─────────▶ on-hold
 *        │                                     ▲                   │
 *        │ fail                                └────── release ────┤
 *        ▼                                                         │ fail
 *      failed ◀────────────────────────────────────────────────────┘
 * ```
 * Deposits and withdrawals may be put on hold (a request for information of the travel rule) and released; trades
 * and transfers between a user's own accounts settle or fail.
 */

export const TRANSACTION_KINDS = ['deposit', 'trade', 'transfer', 'withdrawal'] as const
export type TransactionKind = (typeof TRANSACTION_KINDS)[number]

export type TransactionState = 'processing' | 'on-hold' | 'completed' | 'failed'

export type TransactionEvent =
  /** The money arrived where it goes: the movement is complete. */
  | 'settle'
  /** The movement will not happen (any hold on its money was released first). */
  | 'fail'
  /** It waits for something outside the flow (a review, a request for information). */
  | 'hold'
  /** What it waited for came: it goes on. */
  | 'release'

type Table = Partial<Record<TransactionState, Partial<Record<TransactionEvent, TransactionState>>>>

const SETTLE_OR_FAIL: Table = {
  processing: { settle: 'completed', fail: 'failed' },
}

const WITH_HOLDS: Table = {
  processing: { settle: 'completed', fail: 'failed', hold: 'on-hold' },
  'on-hold': { release: 'processing', fail: 'failed' },
}

const MACHINES: Record<TransactionKind, Table> = {
  deposit: WITH_HOLDS,
  trade: SETTLE_OR_FAIL,
  transfer: SETTLE_OR_FAIL,
  withdrawal: WITH_HOLDS,
}

export function isTransactionKind(value: string): value is TransactionKind {
  return (TRANSACTION_KINDS as readonly string[]).includes(value)
}

/** The status after `event`, or null when the kind does not allow that move from `from` (final states allow none). */
export function nextStatus(kind: TransactionKind, from: TransactionState, event: TransactionEvent): TransactionState | null {
  return MACHINES[kind][from]?.[event] ?? null
}

/** Completed and failed transactions never change again. */
export function isFinal(status: TransactionState): boolean {
  return status === 'completed' || status === 'failed'
}
