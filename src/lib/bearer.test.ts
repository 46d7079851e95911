import assert from 'node:assert/strict'
import { test } from 'node:test'
import { bearerToken } from './bearer.ts'

test('the token of a Bearer header, whatever the scheme\'s case; nothing for another scheme or none', () => {
  assert.equal(bearerToken('Bearer abc.def'), 'abc.def')
  assert.equal(bearerToken('bearer abc '), 'abc')
  assert.equal(bearerToken('BEARER abc'), 'abc')
  for (const header of [undefined, '', 'Bearer', 'Bearer ', 'Basic abc', 'abc', 'Bearerabc']) assert.equal(bearerToken(header), '', String(header))
})
