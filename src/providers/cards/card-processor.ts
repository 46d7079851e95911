/**
 * The card processor: Tessera's link to the card networks. Linking a card verifies it with the issuer (an
 * account verification, a zero-amount authorization carrying the security code), which is the one use the
 * security code has: after it, the code is forgotten. A production adapter (an acquirer's API) implements the
 * same interface as the sandbox simulator.
 */

export interface CardToVerify {
  number: string
  securityCode: string
  expiryDate: { month: number; year: number }
}

/** Why an issuer refused a card, as transaction and external account status reasons name it. */
export type CardDeclineReason = 'card-declined-by-bank' | 'card-expired' | 'card-permanently-declined-by-bank' | 'card-unauthorized' | 'card-unsupported' | 'unspecified-error'

export type CardVerification = { status: 'approved' } | { status: 'declined'; reason: CardDeclineReason }

/** Thrown when the processor cannot be reached: nothing was decided, the caller may try again later. */
export class CardProcessorUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'CardProcessorUnavailableError'
  }
}

export interface CardProcessor {
  /** Verifies a card with its issuer; `key` makes a repeated request the same verification. */
  verify(card: CardToVerify, context: { organizationId: string; key: string }): Promise<CardVerification>
}
