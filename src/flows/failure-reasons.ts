import { DomainError } from '../lib/errors.ts'
import type { TransactionStatusReason } from '../modules/transactions/index.ts'

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
