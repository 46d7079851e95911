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

/** A flow's `onFailed` for movements: the transaction, if not final yet (processing or on hold), fails with the error's reason. */
export function failTransaction(transactions: TransactionsService) {
  return async (tx: Tx, flow: Flow<unknown>, error: unknown): Promise<void> => {
    const rows = await transactions.lockLive(tx, flow.organizationId, [flow.id])
    await transactions.apply(tx, rows, 'fail', failureReason(error))
  }
}
