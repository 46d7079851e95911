import type { Chain } from '../../modules/reference/index.ts'
import { BIP137_LENGTH, isBip137Header, verifyBip137 } from './bip137.ts'
import { decodeBip322, verifyBip322 } from './bip322.ts'
import { invalid } from './types.ts'
import type { SignatureCheck } from './types.ts'
import { decodeUtxoAddress, UTXO_NETWORKS } from './utxo-addresses.ts'
import type { UtxoFamily } from './utxo-addresses.ts'

/**
 * Bitcoin and Litecoin: one verifier, two networks (address versions, bech32 prefix and BIP-137 message magic).
 * An unprefixed base64 signature of 65 bytes with a BIP-137 header byte is BIP-137; anything else is BIP-322.
 * No BIP-322 signature of a supported script is 65 bytes starting with 27–42: as a witness stack that would be
 * its item count, and a transaction starts with its version, 0 or 2.
 */
export function verifyUtxoSignature(family: UtxoFamily, chain: Chain, address: string, message: Uint8Array, signature: string): SignatureCheck {
  const network = UTXO_NETWORKS[family][chain]
  const decoded = decodeUtxoAddress(network, address)
  if (!decoded || decoded.type === 'other-witness') return invalid('address-unsupported')
  const encoding = decodeBip322(signature)
  if (!encoding) return invalid('signature-malformed')
  if (encoding.variant === 'unprefixed' && encoding.bytes.length === BIP137_LENGTH && isBip137Header(encoding.bytes[0])) {
    return verifyBip137(network, decoded, message, encoding.bytes)
  }
  return verifyBip322(decoded, message, encoding)
}
