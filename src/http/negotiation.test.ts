import assert from 'node:assert/strict'
import { test } from 'node:test'
import { preferredMediaType } from './negotiation.ts'

const OFFERED = ['application/json', 'text/csv', 'text/html'] as const

test('the Accept header picks the representation; JSON when it says nothing useful', () => {
  assert.equal(preferredMediaType(undefined, OFFERED), 'application/json')
  assert.equal(preferredMediaType('', OFFERED), 'application/json')
  assert.equal(preferredMediaType('*/*', OFFERED), 'application/json')
  assert.equal(preferredMediaType('text/csv', OFFERED), 'text/csv')
  assert.equal(preferredMediaType('TEXT/HTML', OFFERED), 'text/html')
  assert.equal(preferredMediaType('text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8', OFFERED), 'text/html')
  assert.equal(preferredMediaType('application/json;q=0.5, text/csv', OFFERED), 'text/csv')
  assert.equal(preferredMediaType('text/*', OFFERED), 'text/csv')
  assert.equal(preferredMediaType('text/*;q=0.5, text/html', OFFERED), 'text/html')
  // A range refused outright (q=0) is not chosen even when more general ranges accept it.
  assert.equal(preferredMediaType('text/csv;q=0, text/*', OFFERED), 'text/html')
  assert.equal(preferredMediaType('image/png', OFFERED), 'application/json')
  // At equal quality, the type named outright wins over one a range covers.
  assert.equal(preferredMediaType('text/csv, */*', OFFERED), 'text/csv')
  assert.equal(preferredMediaType('*/*, text/html', OFFERED), 'text/html')
  assert.equal(preferredMediaType('text/csv;q=abc', OFFERED), 'application/json')
})
