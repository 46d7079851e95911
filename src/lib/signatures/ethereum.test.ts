import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { secp256k1 } from '@noble/curves/secp256k1.js'
import { bytesToHex, hexToBytes, utf8ToBytes } from '@noble/hashes/utils.js'
import fc from 'fast-check'
import { alterMessage, CHAINS, signMessage, testKeys } from '../../../test/signing.ts'
import { eip191MessageHash } from './ethereum.ts'
import { verifyMessageSignature } from './index.ts'
import type { SignatureCheck } from './index.ts'

const VALID = { valid: true, scheme: 'eip-191' } as const
const MISMATCH = { valid: false, reason: 'signature-mismatch' } as const
const MALFORMED = { valid: false, reason: 'signature-malformed' } as const

function verify(address: string, message: string, signature: string): SignatureCheck {
  return verifyMessageSignature({ family: 'ethereum', chain: 'main', address, message, signature })
}

// A valid address that signed none of the vectors (the vectors' keys include both test keys).
const ANOTHER_ADDRESS = '0xd8dA6BF26964aF9D7eEd9e03E53415D37aA96045'

const VECTORS = [
  {
    source: 'web3.js documentation, web3.eth.accounts.sign (docs.web3js.org/api/web3-eth-accounts/function/sign)',
    privateKey: '4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318',
    address: '0x2c7536E3605D9C16a7a3D7b1898e529396a65c23',
    message: 'Some data',
    messageHash: '1da44b586eb0729ff70a73c326926f6ed5a25f5b056e7f47fbc6e58d86871655',
    signature: '0xb91467e570a6466aa9e9876cbcd013baba02900b8979d43fe208a4a4f339f5fd6007e74cd82e037b800186422fc2da167c747ef045e5d18a5f5d4300f8e1a0291c',
  },
  {
    source: 'MetaMask/eth-sig-util src/personal-sign.test.ts ("Hello, world!" with its test key)',
    privateKey: '4af1bceebf7f3634ec3cff8a2c38e51178d5d4ce585c52d6043e5e2cc3418bb0',
    address: '0x29c76e6ad8f28bb1004902578fb108c507be341b',
    message: 'Hello, world!',
    signature: '0x90a938f7457df6e8f741264c32697fc52f9a8f867c52dd70713d9d2d472f2e415d9c94148991bbe1f4a1818d1dff09165782749c877f5cf1eff4ef126e55714d1c',
  },
  {
    source: 'viem documentation, signMessage (viem.sh/docs/actions/wallet/signMessage), Anvil account #0',
    privateKey: 'ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80',
    address: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266',
    message: 'hello world',
    messageHash: 'd9eba16ed0ecae432b71fe008c98cc872bb4cc214d3220a36f365326cf807d68',
    signature: '0xa461f509887bd19e312c0c58467ce8ff8e300d3c1a90b608a760c5b80318eaf15fe57c96f9175d6cd4daad4663763baa7e78836e067d0163e9a2ccf2ff753f5b1b',
  },
]

describe('EIP-191 vectors', () => {
  for (const vector of VECTORS) {
    test(vector.source, () => {
      if (vector.messageHash) assert.equal(bytesToHex(eip191MessageHash(utf8ToBytes(vector.message))), vector.messageHash)
      for (const chain of CHAINS) {
        assert.deepEqual(verifyMessageSignature({ family: 'ethereum', chain, address: vector.address, message: vector.message, signature: vector.signature }), VALID)
      }
      // The address may be written checksummed, in lower case or in upper case.
      assert.deepEqual(verify(vector.address.toLowerCase(), vector.message, vector.signature), VALID)
      assert.deepEqual(verify(`0x${vector.address.slice(2).toUpperCase()}`, vector.message, vector.signature), VALID)
      assert.deepEqual(verify(vector.address, alterMessage(vector.message), vector.signature), MISMATCH)
      assert.deepEqual(verify(ANOTHER_ADDRESS, vector.message, vector.signature), MISMATCH)
      // The test signer reproduces the vector (RFC 6979 nonces are deterministic).
      const signed = signMessage({ family: 'ethereum', chain: 'main', message: vector.message, privateKey: vector.privateKey })
      assert.equal(signed.address.toLowerCase(), vector.address.toLowerCase())
      assert.equal(signed.signature, vector.signature)
    })
  }

  test('the same address claimed on another family is not an address there', () => {
    const [vector] = VECTORS
    assert.ok(vector)
    for (const family of ['bitcoin', 'litecoin', 'solana', 'xrp-ledger'] as const) {
      for (const chain of CHAINS) {
        assert.deepEqual(
          verifyMessageSignature({ family, chain, address: vector.address, message: vector.message, signature: vector.signature }),
          { valid: false, reason: 'address-unsupported' },
          `${family}/${chain}`,
        )
      }
    }
  })
})

describe('signature forms', () => {
  const [vector] = VECTORS
  assert.ok(vector)
  const bytes = hexToBytes(vector.signature.slice(2))

  test('v may be 27/28 or 0/1; the 0x prefix is optional', () => {
    const withV = (v: number): string => `0x${bytesToHex(Uint8Array.from([...bytes.subarray(0, 64), v]))}`
    assert.deepEqual(verify(vector.address, vector.message, withV(1)), VALID)
    assert.deepEqual(verify(vector.address, vector.message, vector.signature.slice(2)), VALID)
    assert.deepEqual(verify(vector.address, vector.message, vector.signature.toUpperCase().replace('0X', '0x')), VALID)
    // The other recovery id recovers another key.
    assert.deepEqual(verify(vector.address, vector.message, withV(27)), MISMATCH)
    for (const v of [2, 26, 29, 35, 37, 255]) assert.deepEqual(verify(vector.address, vector.message, withV(v)), MALFORMED, `v=${v}`)
  })

  test('EIP-2: the high-S twin of a valid signature is refused', () => {
    const signature = secp256k1.Signature.fromBytes(bytes.subarray(0, 64), 'compact')
    const twin = new secp256k1.Signature(signature.r, secp256k1.Point.CURVE().n - signature.s)
    assert.ok(twin.hasHighS())
    // Flipping S flips the recovery id: the twin recovers the same key, which is why EIP-2 forbids it.
    const highS = `0x${bytesToHex(twin.toBytes('compact'))}${bytes[64] === 27 ? '1b' : '1c'}`
    assert.deepEqual(verify(vector.address, vector.message, highS), MALFORMED)
  })

  test('wrong lengths, r or s zero or out of range, non-hex: malformed', () => {
    const n = secp256k1.Point.CURVE().n.toString(16).padStart(64, '0')
    for (const signature of [
      '',
      '0x',
      vector.signature.slice(0, -2),
      `${vector.signature}00`,
      `0x${'00'.repeat(64)}1b`,
      `0x${n}${'11'.repeat(32)}1b`,
      `0x${'g'.repeat(130)}`,
      'not a signature',
    ]) {
      assert.deepEqual(verify(vector.address, vector.message, signature), MALFORMED, signature)
    }
  })

  test('addresses must be 0x and 40 hex digits', () => {
    for (const address of ['', '2c7536E3605D9C16a7a3D7b1898e529396a65c23', '0x2c7536E3605D9C16a7a3D7b1898e529396a65c2', 'vitalik.eth']) {
      assert.deepEqual(verify(address, vector.message, vector.signature), { valid: false, reason: 'address-unsupported' }, address)
    }
  })

  test('random signatures never verify and never throw', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), fc.uint8Array({ minLength: 65, maxLength: 65 }), (text, random) => {
        assert.equal(verify(vector.address, vector.message, text).valid, false)
        assert.equal(verify(vector.address, vector.message, `0x${bytesToHex(random)}`).valid, false)
      }),
    )
  })
})

describe('round trips through test/signing.ts', () => {
  for (const chain of CHAINS) {
    test(chain, () => {
      const message = 'Tessera owns this wallet — ünïcödé ✓\nsecond line'
      const signed = signMessage({ family: 'ethereum', chain, message })
      assert.equal(signed.address, testKeys.primary.addresses.ethereum[chain])
      assert.deepEqual(verifyMessageSignature(signed), VALID)
      assert.deepEqual(verifyMessageSignature({ ...signed, message: alterMessage(message) }), MISMATCH)
      assert.deepEqual(verifyMessageSignature({ ...signed, address: testKeys.secondary.addresses.ethereum[chain] }), MISMATCH)
      // EIP-191 names no chain: an Ethereum address and its signatures are the same on every chain.
      assert.deepEqual(verifyMessageSignature({ ...signed, chain: chain === 'main' ? 'test' : 'main' }), VALID)
      for (const family of ['bitcoin', 'litecoin', 'solana', 'xrp-ledger'] as const) {
        assert.deepEqual(verifyMessageSignature({ ...signed, family }), { valid: false, reason: 'address-unsupported' })
      }
    })
  }
})
