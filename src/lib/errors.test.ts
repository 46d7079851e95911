import assert from 'node:assert/strict'
import { test } from 'node:test'
import { contentTooLarge, DomainError, isRetryable, notFound, requestInvalid } from './errors.ts'

test('toBody carries code and message, and details only when there are some', () => {
  assert.deepEqual(new DomainError('conflict', 'Taken').toBody(), { code: 'conflict', message: 'Taken' })
  assert.ok(!('details' in new DomainError('conflict', 'Taken').toBody()))
  assert.deepEqual(new DomainError('phone_invalid', 'Bad', { details: { property: 'phone' } }).toBody(), {
    code: 'phone_invalid',
    message: 'Bad',
    details: { property: 'phone' },
  })
})

test('a domain error is not retryable unless it says so', () => {
  const error = new DomainError('conflict', 'Taken')
  assert.equal(error.retryable, false)
  assert.equal(new DomainError('service_unavailable', 'Down', { retryable: true }).retryable, true)
  assert.ok(error instanceof Error)
  assert.equal(error.name, 'DomainError')
  assert.equal(error.message, 'Taken')
})

test('isRetryable: a domain error says; any other error is taken as transient', () => {
  assert.equal(isRetryable(new DomainError('insufficient_balance', 'Not enough')), false)
  assert.equal(isRetryable(new DomainError('service_unavailable', 'Down', { retryable: true })), true)
  assert.equal(isRetryable(new Error('connection reset')), true)
  assert.equal(isRetryable('a thrown string'), true)
})

test('the helpers keep the bodies the API has always answered', () => {
  assert.deepEqual(notFound('external-account', { id: 'x' }).toBody(), {
    code: 'entity_not_found',
    message: 'The external account cannot be found',
    details: { id: 'x', entity: 'external-account' },
  })
  assert.deepEqual(requestInvalid('query', [{ property: 'page', rule: 'minimum' }]).toBody(), {
    code: 'request_invalid',
    message: 'The request has missing or invalid parameters',
    details: { context: 'query', violations: [{ property: 'page', rule: 'minimum' }] },
  })
  assert.deepEqual(contentTooLarge('characters', 1024, 'Too long').toBody(), {
    code: 'content_too_large',
    message: 'Too long',
    details: { threshold: { unit: 'characters', limit: '1024' } },
  })
})

test('a domain error that says when to retry is retryable, and keeps its cause', () => {
  const cause = new Error('connection refused')
  const error = new DomainError('service_unavailable', 'Try later', { retryAfterSeconds: 30, cause })
  assert.equal(error.retryable, true)
  assert.equal(error.retryAfterSeconds, 30)
  assert.equal(error.cause, cause)
  assert.equal(new DomainError('service_unavailable', 'Try later', { retryable: true }).retryAfterSeconds, undefined)
})
