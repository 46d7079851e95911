import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { Webhook } from 'standardwebhooks'
import { newWebhookSecret, signWebhook, webhookHeaders, webhookMessageId, webhookSecretKey, WebhookSecretInvalid } from './webhook-signatures.ts'

const now = () => Math.floor(Date.now() / 1000)

test('what Tessera signs, the Standard Webhooks library verifies; an altered message it refuses', () => {
  const secret = newWebhookSecret()
  const body = JSON.stringify({ id: '01a20fc8-e854-756c-a8b8-07006ec0aa58', type: 'core.user.created', createdAt: '2026-11-24T22:57:33.402Z', data: { user: { id: 'x' } } })
  const message = { id: webhookMessageId('01a20fc8-e854-756c-a8b8-07006ec0aa58'), timestamp: now(), body }
  const headers = webhookHeaders(message, [secret])
  assert.deepEqual(new Webhook(secret).verify(body, headers), JSON.parse(body))
  assert.throws(() => new Webhook(secret).verify(body.replace('created', 'deleted'), headers))
  assert.throws(() => new Webhook(newWebhookSecret()).verify(body, headers))
  assert.throws(() => new Webhook(secret).verify(body, { ...headers, 'webhook-id': 'msg_other' }))
  // The library signs exactly as Tessera does.
  assert.equal(headers['webhook-signature'], new Webhook(secret).sign(message.id, new Date(message.timestamp * 1000), body))
})

test('during a rotation, both secrets verify the same message', () => {
  const [next, previous] = [newWebhookSecret(), newWebhookSecret()]
  const message = { id: webhookMessageId('0190a8c1-0000-7000-8000-000000000001'), timestamp: now(), body: '{"a":1}' }
  const headers = webhookHeaders(message, [next, previous])
  assert.equal(headers['webhook-signature'].split(' ').length, 2)
  for (const secret of [next, previous]) assert.deepEqual(new Webhook(secret).verify(message.body, headers), { a: 1 })
})

test('secrets: whsec_ and canonical base64 of at least 24 bytes; anything else is refused before signing', () => {
  assert.match(newWebhookSecret(), /^whsec_[A-Za-z0-9+/]{43}=$/)
  assert.equal(webhookSecretKey(newWebhookSecret()).length, 32)
  for (const bad of ['', 'whsec_', 'secret', `whsk_${Buffer.alloc(32).toString('base64')}`, 'whsec_@@@@', `whsec_${Buffer.alloc(8).toString('base64')}`, `whsec_${Buffer.alloc(32).toString('base64')}x`]) {
    assert.throws(() => webhookSecretKey(bad), WebhookSecretInvalid, bad)
  }
  assert.throws(() => signWebhook({ id: 'msg_1', timestamp: now(), body: '' }, []), WebhookSecretInvalid)
  assert.throws(() => signWebhook({ id: 'msg_1', timestamp: 1.5, body: '' }, [newWebhookSecret()]), RangeError)
})

test('any body and id verify with the library (property)', () => {
  const secret = newWebhookSecret()
  fc.assert(fc.property(fc.string(), fc.uuid(), (text, id) => {
    const body = JSON.stringify({ text })
    const headers = webhookHeaders({ id: webhookMessageId(id), timestamp: now(), body }, [secret])
    assert.deepEqual(new Webhook(secret).verify(body, headers), { text })
  }), { numRuns: 200 })
})
