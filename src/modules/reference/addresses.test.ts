import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { bech32, bech32m, createBase58check } from '@scure/base'
import { sha256 } from '@noble/hashes/sha2.js'
import { bytesToHex } from '@noble/hashes/utils.js'
import { codec as xrpCodec, decodeAccountID } from 'ripple-address-codec'
import { validateAddress } from './addresses.ts'
import type { AddressFamily, AddressRejection, Chain } from './addresses.ts'

const CHAINS: readonly Chain[] = ['main', 'test']
const other = (chain: Chain): Chain => (chain === 'main' ? 'test' : 'main')

function assertValid(family: AddressFamily, chain: Chain, address: string, reference?: string): void {
  assert.deepEqual(validateAddress(family, chain, address, reference), { isValid: true }, `${family}/${chain} ${address} ${reference ?? ''}`)
}

function assertInvalid(family: AddressFamily, chain: Chain, address: string, reason: AddressRejection): void {
  assert.deepEqual(
    validateAddress(family, chain, address),
    { isValid: false, error: { code: 'address_invalid', message: 'The address is invalid', details: { reason } } },
    `${family}/${chain} ${address}`,
  )
}

function assertRejected(family: AddressFamily, chain: Chain, address: string): void {
  const result = validateAddress(family, chain, address)
  assert.equal(result.isValid, false, `${family}/${chain} ${address} should be rejected`)
  if (!result.isValid) assert.equal(result.error.code, 'address_invalid')
}

/** scriptPubKey of a segwit address, read with the plain codecs: proves a vector's witness program is what gets decoded. */
function segwitScriptPubKey(address: string): string {
  const decoded = bech32.decodeUnsafe(address) || bech32m.decodeUnsafe(address)
  assert.ok(decoded, `${address} is not bech32/bech32m`)
  const [version = -1, ...words] = decoded.words
  const program = bech32.fromWords(words)
  return bytesToHex(Uint8Array.from([version === 0 ? 0 : 0x50 + version, program.length, ...program]))
}

const base58check = createBase58check(sha256)

/** scriptPubKey of a base58 address, given whether its version byte means P2PKH. */
function base58ScriptPubKey(address: string, p2pkhVersions: readonly number[]): string {
  const payload = base58check.decode(address)
  const hash = bytesToHex(payload.subarray(1))
  return p2pkhVersions.includes(payload[0] ?? -1) ? `76a914${hash}88ac` : `a914${hash}87`
}

// ---------------------------------------------------------------------------------------------------------------
// BIP-173 "Test vectors" (https://github.com/bitcoin/bips/blob/master/bip-0173.mediawiki), segwit addresses only.

const BIP173_VALID: ReadonlyArray<{ address: string; scriptPubKey: string; chain: Chain }> = [
  { address: 'BC1QW508D6QEJXTDG4Y5R3ZARVARY0C5XW7KV8F3T4', scriptPubKey: '0014751e76e8199196d454941c45d1b3a323f1433bd6', chain: 'main' },
  { address: 'tb1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3q0sl5k7', scriptPubKey: '00201863143c14c5166804bd19203356da136c985678cd4d27a1b8c6329604903262', chain: 'test' },
  { address: 'tb1qqqqqp399et2xygdj5xreqhjjvcmzhxw4aywxecjdzew6hylgvsesrxh6hy', scriptPubKey: '0020000000c4a5cad46221b2a187905e5266362b99d5e91c6ce24d165dab93e86433', chain: 'test' },
]

// BIP-173 listed these v1+ addresses as valid, but they carry a bech32 checksum. BIP-350 replaced bech32 with bech32m
// for witness versions 1..16 and gives bech32m re-encodings of the same programs, so they are now invalid. BIP-350 wins.
const BIP173_VALID_SUPERSEDED_BY_BIP350: ReadonlyArray<{ address: string; scriptPubKey: string }> = [
  { address: 'bc1pw508d6qejxtdg4y5r3zarvary0c5xw7kw508d6qejxtdg4y5r3zarvary0c5xw7k7grplx', scriptPubKey: '5128751e76e8199196d454941c45d1b3a323f1433bd6751e76e8199196d454941c45d1b3a323f1433bd6' },
  { address: 'BC1SW50QA3JX3S', scriptPubKey: '6002751e' },
  { address: 'bc1zw508d6qejxtdg4y5r3zarvaryvg6kdaj', scriptPubKey: '5210751e76e8199196d454941c45d1b3a323' },
]

// The four addresses of BIP-173's "Examples" section.
const BIP173_EXAMPLES: ReadonlyArray<{ address: string; chain: Chain }> = [
  { address: 'bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4', chain: 'main' },
  { address: 'tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx', chain: 'test' },
  { address: 'bc1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3qccfmv3', chain: 'main' },
  { address: 'tb1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3q0sl5k7', chain: 'test' },
]

/** `chain` is the chain whose HRP the vector uses; the expected reason is asserted there, and rejection on both. */
interface InvalidVector { address: string; chain: Chain; reason: AddressRejection; bip: string }

const BIP173_INVALID: readonly InvalidVector[] = [
  { address: 'tc1qw508d6qejxtdg4y5r3zarvary0c5xw7kg3g4ty', chain: 'test', reason: 'unknown_prefix', bip: 'Invalid human-readable part' },
  { address: 'bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t5', chain: 'main', reason: 'checksum_mismatch', bip: 'Invalid checksum' },
  { address: 'BC13W508D6QEJXTDG4Y5R3ZARVARY0C5XW7KN40WF2', chain: 'main', reason: 'invalid_witness_version', bip: 'Invalid witness version' },
  { address: 'bc1rw5uspcuh', chain: 'main', reason: 'invalid_witness_program', bip: 'Invalid program length' },
  { address: 'bc10w508d6qejxtdg4y5r3zarvary0c5xw7kw508d6qejxtdg4y5r3zarvary0c5xw7kw5rljs90', chain: 'main', reason: 'invalid_witness_program', bip: 'Invalid program length' },
  { address: 'BC1QR508D6QEJXTDG4Y5R3ZARVARYV98GJ9P', chain: 'main', reason: 'invalid_witness_program', bip: 'Invalid program length for witness version 0 (per BIP141)' },
  { address: 'tb1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3q0sL5k7', chain: 'test', reason: 'mixed_case', bip: 'Mixed case' },
  { address: 'bc1zw508d6qejxtdg4y5r3zarvaryvqyzf3du', chain: 'main', reason: 'invalid_padding', bip: 'zero padding of more than 4 bits' },
  { address: 'tb1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3pjxtptv', chain: 'test', reason: 'invalid_padding', bip: 'Non-zero padding in 8-to-5 conversion' },
  { address: 'bc1gmk9yu', chain: 'main', reason: 'invalid_witness_program', bip: 'Empty data section' },
  // An earlier revision of BIP-173 gave this vector for "zero padding of more than 4 bits"; it was later replaced by
  // bc1zw508d6qejxtdg4y5r3zarvaryvqyzf3du above. Kept because implementations tested against it.
  { address: 'tb1pw508d6qejxtdg4y5r3zarqfsj6c3', chain: 'test', reason: 'invalid_padding', bip: 'zero padding of more than 4 bits (earlier revision)' },
]

// ---------------------------------------------------------------------------------------------------------------
// BIP-350 "Test vectors for v0-v16 native segregated witness addresses"
// (https://github.com/bitcoin/bips/blob/master/bip-0350.mediawiki).

const BIP350_VALID: ReadonlyArray<{ address: string; scriptPubKey: string; chain: Chain }> = [
  { address: 'BC1QW508D6QEJXTDG4Y5R3ZARVARY0C5XW7KV8F3T4', scriptPubKey: '0014751e76e8199196d454941c45d1b3a323f1433bd6', chain: 'main' },
  { address: 'tb1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3q0sl5k7', scriptPubKey: '00201863143c14c5166804bd19203356da136c985678cd4d27a1b8c6329604903262', chain: 'test' },
  { address: 'bc1pw508d6qejxtdg4y5r3zarvary0c5xw7kw508d6qejxtdg4y5r3zarvary0c5xw7kt5nd6y', scriptPubKey: '5128751e76e8199196d454941c45d1b3a323f1433bd6751e76e8199196d454941c45d1b3a323f1433bd6', chain: 'main' },
  { address: 'BC1SW50QGDZ25J', scriptPubKey: '6002751e', chain: 'main' },
  { address: 'bc1zw508d6qejxtdg4y5r3zarvaryvaxxpcs', scriptPubKey: '5210751e76e8199196d454941c45d1b3a323', chain: 'main' },
  { address: 'tb1qqqqqp399et2xygdj5xreqhjjvcmzhxw4aywxecjdzew6hylgvsesrxh6hy', scriptPubKey: '0020000000c4a5cad46221b2a187905e5266362b99d5e91c6ce24d165dab93e86433', chain: 'test' },
  { address: 'tb1pqqqqp399et2xygdj5xreqhjjvcmzhxw4aywxecjdzew6hylgvsesf3hn0c', scriptPubKey: '5120000000c4a5cad46221b2a187905e5266362b99d5e91c6ce24d165dab93e86433', chain: 'test' },
  { address: 'bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqzk5jj0', scriptPubKey: '512079be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798', chain: 'main' },
]

const BIP350_INVALID: readonly InvalidVector[] = [
  { address: 'tc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vq5zuyut', chain: 'test', reason: 'unknown_prefix', bip: 'Invalid human-readable part' },
  { address: 'bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqh2y7hd', chain: 'main', reason: 'wrong_checksum_variant', bip: 'Invalid checksum (Bech32 instead of Bech32m)' },
  { address: 'tb1z0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqglt7rf', chain: 'test', reason: 'wrong_checksum_variant', bip: 'Invalid checksum (Bech32 instead of Bech32m)' },
  { address: 'BC1S0XLXVLHEMJA6C4DQV22UAPCTQUPFHLXM9H8Z3K2E72Q4K9HCZ7VQ54WELL', chain: 'main', reason: 'wrong_checksum_variant', bip: 'Invalid checksum (Bech32 instead of Bech32m)' },
  { address: 'bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kemeawh', chain: 'main', reason: 'wrong_checksum_variant', bip: 'Invalid checksum (Bech32m instead of Bech32)' },
  { address: 'tb1q0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vq24jc47', chain: 'test', reason: 'wrong_checksum_variant', bip: 'Invalid checksum (Bech32m instead of Bech32)' },
  { address: 'bc1p38j9r5y49hruaue7wxjce0updqjuyyx0kh56v8s25huc6995vvpql3jow4', chain: 'main', reason: 'invalid_characters', bip: 'Invalid character in checksum' },
  { address: 'BC130XLXVLHEMJA6C4DQV22UAPCTQUPFHLXM9H8Z3K2E72Q4K9HCZ7VQ7ZWS8R', chain: 'main', reason: 'invalid_witness_version', bip: 'Invalid witness version' },
  { address: 'bc1pw5dgrnzv', chain: 'main', reason: 'invalid_witness_program', bip: 'Invalid program length (1 byte)' },
  { address: 'bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7v8n0nx0muaewav253zgeav', chain: 'main', reason: 'invalid_witness_program', bip: 'Invalid program length (41 bytes)' },
  { address: 'BC1QR508D6QEJXTDG4Y5R3ZARVARYV98GJ9P', chain: 'main', reason: 'invalid_witness_program', bip: 'Invalid program length for witness version 0 (per BIP141)' },
  { address: 'tb1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vq47Zagq', chain: 'test', reason: 'mixed_case', bip: 'Mixed case' },
  { address: 'bc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7v07qwwzcrf', chain: 'main', reason: 'invalid_padding', bip: 'zero padding of more than 4 bits' },
  { address: 'tb1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vpggkg4j', chain: 'test', reason: 'invalid_padding', bip: 'Non-zero padding in 8-to-5 conversion' },
  { address: 'bc1gmk9yu', chain: 'main', reason: 'invalid_witness_program', bip: 'Empty data section' },
]

function describeInvalidVectors(vectors: readonly InvalidVector[]): void {
  for (const { address, chain, reason, bip } of vectors) {
    test(`${address} is invalid (${bip})`, () => {
      assertInvalid('bitcoin', chain, address, reason)
      assertRejected('bitcoin', other(chain), address)
    })
  }
}

describe('bitcoin segwit: BIP-173 test vectors (as amended by BIP-350)', () => {
  for (const { address, scriptPubKey, chain } of BIP173_VALID) {
    test(`${address} is valid on ${chain} with scriptPubKey ${scriptPubKey}`, () => {
      assert.equal(segwitScriptPubKey(address), scriptPubKey)
      assertValid('bitcoin', chain, address)
      assertInvalid('bitcoin', other(chain), address, 'wrong_network')
    })
  }
  for (const { address, scriptPubKey } of BIP173_VALID_SUPERSEDED_BY_BIP350) {
    test(`${address} (BIP-173 valid, bech32 for v1+) is invalid under BIP-350`, () => {
      assert.equal(segwitScriptPubKey(address), scriptPubKey)
      assertInvalid('bitcoin', 'main', address, 'wrong_checksum_variant')
      assertRejected('bitcoin', 'test', address)
    })
  }
  for (const { address, chain } of BIP173_EXAMPLES) {
    test(`example ${address} is valid on ${chain} only`, () => {
      assertValid('bitcoin', chain, address)
      assertInvalid('bitcoin', other(chain), address, 'wrong_network')
    })
  }
  describeInvalidVectors(BIP173_INVALID)
})

describe('bitcoin segwit: BIP-350 test vectors', () => {
  for (const { address, scriptPubKey, chain } of BIP350_VALID) {
    test(`${address} is valid on ${chain} with scriptPubKey ${scriptPubKey}`, () => {
      assert.equal(segwitScriptPubKey(address), scriptPubKey)
      assertValid('bitcoin', chain, address)
      assertInvalid('bitcoin', other(chain), address, 'wrong_network')
    })
  }
  describeInvalidVectors(BIP350_INVALID)
})

describe('bitcoin segwit: other rules', () => {
  // Regtest (`bcrt`) addresses from Bitcoin Core's src/test/data/key_io_valid.json: neither chain here accepts them.
  for (const address of [
    'bcrt1qdavt4j2sd7dlhqsavtnfxvzppw6k7qy97tmnu9',
    'bcrt1qan8gntac7z7me2ejt4hpru42ad2f759fmy0m3ejvs98656znv7eqga4uhv',
    'bcrt1pfwxjqvtt4tcxrtdluukfmy2dv7xd2qzdfy6kajv5nwn4yam3wxkq3553uh',
  ]) {
    test(`regtest ${address} is rejected on both chains`, () => {
      for (const chain of CHAINS) assertInvalid('bitcoin', chain, address, 'unknown_prefix')
    })
  }

  test('valid vectors stay valid in the other single case; mixed case is invalid', () => {
    assertValid('bitcoin', 'main', 'bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4')
    assertValid('bitcoin', 'main', 'BC1P0XLXVLHEMJA6C4DQV22UAPCTQUPFHLXM9H8Z3K2E72Q4K9HCZ7VQZK5JJ0')
    assertInvalid('bitcoin', 'main', 'Bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4', 'mixed_case')
  })

  test('a 40-byte v16 program is accepted and the 90-character limit is enforced', () => {
    const words = [16, ...bech32m.toWords(new Uint8Array(40).fill(0xab))]
    const address = bech32m.encode('bc', words)
    assert.ok(address.length <= 90)
    assertValid('bitcoin', 'main', address)
    const tooLong = bech32m.encode('bc', [16, ...bech32m.toWords(new Uint8Array(60).fill(0xab))], false)
    assert.ok(tooLong.length > 90)
    assertInvalid('bitcoin', 'main', tooLong, 'too_long')
  })
})

// ---------------------------------------------------------------------------------------------------------------
// Bitcoin base58check. Sources: the Bitcoin Wiki ("Invoice address", "List of address prefixes") and Bitcoin Core's
// src/test/data/key_io_valid.json (scriptPubKeys from there; testnet4 addresses share testnet's version bytes).

const BITCOIN_P2PKH_VERSIONS = [0x00, 0x6f]

const BITCOIN_BASE58_VALID: ReadonlyArray<{ address: string; chain: Chain; scriptPubKey?: string }> = [
  { address: '1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2', chain: 'main' },
  { address: '3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy', chain: 'main' },
  { address: '17VZNX1SN5NtKa8UQFxwQbFeFc3iqRYhem', chain: 'main' },
  { address: '3EktnHQD7RiAE6uzMj2ZifT9YgRrkSgzQX', chain: 'main' },
  { address: 'mipcBbFg9gMiCh81Kj8tqqdgoZub1ZJRfn', chain: 'test' },
  { address: '2MzQwSSnBHWHqSAqtTVQ6v47XtaisrJa1Vc', chain: 'test' },
  { address: '1FsSia9rv4NeEwvJ2GvXrX7LyxYspbN2mo', chain: 'main', scriptPubKey: '76a914a31c06bd463e3923bc1aadbde48b16976c08071788ac' },
  { address: '36j4NfKv6Akva9amjWrLG6MuSQym1GuEmm', chain: 'main', scriptPubKey: 'a914373b819a068f32b7a6b38b6b38729647cfde01c287' },
  { address: '1FjL87pn8ky6Vbavd1ZHeChRXtoxwRGCRd', chain: 'main', scriptPubKey: '76a914a19331b7b2627e663e25a7b001e4c0dcc5e21bc788ac' },
  { address: '3BZECeAH8gSKkjrTx8PwMrNQBLG18yHpvf', chain: 'main', scriptPubKey: 'a9146c382dcdf5b284760c8e3fead91f7422cd76aa8787' },
  { address: 'mzK2FFDEhxqHcmrJw1ysqFkVyhUULo45hZ', chain: 'test', scriptPubKey: '76a914ce28b26c57472737f5c3561a1761185bd8589a4388ac' },
  { address: '2NC2hEhe28ULKAJkW5MjZ3jtTMJdvXmByvK', chain: 'test', scriptPubKey: 'a914ce0bba75891ff9ec60148d4bd4a09ee2dc5c933187' },
  { address: 'n4YNbYuFdPwFrxSP8sjHFbAhUbLMUiY9jE', chain: 'test', scriptPubKey: '76a914fc8f9851f3c1e4719cd0b8e4816dd4e88c72e52888ac' },
  { address: '2NAeQVZayzVFAtgeC3iYJsjpjWDmsDph71A', chain: 'test', scriptPubKey: 'a914bedc797342c03fd7a346c4c7857ca03d467013b687' },
]

// Wallet-import-format private keys (version 0x80/0xef, 32 or 33 bytes) from the same key_io_valid.json: valid
// base58check, never an address.
const BITCOIN_WIF_KEYS: ReadonlyArray<{ key: string; chain: Chain }> = [
  { key: '5JuW2AMDYu4xVwRG9DZW18VbzQrGcd5RCgb99sS6ehJsNQXu5b9', chain: 'main' },
  { key: 'L5nJeqKmpHp4P7F8ZYyjwc5a7P4d8EabuGAzfGJk7yC1BJyzNaEd', chain: 'main' },
  { key: '92ZdE5HoLafywnTBbzPxbvRmp75pSfzvdU3XaZGh1cToipgdHVh', chain: 'test' },
  { key: 'cV83kKisF3RQSvXbUCm9ox3kaz5JjEUBWcx8tNydfGJcyeUxuH47', chain: 'test' },
]

/** Replaces the last character with another base58 character: the checksum no longer matches. */
function corruptLast(address: string): string {
  return address.slice(0, -1) + (address.endsWith('2') ? '3' : '2')
}

describe('bitcoin base58check', () => {
  for (const { address, chain, scriptPubKey } of BITCOIN_BASE58_VALID) {
    test(`${address} is valid on ${chain} only`, () => {
      if (scriptPubKey !== undefined) assert.equal(base58ScriptPubKey(address, BITCOIN_P2PKH_VERSIONS), scriptPubKey)
      assertValid('bitcoin', chain, address)
      assertInvalid('bitcoin', other(chain), address, 'wrong_network')
    })
    test(`${address} with a corrupted checksum is invalid`, () => {
      assertInvalid('bitcoin', chain, corruptLast(address), 'checksum_mismatch')
    })
  }
  for (const { key, chain } of BITCOIN_WIF_KEYS) {
    test(`private key ${key.slice(0, 8)}… is not an address`, () => assertInvalid('bitcoin', chain, key, 'invalid_length'))
  }
  test('characters outside the base58 alphabet are invalid', () => {
    assertInvalid('bitcoin', 'main', '1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN0', 'invalid_characters')
    assertInvalid('bitcoin', 'main', '1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVNO', 'invalid_characters')
  })
  test('another coin\'s version byte is invalid (Litecoin L…)', () => {
    assertInvalid('bitcoin', 'main', 'LT2KVaAy1ppRuxRgrS5RNU3vBsy7RibPeA', 'unknown_prefix')
  })
})

// ---------------------------------------------------------------------------------------------------------------
// Litecoin. There are no BIP-style vectors for Litecoin: base58 addresses come from Litecoin Core's
// src/test/data/key_io_valid.json; segwit addresses are BIP-173/BIP-350 witness programs re-encoded with Litecoin's
// HRPs (computed with @scure/base, cross-checked below, not an official list).

const LITECOIN_P2PKH_VERSIONS = [0x30, 0x6f]

const LITECOIN_BASE58_VALID: ReadonlyArray<{ address: string; chain: Chain; scriptPubKey: string }> = [
  { address: 'LT2KVaAy1ppRuxRgrS5RNU3vBsy7RibPeA', chain: 'main', scriptPubKey: '76a914558dbca7118cd5894502767c7b2ffc21a22f54db88ac' },
  { address: 'MHrYRxAiMNBTku3eoDHwhA1LQGDjUStZW2', chain: 'main', scriptPubKey: 'a9146d328a5b2a20d943a641c8d29b6cc3c2d2df85d387' },
  { address: 'M9dw1FAoWpHC6PcMzoCHhqQ9McvTyG5Ywj', chain: 'main', scriptPubKey: 'a914130ef8742ad7492b389509252c6721775fb1127387' },
  { address: 'LbfVMz974gbbGFqXF7FZUpSBWSbwBHDwR5', chain: 'main', scriptPubKey: '76a914b4565f467408e9e1c1d2a3b0ccdeff84db3a3b9388ac' },
  { address: 'MWGEAUUZoN4r6puz8KsgnE9wNTQ8fGWCEy', chain: 'main', scriptPubKey: 'a914f54ec8d7b0c3f8ab8194db3432d19f8d44d03b1287' },
  { address: 'mwXn5Vhicdav8Av3KMokx4YNuHoGRKxtWs', chain: 'test', scriptPubKey: '76a914afa9e672141e283dfbcc1cf28f3793a856d3878488ac' },
  { address: 'QXaUgLHkZcbJb2j5XgMYzY8cF9YM48Y81Z', chain: 'test', scriptPubKey: 'a9147860667e60a6545e18e541984094b29c9c46991b87' },
  { address: 'QNfyfXGXxfeaG8SQpnHxS2J27ysokKCtZL', chain: 'test', scriptPubKey: 'a91416b18b6002004f5755040e8809755a1777fab4a687' },
  { address: 'mnJYjG654G354sX1xEBaPGvGCoe34M1Pqr', chain: 'test', scriptPubKey: '76a9144a7037b0cc4ae15278e7a62549e2acde3f60186688ac' },
  { address: 'QQjXG2nbVfxysmaEZQVL9TsS359WjDT5ux', chain: 'test', scriptPubKey: 'a9142d4d6b05448a911116292a177c04f7f6bd29ea2c87' },
]

const LITECOIN_SEGWIT_VALID: ReadonlyArray<{ address: string; chain: Chain; scriptPubKey: string }> = [
  { address: 'ltc1qw508d6qejxtdg4y5r3zarvary0c5xw7kgmn4n9', chain: 'main', scriptPubKey: '0014751e76e8199196d454941c45d1b3a323f1433bd6' },
  { address: 'ltc1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3qmu8tk5', chain: 'main', scriptPubKey: '00201863143c14c5166804bd19203356da136c985678cd4d27a1b8c6329604903262' },
  { address: 'ltc1p0xlxvlhemja6c4dqv22uapctqupfhlxm9h8z3k2e72q4k9hcz7vqpj6zg2', chain: 'main', scriptPubKey: '512079be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798' },
  { address: 'tltc1qw508d6qejxtdg4y5r3zarvary0c5xw7klfsuq0', chain: 'test', scriptPubKey: '0014751e76e8199196d454941c45d1b3a323f1433bd6' },
  { address: 'tltc1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3qsnr4fp', chain: 'test', scriptPubKey: '00201863143c14c5166804bd19203356da136c985678cd4d27a1b8c6329604903262' },
  { address: 'tltc1pqqqqp399et2xygdj5xreqhjjvcmzhxw4aywxecjdzew6hylgvseskjtjs8', chain: 'test', scriptPubKey: '5120000000c4a5cad46221b2a187905e5266362b99d5e91c6ce24d165dab93e86433' },
]

describe('litecoin', () => {
  for (const { address, chain, scriptPubKey } of LITECOIN_BASE58_VALID) {
    test(`${address} is valid on ${chain} only`, () => {
      assert.equal(base58ScriptPubKey(address, LITECOIN_P2PKH_VERSIONS), scriptPubKey)
      assertValid('litecoin', chain, address)
      assertInvalid('litecoin', other(chain), address, 'wrong_network')
      assertInvalid('litecoin', chain, corruptLast(address), 'checksum_mismatch')
    })
  }
  for (const { address, chain, scriptPubKey } of LITECOIN_SEGWIT_VALID) {
    test(`${address} is valid on ${chain} only`, () => {
      assert.equal(segwitScriptPubKey(address), scriptPubKey)
      assertValid('litecoin', chain, address)
      assertInvalid('litecoin', other(chain), address, 'wrong_network')
      assertInvalid('litecoin', chain, address.replace(/^[a-z]+/, (hrp) => hrp.toUpperCase()), 'mixed_case')
    })
  }
  test('legacy P2SH versions (3… main, 2… test) are still accepted', () => {
    assertValid('litecoin', 'main', '3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy')
    assertValid('litecoin', 'test', '2MzQwSSnBHWHqSAqtTVQ6v47XtaisrJa1Vc')
    assertInvalid('litecoin', 'test', '3J98t1WpEZ73CNmQviecrnyiWrnqRhWNLy', 'wrong_network')
  })
  test('Bitcoin-only forms are rejected', () => {
    assertInvalid('litecoin', 'main', '1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2', 'unknown_prefix')
    assertInvalid('litecoin', 'main', 'bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4', 'unknown_prefix')
    assertInvalid('litecoin', 'test', 'tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx', 'unknown_prefix')
    assertInvalid('bitcoin', 'main', 'ltc1qw508d6qejxtdg4y5r3zarvary0c5xw7kgmn4n9', 'unknown_prefix')
  })
  test('the same segwit rules apply (bech32 for v1 is invalid)', () => {
    const v1WithBech32 = bech32.encode('ltc', [1, ...bech32.toWords(Uint8Array.from(Buffer.from('79be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798', 'hex')))])
    assertInvalid('litecoin', 'main', v1WithBech32, 'wrong_checksum_variant')
  })
})

// ---------------------------------------------------------------------------------------------------------------
// Ethereum: ERC-55 "Test Cases" (https://eips.ethereum.org/EIPS/eip-55).

const EIP55_ALL_CAPS = ['0x52908400098527886E0F7030069857D2E4169EE7', '0x8617E340B3D01FA5F11F306F4090FD50E238070D']
const EIP55_ALL_LOWER = ['0xde709f2102306220921060314715629080e2fb77', '0x27b1fdb04752bbc536007a920d24acb045561c26']
const EIP55_NORMAL = [
  '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed',
  '0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359',
  '0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB',
  '0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb',
]

function flipCaseAt(address: string, index: number): string {
  const char = address.charAt(index)
  const flipped = char === char.toUpperCase() ? char.toLowerCase() : char.toUpperCase()
  return address.slice(0, index) + flipped + address.slice(index + 1)
}

describe('ethereum: EIP-55', () => {
  for (const address of [...EIP55_ALL_CAPS, ...EIP55_ALL_LOWER, ...EIP55_NORMAL]) {
    test(`${address} is valid on both chains`, () => {
      for (const chain of CHAINS) assertValid('ethereum', chain, address)
    })
  }
  for (const address of EIP55_NORMAL) {
    test(`${address} with any one letter's case flipped is invalid; its single-case forms are valid`, () => {
      let flips = 0
      for (let i = 2; i < address.length; i++) {
        if (!/[a-fA-F]/.test(address.charAt(i))) continue
        assertInvalid('ethereum', 'main', flipCaseAt(address, i), 'checksum_mismatch')
        flips++
      }
      assert.ok(flips > 0)
      assertValid('ethereum', 'main', `0x${address.slice(2).toLowerCase()}`)
      assertValid('ethereum', 'main', `0x${address.slice(2).toUpperCase()}`)
    })
  }
  test('malformed forms are invalid', () => {
    assertInvalid('ethereum', 'main', '5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed', 'invalid_characters')
    assertInvalid('ethereum', 'main', '0X5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed', 'invalid_characters')
    assertInvalid('ethereum', 'main', '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAe', 'invalid_length')
    assertInvalid('ethereum', 'main', '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed00', 'invalid_length')
    assertInvalid('ethereum', 'main', '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeg', 'invalid_characters')
    assertInvalid('ethereum', 'main', '0x', 'invalid_length')
  })
})

// ---------------------------------------------------------------------------------------------------------------
// XRP Ledger. X-addresses: the encoding tables of XLS-5 "Tagged Addresses"
// (https://github.com/XRPLF/XRPL-Standards/tree/master/XLS-0005-tagged-addresses), all for the classic address
// rGWrZyQqhTp9Xu7G5Pkayo7bXjH4k4QYpf; tag null means the untagged form.

const XLS5_CLASSIC = 'rGWrZyQqhTp9Xu7G5Pkayo7bXjH4k4QYpf'

const XLS5_MAINNET: ReadonlyArray<{ tag: number | null; address: string }> = [
  { tag: null, address: 'XVLhHMPHU98es4dbozjVtdWzVrDjtV5fdx1mHp98tDMoQXb' },
  { tag: 0, address: 'XVLhHMPHU98es4dbozjVtdWzVrDjtV8AqEL4xcZj5whKbmc' },
  { tag: 1, address: 'XVLhHMPHU98es4dbozjVtdWzVrDjtV8xvjGQTYPiAx6gwDC' },
  { tag: 2, address: 'XVLhHMPHU98es4dbozjVtdWzVrDjtV8zpDURx7DzBCkrQE7' },
  { tag: 32, address: 'XVLhHMPHU98es4dbozjVtdWzVrDjtVoYiC9UvKfjKar4LJe' },
  { tag: 276, address: 'XVLhHMPHU98es4dbozjVtdWzVrDjtVoKj3MnFGMXEFMnvJV' },
  { tag: 65591, address: 'XVLhHMPHU98es4dbozjVtdWzVrDjtVozpjdhPQVdt3ghaWw' },
  { tag: 16781933, address: 'XVLhHMPHU98es4dbozjVtdWzVrDjtVqrDUk2vDpkTjPsY73' },
  { tag: 4294967294, address: 'XVLhHMPHU98es4dbozjVtdWzVrDjtV1kAsixQTdMjbWi39u' },
  { tag: 4294967295, address: 'XVLhHMPHU98es4dbozjVtdWzVrDjtV18pX8yuPT7y4xaEHi' },
]

const XLS5_TESTNET: ReadonlyArray<{ tag: number | null; address: string }> = [
  { tag: null, address: 'TVE26TYGhfLC7tQDno7G8dGtxSkYQn49b3qD26PK7FcGSKE' },
  { tag: 0, address: 'TVE26TYGhfLC7tQDno7G8dGtxSkYQnSy8RHqGHoGJ59spi2' },
  { tag: 1, address: 'TVE26TYGhfLC7tQDno7G8dGtxSkYQnSz1uDimDdPYXzSpyw' },
  { tag: 2, address: 'TVE26TYGhfLC7tQDno7G8dGtxSkYQnTryP9tG9TW8GeMBmd' },
  { tag: 32, address: 'TVE26TYGhfLC7tQDno7G8dGtxSkYQnT2oqaCDzMEuCDAj1j' },
  { tag: 276, address: 'TVE26TYGhfLC7tQDno7G8dGtxSkYQnTMgJJYfAbsiPsc6Zg' },
  { tag: 65591, address: 'TVE26TYGhfLC7tQDno7G8dGtxSkYQn7ryu2W6njw7mT1jmS' },
  { tag: 16781933, address: 'TVE26TYGhfLC7tQDno7G8dGtxSkYQnVsw45sDtGHhLi27Qa' },
  { tag: 4294967294, address: 'TVE26TYGhfLC7tQDno7G8dGtxSkYQnX8tDFQ53itLNqs6vU' },
  { tag: 4294967295, address: 'TVE26TYGhfLC7tQDno7G8dGtxSkYQnXoy6kSDh6rZzApc69' },
]

// Classic addresses: XLS-5's examples, the special addresses and example account from xrpl.org "Addresses"/"Accounts".
const XRP_CLASSIC = [
  XLS5_CLASSIC,
  'r3kmLJN5D28dHuH8vZNUZpMC43pEHpaocV',
  'rrrrrrrrrrrrrrrrrrrrrhoLvTp',
  'rrrrrrrrrrrrrrrrrrrrBZbvji',
  'rHb9CJAWyB4rj91VRWn96DkukG4bwdtyTh',
  'rf1BiGeXwwQoi8Z2ueFYTEXSwuJYfV2Jpn',
]

const TAG_RANGE_ERROR = {
  isValid: false,
  error: {
    code: 'reference_invalid',
    message: 'XRP destination tag must be an integer between 0 and 4294967295',
    details: { rule: 'range', min: 0, max: 4294967295 },
  },
}

/** Base58check-encodes raw X-address bytes (prefix, account id, flags, tag) the way the XLS-5 tables show them. */
function encodeXAddressBytes(prefix: readonly number[], flags: number, tagBytes: readonly number[]): string {
  return xrpCodec.encodeChecked(Uint8Array.from([...prefix, ...decodeAccountID(XLS5_CLASSIC), flags, ...tagBytes]))
}

describe('xrp-ledger: X-addresses (XLS-5)', () => {
  for (const [chain, vectors] of [['main', XLS5_MAINNET], ['test', XLS5_TESTNET]] as const) {
    for (const { tag, address } of vectors) {
      test(`${address} (tag ${tag ?? 'none'}) is valid on ${chain} only and carries its tag`, () => {
        assertValid('xrp-ledger', chain, address)
        assertInvalid('xrp-ledger', other(chain), address, 'wrong_network')
        if (tag === null) {
          const result = validateAddress('xrp-ledger', chain, address, '0')
          assert.equal(result.isValid === false && result.error.code, 'reference_invalid')
        } else {
          assertValid('xrp-ledger', chain, address, String(tag))
          const different = validateAddress('xrp-ledger', chain, address, String(tag === 0 ? 1 : tag - 1))
          assert.deepEqual(different, {
            isValid: false,
            error: {
              code: 'reference_invalid',
              message: `The destination tag in the X-address (${tag}) and the reference (${tag === 0 ? 1 : tag - 1}) differ`,
              details: { rule: 'mismatch', addressTag: tag },
            },
          })
        }
      })
    }
  }

  test('the ripple-address-codec README example (testnet, tag 123) is valid on test', () => {
    assertValid('xrp-ledger', 'test', 'T7oKJ3q7s94kDH6tpkBowhetT1JKfcfdSCmAXbS75iATyLD', '123')
    assertInvalid('xrp-ledger', 'main', 'T7oKJ3q7s94kDH6tpkBowhetT1JKfcfdSCmAXbS75iATyLD', 'wrong_network')
  })

  test('an untagged X-address cannot be combined with a reference', () => {
    assert.deepEqual(validateAddress('xrp-ledger', 'main', 'XVLhHMPHU98es4dbozjVtdWzVrDjtV5fdx1mHp98tDMoQXb', '7'), {
      isValid: false,
      error: {
        code: 'reference_invalid',
        message: 'The X-address states that it takes no destination tag, but a reference was given',
        details: { rule: 'mismatch', addressTag: null },
      },
    })
  })

  test('checksum failures are invalid', () => {
    assertInvalid('xrp-ledger', 'main', 'XVLhHMPHU98es4dbozjVtdWzVrDjtV18pX8yuPT7y4xaEHj', 'checksum_mismatch')
    assertInvalid('xrp-ledger', 'main', 'XVLhHMPHU98es4dbozjVtdWzVrDjtV18pX8yuPT7y4xaEH', 'checksum_mismatch')
    assertInvalid('xrp-ledger', 'test', 'TVE26TYGhfLC7tQDno7G8dGtxSkYQnXoy6kSDh6rZzApc68', 'checksum_mismatch')
    assertInvalid('xrp-ledger', 'main', 'XVLhHMPHU98es4dbozjVtdWzVrDjtV18pX8yuPT7y4xaEH0', 'invalid_characters')
  })

  test('flags and tag bytes that XLS-5 forbids are invalid', () => {
    const main = [0x05, 0x44]
    // Sanity check of the helper: it reproduces XLS-5's tag-1 vector.
    assert.equal(encodeXAddressBytes(main, 1, [1, 0, 0, 0, 0, 0, 0, 0]), 'XVLhHMPHU98es4dbozjVtdWzVrDjtV8xvjGQTYPiAx6gwDC')
    // TAG_64 (flag 2) is reserved.
    assertInvalid('xrp-ledger', 'main', encodeXAddressBytes(main, 2, [1, 0, 0, 0, 0, 0, 0, 0]), 'invalid_tag_field')
    // NO_TAG with non-zero tag bytes.
    assertInvalid('xrp-ledger', 'main', encodeXAddressBytes(main, 0, [1, 0, 0, 0, 0, 0, 0, 0]), 'invalid_tag_field')
    // TAG_32 with the upper four tag bytes set (they MUST be zero).
    assertInvalid('xrp-ledger', 'main', encodeXAddressBytes(main, 1, [1, 0, 0, 0, 1, 0, 0, 0]), 'invalid_tag_field')
    // An unknown two-byte prefix.
    assertInvalid('xrp-ledger', 'main', encodeXAddressBytes([0x05, 0x45], 0, [0, 0, 0, 0, 0, 0, 0, 0]), 'unknown_prefix')
  })
})

describe('xrp-ledger: classic addresses and destination tags', () => {
  for (const address of XRP_CLASSIC) {
    test(`${address} is valid on both chains`, () => {
      for (const chain of CHAINS) assertValid('xrp-ledger', chain, address)
    })
  }

  test('classic addresses with a broken checksum or foreign characters are invalid', () => {
    assertInvalid('xrp-ledger', 'main', 'rGWrZyQqhTp9Xu7G5Pkayo7bXjH4k4QYpg', 'checksum_mismatch')
    assertInvalid('xrp-ledger', 'main', 'rHb9CJAWyB4rj91VRWn96DkukG4bwdtyTl', 'invalid_characters')
    assertInvalid('xrp-ledger', 'main', 'rHb9CJAWyB4rj91VRWn96DkukG4bwdtyT', 'checksum_mismatch')
    // A Bitcoin address is base58check with Bitcoin's alphabet order, so XRP's checksum does not hold.
    assertInvalid('xrp-ledger', 'main', '1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2', 'checksum_mismatch')
  })

  test('other XRP base58check payloads (an account public key) are not addresses', () => {
    const publicKey = xrpCodec.encodeChecked(Uint8Array.from([0x23, ...new Uint8Array(33).fill(2)]))
    assertInvalid('xrp-ledger', 'main', publicKey, 'unknown_prefix')
  })

  test('destination tags 0 and 4294967295 are accepted', () => {
    assertValid('xrp-ledger', 'main', XLS5_CLASSIC, '0')
    assertValid('xrp-ledger', 'main', XLS5_CLASSIC, '4294967295')
    assertValid('xrp-ledger', 'test', XLS5_CLASSIC, '12345')
  })

  // Decision: a tag is written in canonical decimal, so '01' (leading zero) is rejected like any other
  // non-canonical form; it avoids two spellings of one tag and octal-looking input.
  for (const reference of ['-1', '4294967296', '99999999999', '1.5', '01', '00', 'abc', '', ' 1', '1 ', '+1', '1e3', '0x10', '１']) {
    test(`destination tag ${JSON.stringify(reference)} is rejected`, () => {
      assert.deepEqual(validateAddress('xrp-ledger', 'main', XLS5_CLASSIC, reference), TAG_RANGE_ERROR)
      assert.deepEqual(validateAddress('xrp-ledger', 'main', 'XVLhHMPHU98es4dbozjVtdWzVrDjtV8AqEL4xcZj5whKbmc', reference), TAG_RANGE_ERROR)
    })
  }
})

// ---------------------------------------------------------------------------------------------------------------
// Solana: 32-byte keys in base58. Program ids from the Solana Program Library docs.

const SOLANA_VALID = [
  '11111111111111111111111111111111', // System Program
  'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA', // SPL Token
  'ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL', // SPL Associated Token Account
  'So11111111111111111111111111111111111111112', // Wrapped SOL mint
  'MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr', // SPL Memo
]

describe('solana', () => {
  for (const address of SOLANA_VALID) {
    test(`${address} is valid on both chains`, () => {
      for (const chain of CHAINS) assertValid('solana', chain, address)
    })
  }
  test('wrong lengths are invalid', () => {
    assertInvalid('solana', 'main', '1'.repeat(31), 'invalid_length')
    assertInvalid('solana', 'main', '1'.repeat(33), 'invalid_length')
    assertInvalid('solana', 'main', 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5D', 'invalid_length')
    assertInvalid('solana', 'main', 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DAA', 'invalid_length')
    assertInvalid('solana', 'main', '1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2', 'invalid_length')
  })
  test('characters outside the base58 alphabet are invalid', () => {
    assertInvalid('solana', 'main', 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ50A', 'invalid_characters')
    assertInvalid('solana', 'main', 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5lA', 'invalid_characters')
    assertInvalid('solana', 'main', '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed', 'invalid_characters')
  })
})

// ---------------------------------------------------------------------------------------------------------------

describe('every family', () => {
  const samples: ReadonlyArray<[AddressFamily, Chain, string]> = [
    ['bitcoin', 'main', '1BvBMSEYstWetqTFn5Au4m4GFg7xJaNVN2'],
    ['litecoin', 'main', 'LT2KVaAy1ppRuxRgrS5RNU3vBsy7RibPeA'],
    ['ethereum', 'main', '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed'],
    ['xrp-ledger', 'main', XLS5_CLASSIC],
    ['solana', 'main', 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA'],
  ]
  for (const [family, chain, address] of samples) {
    test(`${family}: empty, padded and oversized input is invalid`, () => {
      assertInvalid(family, chain, '', 'empty')
      assertRejected(family, chain, ` ${address}`)
      assertRejected(family, chain, `${address}\n`)
      assertInvalid(family, chain, address.repeat(10).slice(0, 129), 'too_long')
    })
  }
  for (const [family, chain, address] of samples.filter(([family]) => family !== 'xrp-ledger')) {
    test(`${family}: a reference is rejected`, () => {
      for (const reference of ['123', '']) {
        assert.deepEqual(validateAddress(family, chain, address, reference), {
          isValid: false,
          error: { code: 'reference_invalid', message: 'This network does not take a reference', details: { rule: 'unsupported' } },
        })
      }
    })
  }
  test('an invalid address is reported before the reference is looked at', () => {
    for (const [family, reference] of [['bitcoin', '1'], ['solana', '1'], ['xrp-ledger', 'abc']] as const) {
      const result = validateAddress(family, 'main', 'x', reference)
      assert.equal(result.isValid === false && result.error.code, 'address_invalid')
    }
  })
})
