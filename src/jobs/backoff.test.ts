import assert from 'node:assert/strict'
import { test } from 'node:test'
import { afterFailure, retryDelayMs } from './backoff.ts'

const policy = { maxAttempts: 4, baseDelayMs: 1000, maxDelayMs: 10_000 }

test('the delay doubles with each failed attempt', () => {
  assert.deepEqual([1, 2, 3, 4].map((n) => retryDelayMs(n, policy, 0)), [1000, 2000, 4000, 8000])
})

test('the delay never exceeds the ceiling, however many attempts failed', () => {
  assert.equal(retryDelayMs(5, policy, 0), 10_000)
  assert.equal(retryDelayMs(1000, policy, 0), 10_000)
  assert.equal(retryDelayMs(Number.MAX_SAFE_INTEGER, policy, 0), 10_000)
})

test('jitter only shortens the delay, by at most a quarter', () => {
  assert.equal(retryDelayMs(2, policy, 0.999999), 1500)
  assert.equal(retryDelayMs(2, policy, 0.5), 1750)
  for (let i = 0; i < 100; i++) {
    const delay = retryDelayMs(3, policy)
    assert.ok(delay >= 3000 && delay <= 4000)
  }
})

test('attempts must be a positive integer', () => {
  assert.throws(() => retryDelayMs(0, policy), RangeError)
  assert.throws(() => retryDelayMs(1.5, policy), RangeError)
})

test('a job is retried until its last attempt, then given up', () => {
  const now = new Date('2026-01-01T00:00:00Z')
  assert.deepEqual(afterFailure(1, policy, now, 0), { retryAt: new Date('2026-01-01T00:00:01Z') })
  assert.deepEqual(afterFailure(3, policy, now, 0), { retryAt: new Date('2026-01-01T00:00:04Z') })
  assert.deepEqual(afterFailure(4, policy, now, 0), { giveUp: true })
  assert.deepEqual(afterFailure(9, policy, now, 0), { giveUp: true })
})
