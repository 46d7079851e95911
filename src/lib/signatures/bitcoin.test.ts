import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js'
import { base64 } from '@scure/base'
import * as btc from '@scure/btc-signer'
import fc from 'fast-check'
import { alterMessage, CHAINS, signMessage, testKeys, UTXO_ADDRESS_TYPES } from '../../../test/signing.ts'
import type { Chain } from '../../modules/reference/index.ts'
import { bip322MessageHash, parseToSign, parseWitnessStack, toSpendTxid } from './bip322-transactions.ts'
import { verifyMessageSignature } from './index.ts'
import type { SignatureCheck, SignedMessage } from './index.ts'
import { decodeUtxoAddress, scriptPubKey, UTXO_NETWORKS } from './utxo-addresses.ts'
// bitcoin/bips, bip-0322/*.json at d77863fb9e9be7829ad8bb51694b9ba80a786766 (BIP-322 1.0 "Test vectors"), copied verbatim.
import basicVectors from './vectors/bip-0322-basic-test-vectors.json' with { type: 'json' }
import generatedVectors from './vectors/bip-0322-generated-test-vectors.json' with { type: 'json' }

const VALID_322 = { valid: true, scheme: 'bip-322' } as const
const VALID_137 = { valid: true, scheme: 'bip-137' } as const

function verify(family: 'bitcoin' | 'litecoin', chain: Chain, address: string, message: string, signature: string): SignatureCheck {
  return verifyMessageSignature({ family, chain, address, message, signature })
}

/** Display order (block explorers, the BIP's vectors) of a hash held in internal byte order. */
function displayHash(hash: Uint8Array): string {
  return bytesToHex(Uint8Array.from(hash).reverse())
}

// The script types this library verifies; the vectors' other types (P2WSH, P2SH multisig, taproot script paths)
// are valid signatures that it declines to judge.
const VERIFIED_TYPES = new Set(['p2wpkh', 'p2tr', 'p2pkh', 'p2sh-p2wpkh'])

describe('BIP-322 official vectors (bitcoin/bips bip-0322/basic-test-vectors.json)', () => {
  // to_sign's own hash is never computed by a verifier: the signature vectors below sign its sighash instead.
  test('message hashes and to_spend transaction hashes', () => {
    for (const vector of basicVectors.tx_hashes) {
      const message = utf8ToBytes(vector.message)
      assert.equal(bytesToHex(bip322MessageHash(message)), vector.message_hash, vector.message)
      const address = decodeUtxoAddress(UTXO_NETWORKS.bitcoin.main, vector.address)
      assert.ok(address && address.type !== 'other-witness')
      const toSpend = toSpendTxid(bip322MessageHash(message), scriptPubKey(address))
      assert.equal(displayHash(toSpend), vector.to_spend_tx_hash, vector.message)
    }
  })

  test('simple signatures: P2WPKH and P2TR verify, P2WSH multisig is declined', () => {
    for (const vector of basicVectors.simple) {
      for (const signature of vector.bip322_signatures) {
        const expected = VERIFIED_TYPES.has(vector.type) ? VALID_322 : { valid: false, reason: 'address-unsupported' }
        assert.deepEqual(verify('bitcoin', 'main', vector.address, vector.message, signature), expected, `${vector.type} ${signature}`)
      }
    }
  })

  test('the prefix-less draft encoding ("No prefix fallback") is read as simple', () => {
    const vector = basicVectors.simple.find((candidate) => candidate.message === 'No prefix fallback')
    assert.ok(vector?.bip322_signatures[0])
    assert.ok(!vector.bip322_signatures[0].startsWith('smp'))
    assert.deepEqual(verify('bitcoin', 'main', vector.address, vector.message, vector.bip322_signatures[0]), VALID_322)
  })

  test('error vectors fail, each for its reason', () => {
    const expected: Record<string, string> = {
      'invalid base64 encoding': 'signature-malformed',
      'empty signature': 'signature-malformed',
      'wrong message for valid simple p2wpkh signature (empty message was signed)': 'signature-mismatch',
      // The vector's "different address" is a P2WSH multisig, whose scripts this library does not evaluate.
      'wrong address for valid simple p2wpkh signature (signed for different address)': 'address-unsupported',
      'empty witness stack (single zero byte)': 'signature-malformed',
      'wrong message for valid simple p2wsh 3-of-3 multisig signature': 'address-unsupported',
      'invalid signature prefix': 'signature-malformed',
      'incorrect prefix type': 'signature-malformed',
    }
    for (const vector of basicVectors.error) {
      assert.deepEqual(
        verify('bitcoin', 'main', vector.address, vector.message, vector.signature),
        { valid: false, reason: expected[vector.description] },
        vector.description,
      )
    }
  })
})

describe('BIP-322 official vectors (bitcoin/bips bip-0322/generated-test-vectors.json)', () => {
  test('simple and full signatures of the supported scripts verify; the others are declined', () => {
    for (const variant of ['simple', 'full'] as const) {
      for (const vector of generatedVectors[variant]) {
        for (const signature of vector.bip322_signatures) {
          const expected = VERIFIED_TYPES.has(vector.type) ? VALID_322 : { valid: false, reason: 'address-unsupported' }
          assert.deepEqual(verify('bitcoin', 'main', vector.address, vector.message, signature), expected, `${variant} ${vector.type}`)
        }
      }
    }
  })

  test('full signatures with time locks (version 2, nLockTime and nSequence 2016) verify', () => {
    const timeLocked = generatedVectors.full.filter((vector) => VERIFIED_TYPES.has(vector.type))
    assert.deepEqual(timeLocked.map((vector) => vector.type).sort(), ['p2pkh', 'p2sh-p2wpkh', 'p2tr', 'p2wpkh'])
    for (const vector of timeLocked) {
      const [signature = ''] = vector.bip322_signatures
      const parsed = parseToSign(base64.decode(signature.slice(3)))
      assert.deepEqual(parsed && [parsed.version, parsed.lockTime, parsed.sequence], [vector.tx_version, vector.lock_time, vector.sequence])
    }
  })

  test('proofs of funds are declined: they need the UTXO set', () => {
    for (const vector of generatedVectors.proof_of_funds) {
      for (const signature of vector.bip322_signatures) {
        assert.deepEqual(verify('bitcoin', 'main', vector.address, vector.message, signature), { valid: false, reason: 'address-unsupported' })
      }
    }
  })

  test('every error vector (wrong message, wrong signer) fails; for supported scripts as a mismatch', () => {
    for (const vector of generatedVectors.error) {
      const check = verify('bitcoin', 'main', vector.address, vector.message, vector.signature)
      assert.equal(check.valid, false, vector.description)
      const type = /for (\S+) (?:simple|full) signature/.exec(vector.description)?.[1] ?? ''
      if (VERIFIED_TYPES.has(type)) assert.deepEqual(check, { valid: false, reason: 'signature-mismatch' }, vector.description)
    }
  })
})

describe('BIP-137 vectors', () => {
  // Bitcoin Core, src/test/util_tests.cpp, BOOST_AUTO_TEST_CASE(message_verify).
  test('Bitcoin Core message_verify', () => {
    assert.deepEqual(verify('bitcoin', 'main', '15CRxFdyRpGZLW9w8HnHvVduizdL5jKNbs', 'Trust no one', 'IPojfrX2dfPnH26UegfbGQQLrdK844DlHq5157/P6h57WyuS/Qsl+h/WSVGDF4MUi4rWSswW38oimDYfNNUBUOk='), VALID_137)
    assert.deepEqual(
      verify('bitcoin', 'main', '15CRxFdyRpGZLW9w8HnHvVduizdL5jKNbs', 'I never signed this', 'IPojfrX2dfPnH26UegfbGQQLrdK844DlHq5157/P6h57WyuS/Qsl+h/WSVGDF4MUi4rWSswW38oimDYfNNUBUOk='),
      { valid: false, reason: 'signature-mismatch' },
    )
    // r and s spell out the genesis block's headline; s is high, which Bitcoin Core's verifier accepts.
    assert.deepEqual(verify('bitcoin', 'main', '11canuhp9X2NocwCq7xNrQYTmUgZAnLK3', 'Trust me', 'IIcaIENoYW5jZWxsb3Igb24gYnJpbmsgb2Ygc2Vjb25kIGJhaWxvdXQgZm9yIGJhbmtzIAaHRtbCeDZINyavx14='), VALID_137)
    assert.deepEqual(
      verify('bitcoin', 'main', '1KqbBpLy5FARmTPD4VZnDDpYjkUvkr82Pm', 'message should be irrelevant', 'invalid signature, not in base64 encoding'),
      { valid: false, reason: 'signature-malformed' },
    )
    assert.deepEqual(
      verify('bitcoin', 'main', '1KqbBpLy5FARmTPD4VZnDDpYjkUvkr82Pm', 'message should be irrelevant', 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA='),
      { valid: false, reason: 'signature-malformed' },
    )
  })

  test('Bitcoin Core message_sign: the test signer reproduces its signature', () => {
    // Bitcoin Core, src/test/util_tests.cpp, BOOST_AUTO_TEST_CASE(message_sign): deterministic (RFC 6979) nonce.
    const signed = signMessage({
      family: 'bitcoin', chain: 'main', addressType: 'p2pkh', message: 'Trust no one',
      privateKey: 'd97f5108f11cda6eeebaaa420fef0726b1f898060b98489fa3098463c0032866',
    })
    assert.equal(signed.address, '15CRxFdyRpGZLW9w8HnHvVduizdL5jKNbs')
    assert.equal(signed.signature, 'IPojfrX2dfPnH26UegfbGQQLrdK844DlHq5157/P6h57WyuS/Qsl+h/WSVGDF4MUi4rWSswW38oimDYfNNUBUOk=')
  })

  test('Bitcoin Core and Litecoin Core signmessagewithprivkey (same key and message, each its magic)', () => {
    // bitcoin/bitcoin test/functional/rpc_signmessagewithprivkey.py
    const bitcoin = 'INbVnW4e6PeRmsv2Qgu8NuopvrVjkcxob+sX8OcZG0SALhWybUjzMLPdAsXI46YZGb0KQTRii+wWIQzRpG/U+S0='
    // litecoin-project/litecoin test/functional/rpc_signmessage.py
    const litecoin = 'IGve8AOjIcu+a/nYW1PABSfmp2oQlEqLIOwPgNW5/Y5teggr8S0vy4SMdjL2Viv3iuBZjJbhvyBo0tv5m3H63b8='
    const address = 'mpLQjfK79b7CCV4VMJWEWAj5Mpx8Up5zxB'
    const message = 'This is just a test message'
    assert.deepEqual(verify('bitcoin', 'test', address, message, bitcoin), VALID_137)
    assert.deepEqual(verify('litecoin', 'test', address, message, litecoin), VALID_137)
    // The magic differs, so neither network's signature stands on the other.
    assert.deepEqual(verify('litecoin', 'test', address, message, bitcoin), { valid: false, reason: 'signature-mismatch' })
    assert.deepEqual(verify('bitcoin', 'test', address, message, litecoin), { valid: false, reason: 'signature-mismatch' })
    assert.deepEqual(verify('bitcoin', 'test', address, alterMessage(message), bitcoin), { valid: false, reason: 'signature-mismatch' })
    // A testnet address is not a mainnet address.
    assert.deepEqual(verify('bitcoin', 'main', address, message, bitcoin), { valid: false, reason: 'address-unsupported' })
    const wif = btc.WIF(btc.TEST_NETWORK).decode('cUeKHd5orzT3mz8P9pxyREHfsWtVfgsfDjiZZBcjUBAaGk1BTj7N')
    for (const [family, expected] of [['bitcoin', bitcoin], ['litecoin', litecoin]] as const) {
      const signed = signMessage({ family, chain: 'test', addressType: 'p2pkh', message, privateKey: bytesToHex(wif) })
      assert.deepEqual([signed.address, signed.signature], [address, expected], family)
    }
  })

  test('litecore-message README example (litecoin-project/litecore-message)', () => {
    const signature = 'H9XORZInM3B3a8BNS65kwgmbnqEuq73rjAQ5VKyVzTrzPOdHdHOY2lfoph5auvMgLSr7bh+nEQSG/f2kv9TnsbY='
    assert.deepEqual(verify('litecoin', 'test', 'n1ZCYg9YXtB5XCZazLxSmPDa8iwJRZHhGx', 'hello, world', signature), VALID_137)
    assert.deepEqual(verify('litecoin', 'test', 'n1ZCYg9YXtB5XCZazLxSmPDa8iwJRZHhGx', 'hello, world!', signature), { valid: false, reason: 'signature-mismatch' })
  })

  // bitcoinjs/bitcoinjs-message test/fixtures.json, "valid.verify" and "invalid.verify" (private key 1).
  test('bitcoinjs-message fixtures: every BIP-137 header type', () => {
    const message = 'vires is numeris'
    const cases: Array<[string, string]> = [
      ['16UwLL9Risc3QfPqBUvKofHmBQ7wMtjvM', 'G8JawPtQOrybrSP1WHQnQPr67B9S3qrxBrl1mlzoTJOSHEpmnF7D3+t+LX0Xei9J20B5AIdPbeL3AaTBZ4N3bY0='],
      ['1PMycacnJaSqwwJqjawXBErnLsZ7RkXUAs', 'H8JawPtQOrybrSP1WHQnQPr67B9S3qrxBrl1mlzoTJOSHEpmnF7D3+t+LX0Xei9J20B5AIdPbeL3AaTBZ4N3bY0='],
      ['3JvL6Ymt8MVWiCNHC7oWU6nLeHNJKLZGLN', 'JF8nHqFr3K2UKYahhX3soVeoW8W1ECNbr0wfck7lzyXjCS5Q16Ek45zyBuy1Fiy9sTPKVgsqqOuPvbycuVSSVl8='],
      ['bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4', 'KF8nHqFr3K2UKYahhX3soVeoW8W1ECNbr0wfck7lzyXjCS5Q16Ek45zyBuy1Fiy9sTPKVgsqqOuPvbycuVSSVl8='],
    ]
    for (const [address, signature] of cases) {
      assert.deepEqual(verify('bitcoin', 'main', address, message, signature), VALID_137, address)
      assert.deepEqual(verify('bitcoin', 'main', address, 'foobar', signature), { valid: false, reason: 'signature-mismatch' }, address)
    }
    const mismatch = { valid: false, reason: 'signature-mismatch' }
    assert.deepEqual(verify('bitcoin', 'main', '1111111111111111111114oLvT2', message, 'H8JawPtQOrybrSP1WHQnQPr67B9S3qrxBrl1mlzoTJOSHEpmnF7D3+t+LX0Xei9J20B5AIdPbeL3AaTBZ4N3bY0='), mismatch)
    // "does not cross verify": a compressed-key signature for the uncompressed key's address, and the reverse.
    assert.deepEqual(verify('bitcoin', 'main', '16UwLL9Risc3QfPqBUvKofHmBQ7wMtjvM', message, 'H8JawPtQOrybrSP1WHQnQPr67B9S3qrxBrl1mlzoTJOSHEpmnF7D3+t+LX0Xei9J20B5AIdPbeL3AaTBZ4N3bY0='), mismatch)
    assert.deepEqual(verify('bitcoin', 'main', '1PMycacnJaSqwwJqjawXBErnLsZ7RkXUAs', message, 'G8JawPtQOrybrSP1WHQnQPr67B9S3qrxBrl1mlzoTJOSHEpmnF7D3+t+LX0Xei9J20B5AIdPbeL3AaTBZ4N3bY0='), mismatch)
    // The P2WPKH signature is a P2WPKH signature: its header does not prove the P2SH-P2WPKH address.
    assert.deepEqual(verify('bitcoin', 'main', '3JvL6Ymt8MVWiCNHC7oWU6nLeHNJKLZGLN', message, 'KF8nHqFr3K2UKYahhX3soVeoW8W1ECNbr0wfck7lzyXjCS5Q16Ek45zyBuy1Fiy9sTPKVgsqqOuPvbycuVSSVl8='), mismatch)
  })

  test('bitcoinjs-message fixtures: malformed signatures (bad header, wrong lengths)', () => {
    const address = '1PMycacnJaSqwwJqjawXBErnLsZ7RkXUAs'
    for (const hex of [
      '2b987ceade6a304fc5823ab38f99fc3c5f772a2d3e89ea05931e2726105fc53b9e601fc3231f35962c714fcbce5c95b427496edc7ae8b3d12e93791d7629795b62',
      '1c987ceade6a304fc5823ab38f99fc3c5f772a2d3e89ea05931e2726105fc53b9e601fc3231f35962c714fcbce5c95b427496edc7ae8b3d12e93791d7629795b62000000',
      '1c987ceade6a304fc5823ab38f99fc3c5f772a2d3e89ea05931e2726105fc53b9e601fc3231f35962c714fcbce5c95b427496edc7ae8b3d12e9379',
    ]) {
      const signature = base64.encode(Uint8Array.from(Buffer.from(hex, 'hex')))
      assert.deepEqual(verify('bitcoin', 'main', address, 'vires is numeris', signature), { valid: false, reason: 'signature-malformed' }, hex)
    }
  })

  test('Electrum-style headers: a compressed-P2PKH header proves the key\'s segwit addresses too', () => {
    for (const family of ['bitcoin', 'litecoin'] as const) {
      for (const chain of CHAINS) {
        for (const addressType of ['p2sh-p2wpkh', 'p2wpkh'] as const) {
          const signed = signMessage({ family, chain, addressType, scheme: 'bip-137', bip137Header: 'electrum', message: 'electrum' })
          assert.match(signed.signature, /^[HI]/)
          assert.deepEqual(verifyMessageSignature(signed), VALID_137, `${family} ${chain} ${addressType}`)
        }
      }
    }
  })

  test('BIP-137 cannot prove a taproot address', () => {
    const signed = signMessage({ family: 'bitcoin', chain: 'main', addressType: 'p2wpkh', scheme: 'bip-137', message: 'm' })
    const taproot = testKeys.primary.addresses.bitcoin.main.p2tr
    assert.deepEqual(verifyMessageSignature({ ...signed, address: taproot }), { valid: false, reason: 'address-unsupported' })
  })
})

describe('round trips through test/signing.ts (btc-signer signs, this library verifies)', () => {
  const families = ['bitcoin', 'litecoin'] as const
  const cases = families.flatMap((family) =>
    CHAINS.flatMap((chain) =>
      UTXO_ADDRESS_TYPES.flatMap((addressType) => [
        ...(addressType === 'p2tr' ? [] : [{ family, chain, addressType, scheme: 'bip-137' as const }]),
        { family, chain, addressType, scheme: 'bip-322' as const, bip322Format: 'simple' as const },
        { family, chain, addressType, scheme: 'bip-322' as const, bip322Format: 'full' as const },
        { family, chain, addressType, scheme: 'bip-322' as const, bip322Format: 'simple' as const, bip322Prefix: false },
      ]),
    ),
  )

  for (const options of cases) {
    const name = `${options.family} ${options.chain} ${options.addressType} ${options.scheme} ${options.bip322Format ?? ''} ${options.bip322Prefix === false ? 'unprefixed' : ''}`
    test(name, () => {
      const message = 'Tessera owns this wallet — ünïcödé ✓'
      const signed = signMessage({ ...options, message })
      assert.equal(signed.address, testKeys.primary.addresses[options.family][options.chain][options.addressType])
      assert.deepEqual(verifyMessageSignature(signed), { valid: true, scheme: options.scheme })
      assert.deepEqual(verifyMessageSignature({ ...signed, message: alterMessage(message) }), { valid: false, reason: 'signature-mismatch' })
      const otherAddress = testKeys.secondary.addresses[options.family][options.chain][options.addressType]
      assert.deepEqual(verifyMessageSignature({ ...signed, address: otherAddress }), { valid: false, reason: 'signature-mismatch' })
      const otherChain: Chain = options.chain === 'main' ? 'test' : 'main'
      const otherFamily = options.family === 'bitcoin' ? 'litecoin' : 'bitcoin'
      assert.deepEqual(verifyMessageSignature({ ...signed, chain: otherChain }), { valid: false, reason: 'address-unsupported' })
      for (const family of ['ethereum', 'solana', 'xrp-ledger'] as const) {
        assert.deepEqual(verifyMessageSignature({ ...signed, family }), { valid: false, reason: 'address-unsupported' }, family)
      }
      assert.deepEqual(verifyMessageSignature({ ...signed, family: otherFamily }), elsewhere(signed, otherFamily, options.scheme))
    })
  }
})

/**
 * The same string on the other UTXO family: most forms are no address there, but testnet P2PKH (m…, n…) and
 * Bitcoin-style P2SH (3…, 2…) are addresses on both. There BIP-137 fails (its message magic names the network)
 * while BIP-322 holds: it commits to the output script only, and the key does control that script on both.
 */
function elsewhere(signed: SignedMessage, family: 'bitcoin' | 'litecoin', scheme: 'bip-137' | 'bip-322'): SignatureCheck {
  if (!decodeUtxoAddress(UTXO_NETWORKS[family][signed.chain], signed.address)) return { valid: false, reason: 'address-unsupported' }
  return scheme === 'bip-137' ? { valid: false, reason: 'signature-mismatch' } : { valid: true, scheme }
}

describe('address and signature forms', () => {
  test('bech32 addresses may be written in upper case', () => {
    const signed = signMessage({ family: 'bitcoin', chain: 'main', addressType: 'p2wpkh', message: 'QR codes shout' })
    assert.deepEqual(verifyMessageSignature({ ...signed, address: signed.address.toUpperCase() }), VALID_322)
    assert.deepEqual(verifyMessageSignature({ ...signed, address: `bc1${signed.address.slice(3).toUpperCase()}` }), { valid: false, reason: 'address-unsupported' })
  })

  test('Litecoin\'s legacy P2SH versions (3…, 2…) name the same P2SH-P2WPKH output as M… and Q…', () => {
    for (const chain of CHAINS) {
      const signed = signMessage({ family: 'litecoin', chain, addressType: 'p2sh-p2wpkh', message: 'legacy p2sh' })
      const hash = btc.Address(btc.NETWORK).decode(testKeys.primary.addresses.bitcoin.main['p2sh-p2wpkh'])
      assert.equal(hash.type, 'sh')
      const legacyForm = btc.Address(chain === 'main' ? btc.NETWORK : btc.TEST_NETWORK).encode(hash)
      assert.deepEqual(verifyMessageSignature({ ...signed, address: legacyForm }), VALID_322, legacyForm)
    }
  })

  test('P2WSH and future witness versions are declined, whatever the signature', () => {
    for (const address of [
      'bc1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3qccfmv3', // BIP-173 P2WSH
      'bc1zw508d6qejxtdg4y5r3zarvaryvaxxpcs', // BIP-350, witness v2
    ]) {
      assert.deepEqual(decodeUtxoAddress(UTXO_NETWORKS.bitcoin.main, address), { type: 'other-witness' })
      assert.deepEqual(verify('bitcoin', 'main', address, 'm', 'AkgwRQ=='), { valid: false, reason: 'address-unsupported' })
    }
  })

  test('a BIP-322 signature must use SIGHASH_ALL, strict DER and low S', () => {
    const signed = signMessage({ family: 'bitcoin', chain: 'main', addressType: 'p2wpkh', bip322Prefix: false, message: 'sighash' })
    const witness = parseWitnessStack(base64.decode(signed.signature))
    assert.ok(witness?.[0] && witness[1])
    const [signature, publicKey] = witness
    const withHashType = (hashType: number): string => base64.encode(btc.RawWitness.encode([Uint8Array.from([...signature.subarray(0, -1), hashType]), publicKey]))
    assert.deepEqual(verifyMessageSignature({ ...signed, signature: withHashType(0x01) }), VALID_322)
    for (const hashType of [0x00, 0x02, 0x03, 0x81]) {
      assert.deepEqual(verifyMessageSignature({ ...signed, signature: withHashType(hashType) }), { valid: false, reason: 'signature-malformed' })
    }
    // Padding r with a zero byte keeps its value but is not strict DER (BIP-66).
    const der = signature.subarray(0, -1)
    const rLength = der[3] ?? 0
    const padded = Uint8Array.from([0x30, (der[1] ?? 0) + 1, 0x02, rLength + 1, 0x00, ...der.subarray(4)])
    const paddedWitness = base64.encode(btc.RawWitness.encode([Uint8Array.from([...padded, 0x01]), publicKey]))
    assert.deepEqual(verifyMessageSignature({ ...signed, signature: paddedWitness }), { valid: false, reason: 'signature-malformed' })
  })

  test('a taproot key-path signature may carry SIGHASH_ALL explicitly, and nothing else', () => {
    const signed = signMessage({ family: 'bitcoin', chain: 'test', addressType: 'p2tr', message: 'taproot' })
    const witness = parseWitnessStack(base64.decode(signed.signature.slice(3)))
    assert.ok(witness?.[0])
    assert.equal(witness[0].length, 64)
    const withHashType = (hashType: number): string => `smp${base64.encode(btc.RawWitness.encode([Uint8Array.from([...(witness[0] ?? []), hashType])]))}`
    // SIGHASH_DEFAULT and SIGHASH_ALL sign different messages (the hash type is committed), so ALL fails here…
    assert.deepEqual(verifyMessageSignature({ ...signed, signature: withHashType(0x01) }), { valid: false, reason: 'signature-mismatch' })
    // …and an explicit 0x00, or any hash type but ALL, is malformed.
    for (const hashType of [0x00, 0x02, 0x83]) {
      assert.deepEqual(verifyMessageSignature({ ...signed, signature: withHashType(hashType) }), { valid: false, reason: 'signature-malformed' })
    }
    // Two witness items are a script-path spend (or an annex), which is not evaluated.
    const scriptPath = `smp${base64.encode(btc.RawWitness.encode([witness[0], Uint8Array.of(0x51)]))}`
    assert.deepEqual(verifyMessageSignature({ ...signed, signature: scriptPath }), { valid: false, reason: 'address-unsupported' })
  })

  test('a full to_sign must have BIP-322\'s shape', () => {
    const signed = signMessage({ family: 'bitcoin', chain: 'main', addressType: 'p2wpkh', bip322Format: 'full', message: 'shape' })
    const bytes = base64.decode(signed.signature.slice(3))
    const withByte = (index: number, value: number): string => `ful${base64.encode(Uint8Array.from(bytes, (byte, i) => (i === index ? value : byte)))}`
    // Version 1 is neither 0 nor 2; appended bytes are not a transaction.
    assert.deepEqual(verifyMessageSignature({ ...signed, signature: withByte(0, 1) }), { valid: false, reason: 'signature-malformed' })
    assert.deepEqual(verifyMessageSignature({ ...signed, signature: `${signed.signature}AA==` }), { valid: false, reason: 'signature-malformed' })
    assert.deepEqual(verifyMessageSignature({ ...signed, signature: `ful${base64.encode(Uint8Array.from([...bytes, 0]))}` }), { valid: false, reason: 'signature-malformed' })
  })

  test('random bytes never verify and never throw', () => {
    const address = testKeys.primary.addresses.bitcoin.main.p2wpkh
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), fc.constantFrom('', 'smp', 'ful', 'pof'), (bytes, prefix) => {
        const check = verify('bitcoin', 'main', address, 'm', `${prefix}${base64.encode(bytes)}`)
        assert.equal(check.valid, false)
      }),
    )
  })
})
