import type { AddressFamily, Chain } from '../../modules/reference/index.ts'

export type SignatureScheme = 'bip-137' | 'bip-322' | 'eip-191' | 'ed25519' | 'xrpl'

export interface SignedMessage {
  family: AddressFamily
  chain: Chain
  /** The address that claims to have signed. */
  address: string
  /** The exact message, signed as its UTF-8 bytes. */
  message: string
  /** As the wallet produced it: see signingSchemes() for the encoding per family. */
  signature: string
  /** Hex; needed only where the signature does not carry it (XRP Ledger). */
  publicKey?: string
}

export type SignatureFailure =
  | 'signature-malformed'
  | 'public-key-required'
  | 'public-key-mismatch'
  | 'address-unsupported'
  | 'signature-mismatch'

export type SignatureCheck = { valid: true; scheme: SignatureScheme } | { valid: false; reason: SignatureFailure }

export function valid(scheme: SignatureScheme): SignatureCheck {
  return { valid: true, scheme }
}

export function invalid(reason: SignatureFailure): SignatureCheck {
  return { valid: false, reason }
}
