import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { secp256k1 } from '@noble/curves/secp256k1.js'
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js'
import fc from 'fast-check'
import { classicAddressToXAddress } from 'ripple-address-codec'
import { alterMessage, CHAINS, signMessage, testKeys } from '../../../test/signing.ts'
import type { Chain } from '../../modules/reference/index.ts'
import { verifyMessageSignature } from './index.ts'
import type { SignatureCheck } from './index.ts'

const VALID = { valid: true, scheme: 'xrpl' } as const
const MISMATCH = { valid: false, reason: 'signature-mismatch' } as const
const MALFORMED = { valid: false, reason: 'signature-malformed' } as const

function verify(address: string, message: string, signature: string, publicKey?: string, chain: Chain = 'main'): SignatureCheck {
  return verifyMessageSignature({ family: 'xrp-ledger', chain, address, message, signature, publicKey })
}

// XRPLF/xrpl.js, packages/ripple-keypairs/test/fixtures/api.json: sign()/verify() of "test message" (as UTF-8 hex).
const FIXTURES = {
  secp256k1: {
    privateKey: 'D78B9735C3F26501C7337B8A5727FD53A6EFDBC6AA55984F098488561F985E23',
    publicKey: '030D58EB48B4420B1F7B9DF55087E0E29FEF0E8468F9A6825B01CA2C361042D435',
    address: 'rU6K7V3Po4snVhBBaU29sesqs2qTQJWDw1',
    message: 'test message',
    signature: '30440220583A91C95E54E6A651C47BEC22744E0B101E2C4060E7B08F6341657DAD9BC3EE02207D1489C7395DB0188D3A56A977ECBA54B36FA9371B40319655B1B4429E33EF2D',
  },
  ed25519: {
    privateKey: 'B4C4E046826BD26190D09715FC31F4E6A728204EADD112905B08B14B7F15C4F3',
    publicKey: 'ED01FA53FA5A7E77798F882ECE20B1ABC00BB358A9E55A202D0D0676BD0CE37A63',
    address: 'rLUEXYuLiQptky37CqLcm9USQpPiz5rkpD',
    message: 'test message',
    signature: 'CB199E1BFD4E3DAA105E4832EEDFA36413E1F44205E4EFB9E27E826044C21E3E2E848BBC8195E8959BADF887599B7310AD1B7047EF11B682E0D068F73749750E',
  },
} as const

describe('ripple-keypairs fixtures', () => {
  for (const keyType of ['secp256k1', 'ed25519'] as const) {
    const fixture = FIXTURES[keyType]
    const other = FIXTURES[keyType === 'secp256k1' ? 'ed25519' : 'secp256k1']

    test(keyType, () => {
      // Classic addresses are the same on every XRP Ledger network.
      for (const chain of CHAINS) assert.deepEqual(verify(fixture.address, fixture.message, fixture.signature, fixture.publicKey, chain), VALID)
      assert.deepEqual(verify(fixture.address, fixture.message, fixture.signature.toLowerCase(), fixture.publicKey.toLowerCase()), VALID)
      assert.deepEqual(verify(fixture.address, alterMessage(fixture.message), fixture.signature, fixture.publicKey), MISMATCH)
      // Another account of the same key type: its own key did not make this signature; this key is not that account's.
      const another = signMessage({ family: 'xrp-ledger', chain: 'main', keyType, message: 'another', privateKey: testKeys.secondary[keyType] })
      assert.deepEqual(verify(another.address, fixture.message, fixture.signature, another.publicKey), MISMATCH)
      assert.deepEqual(verify(another.address, fixture.message, fixture.signature, fixture.publicKey), { valid: false, reason: 'public-key-mismatch' })
      // A key of the other type cannot have made this signature.
      assert.deepEqual(verify(other.address, fixture.message, fixture.signature, other.publicKey), MALFORMED)
      assert.deepEqual(verify(fixture.address, fixture.message, fixture.signature), { valid: false, reason: 'public-key-required' })
      assert.deepEqual(verify(fixture.address, fixture.message, fixture.signature, ''), { valid: false, reason: 'public-key-required' })
      for (const family of ['bitcoin', 'litecoin', 'ethereum', 'solana'] as const) {
        assert.deepEqual(
          verifyMessageSignature({ family, chain: 'main', address: fixture.address, message: fixture.message, signature: fixture.signature, publicKey: fixture.publicKey }),
          { valid: false, reason: 'address-unsupported' },
          family,
        )
      }
      // The test signer follows ripple-keypairs' sign(): deterministic, so it reproduces the fixture.
      const signed = signMessage({ family: 'xrp-ledger', chain: 'main', keyType, message: fixture.message, privateKey: fixture.privateKey })
      assert.deepEqual([signed.address, signed.publicKey, signed.signature], [fixture.address, fixture.publicKey, fixture.signature])
    })
  }

  test('an X-address resolves to its classic address; its network flag must match the chain', () => {
    const fixture = FIXTURES.secp256k1
    for (const tag of [false, 12345] as const) {
      const mainX = classicAddressToXAddress(fixture.address, tag, false)
      const testX = classicAddressToXAddress(fixture.address, tag, true)
      assert.deepEqual(verify(mainX, fixture.message, fixture.signature, fixture.publicKey, 'main'), VALID)
      assert.deepEqual(verify(testX, fixture.message, fixture.signature, fixture.publicKey, 'test'), VALID)
      assert.deepEqual(verify(mainX, fixture.message, fixture.signature, fixture.publicKey, 'test'), { valid: false, reason: 'address-unsupported' })
      assert.deepEqual(verify(testX, fixture.message, fixture.signature, fixture.publicKey, 'main'), { valid: false, reason: 'address-unsupported' })
    }
  })
})

describe('signature and key forms', () => {
  const fixture = FIXTURES.secp256k1

  test('rippled\'s canonical rule: the high-S twin of a valid signature is refused', () => {
    const signature = secp256k1.Signature.fromBytes(hexToBytes(fixture.signature), 'der')
    const twin = new secp256k1.Signature(signature.r, secp256k1.Point.CURVE().n - signature.s)
    assert.deepEqual(verify(fixture.address, fixture.message, bytesToHex(twin.toBytes('der')), fixture.publicKey), MALFORMED)
  })

  test('malformed signatures and public keys', () => {
    for (const signature of ['', 'zz', fixture.signature.slice(0, -2), `${fixture.signature}00`, '3006020100020100']) {
      assert.deepEqual(verify(fixture.address, fixture.message, signature, fixture.publicKey), MALFORMED, signature)
    }
    // An ed25519 signature must be exactly 64 bytes.
    const ed = FIXTURES.ed25519
    assert.deepEqual(verify(ed.address, ed.message, `${ed.signature}00`, ed.publicKey), MALFORMED)
    // Not a point, a wrong length, an uncompressed key (the XRP Ledger uses compressed keys only), not hex.
    const uncompressed = bytesToHex(secp256k1.Point.fromBytes(hexToBytes(fixture.publicKey)).toBytes(false))
    for (const publicKey of ['02'.padEnd(66, 'f'), fixture.publicKey.slice(0, -2), uncompressed, 'not hex']) {
      assert.deepEqual(verify(fixture.address, fixture.message, fixture.signature, publicKey), MALFORMED, publicKey)
    }
  })

  test('addresses that are not XRP Ledger accounts', () => {
    for (const address of ['', 'rU6K7V3Po4snVhBBaU29sesqs2qTQJWDw2', 'sp5fghtJtpUorTwvof1NpDXAzNwf5', '0x2c7536E3605D9C16a7a3D7b1898e529396a65c23']) {
      assert.deepEqual(verify(address, fixture.message, fixture.signature, fixture.publicKey), { valid: false, reason: 'address-unsupported' }, address)
    }
  })

  test('random signatures and keys never verify and never throw', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), fc.option(fc.string({ maxLength: 80 }), { nil: undefined }), (signature, publicKey) => {
        assert.equal(verify(fixture.address, fixture.message, signature, publicKey).valid, false)
        assert.equal(verify(fixture.address, fixture.message, signature, fixture.publicKey).valid, false)
      }),
    )
  })
})

describe('round trips through test/signing.ts', () => {
  for (const chain of CHAINS) {
    for (const keyType of ['secp256k1', 'ed25519'] as const) {
      test(`${chain} ${keyType}`, () => {
        const message = 'Tessera owns this wallet — ünïcödé ✓'
        const signed = signMessage({ family: 'xrp-ledger', chain, keyType, message })
        assert.equal(signed.address, testKeys.primary.addresses['xrp-ledger'][chain][keyType])
        assert.deepEqual(verifyMessageSignature(signed), VALID)
        assert.deepEqual(verifyMessageSignature({ ...signed, message: alterMessage(message) }), MISMATCH)
        assert.deepEqual(verifyMessageSignature({ ...signed, address: testKeys.secondary.addresses['xrp-ledger'][chain][keyType] }), { valid: false, reason: 'public-key-mismatch' })
        assert.deepEqual(verifyMessageSignature({ ...signed, address: classicAddressToXAddress(signed.address, false, chain === 'main') }), { valid: false, reason: 'address-unsupported' })
        for (const family of ['bitcoin', 'litecoin', 'ethereum', 'solana'] as const) {
          assert.deepEqual(verifyMessageSignature({ ...signed, family }), { valid: false, reason: 'address-unsupported' }, family)
        }
      })
    }
  }
})
