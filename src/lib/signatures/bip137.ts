import { sha256 } from '@noble/hashes/sha2.js'
import { concatBytes, equalBytes } from '@noble/curves/utils.js'
import { utf8ToBytes } from '@noble/hashes/utils.js'
import { compactSize } from './encoding.ts'
import { parseCompact, recoverPublicKey } from './ecdsa.ts'
import { invalid, valid } from './types.ts'
import type { SignatureCheck } from './types.ts'
import { hash160, p2wpkhProgramScript } from './utxo-addresses.ts'
import type { UtxoNetwork, VerifiableAddress } from './utxo-addresses.ts'

/**
 * BIP-137, the signmessage format of Bitcoin Core and its forks: 65 bytes, a header byte then r ‖ s, over
 * SHA256d(magic ‖ message) with each prefixed by its CompactSize length. The header says how to recover the key
 * (recovery id, compressed or not) and which address type the signer meant:
 *   27–30 P2PKH uncompressed, 31–34 P2PKH compressed, 35–38 P2SH-P2WPKH, 39–42 P2WPKH.
 */
export const BIP137_LENGTH = 65

export function isBip137Header(byte: number | undefined): boolean {
  return byte !== undefined && byte >= 27 && byte <= 42
}

export function bip137MessageHash(network: UtxoNetwork, message: Uint8Array): Uint8Array {
  const magic = utf8ToBytes(network.messageMagic)
  return sha256(sha256(concatBytes(compactSize(magic.length), magic, compactSize(message.length), message)))
}

export function verifyBip137(network: UtxoNetwork, address: VerifiableAddress, message: Uint8Array, signature: Uint8Array): SignatureCheck {
  const header = signature[0]
  if (signature.length !== BIP137_LENGTH || header === undefined || !isBip137Header(header)) return invalid('signature-malformed')
  // A taproot output key is tweaked; no ECDSA key recovered from a signature can be matched to it.
  if (address.type === 'p2tr') return invalid('address-unsupported')
  // Bitcoin Core's RecoverCompact accepts high-S signatures, so Bitcoin Core's own vectors need them accepted.
  const rs = parseCompact(signature.subarray(1), { lowS: false })
  if (!rs) return invalid('signature-malformed')
  const kind = (header - 27) >> 2
  const compressed = kind !== 0
  const publicKey = recoverPublicKey(rs, (header - 27) & 3, bip137MessageHash(network, message), compressed)
  if (!publicKey) return invalid('signature-mismatch')
  const keyHash = hash160(publicKey)
  const matches = (type: VerifiableAddress['type']): boolean => address.type === type && equalBytes(address.hash, type === 'p2sh' ? hash160(p2wpkhProgramScript(keyHash)) : keyHash)
  const accepted =
    kind === 0 ? matches('p2pkh')
    // Electrum (and others before BIP-137) sign for segwit addresses with the compressed-P2PKH header: the
    // recovered key proves control of every address derived from it, so its P2SH-P2WPKH and P2WPKH count too.
    : kind === 1 ? matches('p2pkh') || matches('p2sh') || matches('p2wpkh')
    : kind === 2 ? matches('p2sh')
    : matches('p2wpkh')
  return accepted ? valid('bip-137') : invalid('signature-mismatch')
}
