import { describe, test } from 'node:test'
import assert from 'node:assert/strict'
import { validateAddress, type AddressFamily, type Chain } from '../reference/addresses.ts'
import { candidateDestinationTag, deriveKey, ethereumAddress, solanaAddress, utxoAddresses, xrpAddress, derivedAddress } from './deposit-addresses.ts'

const ONE = Uint8Array.from({ length: 32 }, (_, i) => (i === 31 ? 1 : 0))
const SECRET = new Uint8Array(32).fill(7)

describe('deposit address derivation', () => {
  test('private key 1 gives the well-known addresses of every form', () => {
    const main = utxoAddresses('bitcoin', 'main', ONE)
    assert.equal(main.address, 'bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4') // BIP-173's example key hash
    assert.deepEqual(main.formats.map((f) => f.format), ['native-segwit', 'wrapped-segwit', 'pubkey-hash'])
    assert.equal(main.formats[1]!.value, '3JvL6Ymt8MVWiCNHC7oWU6nLeHNJKLZGLN')
    assert.equal(main.formats[2]!.value, '1BgGZ9tcN4rm9KBzDn7KprQz87SZ26SAMH')
    assert.equal(utxoAddresses('bitcoin', 'test', ONE).address, 'tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx')
    assert.equal(ethereumAddress(ONE).address, '0x7E5F4552091A69125d5DfCb7b8C2659029395Bdf')
  })

  test('ed25519 public key of RFC 8032 test 1', () => {
    const seed = Uint8Array.from(Buffer.from('9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60', 'hex'))
    // The public key d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a in base58.
    assert.equal(solanaAddress(seed).address, 'FVen3X669xLzsi6N2V91DoiyzHzg1uAgqiT8jZ9nS96Z')
  })

  test('every derived address passes our own validation on its chain, in every form', () => {
    for (const chain of ['main', 'test'] as const satisfies readonly Chain[]) {
      for (let i = 0; i < 25; i++) {
        const seed = deriveKey(SECRET, 'test', [String(i)])
        for (const family of ['bitcoin', 'litecoin', 'ethereum', 'solana'] as const) {
          const derived = derivedAddress(family, chain, seed)
          for (const { value } of derived.formats) assert.deepEqual(validateAddress(family, chain, value), { isValid: true }, `${family}/${chain} ${value}`)
        }
        const xrp = xrpAddress(seed).address
        assert.deepEqual(validateAddress('xrp-ledger' as AddressFamily, chain, xrp, candidateDestinationTag(seed, i)), { isValid: true })
      }
    }
  })

  test('test-chain and main-chain forms differ where the chains differ', () => {
    const seed = deriveKey(SECRET, 'test', ['x'])
    assert.deepEqual(validateAddress('bitcoin', 'main', utxoAddresses('bitcoin', 'test', seed).address).isValid, false)
    assert.deepEqual(validateAddress('litecoin', 'test', utxoAddresses('litecoin', 'main', seed).address).isValid, false)
  })

  test('keys are deterministic, and differ by purpose, owner and secret', () => {
    const a = deriveKey(SECRET, 'deposit-address', ['org', 'account-1', 'bitcoin'])
    assert.deepEqual(a, deriveKey(SECRET, 'deposit-address', ['org', 'account-1', 'bitcoin']))
    const others = [
      deriveKey(SECRET, 'deposit-address', ['org', 'account-2', 'bitcoin']),
      deriveKey(SECRET, 'deposit-address', ['org', 'account-1', 'litecoin']),
      deriveKey(SECRET, 'bank-numbers', ['org', 'account-1', 'bitcoin']),
      deriveKey(new Uint8Array(32).fill(8), 'deposit-address', ['org', 'account-1', 'bitcoin']),
    ]
    for (const other of others) assert.notDeepEqual(other, a)
    // The secret never appears as the key.
    assert.notDeepEqual(a, SECRET)
  })

  test('destination tags are within 1..4294967295 and move with the attempt', () => {
    const key = deriveKey(SECRET, 'tag', ['a'])
    const tags = new Set<string>()
    for (let attempt = 0; attempt < 200; attempt++) {
      const tag = candidateDestinationTag(key, attempt)
      assert.match(tag, /^[1-9][0-9]*$/)
      assert.ok(Number(tag) >= 1 && Number(tag) <= 4294967295)
      tags.add(tag)
    }
    assert.equal(tags.size, 200)
  })
})
