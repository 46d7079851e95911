import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { isUuid, uuidv7 } from './ids.ts'

test('uuidv7 has version 7 and the RFC 9562 variant', () => {
  const id = uuidv7()
  assert.ok(isUuid(id))
  assert.equal(id[14], '7')
  assert.ok('89ab'.includes(id[19]!))
})

test('uuidv7 encodes the timestamp so that ids sort by creation time', () => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 2 ** 47 }), fc.integer({ min: 1, max: 2 ** 20 }), (t, delta) => {
      assert.ok(uuidv7(t) < uuidv7(t + delta))
      assert.equal(Number.parseInt(uuidv7(t).replace(/-/g, '').slice(0, 12), 16), t)
    }),
  )
})
