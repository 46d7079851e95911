/**
 * Verifies that the holder of a crypto address signed a message, as the wallets of each address family sign
 * messages: Bitcoin and Litecoin (BIP-137 and BIP-322), Ethereum (EIP-191 personal_sign), Solana (ed25519) and the
 * XRP Ledger (ripple-keypairs, secp256k1 or ed25519).
 *
 * What it guarantees:
 * - `valid: true` only when the signature is a valid signature of exactly these message bytes (UTF-8), under the
 *   scheme it names, by a key that controls exactly this address on this family and chain. The signature is
 *   verified with audited primitives (@noble/curves, @noble/hashes); nothing is trusted from the signature itself.
 * - It never throws, whatever the input (any strings or other values, of any length): every failure is a
 *   `valid: false` with a reason. Inputs over the size caps below are refused before any decoding.
 * - It is pure: no I/O, no clock, no randomness; the same input always gives the same answer.
 *
 * Reasons:
 * - `address-unsupported`: not an address of this family and chain, or of a script this library does not
 *   evaluate (P2WSH, P2SH other than P2SH-P2WPKH, witness v2+, taproot script paths, BIP-322 proof of funds).
 * - `signature-malformed`: the signature (or the public key given with it) cannot be decoded, or is
 *   non-canonical (high-S where the scheme forbids it, non-strict DER, a sighash type other than ALL).
 * - `public-key-required` / `public-key-mismatch`: the XRP Ledger needs the signer's public key, and it must be
 *   the key of the address.
 * - `signature-mismatch`: well-formed, but not a signature of this message by this address.
 */
import { utf8ToBytes } from '@noble/hashes/utils.js'
import type { AddressFamily } from '../../modules/reference/index.ts'
import { verifyUtxoSignature } from './bitcoin.ts'
import { verifyEthereumSignature } from './ethereum.ts'
import { verifySolanaSignature } from './solana.ts'
import { invalid } from './types.ts'
import type { SignatureCheck, SignedMessage, SignatureScheme } from './types.ts'
import { verifyXrpLedgerSignature } from './xrp-ledger.ts'

export type { SignatureCheck, SignatureFailure, SignatureScheme, SignedMessage } from './types.ts'

/** Limits on the input, in UTF-16 code units for strings and in bytes for the encoded message. */
export const SIGNATURE_LIMITS = { message: 10_240, signature: 10_240, address: 128, publicKey: 200 } as const

const FAMILIES: readonly AddressFamily[] = ['bitcoin', 'litecoin', 'ethereum', 'xrp-ledger', 'solana']

export function verifyMessageSignature(input: SignedMessage): SignatureCheck {
  try {
    return verify(input)
  } catch {
    // Every decoder above is guarded; this stands behind them in case a library throws where it documents a
    // return value, so that the promise "never throws" does not depend on third-party code.
    return invalid('signature-malformed')
  }
}

function verify(input: SignedMessage): SignatureCheck {
  if (typeof input !== 'object' || input === null) return invalid('signature-malformed')
  const { family, chain, address, message, signature, publicKey } = input as Partial<Record<keyof SignedMessage, unknown>>
  if (!isFamily(family) || (chain !== 'main' && chain !== 'test')) return invalid('address-unsupported')
  if (typeof address !== 'string' || address.length > SIGNATURE_LIMITS.address) return invalid('address-unsupported')
  if (!isString(message, SIGNATURE_LIMITS.message) || !isString(signature, SIGNATURE_LIMITS.signature)) return invalid('signature-malformed')
  if (publicKey !== undefined && !isString(publicKey, SIGNATURE_LIMITS.publicKey)) return invalid('signature-malformed')
  // A UTF-8 encoding is never shorter than the string's UTF-16 length, so the check above bounds this work.
  const messageBytes = utf8ToBytes(message)
  if (messageBytes.length > SIGNATURE_LIMITS.message) return invalid('signature-malformed')

  switch (family) {
    case 'bitcoin':
    case 'litecoin':
      return verifyUtxoSignature(family, chain, address, messageBytes, signature)
    case 'ethereum':
      return verifyEthereumSignature(address, messageBytes, signature)
    case 'solana':
      return verifySolanaSignature(address, messageBytes, signature)
    case 'xrp-ledger':
      return verifyXrpLedgerSignature(chain, address, messageBytes, signature, publicKey)
  }
}

function isFamily(value: unknown): value is AddressFamily {
  return FAMILIES.includes(value as AddressFamily)
}

function isString(value: unknown, maxLength: number): value is string {
  return typeof value === 'string' && value.length <= maxLength
}

/** Bitcoin and Litecoin sign alike; only the message format's name differs. */
const utxoSchemes = (coin: 'Bitcoin' | 'Litecoin') => ({
  schemes: ['bip-137', 'bip-322'] as SignatureScheme[],
  encoding:
    `base64: BIP-137 (65 bytes, the "${coin} Signed Message" format) for P2PKH, P2SH-P2WPKH and P2WPKH; BIP-322 ` +
    '"simple" (witness stack, optionally prefixed "smp") for P2WPKH, P2SH-P2WPKH and P2TR, or "full" (the to_sign ' +
    'transaction, prefixed "ful") for those and P2PKH',
  needsPublicKey: false,
})

const SCHEMES: Record<AddressFamily, { schemes: SignatureScheme[]; encoding: string; needsPublicKey: boolean }> = {
  bitcoin: utxoSchemes('Bitcoin'),
  litecoin: utxoSchemes('Litecoin'),
  ethereum: {
    schemes: ['eip-191'],
    encoding: '0x-prefixed hex of 65 bytes r ‖ s ‖ v (v 27/28 or 0/1), as personal_sign returns it',
    needsPublicKey: false,
  },
  solana: {
    schemes: ['ed25519'],
    encoding: 'the 64-byte ed25519 signature of the message bytes, in base58, base64 or hex',
    needsPublicKey: false,
  },
  'xrp-ledger': {
    schemes: ['xrpl'],
    encoding:
      'hex, as ripple-keypairs sign() returns it: DER for a secp256k1 key, 64 bytes for an ed25519 key; with the ' +
      "signer's public key in hex (33 bytes, ED-prefixed for ed25519)",
    needsPublicKey: true,
  },
}

/** For documentation and UIs: which scheme(s) and signature encoding a wallet on this family uses. */
export function signingSchemes(family: AddressFamily): { schemes: SignatureScheme[]; encoding: string; needsPublicKey: boolean } {
  const { schemes, encoding, needsPublicKey } = SCHEMES[family]
  return { schemes: [...schemes], encoding, needsPublicKey }
}
