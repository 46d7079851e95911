import assert from 'node:assert/strict'
import { test } from 'node:test'
import { characterCount, checkMetadata, METADATA_MAX_CHARACTERS } from './metadata.rules.ts'

test('size counts Unicode code points of the JSON text, not bytes or UTF-16 units', () => {
  assert.equal(characterCount(JSON.stringify({ a: 'é' })), '{"a":"é"}'.length)
  assert.equal(characterCount(JSON.stringify({ a: '😀' })), 9)
})

test('metadata of exactly the limit is accepted, with its text', () => {
  const data = { note: 'x'.repeat(METADATA_MAX_CHARACTERS - 11) }
  assert.equal(characterCount(JSON.stringify(data)), METADATA_MAX_CHARACTERS)
  assert.deepEqual(checkMetadata(data), { data, text: JSON.stringify(data) })
})

test('one character more is content_too_large with the threshold', () => {
  const result = checkMetadata({ note: 'x'.repeat(METADATA_MAX_CHARACTERS - 10) })
  assert.ok('error' in result)
  assert.equal(result.error.code, 'content_too_large')
  assert.deepEqual(result.error.toBody().details, { threshold: { unit: 'characters', limit: '1024' } })
})

test('astral characters count once each', () => {
  const emoji = '😀'.repeat(METADATA_MAX_CHARACTERS - 8)
  assert.ok('data' in checkMetadata({ e: emoji }), 'exactly 1024 code points')
  assert.ok('error' in checkMetadata({ e: `${emoji}😀` }))
})

test('metadata that is not a non-empty object is request_invalid', () => {
  for (const value of [null, 'text', 42, [1], {}]) {
    const result = checkMetadata(value)
    assert.ok('error' in result, JSON.stringify(value))
    assert.equal(result.error.code, 'request_invalid')
  }
})
