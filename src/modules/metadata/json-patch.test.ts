import assert from 'node:assert/strict'
import { test } from 'node:test'
import { applyJsonPatch } from './json-patch.ts'

test('applies every operation in order', () => {
  const result = applyJsonPatch({ a: 1, list: [1, 2] }, [
    { op: 'add', path: '/b', value: 2 },
    { op: 'remove', path: '/a' },
    { op: 'replace', path: '/list/0', value: 9 },
    { op: 'move', from: '/b', path: '/c' },
    { op: 'copy', from: '/c', path: '/d' },
    { op: 'test', path: '/d', value: 2 },
  ])
  assert.deepEqual(result, { document: { list: [9, 2], c: 2, d: 2 } })
})

test('a failing operation leaves the original untouched and names the operation', () => {
  const original = { a: 1 }
  const result = applyJsonPatch(original, [{ op: 'add', path: '/b', value: 1 }, { op: 'remove', path: '/missing' }])
  assert.ok('failure' in result)
  assert.equal(result.failure.index, 1)
  assert.deepEqual(result.failure.operation, { op: 'remove', path: '/missing' })
  assert.deepEqual(original, { a: 1 })
})

test('array indices with leading zeros are rejected, object keys with them are not', () => {
  assert.ok('failure' in applyJsonPatch({ list: ['a', 'b'] }, [{ op: 'test', path: '/list/01', value: 'b' }]))
  assert.ok('failure' in applyJsonPatch({ list: ['a', 'b'] }, [{ op: 'add', path: '/list/00', value: 'x' }]))
  assert.deepEqual(applyJsonPatch({ '01': 'x' }, [{ op: 'replace', path: '/01', value: 'y' }]), { document: { '01': 'y' } })
})

test('malformed operations fail rather than throw', () => {
  for (const operation of [{ op: 'spam', path: '/a' }, { path: '/a' }, { op: 'add', path: '/a' }, { op: 'move', path: '/a' }, 'add']) {
    const result = applyJsonPatch({ a: 1 }, [operation])
    assert.ok('failure' in result, JSON.stringify(operation))
  }
})
