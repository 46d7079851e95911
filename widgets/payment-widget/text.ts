import type { CardDetails, ExternalAccount, Fee } from './types.ts'

const TRANSACTION_FAILURES: Record<string, string> = {
  'card-declined-by-bank': 'your bank declined the card',
  'card-expired': 'the card has expired',
  'card-permanently-declined-by-bank': 'your bank declined the card permanently',
  'card-unauthorized': 'the card could not be verified (authorization or 3-D Secure failed)',
  'card-unsupported': 'this card is not supported',
  'card-withdrawals-unsupported': 'this card does not accept payouts',
  'insufficient-funds': 'there were not enough funds',
  'pending-requests-for-information': 'more information is needed about this payment',
  'provider-maximum-limit-exceeded': 'the amount is above the payment provider\'s limit',
  'screening-verification-failed': 'the payment did not pass screening',
  'travel-rule-verification-failed': 'the travel-rule verification failed',
  velocity: 'too many payments were made in a short time',
  'beneficiary-country-restricted': 'payments to this country are restricted',
  'bank-account-holder-name-mismatch': 'the account holder\'s name does not match',
  'unspecified-error': 'the payment could not be completed',
}

/** Why a transaction failed, in words (unknown reasons read as `unspecified-error`). */
export function failureText(reason: string | undefined): string {
  return TRANSACTION_FAILURES[reason ?? ''] ?? TRANSACTION_FAILURES['unspecified-error']!
}

export function money(amount: string, asset: string): string {
  return `${amount} ${asset}`
}

export function feesText(fees: readonly Fee[]): string {
  if (fees.length === 0) return 'None'
  return fees.map((fee) => money(fee.amount, fee.asset)).join(' + ')
}

const SCHEMES: Record<string, string> = { visa: 'Visa', mastercard: 'Mastercard', amex: 'American Express' }

export function isCardDetails(details: ExternalAccount['details']): details is CardDetails {
  return typeof (details as CardDetails).last4Digits === 'string'
}

/** "Visa debit •••• 4242" */
export function cardName(account: ExternalAccount): string {
  const scheme = SCHEMES[account.network] ?? account.network
  if (!isCardDetails(account.details)) return scheme
  const type = account.details.type ? ` ${account.details.type}` : ''
  return `${scheme}${type} •••• ${account.details.last4Digits}`
}

/** "Expires 04/2030" */
export function expiryText(account: ExternalAccount): string {
  if (!isCardDetails(account.details)) return ''
  const { month, year } = account.details.expiryDate
  return `Expires ${String(month).padStart(2, '0')}/${year}`
}

/** A 4xx of the API, in words; `message` from the server when nothing better is known. */
export function refusalText(code: string, message: string | undefined, details: Record<string, unknown> | undefined): string {
  switch (code) {
    case 'entity_not_found':
      return details?.entity === 'quote' || details?.entity === undefined
        ? 'This offer has expired or cannot be found. Please start again.'
        : `${message ?? 'Not found'}.`
    case 'insufficient_balance':
      return 'There is not enough balance for this payment.'
    case 'token_expired':
    case 'token_invalid':
    case 'token_revoked':
      return 'This payment session has expired. Please start again.'
    case 'user_capability_failure':
      return 'Your account cannot make this payment yet.'
    case 'network_error':
      return 'The payment service cannot be reached. Check your connection and try again.'
    default:
      return message ? `${message.replace(/\.$/, '')}.` : 'Something went wrong.'
  }
}
