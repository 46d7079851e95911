import { schnorr } from '@noble/curves/secp256k1.js'
import { sha256 } from '@noble/hashes/sha2.js'
import { concatBytes } from '@noble/hashes/utils.js'
import { ByteReader, compactSize, uint32LE } from './encoding.ts'

/**
 * BIP-322's two virtual transactions, and the three signature hashes (legacy, BIP-143, BIP-341 key path) of its
 * `to_sign` transaction. `to_sign` has exactly one input and one zero-value OP_RETURN output; the parser
 * rejects anything else, so the hashes below only serialize that shape.
 */

const OP_RETURN = Uint8Array.of(0x6a)
const ZERO_AMOUNT = new Uint8Array(8)
const SIGHASH_ALL = 0x01

export function bip322MessageHash(message: Uint8Array): Uint8Array {
  return schnorr.utils.taggedHash('BIP0322-signed-message', message)
}

function doubleSha256(...parts: Uint8Array[]): Uint8Array {
  return sha256(sha256(concatBytes(...parts)))
}

/** The txid of `to_spend`, in internal byte order (as an outpoint holds it; block explorers show it reversed). */
export function toSpendTxid(messageHash: Uint8Array, challenge: Uint8Array): Uint8Array {
  return doubleSha256(
    uint32LE(0), // nVersion
    compactSize(1),
    new Uint8Array(32), // prevout hash 000…000
    uint32LE(0xffffffff), // prevout n
    compactSize(34),
    Uint8Array.of(0x00, 0x20), // OP_0 PUSH32
    messageHash,
    uint32LE(0), // nSequence
    compactSize(1),
    ZERO_AMOUNT,
    compactSize(challenge.length),
    challenge,
    uint32LE(0), // nLockTime
  )
}

export interface ToSign {
  version: number
  lockTime: number
  prevoutTxid: Uint8Array
  prevoutIndex: number
  sequence: number
  scriptSig: Uint8Array
  witness: Uint8Array[]
}

/** What a BIP-322 "simple" signature stands for: the witness stack, every other field at its default. */
export function simpleToSign(toSpend: Uint8Array, witness: Uint8Array[], scriptSig: Uint8Array = new Uint8Array(0)): ToSign {
  return { version: 0, lockTime: 0, prevoutTxid: toSpend, prevoutIndex: 0, sequence: 0, scriptSig, witness }
}

/** A "simple" signature: the consensus encoding of a witness stack, and nothing after it. */
export function parseWitnessStack(bytes: Uint8Array): Uint8Array[] | undefined {
  const reader = new ByteReader(bytes)
  const witness = readWitness(reader)
  return witness && reader.done ? witness : undefined
}

function readWitness(reader: ByteReader): Uint8Array[] | undefined {
  const count = reader.compactSize()
  if (count === undefined) return undefined
  const items: Uint8Array[] = []
  for (let i = 0; i < count; i++) {
    const item = reader.varBytes()
    if (item === undefined) return undefined
    items.push(item)
  }
  return items
}

/**
 * A "full" signature: a whole `to_sign` transaction. Undefined unless it has the shape BIP-322 fixes: one input,
 * one output of value 0 paying to OP_RETURN, version 0 or 2 (other versions are "inconclusive" in BIP-322).
 */
export function parseToSign(bytes: Uint8Array): ToSign | undefined {
  const reader = new ByteReader(bytes)
  const version = reader.int32()
  if (version !== 0 && version !== 2) return undefined
  // BIP-144: a zero input count followed by flag 1 marks the witness serialization.
  const segwit = reader.peek() === 0x00 && reader.peek(1) === 0x01
  if (segwit) reader.bytes(2)
  if (reader.compactSize() !== 1) return undefined
  const prevoutTxid = reader.bytes(32)
  const prevoutIndex = reader.uint32()
  const scriptSig = reader.varBytes()
  const sequence = reader.uint32()
  if (reader.compactSize() !== 1 || reader.uint64() !== 0n) return undefined
  const outputScript = reader.varBytes()
  if (outputScript?.length !== 1 || outputScript[0] !== OP_RETURN[0]) return undefined
  const witness = segwit ? readWitness(reader) : []
  const lockTime = reader.uint32()
  if (!reader.done || !prevoutTxid || prevoutIndex === undefined || !scriptSig || sequence === undefined || !witness || lockTime === undefined) {
    return undefined
  }
  // BIP-144 forbids the witness marker on a transaction whose witnesses are all empty.
  if (segwit && witness.length === 0) return undefined
  return { version, lockTime, prevoutTxid, prevoutIndex, sequence, scriptSig, witness }
}

function serializeWithoutWitness(tx: ToSign, scriptSig: Uint8Array): Uint8Array {
  return concatBytes(
    int32LE(tx.version),
    compactSize(1),
    tx.prevoutTxid,
    uint32LE(tx.prevoutIndex),
    compactSize(scriptSig.length),
    scriptSig,
    uint32LE(tx.sequence),
    outputs(),
    uint32LE(tx.lockTime),
  )
}

function outputs(): Uint8Array {
  return concatBytes(compactSize(1), ZERO_AMOUNT, compactSize(OP_RETURN.length), OP_RETURN)
}

function int32LE(value: number): Uint8Array {
  return uint32LE(value >>> 0)
}

/** The pre-segwit signature hash (SIGHASH_ALL) of input 0, signed with the previous output's script as scriptCode. */
export function legacySighash(tx: ToSign, scriptCode: Uint8Array): Uint8Array {
  return doubleSha256(serializeWithoutWitness(tx, scriptCode), uint32LE(SIGHASH_ALL))
}

/** BIP-143 (segwit v0) signature hash, SIGHASH_ALL, of input 0 spending a zero-value output. */
export function segwitV0Sighash(tx: ToSign, scriptCode: Uint8Array): Uint8Array {
  const outpoint = concatBytes(tx.prevoutTxid, uint32LE(tx.prevoutIndex))
  return doubleSha256(
    int32LE(tx.version),
    doubleSha256(outpoint), // hashPrevouts
    doubleSha256(uint32LE(tx.sequence)), // hashSequence
    outpoint,
    compactSize(scriptCode.length),
    scriptCode,
    ZERO_AMOUNT,
    uint32LE(tx.sequence),
    doubleSha256(outputs().subarray(1)), // hashOutputs: the outputs without their count
    uint32LE(tx.lockTime),
    uint32LE(SIGHASH_ALL),
  )
}

/**
 * BIP-341 signature message for a key-path spend of input 0 (no annex), with SIGHASH_DEFAULT (0x00) or
 * SIGHASH_ALL (0x01), which commit to the same data and differ only in the hash-type byte.
 */
export function taprootKeyPathSighash(tx: ToSign, spentScript: Uint8Array, hashType: 0x00 | 0x01): Uint8Array {
  return schnorr.utils.taggedHash(
    'TapSighash',
    Uint8Array.of(0x00, hashType), // epoch, hash type
    int32LE(tx.version),
    uint32LE(tx.lockTime),
    sha256(concatBytes(tx.prevoutTxid, uint32LE(tx.prevoutIndex))), // sha_prevouts
    sha256(ZERO_AMOUNT), // sha_amounts
    sha256(concatBytes(compactSize(spentScript.length), spentScript)), // sha_scriptpubkeys
    sha256(uint32LE(tx.sequence)), // sha_sequences
    sha256(outputs().subarray(1)), // sha_outputs
    Uint8Array.of(0x00), // spend_type: key path, no annex
    uint32LE(0), // input_index
  )
}
