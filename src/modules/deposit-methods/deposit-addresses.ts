import { createECDH, createHmac, createPrivateKey, createPublicKey } from 'node:crypto'
import { hkdf } from '@noble/hashes/hkdf.js'
import { ripemd160 } from '@noble/hashes/legacy.js'
import { sha256 } from '@noble/hashes/sha2.js'
import { keccak_256 } from '@noble/hashes/sha3.js'
import { utf8ToBytes } from '@noble/hashes/utils.js'
import { base58, bech32, createBase58check } from '@scure/base'
import { encodeAccountID } from 'ripple-address-codec'
import type { AddressFamily, Chain } from '../reference/index.ts'

/**
 * Deposit addresses derived from the deployment's secret. Each address is backed by a real key pair whose
 * private key is HKDF-SHA256(secret, purpose, organization, account, network): the deployment can always
 * re-derive the key that controls the funds, nothing has to be stored, and no two accounts share a key. The
 * secret itself is never used as a key, only as HKDF input keying material with a purpose label.
 */

export type AddressFormat = 'native-segwit' | 'wrapped-segwit' | 'pubkey-hash'
export interface DerivedAddress {
  address: string
  formats: { format: AddressFormat; value: string }[]
}

const SALT = utf8ToBytes('tessera deposit methods v1')

/** A 32-byte key for one purpose and one owner, from the deployment secret (never the secret itself). */
export function deriveKey(secret: Uint8Array, purpose: string, parts: readonly string[]): Uint8Array {
  return hkdf(sha256, secret, SALT, utf8ToBytes([purpose, ...parts].join('\u0000')), 32)
}

const hash160 = (bytes: Uint8Array): Uint8Array => ripemd160(sha256(bytes))
const base58check = createBase58check(sha256)
const concat = (...parts: Uint8Array[]): Uint8Array => Uint8Array.from(parts.flatMap((part) => [...part]))

/**
 * A secp256k1 key pair from key material. A 32-byte value is a valid private key unless it is zero or not
 * below the curve order (odds about 2^-128); the next counter is tried then.
 */
function secp256k1PublicKey(seed: Uint8Array, compressed: boolean): Uint8Array {
  for (let counter = 0; ; counter++) {
    const candidate = counter === 0 ? seed : createHmac('sha256', seed).update(String(counter)).digest()
    try {
      const ecdh = createECDH('secp256k1')
      ecdh.setPrivateKey(candidate)
      return new Uint8Array(ecdh.getPublicKey(null, compressed ? 'compressed' : 'uncompressed'))
    } catch {
      // Out of range: derive again.
    }
  }
}

// RFC 8410: a PKCS#8 ed25519 private key is this prefix followed by the 32-byte seed.
const ED25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex')

function ed25519PublicKey(seed: Uint8Array): Uint8Array {
  const privateKey = createPrivateKey({ key: Buffer.concat([ED25519_PKCS8_PREFIX, seed]), format: 'der', type: 'pkcs8' })
  const jwk = createPublicKey(privateKey).export({ format: 'jwk' })
  return new Uint8Array(Buffer.from(jwk.x!, 'base64url'))
}

interface UtxoParams { hrp: string; pubkeyHash: number; scriptHash: number }
const UTXO: Record<'bitcoin' | 'litecoin', Record<Chain, UtxoParams>> = {
  bitcoin: { main: { hrp: 'bc', pubkeyHash: 0x00, scriptHash: 0x05 }, test: { hrp: 'tb', pubkeyHash: 0x6f, scriptHash: 0xc4 } },
  litecoin: { main: { hrp: 'ltc', pubkeyHash: 0x30, scriptHash: 0x32 }, test: { hrp: 'tltc', pubkeyHash: 0x6f, scriptHash: 0x3a } },
}

/**
 * The three standard forms of one key: native segwit (P2WPKH, BIP-173), the same witness program wrapped in
 * P2SH (BIP-49) for senders that cannot pay to bech32, and the legacy pay-to-pubkey-hash. All three pay the
 * same key, so any of them credits the same account.
 */
export function utxoAddresses(family: 'bitcoin' | 'litecoin', chain: Chain, seed: Uint8Array): DerivedAddress {
  const params = UTXO[family][chain]
  const keyHash = hash160(secp256k1PublicKey(seed, true))
  const nativeSegwit = bech32.encode(params.hrp, [0, ...bech32.toWords(keyHash)])
  const redeemScript = concat(Uint8Array.of(0x00, 0x14), keyHash)
  const wrapped = base58check.encode(concat(Uint8Array.of(params.scriptHash), hash160(redeemScript)))
  const legacy = base58check.encode(concat(Uint8Array.of(params.pubkeyHash), keyHash))
  return {
    address: nativeSegwit,
    formats: [
      { format: 'native-segwit', value: nativeSegwit },
      { format: 'wrapped-segwit', value: wrapped },
      { format: 'pubkey-hash', value: legacy },
    ],
  }
}

/** EIP-55 mixed-case checksum encoding of 20 address bytes. */
export function toChecksumAddress(addressBytes: Uint8Array): string {
  const hex = Buffer.from(addressBytes).toString('hex')
  const hash = keccak_256(utf8ToBytes(hex))
  let out = '0x'
  for (let i = 0; i < hex.length; i++) {
    const nibble = ((hash[i >> 1] ?? 0) >> (i % 2 === 0 ? 4 : 0)) & 0x0f
    out += nibble >= 8 ? hex.charAt(i).toUpperCase() : hex.charAt(i)
  }
  return out
}

export function ethereumAddress(seed: Uint8Array): DerivedAddress {
  const publicKey = secp256k1PublicKey(seed, false)
  const address = toChecksumAddress(keccak_256(publicKey.subarray(1)).subarray(12))
  return { address, formats: [{ format: 'pubkey-hash', value: address }] }
}

export function solanaAddress(seed: Uint8Array): DerivedAddress {
  const address = base58.encode(ed25519PublicKey(seed))
  return { address, formats: [{ format: 'pubkey-hash', value: address }] }
}

/** A classic XRP Ledger address (the same form on the test and main networks). */
export function xrpAddress(seed: Uint8Array): DerivedAddress {
  const address = encodeAccountID(hash160(secp256k1PublicKey(seed, true)))
  return { address, formats: [{ format: 'pubkey-hash', value: address }] }
}

const MAX_DESTINATION_TAG = 0xffffffff

/** A destination tag from 1 to 4294967295 (0 is left out: some wallets treat it as "no tag"). */
export function candidateDestinationTag(key: Uint8Array, attempt: number): string {
  const digest = createHmac('sha256', key).update(`destination-tag\u0000${attempt}`).digest()
  return String((digest.readUInt32BE(0) % MAX_DESTINATION_TAG) + 1)
}

/** The address of an account's own key on a network whose addresses are not shared (every family but XRP). */
export function derivedAddress(family: Exclude<AddressFamily, 'xrp-ledger'>, chain: Chain, seed: Uint8Array): DerivedAddress {
  switch (family) {
    case 'bitcoin':
    case 'litecoin':
      return utxoAddresses(family, chain, seed)
    case 'ethereum':
      return ethereumAddress(seed)
    case 'solana':
      return solanaAddress(seed)
  }
}
