import assert from 'node:assert/strict'
import { test } from 'node:test'
import { generateSecret, hashSecret, safeEqual, verifySecret } from './secrets.ts'

test('a hashed secret verifies and never contains the secret', async () => {
  const secret = generateSecret()
  const stored = await hashSecret(secret)
  assert.ok(stored.startsWith('scrypt$16384$8$1$'))
  assert.ok(!stored.includes(secret))
  assert.equal(await verifySecret(secret, stored), true)
  assert.equal(await verifySecret(`${secret}x`, stored), false)
})

test('two hashes of one secret differ by their salt', async () => {
  const secret = generateSecret()
  assert.notEqual(await hashSecret(secret), await hashSecret(secret))
})

test('a malformed stored hash never verifies', async () => {
  assert.equal(await verifySecret('anything', 'plain-text'), false)
})

test('safeEqual compares values of different lengths', () => {
  assert.equal(safeEqual('abc', 'abc'), true)
  assert.equal(safeEqual('abc', 'abcd'), false)
})
