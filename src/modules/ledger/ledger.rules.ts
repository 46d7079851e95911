import { createHash } from 'node:crypto'
import BigNumber from 'bignumber.js'
import { conflict, DomainError } from '../../lib/errors.ts'

/** A decimal as written on the wire: digits, an optional fraction, no sign, no exponent. */
const DECIMAL = /^(0|[1-9][0-9]*)(\.[0-9]+)?$/

/** The most digits an amount may have; far beyond any real balance, it keeps numeric arithmetic cheap. */
const MAX_DIGITS = 38

export function amountInvalid(message: string, rule: string, ruleParams?: Record<string, unknown>): DomainError {
  return new DomainError('transaction_amount_invalid', message, { details: { property: 'amount', rule, ...(ruleParams ? { ruleParams } : {}) } })
}

export function insufficientBalance(accountId: string): DomainError {
  return conflict('insufficient_balance', 'The origin does not have enough balance to perform the transaction', { accountId })
}

/**
 * A positive amount of an asset, exactly as given: never rounded. More decimals than the asset has is refused
 * rather than rounded, because silently dropping a fraction would make money appear or vanish.
 */
export function parseAmount(value: string, decimals: number): BigNumber {
  if (typeof value !== 'string' || !DECIMAL.test(value) || value.replace('.', '').length > MAX_DIGITS) {
    throw amountInvalid('The amount must be a positive decimal number such as "12.50"', 'format')
  }
  const amount = new BigNumber(value)
  if (amount.isZero()) throw amountInvalid('The amount must be greater than zero', 'positive')
  if ((amount.decimalPlaces() ?? 0) > decimals) {
    throw amountInvalid(`The amount has more decimal places than the asset allows (${decimals})`, 'decimal-places', { decimals })
  }
  return amount
}

/** One side of a posting: a signed amount (positive credits the account). */
export interface Leg {
  accountId: string
  asset: string
  amount: BigNumber
}

/**
 * Throws unless the legs sum to zero in every asset: a posting never creates or destroys money. Refused as a
 * conflict rather than a crash, since callers may pass accounts chosen by a user (two accounts of different assets).
 */
export function checkBalanced(legs: readonly Leg[]): void {
  if (legs.length < 2) throw new Error('A posting needs at least two legs')
  const sums = new Map<string, BigNumber>()
  for (const leg of legs) {
    if (leg.amount.isZero()) throw new Error(`A posting leg on ${leg.accountId} is zero`)
    sums.set(leg.asset, (sums.get(leg.asset) ?? new BigNumber(0)).plus(leg.amount))
  }
  for (const [asset, sum] of sums) {
    if (!sum.isZero()) {
      throw new DomainError('operation_not_allowed', `The movement does not balance in ${asset}: its legs sum to ${sum.toFixed()}`, { details: { reasons: ['unbalanced-movement'] } })
    }
  }
}

export interface Balance {
  total: BigNumber
  available: BigNumber
}

/** What a movement does to one account: its total and its available balance change by these. */
export interface BalanceDelta {
  total: BigNumber
  available: BigNumber
}

export interface BalanceAccount extends Balance {
  id: string
  mayGoNegative: boolean
}

/**
 * The balance after a change, or the reason it may not happen. Only decreases of `available` are refused: a
 * movement that adds money always goes through, even to an account that is (wrongly) short.
 */
export function applyDelta(account: BalanceAccount, delta: BalanceDelta): Balance {
  const next = { total: account.total.plus(delta.total), available: account.available.plus(delta.available) }
  if (!account.mayGoNegative && delta.available.isNegative() && next.available.isNegative()) throw insufficientBalance(account.id)
  if (next.total.isLessThan(next.available)) throw new Error(`Account ${account.id} would hold more available than in total`)
  return next
}

/** The deltas of a posting's legs: a leg moves the total and the available balance alike. */
export function postingDeltas(legs: readonly Leg[]): Map<string, BalanceDelta> {
  const deltas = new Map<string, BalanceDelta>()
  for (const leg of legs) {
    const current = deltas.get(leg.accountId) ?? { total: new BigNumber(0), available: new BigNumber(0) }
    deltas.set(leg.accountId, { total: current.total.plus(leg.amount), available: current.available.plus(leg.amount) })
  }
  return deltas
}

/**
 * The captured part of a hold is debited from the held account's total only (its available balance already
 * excluded it); what was held beyond it becomes available again.
 */
export function captureDelta(held: BigNumber, captured: BigNumber): BalanceDelta {
  if (captured.isGreaterThan(held)) throw amountInvalid('The capture is larger than the hold', 'exceeds-hold', { held: held.toFixed() })
  return { total: captured.negated(), available: held.minus(captured) }
}

/** A stable digest of what a posting asks, to tell a retry (same request) from a reference reused for another. */
export function requestDigest(value: unknown): string {
  return createHash('sha256').update(JSON.stringify(value)).digest('hex')
}

/** Accounts in the one order every movement locks them in, so that two movements never wait on each other in a cycle. */
export function lockOrder(ids: Iterable<string>): string[] {
  return [...new Set(ids)].sort()
}
