import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { ERROR_CODES } from '../lib/errors.ts'
import { ERROR_CATALOGUE, statusOf } from './error-catalogue.ts'
import { renderErrorDocs } from './error-docs.ts'

test('docs/errors.md is what the catalogue gives (run `npm run docs:errors` after changing it)', () => {
  const committed = fs.readFileSync(path.resolve(import.meta.dirname, '..', '..', 'docs', 'errors.md'), 'utf8')
  assert.equal(committed, renderErrorDocs())
})

test('every domain error code has a catalogue entry, and the catalogue has no other code', () => {
  assert.deepEqual(Object.keys(ERROR_CATALOGUE).sort(), [...ERROR_CODES].sort())
})

test('every status is a client or server error', () => {
  for (const [code, { status }] of Object.entries(ERROR_CATALOGUE)) {
    assert.ok(Number.isInteger(status) && status >= 400 && status <= 599, `${code}: ${status}`)
  }
})

test('statusOf answers a code outside the catalogue as 500', () => {
  assert.equal(statusOf('entity_not_found'), 404)
  assert.equal(statusOf('no_such_code'), 500)
})
