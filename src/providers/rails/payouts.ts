/**
 * Orders Tessera sends out over a rail: a payout (money leaves for a bank account, a card or a crypto address, a
 * withdrawal) or a collection (money is pulled from a user's bank account, a deposit by direct debit). The rail
 * takes an order now and reports its outcome later, as real rails do: a bank transfer settles or is returned, a
 * card credit is approved or declined, a chain transaction confirms or fails.
 *
 * Every order carries an idempotency key that Tessera derives from the transaction and the step that sends it:
 * sending the same key again (after a crash between the call and the commit that records it) is the same order,
 * never a second one. A production adapter (a partner bank's payments API, a card processor's push-to-card, a
 * custody platform's withdrawals) implements the same interface.
 */

/** Where a payout goes, or where a collection pulls from, with what the rail needs to reach it. */
export type RailCounterparty =
  /** A US account's numbers reach it over ACH and the other US rails (wire, FedNow, RTP). */
  | { kind: 'bank'; network: 'ach' | 'wire' | 'fednow' | 'rtp'; routingNumber: string; accountNumber: string; accountType: string }
  | { kind: 'bank'; network: 'fps'; sortCode: string; accountNumber: string }
  | { kind: 'bank'; network: 'sepa'; iban: string; bic: string }
  /** The card number is opened from its sealed form only to make the call, and never kept by Tessera's side of it. */
  | { kind: 'card'; network: string; number: string; expiryDate: { month: number; year: number } }
  | { kind: 'crypto'; network: string; address: string; reference?: string }

export interface RailOrder {
  /** The same key is the same order, however many times it is sent. */
  key: string
  organizationId: string
  direction: 'payout' | 'collection'
  asset: string
  /** A positive decimal string in the asset. */
  amount: string
  counterparty: RailCounterparty
  /** What the beneficiary's statement shows (Tessera sends the transaction id). */
  reference: string
}

/** Why a rail refused or failed an order: values of the transaction status reasons. */
export type RailFailureReason =
  | 'bank-account-holder-name-mismatch'
  | 'beneficiary-country-restricted'
  | 'card-declined-by-bank'
  | 'card-expired'
  | 'card-permanently-declined-by-bank'
  | 'card-unsupported'
  | 'insufficient-funds'
  | 'provider-maximum-limit-exceeded'
  | 'screening-verification-failed'
  | 'unspecified-error'

/** The rail's answer to a submitted order: taken (its outcome comes later) or refused at once. */
export type RailReceipt = { key: string; status: 'accepted'; orderId: string } | { key: string; status: 'rejected'; reason: RailFailureReason }

export type RailOutcome =
  /** Not known yet; ask again at `retryAt` at the earliest. */
  | { status: 'pending'; retryAt: Date }
  /** The money arrived (payout) or was received (collection); `networkReference` is the rail's own trace (a transaction hash for crypto). */
  | { status: 'completed'; networkReference?: string }
  | { status: 'failed'; reason: RailFailureReason }

/** Thrown when the rail cannot be reached or answers with an error of its own: the call is retried later. */
export class RailUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'RailUnavailableError'
  }
}

export interface PaymentRail {
  /** How the rail's crypto payouts happen: on the chain, or simulated (the sandbox, whose hashes are made up). */
  readonly cryptoExecution: 'onchain' | 'simulated'
  /** Sends orders; one receipt per order, in order. Rejects with `RailUnavailableError` when the rail cannot answer. */
  submit(orders: readonly RailOrder[]): Promise<RailReceipt[]>
  /** The outcome of accepted orders, by order id; an id the rail does not know is an error (a bug, or another rail's). */
  outcomes(orderIds: readonly string[]): Promise<Map<string, RailOutcome>>
}
