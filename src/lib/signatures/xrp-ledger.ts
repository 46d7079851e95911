import { sha512 } from '@noble/hashes/sha2.js'
import { equalBytes } from '@noble/curves/utils.js'
import { decodeAccountID, decodeXAddress, isValidXAddress } from 'ripple-address-codec'
import type { Chain } from '../../modules/reference/index.ts'
import { decodeHex } from './encoding.ts'
import { isValidSecp256k1Key, parseStrictDer, verifyEcdsa } from './ecdsa.ts'
import { verifyEd25519 } from './solana.ts'
import { invalid, valid } from './types.ts'
import type { SignatureCheck } from './types.ts'
import { hash160 } from './utxo-addresses.ts'

/**
 * XRP Ledger keys sign messages as ripple-keypairs' sign()/verify() do. A secp256k1 key (33 bytes, 02/03…) signs
 * SHA-512Half(message) with a DER signature that rippled accepts only strict and low-S ("fully canonical"); an
 * ed25519 key ("ED" + 32 bytes) signs the message itself. Neither signature reveals the key, so the caller
 * supplies it, and the account it derives (RIPEMD160(SHA256(key)), ED prefix included) must be the address's.
 */

const ED25519_PREFIX = 0xed
const ED25519_SIGNATURE_LENGTH = 64

export function sha512Half(message: Uint8Array): Uint8Array {
  return sha512(message).subarray(0, 32)
}

/** The 20-byte account id a classic or X-address names, when it is an address of this chain. */
function accountIdOf(chain: Chain, address: string): Uint8Array | undefined {
  try {
    if (isValidXAddress(address)) {
      const { accountId, test } = decodeXAddress(address)
      return test === (chain === 'test') ? accountId : undefined
    }
    return decodeAccountID(address)
  } catch {
    return undefined
  }
}

export function verifyXrpLedgerSignature(
  chain: Chain,
  address: string,
  message: Uint8Array,
  signature: string,
  publicKeyHex: string | undefined,
): SignatureCheck {
  const accountId = accountIdOf(chain, address)
  if (accountId?.length !== 20) return invalid('address-unsupported')
  if (publicKeyHex === undefined || publicKeyHex === '') return invalid('public-key-required')
  const publicKey = decodeHex(publicKeyHex)
  const signatureBytes = decodeHex(signature)
  if (publicKey?.length !== 33 || !signatureBytes) return invalid('signature-malformed')
  const isEd25519 = publicKey[0] === ED25519_PREFIX
  if (!isEd25519 && !isValidSecp256k1Key(publicKey)) return invalid('signature-malformed')
  if (!equalBytes(hash160(publicKey), accountId)) return invalid('public-key-mismatch')

  if (isEd25519) {
    if (signatureBytes.length !== ED25519_SIGNATURE_LENGTH) return invalid('signature-malformed')
    return verifyEd25519(signatureBytes, message, publicKey.subarray(1)) ? valid('xrpl') : invalid('signature-mismatch')
  }
  const der = parseStrictDer(signatureBytes)
  if (!der) return invalid('signature-malformed')
  return verifyEcdsa(der, sha512Half(message), publicKey) ? valid('xrpl') : invalid('signature-mismatch')
}
