import assert from 'node:assert/strict'
import { randomBytes, randomUUID } from 'node:crypto'
import { test } from 'node:test'
import { signPortalToken, verifyPortalToken } from './portal-tokens.ts'

const key = randomBytes(32)
const grant = { kind: 'link' as const, linkId: randomUUID(), organizationId: randomUUID(), expiresAt: new Date('2026-01-01T01:00:00.000Z') }
const before = new Date('2026-01-01T00:30:00.000Z')

test('a signed token verifies until it expires, for its own kind only', () => {
  const token = signPortalToken(key, grant)
  assert.deepEqual(verifyPortalToken(key, token, 'link', before), { ok: grant })
  assert.deepEqual(verifyPortalToken(key, token, 'link', grant.expiresAt), { problem: 'expired', expiresAt: grant.expiresAt })
  assert.deepEqual(verifyPortalToken(key, token, 'session', before), { problem: 'malformed' })
})

test('an altered token, another key or garbage is refused', () => {
  const token = signPortalToken(key, grant)
  const [payload, signature] = token.split('.') as [string, string]
  const forged = Buffer.from(JSON.stringify({ k: 'link', l: grant.linkId, o: randomUUID(), e: grant.expiresAt.getTime() })).toString('base64url')
  assert.deepEqual(verifyPortalToken(key, `${forged}.${signature}`, 'link', before), { problem: 'signature' })
  const flipped = signature.slice(0, -2) + (signature.at(-2) === 'A' ? 'B' : 'A') + signature.at(-1)
  assert.deepEqual(verifyPortalToken(key, `${payload}.${flipped}`, 'link', before), { problem: 'signature' })
  assert.deepEqual(verifyPortalToken(randomBytes(32), token, 'link', before), { problem: 'signature' })
  // Another spelling of the same signature bytes (the last character's unused bits) is refused too.
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
  const respelled = `${signature.slice(0, -1)}${alphabet[alphabet.indexOf(signature.at(-1)!) + 1]}`
  assert.deepEqual(verifyPortalToken(key, `${payload}.${respelled}`, 'link', before), { problem: 'signature' })
  for (const bad of ['', 'abc', `${payload}.`, `${payload}.${signature}x`, 'a'.repeat(600) + '.' + signature]) {
    assert.deepEqual(verifyPortalToken(key, bad, 'link', before), { problem: 'malformed' }, bad)
  }
})
