import { DomainError } from '../lib/errors.ts'
import type { Tx } from '../db/schema.ts'
import type { TransactionsService, TransactionStatusReason } from '../modules/transactions/index.ts'
import type { Flow } from './runner.ts'

/**
 * The reason a transaction fails with, from the error that failed its flow: a step may name it
 * (`details.reason`), a few domain codes have their own, and everything else is `unspecified-error`.
 */
export function failureReason(error: unknown): TransactionStatusReason {
  if (error instanceof DomainError) {
    const named = error.details?.reason
    if (typeof named === 'string') return named as TransactionStatusReason
    if (error.code === 'insufficient_balance') return 'insufficient-funds'
  }
  return 'unspecified-error'
}

/** Told, in the failing transaction, of a payment to or from an external account that failed, and why. */
export interface PaymentFailureListener {
  paymentFailed(tx: Tx, organizationId: string, externalAccountId: string, reason: string): Promise<void>
}

/**
 * A flow's `onFailed` for movements: the transaction, if not final yet (processing or on hold), fails with the error's
 * reason. With `externalAccounts`, a movement whose outside end is an external account (a withdrawal's destination, a
 * deposit's origin) tells it the reason in the same database transaction.
 */
export function failTransaction(transactions: TransactionsService, externalAccounts?: PaymentFailureListener) {
  return async (tx: Tx, flow: Flow<unknown>, error: unknown): Promise<void> => {
    const rows = await transactions.lockLive(tx, flow.organizationId, [flow.id])
    const reason = failureReason(error)
    await transactions.apply(tx, rows, 'fail', reason)
    if (!externalAccounts) return
    for (const row of rows) {
      const outside = (row.type === 'withdrawal' ? row.destination : row.origin) as { type?: string; id?: string }
      if (outside.type === 'external-account' && outside.id !== undefined) await externalAccounts.paymentFailed(tx, row.organization_id, outside.id, reason)
    }
  }
}
