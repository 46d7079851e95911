import type { Flow, WidgetError } from './types.ts'

/** How wallets of a network sign a message: the proof's `type` for a signature, and whether its public key is needed. */
export interface SigningInfo {
  /** Shown to the user: which kind of signature their wallet gives. */
  hint: string
  needsPublicKey: boolean
  /** The scheme of a signature as pasted (`proof.type`). */
  schemeOf(signature: string): string
}

/** A BIP-137 signature is 65 bytes in base64 (88 characters); anything else from a UTXO wallet is read as BIP-322. */
const utxoScheme = (signature: string) => (/^[A-Za-z0-9+/]{86}[A-Za-z0-9+/=]{2}$/.test(signature) ? 'bip-137' : 'bip-322')

const SIGNING: Record<string, SigningInfo> = {
  bitcoin: { hint: 'Use your wallet\'s "Sign message" feature (BIP-322, or the legacy format for P2PKH addresses) and paste the signature, in base64.', needsPublicKey: false, schemeOf: utxoScheme },
  litecoin: { hint: 'Use your wallet\'s "Sign message" feature (BIP-322, or the legacy format) and paste the signature, in base64.', needsPublicKey: false, schemeOf: utxoScheme },
  ethereum: { hint: 'Sign the message with your wallet (personal_sign) and paste the signature: 0x followed by 130 hexadecimal characters.', needsPublicKey: false, schemeOf: () => 'eip-191' },
  solana: { hint: 'Sign the message with your wallet and paste the signature (base58, base64 or hexadecimal).', needsPublicKey: false, schemeOf: () => 'ed25519' },
  'xrp-ledger': { hint: 'Sign the message with your wallet and paste the signature and your public key, both in hexadecimal.', needsPublicKey: true, schemeOf: () => 'xrpl' },
}

export function signingInfo(network: string): SigningInfo {
  return SIGNING[network] ?? { hint: 'Sign the message with your wallet and paste the signature.', needsPublicKey: false, schemeOf: () => 'message-signature' }
}

export const NETWORK_NAMES: Record<string, string> = {
  bitcoin: 'Bitcoin',
  ethereum: 'Ethereum',
  litecoin: 'Litecoin',
  solana: 'Solana',
  'xrp-ledger': 'XRP Ledger',
}

export function networkName(network: string): string {
  return NETWORK_NAMES[network] ?? network
}

export const QUESTIONS: Record<Flow, { title: string; question: string; addresses: string; self: string }> = {
  'deposit-form': { title: 'About this deposit', question: 'Who sent this deposit?', addresses: 'Sent from', self: 'the wallet it was sent from' },
  'withdrawal-form': { title: 'About this withdrawal', question: 'Who receives this withdrawal?', addresses: 'Sent to', self: 'the wallet it goes to' },
}

const REQUEST_FAILURES: Record<string, string> = {
  'counterparty-refused': 'the travel-rule network did not accept the other party of this transfer',
  'transaction-failed': 'the transfer failed for another reason',
}

/** Why a request for information failed, in words. */
export function requestFailureText(reason: string | undefined): string {
  return REQUEST_FAILURES[reason ?? ''] ?? 'the travel-rule network did not accept this information'
}

const PROOF_FAILURES: Record<string, string> = {
  'address-mismatch': 'The signature is for another address than this transfer\'s.',
  'signature-mismatch': 'This signature does not match the message and the address. Sign exactly the message shown, with the key of this address.',
  'signature-malformed': 'This signature cannot be read. Paste it exactly as your wallet gave it.',
  'public-key-required': 'Your public key is needed with this signature.',
  'public-key-mismatch': 'This public key is not the key of this address.',
  'address-unsupported': 'Signatures from this kind of address cannot be checked. Confirm the wallet is yours instead, if that is offered.',
}

export function proofFailureText(reason: unknown): string {
  return PROOF_FAILURES[String(reason)] ?? 'This signature does not prove that the wallet is yours.'
}

/** An error the widget cannot recover from, in words. */
export function refusalText(error: WidgetError): string {
  const reasons = Array.isArray(error.details?.reasons) ? (error.details.reasons as unknown[]) : []
  switch (error.code) {
    case 'token_expired':
    case 'token_invalid':
    case 'token_revoked':
    case 'session_invalid':
      return 'This session has expired. Please close this window and start again.'
    case 'entity_not_found':
      return 'This request cannot be found any more. Please close this window and start again.'
    case 'operation_not_allowed':
      return reasons.includes('request-for-information-update-not-allowed')
        ? 'This information was already given, or can no longer be given. Nothing more is needed here.'
        : `${(error.message ?? 'This is not allowed').replace(/\.$/, '')}.`
    case 'network_error':
      return error.message ?? 'The service cannot be reached. Check your connection and try again.'
    default:
      return error.message ? `${error.message.replace(/\.$/, '')}.` : 'Something went wrong. Please close this window and try again.'
  }
}

/** A value in a fiat currency, for display only: `$1,000`, `$6,512.37`. */
export function fiat(value: number, currency: string): string {
  try {
    const digits = Number.isInteger(value) ? 0 : 2
    return new Intl.NumberFormat('en', { style: 'currency', currency, minimumFractionDigits: digits, maximumFractionDigits: digits }).format(value)
  } catch {
    return `${value.toFixed(2)} ${currency}`
  }
}
