import { schnorr } from '@noble/curves/secp256k1.js'
import { equalBytes } from '@noble/curves/utils.js'
import {
  bip322MessageHash,
  legacySighash,
  parseToSign,
  parseWitnessStack,
  segwitV0Sighash,
  simpleToSign,
  taprootKeyPathSighash,
  toSpendTxid,
} from './bip322-transactions.ts'
import type { ToSign } from './bip322-transactions.ts'
import { decodeBase64 } from './encoding.ts'
import { isValidSecp256k1Key, parseStrictDer, verifyEcdsa } from './ecdsa.ts'
import { invalid, valid } from './types.ts'
import type { SignatureCheck } from './types.ts'
import { hash160, p2pkhScript, p2wpkhProgramScript, scriptPubKey } from './utxo-addresses.ts'
import type { VerifiableAddress } from './utxo-addresses.ts'

/**
 * BIP-322 generic signed messages, "simple" (a witness stack) and "full" (the whole `to_sign` transaction), for
 * the single-key scripts: P2WPKH, P2TR key path, P2SH-P2WPKH and (full only) P2PKH. Multisig and other scripts,
 * taproot script paths and "proof of funds" are not evaluated: they answer 'address-unsupported'.
 *
 * BIP-322 1.0 prefixes signatures with their variant (`smp`, `ful`, `pof`); drafts before it did not, and wallets
 * still produce bare base64, so an unprefixed signature is read as whichever variant its bytes parse as.
 */

export type Bip322Encoding = { variant: 'simple' | 'full' | 'unprefixed'; bytes: Uint8Array } | { variant: 'proof-of-funds' }

const PREFIXES = { smp: 'simple', ful: 'full' } as const

export function decodeBip322(signature: string): Bip322Encoding | undefined {
  const prefix = signature.slice(0, 3)
  if (prefix === 'pof') return { variant: 'proof-of-funds' }
  const variant = prefix === 'smp' || prefix === 'ful' ? PREFIXES[prefix] : 'unprefixed'
  const bytes = decodeBase64(variant === 'unprefixed' ? signature : signature.slice(3))
  return bytes && { variant, bytes }
}

export function verifyBip322(address: VerifiableAddress, message: Uint8Array, encoding: Bip322Encoding): SignatureCheck {
  // A proof of funds needs the UTXO set to mean anything; this library checks message signatures only.
  if (encoding.variant === 'proof-of-funds') return invalid('address-unsupported')
  const challenge = scriptPubKey(address)
  const toSpend = toSpendTxid(bip322MessageHash(message), challenge)
  // Drafts before 1.0 wrote both variants as bare base64. No witness stack of a supported script parses as a
  // to_sign transaction or the reverse (each must consume every byte), so the bytes say which one they are.
  const witness = encoding.variant === 'full' ? undefined : parseWitnessStack(encoding.bytes)
  const fullToSign = encoding.variant === 'simple' || witness ? undefined : parseToSign(encoding.bytes)
  let toSign: ToSign
  if (witness) {
    // A simple signature cannot carry a scriptSig. For P2SH-P2WPKH it can only be the push of the P2WPKH program
    // of the witness key, so it is rebuilt from that key (as bip322-js, and wallets built on it, do).
    const publicKey = witness[1]
    const scriptSig = address.type === 'p2sh' && witness.length === 2 && publicKey ? pushOf(p2wpkhProgramScript(hash160(publicKey))) : undefined
    toSign = simpleToSign(toSpend, witness, scriptSig)
  } else if (fullToSign) {
    // Spending another `to_spend` means signing another message or for another address.
    if (!equalBytes(fullToSign.prevoutTxid, toSpend) || fullToSign.prevoutIndex !== 0) return invalid('signature-mismatch')
    toSign = fullToSign
  } else {
    return invalid('signature-malformed')
  }
  const check = verifyInput(address, challenge, toSign)
  return check === undefined ? valid('bip-322') : invalid(check)
}

type Failure = 'signature-malformed' | 'address-unsupported' | 'signature-mismatch'

function verifyInput(address: VerifiableAddress, challenge: Uint8Array, tx: ToSign): Failure | undefined {
  switch (address.type) {
    case 'p2wpkh':
      if (tx.scriptSig.length !== 0) return 'signature-malformed'
      return verifyP2wpkh(address.hash, tx)
    case 'p2sh': {
      const redeemScript = singlePush(tx.scriptSig)
      // Any other redeem script (multisig, P2SH-P2WSH…) is a script this library does not evaluate.
      if (redeemScript?.length !== 22 || redeemScript[0] !== 0x00 || redeemScript[1] !== 0x14) return 'address-unsupported'
      if (!equalBytes(hash160(redeemScript), address.hash)) return 'signature-mismatch'
      return verifyP2wpkh(redeemScript.subarray(2), tx)
    }
    case 'p2tr':
      if (tx.scriptSig.length !== 0) return 'signature-malformed'
      return verifyTaprootKeyPath(address.outputKey, challenge, tx)
    case 'p2pkh':
      return verifyP2pkh(address.hash, challenge, tx)
  }
}

const SIGHASH_ALL = 0x01

/** A DER signature with its sighash byte, which BIP-322 requires to be SIGHASH_ALL. */
function parseScriptSignature(bytes: Uint8Array): ReturnType<typeof parseStrictDer> {
  return bytes[bytes.length - 1] === SIGHASH_ALL ? parseStrictDer(bytes.subarray(0, -1)) : undefined
}

function verifyP2wpkh(keyHash: Uint8Array, tx: ToSign): Failure | undefined {
  const [signatureBytes, publicKey] = tx.witness
  if (tx.witness.length !== 2 || !signatureBytes || !publicKey) return 'signature-malformed'
  // Segwit policy (WITNESS_PUBKEYTYPE) admits compressed keys only.
  if (publicKey.length !== 33 || !isValidSecp256k1Key(publicKey)) return 'signature-malformed'
  const signature = parseScriptSignature(signatureBytes)
  if (!signature) return 'signature-malformed'
  if (!equalBytes(hash160(publicKey), keyHash)) return 'signature-mismatch'
  return verifyEcdsa(signature, segwitV0Sighash(tx, p2pkhScript(keyHash)), publicKey) ? undefined : 'signature-mismatch'
}

function verifyTaprootKeyPath(outputKey: Uint8Array, challenge: Uint8Array, tx: ToSign): Failure | undefined {
  const [signature] = tx.witness
  if (!signature) return 'signature-malformed'
  // More than one element is a script-path spend (or carries an annex): scripts are not evaluated here.
  if (tx.witness.length !== 1) return 'address-unsupported'
  // BIP-341: 64 bytes is SIGHASH_DEFAULT; 65 bytes end in an explicit hash type, which BIP-322 requires be ALL.
  const hashType = signature.length === 64 ? 0x00 : signature.length === 65 && signature[64] === SIGHASH_ALL ? 0x01 : undefined
  if (hashType === undefined) return 'signature-malformed'
  const sighash = taprootKeyPathSighash(tx, challenge, hashType)
  return schnorr.verify(signature.subarray(0, 64), sighash, outputKey) ? undefined : 'signature-mismatch'
}

function verifyP2pkh(keyHash: Uint8Array, challenge: Uint8Array, tx: ToSign): Failure | undefined {
  // A legacy input is satisfied by its scriptSig alone: <signature> <public key>, both minimal direct pushes.
  const [signatureLength = 0] = tx.scriptSig
  const publicKeyLength = tx.scriptSig[1 + signatureLength]
  if (tx.witness.length !== 0 || signatureLength < 1 || signatureLength > 75 || (publicKeyLength !== 33 && publicKeyLength !== 65)) {
    return 'signature-malformed'
  }
  if (tx.scriptSig.length !== 2 + signatureLength + publicKeyLength) return 'signature-malformed'
  const publicKey = tx.scriptSig.subarray(2 + signatureLength)
  const signature = parseScriptSignature(tx.scriptSig.subarray(1, 1 + signatureLength))
  if (!signature || !isValidSecp256k1Key(publicKey)) return 'signature-malformed'
  if (!equalBytes(hash160(publicKey), keyHash)) return 'signature-mismatch'
  return verifyEcdsa(signature, legacySighash(tx, challenge), publicKey) ? undefined : 'signature-mismatch'
}

/** The data of a script that is exactly one direct push (1–75 bytes), else undefined. */
function singlePush(script: Uint8Array): Uint8Array | undefined {
  const [length = 0] = script
  return length >= 1 && length <= 75 && script.length === 1 + length ? script.subarray(1) : undefined
}

function pushOf(data: Uint8Array): Uint8Array {
  return Uint8Array.of(data.length, ...data)
}
