import { secp256k1 } from '@noble/curves/secp256k1.js'

type EcdsaSignature = ReturnType<typeof secp256k1.Signature.fromBytes>

/**
 * BIP-66 strict DER (as Bitcoin's script interpreter and rippled require): minimal lengths, no negative or
 * zero-padded integers. The bytes are the DER alone, without Bitcoin's trailing sighash byte.
 */
export function isStrictDer(der: Uint8Array): boolean {
  const at = (index: number): number => der[index] ?? -1
  if (der.length < 8 || der.length > 72) return false
  if (at(0) !== 0x30 || at(1) !== der.length - 2) return false
  const rLength = at(3)
  if (at(2) !== 0x02 || rLength <= 0 || 6 + rLength > der.length) return false
  const sLength = at(5 + rLength)
  if (at(4 + rLength) !== 0x02 || sLength <= 0 || 6 + rLength + sLength !== der.length) return false
  return isMinimalPositiveInteger(der.subarray(4, 4 + rLength)) && isMinimalPositiveInteger(der.subarray(6 + rLength))
}

function isMinimalPositiveInteger(bytes: Uint8Array): boolean {
  const [first = 0, second = 0] = bytes
  if (first & 0x80) return false
  return !(bytes.length > 1 && first === 0 && !(second & 0x80))
}

/** A strict-DER, low-S signature with r and s in range, or undefined. */
export function parseStrictDer(der: Uint8Array): EcdsaSignature | undefined {
  if (!isStrictDer(der)) return undefined
  try {
    const signature = secp256k1.Signature.fromBytes(der, 'der')
    return signature.hasHighS() ? undefined : signature
  } catch {
    return undefined
  }
}

/** r ‖ s, 64 bytes, with r and s in [1, n-1]; any S unless lowS is asked for. */
export function parseCompact(bytes: Uint8Array, { lowS }: { lowS: boolean }): EcdsaSignature | undefined {
  try {
    const signature = secp256k1.Signature.fromBytes(bytes, 'compact')
    if (signature.r === 0n || signature.s === 0n) return undefined
    return lowS && signature.hasHighS() ? undefined : signature
  } catch {
    return undefined
  }
}

/** The signer's public key as an encoded point, or undefined when no point fits (the signature is not for this hash). */
export function recoverPublicKey(
  signature: EcdsaSignature,
  recovery: number,
  messageHash: Uint8Array,
  compressed: boolean,
): Uint8Array | undefined {
  try {
    return signature.addRecoveryBit(recovery).recoverPublicKey(messageHash).toBytes(compressed)
  } catch {
    return undefined
  }
}

/** ECDSA over a 32-byte hash the caller computed; false for an invalid public key as for a wrong signature. */
export function verifyEcdsa(signature: EcdsaSignature, messageHash: Uint8Array, publicKey: Uint8Array): boolean {
  try {
    return secp256k1.verify(signature.toBytes('compact'), messageHash, publicKey, { prehash: false, lowS: false })
  } catch {
    return false
  }
}

export function isValidSecp256k1Key(publicKey: Uint8Array): boolean {
  try {
    secp256k1.Point.fromBytes(publicKey)
    return true
  } catch {
    return false
  }
}
