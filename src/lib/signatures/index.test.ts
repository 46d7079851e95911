import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js'
import { base58, base64 } from '@scure/base'
import fc from 'fast-check'
import { CHAINS, signMessage, testKeys } from '../../../test/signing.ts'
import type { SignOptions } from '../../../test/signing.ts'
import type { AddressFamily } from '../../modules/reference/index.ts'
import { SIGNATURE_LIMITS, signingSchemes, verifyMessageSignature } from './index.ts'
import type { SignatureCheck, SignedMessage } from './index.ts'

const FAMILIES: readonly AddressFamily[] = ['bitcoin', 'litecoin', 'ethereum', 'xrp-ledger', 'solana']
const REASONS = ['signature-malformed', 'public-key-required', 'public-key-mismatch', 'address-unsupported', 'signature-mismatch']

function assertWellFormed(check: SignatureCheck): void {
  if (check.valid) assert.ok(['bip-137', 'bip-322', 'eip-191', 'ed25519', 'xrpl'].includes(check.scheme))
  else assert.ok(REASONS.includes(check.reason), check.reason)
}

/** One valid signature per scheme and encoding, for the properties below. */
const SIGNERS: SignOptions[] = [
  { family: 'bitcoin', chain: 'main', addressType: 'p2pkh', message: '' },
  { family: 'bitcoin', chain: 'test', addressType: 'p2wpkh', message: '' },
  { family: 'bitcoin', chain: 'main', addressType: 'p2tr', message: '' },
  { family: 'litecoin', chain: 'main', addressType: 'p2sh-p2wpkh', bip322Format: 'full', message: '' },
  { family: 'ethereum', chain: 'main', message: '' },
  { family: 'solana', chain: 'test', message: '' },
  { family: 'xrp-ledger', chain: 'main', keyType: 'secp256k1', message: '' },
  { family: 'xrp-ledger', chain: 'test', keyType: 'ed25519', message: '' },
]

describe('hostile input', () => {
  test('anything at all, in any field, returns a reason and never throws', () => {
    fc.assert(
      fc.property(
        fc.record({
          family: fc.oneof(fc.constantFrom(...FAMILIES), fc.anything()),
          chain: fc.oneof(fc.constantFrom('main', 'test'), fc.anything()),
          address: fc.oneof(fc.string(), fc.anything()),
          message: fc.oneof(fc.string(), fc.anything()),
          signature: fc.oneof(fc.string(), fc.base64String(), fc.anything()),
          publicKey: fc.oneof(fc.constant(undefined), fc.string(), fc.anything()),
        }),
        (input) => {
          const check = verifyMessageSignature(input as unknown as SignedMessage)
          assert.equal(check.valid, false)
          assertWellFormed(check)
        },
      ),
      { numRuns: 500 },
    )
    for (const input of [null, undefined, 42, 'bitcoin', [], {}]) {
      assert.deepEqual(verifyMessageSignature(input as unknown as SignedMessage), input === null || typeof input !== 'object' ? { valid: false, reason: 'signature-malformed' } : { valid: false, reason: 'address-unsupported' })
    }
  })

  test('random strings as signatures, for a real address of every family and chain, never throw', () => {
    const cases = FAMILIES.flatMap((family) => CHAINS.map((chain) => signMessage({ ...signerFor(family), chain, message: 'm' })))
    fc.assert(
      fc.property(fc.constantFrom(...cases), fc.oneof(fc.string({ maxLength: 300 }), fc.base64String({ maxLength: 300 }), fc.stringMatching(/^(0x)?[0-9a-f]{0,200}$/)), (signed, signature) => {
        const check = verifyMessageSignature({ ...signed, signature })
        assert.equal(check.valid, false)
        assertWellFormed(check)
      }),
      { numRuns: 1000 },
    )
  })

  test('a string in none of the encodings (base64, base58, hex) is signature-malformed', () => {
    const cases = FAMILIES.map((family) => signMessage({ ...signerFor(family), message: 'm' }))
    fc.assert(
      fc.property(fc.constantFrom(...cases), fc.string({ maxLength: 100 }), fc.constantFrom('!', ' ', '-', '_', '\u00e9', '\n'), fc.nat(100), (signed, text, stray, at) => {
        const position = at % (text.length + 1)
        const signature = `${text.slice(0, position)}${stray}${text.slice(position)}`
        assert.deepEqual(verifyMessageSignature({ ...signed, signature }), { valid: false, reason: 'signature-malformed' })
      }),
    )
  })

  test('a valid signature with any one bit flipped does not verify', () => {
    for (const options of SIGNERS) {
      const signed = signMessage(options)
      assert.equal(verifyMessageSignature(signed).valid, true, JSON.stringify(options))
      const { bytes, encode } = signatureBytes(signed)
      fc.assert(
        fc.property(fc.integer({ min: 0, max: bytes.length * 8 - 1 }), (bit) => {
          const flipped = Uint8Array.from(bytes)
          flipped[bit >> 3] = (flipped[bit >> 3] ?? 0) ^ (1 << (bit & 7))
          const check = verifyMessageSignature({ ...signed, signature: encode(flipped) })
          assert.equal(check.valid, false, `${options.family} bit ${bit}`)
        }),
        { numRuns: 64 },
      )
    }
  })

  test('oversized input is refused before any decoding', () => {
    const signed = signMessage({ family: 'bitcoin', chain: 'main', addressType: 'p2wpkh', message: 'm' })
    const huge = 'A'.repeat(5_000_000)
    const started = performance.now()
    assert.deepEqual(verifyMessageSignature({ ...signed, signature: huge }), { valid: false, reason: 'signature-malformed' })
    assert.deepEqual(verifyMessageSignature({ ...signed, message: huge }), { valid: false, reason: 'signature-malformed' })
    assert.deepEqual(verifyMessageSignature({ ...signed, address: huge }), { valid: false, reason: 'address-unsupported' })
    assert.deepEqual(verifyMessageSignature({ ...signed, family: 'xrp-ledger', publicKey: huge }), { valid: false, reason: 'signature-malformed' })
    assert.ok(performance.now() - started < 1000, 'caps are checked first')
    // The message cap is on its UTF-8 bytes: 4,000 "€" are 4,000 code units but 12,000 bytes.
    assert.deepEqual(verifyMessageSignature({ ...signed, message: '€'.repeat(4000) }), { valid: false, reason: 'signature-malformed' })
  })

  test('messages and signatures at the caps are still verified', () => {
    const message = 'x'.repeat(SIGNATURE_LIMITS.message)
    for (const family of FAMILIES) {
      const signed = signMessage({ ...signerFor(family), message })
      assert.equal(verifyMessageSignature(signed).valid, true, family)
      assert.deepEqual(verifyMessageSignature({ ...signed, message: `${message}x` }), { valid: false, reason: 'signature-malformed' }, family)
    }
    const signed = signMessage({ family: 'bitcoin', chain: 'main', addressType: 'p2wpkh', message: 'm' })
    const started = performance.now()
    const check = verifyMessageSignature({ ...signed, signature: 'A'.repeat(SIGNATURE_LIMITS.signature) })
    assert.equal(check.valid, false)
    assert.ok(performance.now() - started < 1000)
  })

  test('families and chains outside the list are unsupported addresses', () => {
    const signed = signMessage({ family: 'ethereum', chain: 'main', message: 'm' })
    for (const family of ['dogecoin', 'Ethereum', '', 'constructor', '__proto__']) {
      assert.deepEqual(verifyMessageSignature({ ...signed, family: family as AddressFamily }), { valid: false, reason: 'address-unsupported' })
    }
    for (const chain of ['mainnet', 'regtest', '']) {
      assert.deepEqual(verifyMessageSignature({ ...signed, chain: chain as 'main' }), { valid: false, reason: 'address-unsupported' })
    }
  })
})

function signerFor(family: AddressFamily): SignOptions {
  return SIGNERS.find((options) => options.family === family) ?? { family, chain: 'main', message: '' }
}

/** The signature's bytes and how to write bytes back in its encoding. */
function signatureBytes(signed: SignedMessage): { bytes: Uint8Array; encode: (bytes: Uint8Array) => string } {
  switch (signed.family) {
    case 'bitcoin':
    case 'litecoin': {
      const prefix = /^(smp|ful)/.exec(signed.signature)?.[0] ?? ''
      return { bytes: base64.decode(signed.signature.slice(prefix.length)), encode: (bytes) => `${prefix}${base64.encode(bytes)}` }
    }
    case 'ethereum':
      return { bytes: hexToBytes(signed.signature.slice(2)), encode: (bytes) => `0x${bytesToHex(bytes)}` }
    case 'solana':
      return { bytes: base58.decode(signed.signature), encode: (bytes) => base58.encode(bytes) }
    case 'xrp-ledger':
      return { bytes: hexToBytes(signed.signature), encode: (bytes) => bytesToHex(bytes) }
  }
}

describe('signingSchemes', () => {
  test('names the schemes, the encoding and whether a public key is needed, per family', () => {
    assert.deepEqual(signingSchemes('bitcoin').schemes, ['bip-137', 'bip-322'])
    assert.deepEqual(signingSchemes('litecoin').schemes, ['bip-137', 'bip-322'])
    assert.deepEqual(signingSchemes('ethereum').schemes, ['eip-191'])
    assert.deepEqual(signingSchemes('solana').schemes, ['ed25519'])
    assert.deepEqual(signingSchemes('xrp-ledger').schemes, ['xrpl'])
    for (const family of FAMILIES) {
      const { encoding, needsPublicKey } = signingSchemes(family)
      assert.ok(encoding.length > 20, family)
      assert.equal(needsPublicKey, family === 'xrp-ledger', family)
    }
  })

  test('every scheme it names is one a test signature verifies under', () => {
    const seen = new Set<string>()
    for (const options of [...SIGNERS, { family: 'bitcoin', chain: 'main', addressType: 'p2pkh', scheme: 'bip-322', message: '' } as const]) {
      const check = verifyMessageSignature(signMessage(options))
      assert.ok(check.valid)
      assert.ok(signingSchemes(options.family).schemes.includes(check.scheme))
      seen.add(check.scheme)
    }
    assert.deepEqual([...seen].sort(), ['bip-137', 'bip-322', 'ed25519', 'eip-191', 'xrpl'])
  })

  test('callers get their own copy', () => {
    signingSchemes('bitcoin').schemes.pop()
    assert.deepEqual(signingSchemes('bitcoin').schemes, ['bip-137', 'bip-322'])
  })
})

describe('test keys', () => {
  test('the documented keys give the documented addresses', () => {
    assert.equal(testKeys.primary.addresses.ethereum.main, '0x2c7536E3605D9C16a7a3D7b1898e529396a65c23')
    assert.equal(testKeys.secondary.addresses.ethereum.main, '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266')
    for (const family of FAMILIES) {
      for (const chain of CHAINS) {
        assert.notDeepEqual(testKeys.primary.addresses[family][chain], testKeys.secondary.addresses[family][chain])
      }
    }
  })
})
