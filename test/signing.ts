/**
 * Test-only: signs messages the way each family's wallets do, so that unit, API and browser tests can present
 * valid signatures to Tessera. Built on @scure/btc-signer's own transaction signing (not on the verifier's
 * code in src/lib/signatures), so a test that signs here and verifies there checks two implementations
 * against each other.
 *
 * The keys are public test keys, printed in documentation and RFCs: anything sent to their addresses is lost.
 *
 *   import { signMessage, testKeys } from '../test/signing.ts'
 *   const proof = signMessage({ family: 'bitcoin', chain: 'test', addressType: 'p2tr', message: 'I own this wallet' })
 *   // proof: { family, chain, address, message, signature } (+ publicKey for the XRP Ledger), ready for the API
 */
import { ed25519 } from '@noble/curves/ed25519.js'
import { schnorr, secp256k1 } from '@noble/curves/secp256k1.js'
import { ripemd160 } from '@noble/hashes/legacy.js'
import { keccak_256 } from '@noble/hashes/sha3.js'
import { sha256, sha512 } from '@noble/hashes/sha2.js'
import { bytesToHex, concatBytes, hexToBytes, utf8ToBytes } from '@noble/hashes/utils.js'
import { base58, base64 } from '@scure/base'
import * as btc from '@scure/btc-signer'
import { encodeAccountID } from 'ripple-address-codec'
import type { SignedMessage } from '../src/lib/signatures/index.ts'
import type { AddressFamily, Chain } from '../src/modules/reference/index.ts'

export type UtxoAddressType = 'p2pkh' | 'p2pkh-uncompressed' | 'p2sh-p2wpkh' | 'p2wpkh' | 'p2tr'
export type XrplKeyType = 'secp256k1' | 'ed25519'
export const UTXO_ADDRESS_TYPES: readonly UtxoAddressType[] = ['p2pkh', 'p2pkh-uncompressed', 'p2sh-p2wpkh', 'p2wpkh', 'p2tr']
export const CHAINS: readonly Chain[] = ['main', 'test']

/** A test identity: one secp256k1 key (Bitcoin, Litecoin, Ethereum, XRP Ledger) and one ed25519 seed (Solana, XRP Ledger). */
export interface TestKey {
  /** 32-byte secp256k1 private key, hex. */
  secp256k1: string
  /** 32-byte ed25519 private key (RFC 8032 seed), hex. */
  ed25519: string
}

export interface TestAddresses {
  bitcoin: Record<Chain, Record<UtxoAddressType, string>>
  litecoin: Record<Chain, Record<UtxoAddressType, string>>
  ethereum: Record<Chain, string>
  solana: Record<Chain, string>
  'xrp-ledger': Record<Chain, Record<XrplKeyType, string>>
}

const PRIMARY: TestKey = {
  // web3.js documentation's example key (web3.eth.accounts.sign): address 0x2c7536E3605D9C16a7a3D7b1898e529396a65c23.
  secp256k1: '4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318',
  // RFC 8032 §7.1 TEST 1.
  ed25519: '9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60',
}

const SECONDARY: TestKey = {
  // Hardhat's and Anvil's first development account: address 0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266.
  secp256k1: 'ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80',
  // RFC 8032 §7.1 TEST 2.
  ed25519: '4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb',
}

// btc-signer's network records; Litecoin's are from Litecoin Core's chainparams (the P2SH versions M… and Q…).
const UTXO_NETWORKS: Record<'bitcoin' | 'litecoin', Record<Chain, typeof btc.NETWORK>> = {
  bitcoin: { main: btc.NETWORK, test: btc.TEST_NETWORK },
  litecoin: {
    main: { bech32: 'ltc', pubKeyHash: 0x30, scriptHash: 0x32, wif: 0xb0 },
    test: { bech32: 'tltc', pubKeyHash: 0x6f, scriptHash: 0x3a, wif: 0xef },
  },
}

const MESSAGE_MAGIC: Record<'bitcoin' | 'litecoin', string> = {
  bitcoin: 'Bitcoin Signed Message:\n',
  litecoin: 'Litecoin Signed Message:\n',
}

export interface AddressOptions {
  family: AddressFamily
  chain: Chain
  /** Bitcoin and Litecoin: which address of the key. Default p2wpkh. */
  addressType?: UtxoAddressType
  /** XRP Ledger: which key signs. Default secp256k1. */
  keyType?: XrplKeyType
  /** Hex private key of the curve the family (and keyType) uses; default testKeys.primary's. */
  privateKey?: string
}

export interface SignOptions extends AddressOptions {
  message: string
  /** Bitcoin and Litecoin: default BIP-137 for P2PKH, BIP-322 for the others. */
  scheme?: 'bip-137' | 'bip-322'
  /**
   * BIP-322: default "simple" for the native segwit P2WPKH and P2TR, "full" for P2SH-P2WPKH (BIP-322 1.0 reserves
   * "simple" for native segwit; asking for it anyway gives the bare witness, as bip322-js does). P2PKH is always "full".
   */
  bip322Format?: 'simple' | 'full'
  /** BIP-322: prefix the variant ("smp"/"ful") as BIP-322 1.0 requires; false gives the draft's bare base64. Default true. */
  bip322Prefix?: boolean
  /** BIP-137: "electrum" signs segwit addresses with the compressed-P2PKH header, as Electrum does. Default "bip-137". */
  bip137Header?: 'bip-137' | 'electrum'
  /** Solana: how the 64 signature bytes are written. Default base58. */
  solanaEncoding?: 'base58' | 'base64' | 'hex'
}

function addressesOf(key: TestKey): TestAddresses {
  const perChain = <T>(make: (chain: Chain) => T): Record<Chain, T> => ({ main: make('main'), test: make('test') })
  const utxo = (family: 'bitcoin' | 'litecoin'): Record<Chain, Record<UtxoAddressType, string>> =>
    perChain((chain) => Object.fromEntries(UTXO_ADDRESS_TYPES.map((addressType) => [addressType, deriveAddress({ family, chain, addressType, privateKey: key.secp256k1 })])) as Record<UtxoAddressType, string>)
  return {
    bitcoin: utxo('bitcoin'),
    litecoin: utxo('litecoin'),
    ethereum: perChain((chain) => deriveAddress({ family: 'ethereum', chain, privateKey: key.secp256k1 })),
    solana: perChain((chain) => deriveAddress({ family: 'solana', chain, privateKey: key.ed25519 })),
    'xrp-ledger': perChain((chain) => ({
      secp256k1: deriveAddress({ family: 'xrp-ledger', chain, keyType: 'secp256k1', privateKey: key.secp256k1 }),
      ed25519: deriveAddress({ family: 'xrp-ledger', chain, keyType: 'ed25519', privateKey: key.ed25519 }),
    })),
  }
}

/** Two documented test identities and every address they sign for; `secondary` is "another valid address". */
export const testKeys: { primary: TestKey & { addresses: TestAddresses }; secondary: TestKey & { addresses: TestAddresses } } = {
  primary: { ...PRIMARY, addresses: addressesOf(PRIMARY) },
  secondary: { ...SECONDARY, addresses: addressesOf(SECONDARY) },
}

function curveOf(options: AddressOptions): 'secp256k1' | 'ed25519' {
  return options.family === 'solana' || (options.family === 'xrp-ledger' && options.keyType === 'ed25519') ? 'ed25519' : 'secp256k1'
}

function privateKeyOf(options: AddressOptions): Uint8Array {
  return hexToBytes(options.privateKey ?? PRIMARY[curveOf(options)])
}

interface UtxoPayment {
  address?: string
  script: Uint8Array
  redeemScript?: Uint8Array
}

function utxoPayment(family: 'bitcoin' | 'litecoin', chain: Chain, addressType: UtxoAddressType, privateKey: Uint8Array): UtxoPayment {
  const network = UTXO_NETWORKS[family][chain]
  const compressed = secp256k1.getPublicKey(privateKey, true)
  switch (addressType) {
    case 'p2pkh':
      return btc.p2pkh(compressed, network)
    case 'p2pkh-uncompressed':
      return btc.p2pkh(secp256k1.getPublicKey(privateKey, false), network)
    case 'p2sh-p2wpkh':
      return btc.p2sh(btc.p2wpkh(compressed, network), network)
    case 'p2wpkh':
      return btc.p2wpkh(compressed, network)
    case 'p2tr':
      return btc.p2tr(schnorr.getPublicKey(privateKey), undefined, network)
  }
}

export function deriveAddress(options: AddressOptions): string {
  const privateKey = privateKeyOf(options)
  switch (options.family) {
    case 'bitcoin':
    case 'litecoin': {
      const { address } = utxoPayment(options.family, options.chain, options.addressType ?? 'p2wpkh', privateKey)
      if (!address) throw new Error('btc-signer gave no address')
      return address
    }
    case 'ethereum':
      return checksumAddress(keccak_256(secp256k1.getPublicKey(privateKey, false).subarray(1)).subarray(-20))
    case 'solana':
      return base58.encode(ed25519.getPublicKey(privateKey))
    case 'xrp-ledger':
      return encodeAccountID(ripemd160(sha256(xrplPublicKey(options.keyType ?? 'secp256k1', privateKey))))
  }
}

/** EIP-55 mixed-case checksum spelling, as wallets display addresses. */
function checksumAddress(address: Uint8Array): string {
  const hex = bytesToHex(address)
  const hash = bytesToHex(keccak_256(utf8ToBytes(hex)))
  return `0x${[...hex].map((char, i) => (Number.parseInt(hash.charAt(i), 16) >= 8 ? char.toUpperCase() : char)).join('')}`
}

function xrplPublicKey(keyType: XrplKeyType, privateKey: Uint8Array): Uint8Array {
  return keyType === 'ed25519' ? concatBytes(Uint8Array.of(0xed), ed25519.getPublicKey(privateKey)) : secp256k1.getPublicKey(privateKey, true)
}

/** The message with one character changed (or one added to an empty message): a signature of the original must fail. */
export function alterMessage(message: string): string {
  if (message === '') return '.'
  const last = message.charAt(message.length - 1)
  return `${message.slice(0, -1)}${last === 'x' ? 'y' : 'x'}`
}

/** Signs `message` as a wallet of the family would; the result is a complete SignedMessage for the verifier or the API. */
export function signMessage(options: SignOptions): SignedMessage {
  const privateKey = privateKeyOf(options)
  const address = deriveAddress(options)
  const message = utf8ToBytes(options.message)
  const signed = { family: options.family, chain: options.chain, address, message: options.message }
  switch (options.family) {
    case 'bitcoin':
    case 'litecoin': {
      const addressType = options.addressType ?? 'p2wpkh'
      const scheme = options.scheme ?? (addressType.startsWith('p2pkh') ? 'bip-137' : 'bip-322')
      const signature = scheme === 'bip-137'
        ? signBip137(options.family, addressType, options.bip137Header ?? 'bip-137', message, privateKey)
        : signBip322(options.family, options, addressType, message, privateKey)
      return { ...signed, signature }
    }
    case 'ethereum': {
      const hash = keccak_256(concatBytes(utf8ToBytes(`\x19Ethereum Signed Message:\n${message.length}`), message))
      const [recovery = 0, ...rs] = secp256k1.sign(hash, privateKey, { prehash: false, format: 'recovered' })
      return { ...signed, signature: `0x${bytesToHex(Uint8Array.from([...rs, 27 + recovery]))}` }
    }
    case 'solana': {
      const signature = ed25519.sign(message, privateKey)
      const encoding = options.solanaEncoding ?? 'base58'
      return { ...signed, signature: encoding === 'base58' ? base58.encode(signature) : encoding === 'base64' ? base64.encode(signature) : bytesToHex(signature) }
    }
    case 'xrp-ledger': {
      // As ripple-keypairs' sign(): upper-case hex, SHA-512Half + low-S DER for secp256k1, the raw message for ed25519.
      const keyType = options.keyType ?? 'secp256k1'
      const signature = keyType === 'ed25519'
        ? ed25519.sign(message, privateKey)
        : secp256k1.sign(sha512(message).subarray(0, 32), privateKey, { prehash: false, lowS: true, format: 'der' })
      return { ...signed, signature: bytesToHex(signature).toUpperCase(), publicKey: bytesToHex(xrplPublicKey(keyType, privateKey)).toUpperCase() }
    }
  }
}

const BIP137_HEADER_BASE: Record<Exclude<UtxoAddressType, 'p2tr'>, number> = { 'p2pkh-uncompressed': 27, p2pkh: 31, 'p2sh-p2wpkh': 35, p2wpkh: 39 }

function signBip137(family: 'bitcoin' | 'litecoin', addressType: UtxoAddressType, header: 'bip-137' | 'electrum', message: Uint8Array, privateKey: Uint8Array): string {
  if (addressType === 'p2tr') throw new Error('BIP-137 cannot sign for a taproot address: its output key is tweaked')
  const magic = utf8ToBytes(MESSAGE_MAGIC[family])
  const hash = sha256(sha256(concatBytes(Uint8Array.of(magic.length), magic, compactSize(message.length), message)))
  const [recovery = 0, ...rs] = secp256k1.sign(hash, privateKey, { prehash: false, format: 'recovered' })
  const base = header === 'electrum' && addressType !== 'p2pkh-uncompressed' ? 31 : BIP137_HEADER_BASE[addressType]
  return base64.encode(Uint8Array.from([base + recovery, ...rs]))
}

function compactSize(length: number): Uint8Array {
  return length < 0xfd ? Uint8Array.of(length) : Uint8Array.of(0xfd, length & 0xff, length >> 8)
}

const TX_OPTIONS = { version: 0, allowUnknownOutputs: true, allowUnknownInputs: true, allowUnknownVersion: true }

function signBip322(family: 'bitcoin' | 'litecoin', options: SignOptions, addressType: UtxoAddressType, message: Uint8Array, privateKey: Uint8Array): string {
  const payment = utxoPayment(family, options.chain, addressType, privateKey)
  const messageHash = schnorr.utils.taggedHash('BIP0322-signed-message', message)

  const toSpend = new btc.Transaction({ ...TX_OPTIONS, disableScriptCheck: true })
  toSpend.addOutput({ script: payment.script, amount: 0n })
  toSpend.addInput({ txid: new Uint8Array(32), index: 0xffffffff, sequence: 0, finalScriptSig: btc.Script.encode(['OP_0', messageHash]) })

  const toSign = new btc.Transaction({ ...TX_OPTIONS, allowLegacyWitnessUtxo: true })
  toSign.addInput({
    txid: toSpend.id,
    index: 0,
    sequence: 0,
    witnessUtxo: { script: payment.script, amount: 0n },
    ...(addressType.startsWith('p2pkh') ? { nonWitnessUtxo: toSpend.toBytes(true, false) } : {}),
    ...(payment.redeemScript ? { redeemScript: payment.redeemScript } : {}),
    ...(addressType === 'p2tr' ? { tapInternalKey: schnorr.getPublicKey(privateKey) } : {}),
  })
  toSign.addOutput({ script: btc.Script.encode(['RETURN']), amount: 0n })
  if (addressType === 'p2pkh-uncompressed') signUncompressedP2pkh(toSign, payment.script, privateKey)
  else toSign.sign(privateKey)
  toSign.finalize()

  const prefix = options.bip322Prefix ?? true
  const format = addressType.startsWith('p2pkh') ? 'full' : options.bip322Format ?? (addressType === 'p2sh-p2wpkh' ? 'full' : 'simple')
  if (format === 'full') return `${prefix ? 'ful' : ''}${base64.encode(toSign.extract())}`
  const witness = toSign.getInput(0).finalScriptWitness ?? []
  return `${prefix ? 'smp' : ''}${base64.encode(btc.RawWitness.encode(witness))}`
}

/** btc-signer signs with compressed keys only; for an uncompressed P2PKH key its legacy sighash is signed by hand. */
function signUncompressedP2pkh(toSign: btc.Transaction, script: Uint8Array, privateKey: Uint8Array): void {
  const sighash = toSign['preimageLegacy'](0, script, btc.SigHash.ALL)
  const signature = secp256k1.sign(sighash, privateKey, { prehash: false, lowS: true, format: 'der' })
  toSign.updateInput(0, { partialSig: [[secp256k1.getPublicKey(privateKey, false), concatBytes(signature, Uint8Array.of(btc.SigHash.ALL))]] })
}
