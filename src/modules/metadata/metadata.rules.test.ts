import assert from 'node:assert/strict'
import { test } from 'node:test'
import { checkMetadata, metadataSize, METADATA_MAX_CHARACTERS } from './metadata.rules.ts'

test('metadata size counts Unicode characters of the serialized object, not bytes', () => {
  assert.equal(metadataSize({ a: 'é' }), '{"a":"é"}'.length)
  assert.equal(metadataSize({ a: '😀' }), 9)
})

test('metadata within the limit is accepted', () => {
  const data = { note: 'x'.repeat(METADATA_MAX_CHARACTERS - 11) }
  assert.equal(metadataSize(data), METADATA_MAX_CHARACTERS)
  assert.deepEqual(checkMetadata(data), { data })
})

test('metadata over the limit is content_too_large with the threshold', () => {
  const result = checkMetadata({ note: 'x'.repeat(METADATA_MAX_CHARACTERS) })
  assert.ok('error' in result)
  assert.equal(result.error.status, 413)
  assert.deepEqual(result.error.toBody().details, { threshold: { unit: 'characters', limit: 1024 } })
})

test('metadata that is not a non-empty object is request_invalid', () => {
  for (const value of [null, 'text', 42, [1], {}]) {
    const result = checkMetadata(value)
    assert.ok('error' in result, JSON.stringify(value))
    assert.equal(result.error.code, 'request_invalid')
  }
})
