import { ed25519 } from '@noble/curves/ed25519.js'
import { decodeBase58, decodeBase64, decodeHex } from './encoding.ts'
import { invalid, valid } from './types.ts'
import type { SignatureCheck } from './types.ts'

/**
 * Solana wallets' `signMessage`: a plain ed25519 signature over the message bytes by the key the address encodes
 * (an address is the base58 public key). Wallets hand back raw bytes, which apps encode as base58, base64 or hex.
 */

const SIGNATURE_LENGTH = 64
const PUBLIC_KEY_LENGTH = 32
// 64 bytes are at most 130 characters (hex with 0x); base58 decoding is quadratic, so longer input stops here.
const MAX_SIGNATURE_TEXT = 130

export function verifySolanaSignature(address: string, message: Uint8Array, signature: string): SignatureCheck {
  const publicKey = decodeBase58(address)
  if (publicKey?.length !== PUBLIC_KEY_LENGTH) return invalid('address-unsupported')
  if (signature.length > MAX_SIGNATURE_TEXT) return invalid('signature-malformed')
  // The three alphabets overlap, so a string may decode under more than one; only 64-byte readings are signatures.
  const readings = [decodeBase58(signature), decodeBase64(signature), decodeHex(signature)].filter(
    (bytes): bytes is Uint8Array => bytes?.length === SIGNATURE_LENGTH,
  )
  if (readings.length === 0) return invalid('signature-malformed')
  return readings.some((bytes) => verifyEd25519(bytes, message, publicKey)) ? valid('ed25519') : invalid('signature-mismatch')
}

/** RFC 8032 verification rather than ZIP-215's: non-canonical encodings, which malleate a signature, are refused. */
export function verifyEd25519(signature: Uint8Array, message: Uint8Array, publicKey: Uint8Array): boolean {
  try {
    return ed25519.verify(signature, message, publicKey, { zip215: false })
  } catch {
    return false
  }
}
