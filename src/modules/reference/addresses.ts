import { base58, bech32, bech32m, createBase58check } from '@scure/base'
import { sha256 } from '@noble/hashes/sha2.js'
import { keccak_256 } from '@noble/hashes/sha3.js'
import { utf8ToBytes } from '@noble/hashes/utils.js'
import { UTXO_NETWORKS as SIGNATURE_UTXO_NETWORKS } from '../../lib/signatures/utxo-addresses.ts'
import { codec as xrpCodec, decodeXAddress, isValidClassicAddress, isValidXAddress, xAddressToClassicAddress } from 'ripple-address-codec'

export type AddressFamily = 'bitcoin' | 'litecoin' | 'ethereum' | 'xrp-ledger' | 'solana'
/** Which chain's address forms are accepted: sandbox deployments use test chains, production the main chains. */
export type Chain = 'main' | 'test'
export interface AddressError { code: 'address_invalid' | 'reference_invalid' | 'reference_missing'; message: string; details?: Record<string, unknown> }
export type AddressCheck = { isValid: true } | { isValid: false; error: AddressError }

/** Why an address was rejected; returned as `details.reason`. */
export type AddressRejection =
  | 'empty'
  | 'too_long'
  | 'invalid_characters'
  | 'checksum_mismatch'
  | 'invalid_length'
  | 'unknown_prefix'
  | 'wrong_network'
  | 'mixed_case'
  | 'invalid_witness_version'
  | 'wrong_checksum_variant'
  | 'invalid_padding'
  | 'invalid_witness_program'
  | 'invalid_tag_field'

const VALID: AddressCheck = { isValid: true }

// No address form here is longer than 90 characters (the bech32 limit); the cap also bounds base58's quadratic decoding.
const MAX_ADDRESS_LENGTH = 128

export function validateAddress(family: AddressFamily, chain: Chain, address: string, reference?: string): AddressCheck {
  const rejection = address === '' ? 'empty' : address.length > MAX_ADDRESS_LENGTH ? 'too_long' : undefined
  if (rejection !== undefined) return invalidAddress(rejection)
  switch (family) {
    case 'bitcoin':
    case 'litecoin':
      return withoutReference(checkUtxoAddress(UTXO_NETWORKS[family], chain, address), reference)
    case 'ethereum':
      return withoutReference(checkEthereumAddress(address), reference)
    case 'solana':
      return withoutReference(checkSolanaAddress(address), reference)
    case 'xrp-ledger':
      return checkXrpAddress(chain, address, reference)
  }
}

function invalidAddress(reason: AddressRejection): AddressCheck {
  return { isValid: false, error: { code: 'address_invalid', message: 'The address is invalid', details: { reason } } }
}

function withoutReference(rejection: AddressRejection | undefined, reference: string | undefined): AddressCheck {
  if (rejection !== undefined) return invalidAddress(rejection)
  if (reference !== undefined) {
    return { isValid: false, error: { code: 'reference_invalid', message: 'This network does not take a reference', details: { rule: 'unsupported' } } }
  }
  return VALID
}

// ---------------------------------------------------------------------------------------------------------------
// Bitcoin and Litecoin: base58check (P2PKH/P2SH) and segwit (BIP-173 bech32 for v0, BIP-350 bech32m for v1..v16).

interface UtxoChainParams { hrp: string; base58Versions: readonly number[] }
type UtxoNetwork = Record<Chain, UtxoChainParams>

/** The signature library's tables (src/lib/signatures), read here as the address forms each chain accepts. */
const utxoNetwork = (family: 'bitcoin' | 'litecoin'): UtxoNetwork => {
  const chain = (which: Chain) => {
    const { hrp, p2pkhVersions, p2shVersions } = SIGNATURE_UTXO_NETWORKS[family][which]
    return { hrp, base58Versions: [...p2pkhVersions, ...p2shVersions] }
  }
  return { main: chain('main'), test: chain('test') }
}
const UTXO_NETWORKS: Record<'bitcoin' | 'litecoin', UtxoNetwork> = { bitcoin: utxoNetwork('bitcoin'), litecoin: utxoNetwork('litecoin') }

const base58check = createBase58check(sha256)
const HASH160_LENGTH = 20
const BECH32_MAX_LENGTH = 90

function otherChain(chain: Chain): Chain {
  return chain === 'main' ? 'test' : 'main'
}

function checkUtxoAddress(network: UtxoNetwork, chain: Chain, address: string): AddressRejection | undefined {
  // The segwit prefix is a cheap string test; base58 decoding is quadratic, so it comes second.
  const lower = address.toLowerCase()
  const hrp = lower.slice(0, Math.max(lower.lastIndexOf('1'), 0))
  if (hrp === network.main.hrp || hrp === network.test.hrp) return checkSegwitAddress(network[chain].hrp, address)

  const payload = decodeBase58check(address)
  if (payload !== undefined) return checkBase58Payload(network, chain, payload)
  // A well-formed bech32 string of some other coin or network (e.g. regtest `bcrt`): say so rather than "checksum".
  if (bech32.decodeUnsafe(address, BECH32_MAX_LENGTH) || bech32m.decodeUnsafe(address, BECH32_MAX_LENGTH)) return 'unknown_prefix'
  return base58Failure(address)
}

function decodeBase58check(address: string): Uint8Array | undefined {
  try {
    return base58check.decode(address)
  } catch {
    return undefined
  }
}

const BASE58_ALPHABET = /^[1-9A-HJ-NP-Za-km-z]+$/

function base58Failure(address: string): AddressRejection {
  return BASE58_ALPHABET.test(address) ? 'checksum_mismatch' : 'invalid_characters'
}

function checkBase58Payload(network: UtxoNetwork, chain: Chain, payload: Uint8Array): AddressRejection | undefined {
  if (payload.length !== 1 + HASH160_LENGTH) return 'invalid_length'
  const version = payload[0] ?? -1
  if (network[chain].base58Versions.includes(version)) return undefined
  if (network[otherChain(chain)].base58Versions.includes(version)) return 'wrong_network'
  return 'unknown_prefix'
}

const BECH32_DATA = /^[qpzry9x8gf2tvdw0s3jn54khce6mua7l]*$/

// Checks in the order of BIP-350's reference decoder, so that each rejection names the rule the BIPs give for it.
function checkSegwitAddress(expectedHrp: string, address: string): AddressRejection | undefined {
  if (address.length > BECH32_MAX_LENGTH) return 'too_long'
  const lower = address.toLowerCase()
  if (address !== lower && address !== address.toUpperCase()) return 'mixed_case'
  if (!BECH32_DATA.test(lower.slice(lower.lastIndexOf('1') + 1))) return 'invalid_characters'
  const asBech32 = bech32.decodeUnsafe(address, BECH32_MAX_LENGTH)
  const asBech32m = asBech32 ? undefined : bech32m.decodeUnsafe(address, BECH32_MAX_LENGTH)
  const decoded = asBech32 || asBech32m
  if (!decoded) return 'checksum_mismatch'
  if (decoded.prefix !== expectedHrp) return 'wrong_network'

  const [version, ...programWords] = decoded.words
  const program = bech32.fromWordsUnsafe(programWords)
  if (!program) return 'invalid_padding'
  if (version === undefined || program.length < 2 || program.length > 40) return 'invalid_witness_program'
  if (version > 16) return 'invalid_witness_version'
  // BIP-141: a v0 program is a 20-byte key hash (P2WPKH) or a 32-byte script hash (P2WSH).
  if (version === 0 && program.length !== 20 && program.length !== 32) return 'invalid_witness_program'
  // BIP-350: v0 keeps bech32 and v1..v16 use bech32m. This supersedes BIP-173, which used bech32 for every version.
  if ((version === 0) !== Boolean(asBech32)) return 'wrong_checksum_variant'
  return undefined
}

// ---------------------------------------------------------------------------------------------------------------
// Ethereum: 20 bytes as `0x` + 40 hex digits; mixed case must carry the EIP-55 checksum.

const ETHEREUM_ADDRESS = /^0x[0-9a-fA-F]{40}$/

function checkEthereumAddress(address: string): AddressRejection | undefined {
  if (!ETHEREUM_ADDRESS.test(address)) {
    return address.startsWith('0x') && /^0x[0-9a-fA-F]*$/.test(address) ? 'invalid_length' : 'invalid_characters'
  }
  const hex = address.slice(2)
  const lower = hex.toLowerCase()
  // A single-case address carries no checksum (EIP-55 keeps them valid for compatibility).
  if (hex === lower || hex === hex.toUpperCase()) return undefined
  const hash = keccak_256(utf8ToBytes(lower))
  for (let i = 0; i < hex.length; i++) {
    const char = hex.charAt(i)
    if (char >= '0' && char <= '9') continue
    const nibble = ((hash[i >> 1] ?? 0) >> (i % 2 === 0 ? 4 : 0)) & 0x0f
    const mustBeUpper = nibble >= 8
    if ((char === char.toUpperCase()) !== mustBeUpper) return 'checksum_mismatch'
  }
  return undefined
}

// ---------------------------------------------------------------------------------------------------------------
// Solana: a 32-byte ed25519 public key (or program-derived address) in base58; there is no checksum.

const SOLANA_KEY_LENGTH = 32

function checkSolanaAddress(address: string): AddressRejection | undefined {
  let bytes: Uint8Array
  try {
    bytes = base58.decode(address)
  } catch {
    return 'invalid_characters'
  }
  return bytes.length === SOLANA_KEY_LENGTH ? undefined : 'invalid_length'
}

// ---------------------------------------------------------------------------------------------------------------
// XRP Ledger: classic `r…` addresses on both chains; X-addresses (XLS-5) whose network flag must match the chain.

const MAX_DESTINATION_TAG = 4294967295
// Canonical decimal only: no sign, no leading zeros, no exponent or whitespace.
const DESTINATION_TAG = /^(?:0|[1-9][0-9]{0,9})$/
// XLS-5: 2-byte prefix, 20-byte account id, 1 flags byte, 8 tag bytes.
const X_ADDRESS_LENGTH = 31
const X_ADDRESS_PREFIXES: Record<Chain, readonly [number, number]> = { main: [0x05, 0x44], test: [0x04, 0x93] }

type XAddressParts = { test: boolean; tag: number | false }

function checkXrpAddress(chain: Chain, address: string, reference: string | undefined): AddressCheck {
  let xAddress: XAddressParts | undefined
  if (!isValidClassicAddress(address)) {
    const parsed = parseXAddress(address)
    if (typeof parsed === 'string') return invalidAddress(parsed)
    if (parsed.test !== (chain === 'test')) return invalidAddress('wrong_network')
    xAddress = parsed
  }
  if (reference === undefined) return VALID

  if (!DESTINATION_TAG.test(reference) || Number(reference) > MAX_DESTINATION_TAG) {
    return {
      isValid: false,
      error: {
        code: 'reference_invalid',
        message: 'XRP destination tag must be an integer between 0 and 4294967295',
        details: { rule: 'range', min: 0, max: MAX_DESTINATION_TAG },
      },
    }
  }
  const tag = Number(reference)
  if (xAddress !== undefined && xAddress.tag !== tag) {
    // An X-address states its destination tag, or that there is none; a separate reference may only repeat it.
    const message = xAddress.tag === false
      ? 'The X-address states that it takes no destination tag, but a reference was given'
      : `The destination tag in the X-address (${xAddress.tag}) and the reference (${tag}) differ`
    return { isValid: false, error: { code: 'reference_invalid', message, details: { rule: 'mismatch', addressTag: xAddress.tag === false ? null : xAddress.tag } } }
  }
  return VALID
}

function parseXAddress(address: string): XAddressParts | AddressRejection {
  let bytes: Uint8Array
  try {
    bytes = xrpCodec.decodeChecked(address)
  } catch (error) {
    return error instanceof Error && error.message === 'checksum_invalid' ? 'checksum_mismatch'
      // The XRP alphabet is a reordering of Bitcoin's, so the same character set applies.
      : BASE58_ALPHABET.test(address) ? 'invalid_length' : 'invalid_characters'
  }
  if (bytes.length !== X_ADDRESS_LENGTH) return bytes[0] === 0 ? 'invalid_length' : 'unknown_prefix'
  const isPrefix = (prefix: readonly [number, number]): boolean => bytes[0] === prefix[0] && bytes[1] === prefix[1]
  if (!isPrefix(X_ADDRESS_PREFIXES.main) && !isPrefix(X_ADDRESS_PREFIXES.test)) return 'unknown_prefix'
  // ripple-address-codec ignores the upper four tag bytes of a 32-bit tag; XLS-5 says they MUST be zero.
  if (bytes[22] === 1 && bytes.subarray(27).some((byte) => byte !== 0)) return 'invalid_tag_field'
  try {
    const { test, tag } = decodeXAddress(address)
    return { test, tag }
  } catch {
    // Flags other than "no tag" and "32-bit tag", or a "no tag" address with tag bytes set.
    return 'invalid_tag_field'
  }
}

const BECH32_PREFIX = /^(bc|tb|ltc|tltc)1/i

/**
 * The one spelling of an address (and its destination tag) on a network of the family, so that however it is
 * written it compares equal: hex and bech32 in lower case, an XRP X-address as classic address and tag.
 * Assumes the address is valid for its network.
 */
export function canonicalAddress(family: AddressFamily, address: string, reference?: string): string {
  switch (family) {
    case 'ethereum':
      // The EIP-55 checksum is only a spelling: every case of the same hex names the same account.
      return address.toLowerCase()
    case 'bitcoin':
    case 'litecoin':
      // Bech32 is case-insensitive (all upper case is valid, e.g. in QR codes); base58 is not.
      return BECH32_PREFIX.test(address) ? address.toLowerCase() : address
    case 'solana':
      return address
    case 'xrp-ledger': {
      // An X-address carries the destination tag inside it; it names the same destination as classic + tag.
      if (isValidXAddress(address)) {
        const { classicAddress, tag } = xAddressToClassicAddress(address)
        return tag === false ? classicAddress : `${classicAddress}#${tag}`
      }
      return reference === undefined ? address : `${address}#${Number(reference)}`
    }
  }
}
