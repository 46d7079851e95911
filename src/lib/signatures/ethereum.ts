import { keccak_256 } from '@noble/hashes/sha3.js'
import { bytesToHex, concatBytes, utf8ToBytes } from '@noble/hashes/utils.js'
import { decodeHex } from './encoding.ts'
import { parseCompact, recoverPublicKey } from './ecdsa.ts'
import { invalid, valid } from './types.ts'
import type { SignatureCheck } from './types.ts'

/**
 * EIP-191 version 0x45 (`personal_sign`, `eth_sign` in today's wallets): keccak256("\x19Ethereum Signed Message:\n"
 * ‖ decimal byte length ‖ message), signed r ‖ s ‖ v. The address is the last 20 bytes of keccak256 of the
 * uncompressed public key, so the key is recovered and hashed, then compared with the claimed address.
 */

const ADDRESS = /^0x[0-9a-fA-F]{40}$/
const SIGNATURE_LENGTH = 65

export function eip191MessageHash(message: Uint8Array): Uint8Array {
  return keccak_256(concatBytes(utf8ToBytes(`\x19Ethereum Signed Message:\n${message.length}`), message))
}

export function ethereumAddressOf(uncompressedPublicKey: Uint8Array): string {
  return `0x${bytesToHex(keccak_256(uncompressedPublicKey.subarray(1)).subarray(-20))}`
}

export function verifyEthereumSignature(address: string, message: Uint8Array, signature: string): SignatureCheck {
  // Case only carries the EIP-55 checksum, which validating the address (not verifying a signature) is for.
  if (!ADDRESS.test(address)) return invalid('address-unsupported')
  const bytes = decodeHex(signature)
  const v = bytes?.[64]
  if (bytes?.length !== SIGNATURE_LENGTH || v === undefined) return invalid('signature-malformed')
  // Wallets write the recovery id as 27/28 (the yellow paper's v) or as 0/1.
  const recovery = v >= 27 ? v - 27 : v
  if (recovery !== 0 && recovery !== 1) return invalid('signature-malformed')
  // EIP-2: a high-S signature is the malleated twin of a low-S one; no conforming signer produces it.
  const rs = parseCompact(bytes.subarray(0, 64), { lowS: true })
  if (!rs) return invalid('signature-malformed')
  const publicKey = recoverPublicKey(rs, recovery, eip191MessageHash(message), false)
  if (!publicKey) return invalid('signature-mismatch')
  return ethereumAddressOf(publicKey) === address.toLowerCase() ? valid('eip-191') : invalid('signature-mismatch')
}
