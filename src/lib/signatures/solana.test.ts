import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { ed25519 } from '@noble/curves/ed25519.js'
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js'
import { base58, base64 } from '@scure/base'
import fc from 'fast-check'
import { alterMessage, CHAINS, signMessage, testKeys } from '../../../test/signing.ts'
import { verifyMessageSignature } from './index.ts'
import type { SignatureCheck } from './index.ts'

const VALID = { valid: true, scheme: 'ed25519' } as const
const MISMATCH = { valid: false, reason: 'signature-mismatch' } as const
const MALFORMED = { valid: false, reason: 'signature-malformed' } as const

function verify(address: string, message: string, signature: string): SignatureCheck {
  return verifyMessageSignature({ family: 'solana', chain: 'main', address, message, signature })
}

// RFC 8032 §7.1, TEST 1 and TEST 2: the only two of its Ed25519 vectors whose message is valid UTF-8 ("" and "r").
// A Solana address is the base58 public key, so each vector is a Solana signature as it stands.
const RFC8032 = [
  {
    name: 'TEST 1 (empty message)',
    secretKey: '9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60',
    publicKey: 'd75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a',
    message: '',
    signature: 'e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b',
  },
  {
    name: 'TEST 2 (message 0x72, "r")',
    secretKey: '4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb',
    publicKey: '3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c',
    message: 'r',
    signature: '92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00',
  },
]

describe('RFC 8032 Ed25519 vectors as Solana signatures', () => {
  for (const vector of RFC8032) {
    test(vector.name, () => {
      const address = base58.encode(hexToBytes(vector.publicKey))
      const signature = hexToBytes(vector.signature)
      for (const encoded of [base58.encode(signature), base64.encode(signature), vector.signature, `0x${vector.signature}`, vector.signature.toUpperCase()]) {
        for (const chain of CHAINS) {
          assert.deepEqual(verifyMessageSignature({ family: 'solana', chain, address, message: vector.message, signature: encoded }), VALID, encoded)
        }
      }
      assert.deepEqual(verify(address, alterMessage(vector.message), vector.signature), MISMATCH)
      const other = RFC8032.find((candidate) => candidate !== vector)
      assert.ok(other)
      assert.deepEqual(verify(base58.encode(hexToBytes(other.publicKey)), vector.message, vector.signature), MISMATCH)
      for (const family of ['bitcoin', 'litecoin', 'ethereum', 'xrp-ledger'] as const) {
        assert.deepEqual(
          verifyMessageSignature({ family, chain: 'main', address, message: vector.message, signature: vector.signature }),
          { valid: false, reason: 'address-unsupported' },
          family,
        )
      }
      // The test signer is RFC 8032 itself: deterministic, so it reproduces the vector.
      const signed = signMessage({ family: 'solana', chain: 'main', message: vector.message, privateKey: vector.secretKey, solanaEncoding: 'hex' })
      assert.deepEqual([signed.address, signed.signature], [address, vector.signature])
    })
  }
})

describe('signature and address forms', () => {
  const [vector] = RFC8032
  assert.ok(vector)
  const address = base58.encode(hexToBytes(vector.publicKey))

  test('wrong lengths and unreadable text are malformed', () => {
    const bytes = hexToBytes(vector.signature)
    for (const signature of ['', base58.encode(bytes.subarray(1)), base64.encode(Uint8Array.from([...bytes, 0])), vector.signature.slice(2), 'not a signature!', '1'.repeat(131)]) {
      assert.deepEqual(verify(address, vector.message, signature), MALFORMED, signature)
    }
  })

  test('S must be reduced (RFC 8032): S + L is the same signature to a lax verifier, and is refused', () => {
    const bytes = hexToBytes(vector.signature)
    const s = BigInt(`0x${bytesToHex(Uint8Array.from(bytes.subarray(32)).reverse())}`)
    const unreduced = s + ed25519.Point.CURVE().n
    assert.ok(unreduced < 2n ** 256n)
    const sBytes = hexToBytes(unreduced.toString(16).padStart(64, '0')).reverse()
    const malleated = bytesToHex(Uint8Array.from([...bytes.subarray(0, 32), ...sBytes]))
    assert.deepEqual(verify(address, vector.message, malleated), MISMATCH)
  })

  test('an address must be 32 bytes of base58', () => {
    for (const bad of ['', '0x' + vector.publicKey, base58.encode(hexToBytes(vector.publicKey).subarray(1)), 'I0Ol']) {
      assert.deepEqual(verify(bad, vector.message, vector.signature), { valid: false, reason: 'address-unsupported' }, bad)
    }
  })

  test('random signatures never verify and never throw', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), fc.uint8Array({ minLength: 64, maxLength: 64 }), (text, random) => {
        assert.equal(verify(address, vector.message, text).valid, false)
        assert.equal(verify(address, vector.message, base58.encode(random)).valid, false)
      }),
    )
  })
})

describe('round trips through test/signing.ts', () => {
  for (const chain of CHAINS) {
    for (const solanaEncoding of ['base58', 'base64', 'hex'] as const) {
      test(`${chain} ${solanaEncoding}`, () => {
        const message = 'Tessera owns this wallet — ünïcödé ✓'
        const signed = signMessage({ family: 'solana', chain, message, solanaEncoding })
        assert.equal(signed.address, testKeys.primary.addresses.solana[chain])
        assert.deepEqual(verifyMessageSignature(signed), VALID)
        assert.deepEqual(verifyMessageSignature({ ...signed, message: alterMessage(message) }), MISMATCH)
        assert.deepEqual(verifyMessageSignature({ ...signed, address: testKeys.secondary.addresses.solana[chain] }), MISMATCH)
        // Solana addresses name no cluster: the same key signs on every one.
        assert.deepEqual(verifyMessageSignature({ ...signed, chain: chain === 'main' ? 'test' : 'main' }), VALID)
        for (const family of ['bitcoin', 'litecoin', 'ethereum', 'xrp-ledger'] as const) {
          assert.deepEqual(verifyMessageSignature({ ...signed, family }), { valid: false, reason: 'address-unsupported' }, family)
        }
      })
    }
  }
})
