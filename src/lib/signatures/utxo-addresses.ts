import { bech32, bech32m, createBase58check } from '@scure/base'
import { ripemd160 } from '@noble/hashes/legacy.js'
import { sha256 } from '@noble/hashes/sha2.js'
import { concatBytes } from '@noble/hashes/utils.js'
import type { Chain } from '../../modules/reference/index.ts'

export type UtxoFamily = 'bitcoin' | 'litecoin'

export interface UtxoNetwork {
  /** The magic that BIP-137 (Bitcoin Core's signmessage) prepends, without its length byte. */
  messageMagic: string
  hrp: string
  p2pkhVersions: readonly number[]
  p2shVersions: readonly number[]
}

// The address forms of each chain, split by what the version byte means (what a signature check needs); the
// reference module's address validation (src/modules/reference/addresses.ts) accepts exactly these.
export const UTXO_NETWORKS: Record<UtxoFamily, Record<Chain, UtxoNetwork>> = {
  bitcoin: {
    main: { messageMagic: 'Bitcoin Signed Message:\n', hrp: 'bc', p2pkhVersions: [0x00], p2shVersions: [0x05] },
    test: { messageMagic: 'Bitcoin Signed Message:\n', hrp: 'tb', p2pkhVersions: [0x6f], p2shVersions: [0xc4] },
  },
  litecoin: {
    // 0x05 and 0xc4 are the P2SH versions Litecoin shared with Bitcoin before it moved to M… and Q….
    main: { messageMagic: 'Litecoin Signed Message:\n', hrp: 'ltc', p2pkhVersions: [0x30], p2shVersions: [0x32, 0x05] },
    test: { messageMagic: 'Litecoin Signed Message:\n', hrp: 'tltc', p2pkhVersions: [0x6f], p2shVersions: [0x3a, 0xc4] },
  },
}

/** An address reduced to what its output script commits to. */
export type UtxoAddress =
  | { type: 'p2pkh'; hash: Uint8Array }
  | { type: 'p2sh'; hash: Uint8Array }
  | { type: 'p2wpkh'; hash: Uint8Array }
  | { type: 'p2tr'; outputKey: Uint8Array }
  // P2WSH and witness versions 2..16: valid addresses whose spending scripts this library does not evaluate.
  | { type: 'other-witness' }

const base58check = createBase58check(sha256)
const BECH32_MAX_LENGTH = 90

/** The address as an output of this network, or undefined when it is not a valid address of this network. */
export function decodeUtxoAddress(network: UtxoNetwork, address: string): UtxoAddress | undefined {
  const separator = address.lastIndexOf('1')
  if (separator > 0 && address.slice(0, separator).toLowerCase() === network.hrp) return decodeSegwit(network, address)
  let payload: Uint8Array
  try {
    payload = base58check.decode(address)
  } catch {
    return undefined
  }
  const [version = -1] = payload
  const hash = payload.subarray(1)
  if (hash.length !== 20) return undefined
  if (network.p2pkhVersions.includes(version)) return { type: 'p2pkh', hash }
  if (network.p2shVersions.includes(version)) return { type: 'p2sh', hash }
  return undefined
}

function decodeSegwit(network: UtxoNetwork, address: string): UtxoAddress | undefined {
  // BIP-350: witness version 0 uses bech32, versions 1..16 bech32m; decodeUnsafe also rejects mixed case.
  const asBech32 = bech32.decodeUnsafe(address, BECH32_MAX_LENGTH)
  const decoded = asBech32 ?? bech32m.decodeUnsafe(address, BECH32_MAX_LENGTH)
  if (!decoded || decoded.prefix !== network.hrp) return undefined
  const [version, ...words] = decoded.words
  const program = bech32.fromWordsUnsafe(words)
  if (version === undefined || version > 16 || !program || program.length < 2 || program.length > 40) return undefined
  if ((version === 0) !== (asBech32 !== undefined)) return undefined
  if (version === 0) {
    if (program.length === 20) return { type: 'p2wpkh', hash: program }
    return program.length === 32 ? { type: 'other-witness' } : undefined
  }
  if (version === 1 && program.length === 32) return { type: 'p2tr', outputKey: program }
  return { type: 'other-witness' }
}

export function hash160(bytes: Uint8Array): Uint8Array {
  return ripemd160(sha256(bytes))
}

/** The 22-byte witness program script of P2WPKH, which P2SH-P2WPKH also uses as its redeem script. */
export function p2wpkhProgramScript(keyHash: Uint8Array): Uint8Array {
  return concatBytes(Uint8Array.of(0x00, 0x14), keyHash)
}

/** BIP-143: a P2WPKH input is signed as if its script were the P2PKH script of the same key hash. */
export function p2pkhScript(keyHash: Uint8Array): Uint8Array {
  return concatBytes(Uint8Array.of(0x76, 0xa9, 0x14), keyHash, Uint8Array.of(0x88, 0xac))
}

export type VerifiableAddress = Exclude<UtxoAddress, { type: 'other-witness' }>

export function scriptPubKey(address: VerifiableAddress): Uint8Array {
  switch (address.type) {
    case 'p2pkh':
      return p2pkhScript(address.hash)
    case 'p2sh':
      return concatBytes(Uint8Array.of(0xa9, 0x14), address.hash, Uint8Array.of(0x87))
    case 'p2wpkh':
      return p2wpkhProgramScript(address.hash)
    case 'p2tr':
      return concatBytes(Uint8Array.of(0x51, 0x20), address.outputKey)
  }
}
