/**
 * The card processor: Tessera's link to the card networks. Linking a card verifies it with the issuer (an
 * account verification, a zero-amount authorization carrying the security code), which is the one use the
 * security code has: after it, the code is forgotten. A card deposit is then a payment on the stored card:
 * authorized (with 3-D Secure: frictionless, or a challenge the cardholder answers on the issuer's page),
 * captured, and voided or refunded when it must be undone. A production adapter (an acquirer's API) implements
 * the same interface as the sandbox simulator.
 */

export interface CardToVerify {
  number: string
  securityCode: string
  expiryDate: { month: number; year: number }
}

/** Why an issuer refused a card, as transaction and external account status reasons name it. */
export type CardDeclineReason = 'card-declined-by-bank' | 'card-expired' | 'card-permanently-declined-by-bank' | 'card-unauthorized' | 'card-unsupported' | 'unspecified-error'

/** Why a card payment was refused (spec §7): the issuer's reasons, and the processor's own limits. */
export type CardPaymentFailureReason = CardDeclineReason | 'insufficient-funds' | 'velocity' | 'provider-maximum-limit-exceeded' | 'amount-limit-exceed'

export type CardVerification = { status: 'approved' } | { status: 'declined'; reason: CardDeclineReason }

/** Thrown when the processor cannot be reached: nothing was decided, the caller may try again later. */
export class CardProcessorUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'CardProcessorUnavailableError'
  }
}

/** A payment on a stored card. */
export interface CardPaymentRequest {
  /** Makes a repeated request the same authorization, whatever the retries and crashes. */
  key: string
  organizationId: string
  /** Tessera's reference of the payment (the transaction id). */
  reference: string
  card: { number: string; expiryDate: { month: number; year: number }; network: string }
  amount: string
  asset: string
  /** Where the issuer sends the cardholder back after a 3-D Secure challenge. */
  returnUrl: string
}

/**
 * Where an authorization stands: approved (money held on the card, to be captured), waiting for the cardholder to
 * answer a 3-D Secure challenge at `challengeUrl` before `expiresAt`, or declined (a failed or abandoned
 * challenge is a decline, `card-unauthorized`).
 */
export type CardAuthorization =
  | { status: 'authorized'; authorizationId: string }
  | { status: 'challenge'; authorizationId: string; challengeUrl: string; expiresAt: Date }
  | { status: 'declined'; authorizationId: string | null; reason: CardPaymentFailureReason }

export type CardCapture = { status: 'captured'; captureId: string } | { status: 'declined'; reason: CardPaymentFailureReason }

export interface CardProcessor {
  /** Verifies a card with its issuer; `key` makes a repeated request the same verification. */
  verify(card: CardToVerify, context: { organizationId: string; key: string }): Promise<CardVerification>
  /** Asks the issuer to authorize a payment; the answer may be a 3-D Secure challenge for the cardholder. */
  authorize(request: CardPaymentRequest): Promise<CardAuthorization>
  /** Where authorizations stand now (a challenge answered, abandoned or expired); unknown ids are left out. */
  authorizations(organizationId: string, authorizationIds: readonly string[]): Promise<Map<string, CardAuthorization>>
  /** Takes the authorized money; the same key captures once, whatever the retries. */
  capture(request: { organizationId: string; authorizationId: string; key: string }): Promise<CardCapture>
  /** Releases an authorization that will not be captured (idempotent). */
  void(request: { organizationId: string; authorizationId: string; key: string }): Promise<void>
  /** Gives captured money back to the card, in part or whole; the same key refunds once. */
  refund(request: { organizationId: string; authorizationId: string; amount: string; key: string }): Promise<{ status: 'refunded'; refundId: string } | { status: 'declined'; reason: 'amount-limit-exceed' | 'unspecified-error' }>
}
