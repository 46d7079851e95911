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
  let t = Date.now() + 10 ** 11
  fc.assert(
    fc.property(fc.integer({ min: 2, max: 2 ** 20 }), (delta) => {
      t += delta
      const id = uuidv7(t)
      assert.equal(Number.parseInt(id.replace(/-/g, '').slice(0, 12), 16), t)
      assert.ok(id < uuidv7(t + 1))
    }),
  )
})

test('ids made in the same millisecond, or when the clock steps back, still increase', () => {
  const t = Date.now() + 10 ** 9
  const ids = [uuidv7(t), uuidv7(t), uuidv7(t), uuidv7(t - 5000), uuidv7(t)]
  for (let i = 1; i < ids.length; i++) assert.ok(ids[i - 1]! < ids[i]!, `${ids[i - 1]} < ${ids[i]}`)
  for (const id of ids) {
    assert.ok(isUuid(id))
    assert.equal(id[14], '7')
    assert.ok('89ab'.includes(id[19]!))
  }
})

test('the random part carries through all its bits within one millisecond', () => {
  const t = Date.now() + 10 ** 10
  let previous = uuidv7(t)
  for (let i = 0; i < 200_000; i++) {
    const id = uuidv7(t)
    assert.ok(previous < id, `${previous} < ${id}`)
    previous = id
  }
  assert.equal(previous[14], '7')
  assert.ok('89ab'.includes(previous[19]!))
  assert.equal(new Set(Array.from({ length: 10_000 }, () => uuidv7())).size, 10_000)
})
