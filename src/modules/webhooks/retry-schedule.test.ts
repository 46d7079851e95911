import assert from 'node:assert/strict'
import { test } from 'node:test'
import { parseDurationList as parseRetryDelays } from '../../lib/durations.ts'
import { afterFailedAttempt, attemptsOf, DEFAULT_RETRY_DELAYS_MS } from './retry-schedule.ts'

test('the default schedule makes eight attempts over about 27.6 hours', () => {
  assert.equal(attemptsOf(DEFAULT_RETRY_DELAYS_MS), 8)
  const totalMs = DEFAULT_RETRY_DELAYS_MS.reduce((sum, delay) => sum + delay, 0)
  assert.equal(totalMs, 99_305_000)
  assert.equal(Math.round(totalMs / 360_000) / 10, 27.6)
  assert.deepEqual(parseRetryDelays('5s,5m,30m,2h,5h,10h,10h'), DEFAULT_RETRY_DELAYS_MS)
})

test('each failure is retried after its delay until the schedule is spent', () => {
  const at = new Date('2026-01-01T00:00:00.000Z')
  assert.deepEqual(afterFailedAttempt(1, DEFAULT_RETRY_DELAYS_MS, at), { retryAt: new Date('2026-01-01T00:00:05.000Z') })
  assert.deepEqual(afterFailedAttempt(2, DEFAULT_RETRY_DELAYS_MS, at), { retryAt: new Date('2026-01-01T00:05:00.000Z') })
  assert.deepEqual(afterFailedAttempt(7, DEFAULT_RETRY_DELAYS_MS, at), { retryAt: new Date('2026-01-01T10:00:00.000Z') })
  assert.deepEqual(afterFailedAttempt(8, DEFAULT_RETRY_DELAYS_MS, at), { exhausted: true })
  assert.throws(() => afterFailedAttempt(0, DEFAULT_RETRY_DELAYS_MS, at), RangeError)
})

test('schedules are parsed from text with units, and nonsense is refused', () => {
  assert.deepEqual(parseRetryDelays('100ms, 1s,2m ,1h'), [100, 1_000, 120_000, 3_600_000])
  for (const bad of ['', '5', '5d', '-1s', '1s,,2s', 'abc']) assert.equal(parseRetryDelays(bad), null, bad)
})
