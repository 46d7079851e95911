import assert from 'node:assert/strict'
import { test } from 'node:test'
import fc from 'fast-check'
import { nextPeriodStart, parseSchedulePeriods, periodStartOf } from './periods.ts'

test('periods are aligned to the epoch: every clock reading within one gives the same start', () => {
  assert.equal(periodStartOf(new Date('2026-03-04T10:17:42.123Z'), 10 * 60_000).toISOString(), '2026-03-04T10:10:00.000Z')
  assert.equal(periodStartOf(new Date('2026-03-04T10:10:00.000Z'), 10 * 60_000).toISOString(), '2026-03-04T10:10:00.000Z')
  assert.equal(periodStartOf(new Date('2026-03-04T23:59:59.999Z'), 86_400_000).toISOString(), '2026-03-04T00:00:00.000Z')
  assert.equal(nextPeriodStart(new Date('2026-03-04T10:17:42.123Z'), 60_000).toISOString(), '2026-03-04T10:18:00.000Z')
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 4_000_000_000_000 }), fc.integer({ min: 1, max: 86_400_000 }), (at, period) => {
      const start = periodStartOf(new Date(at), period).getTime()
      assert.ok(start <= at && at < start + period)
      assert.equal(start % period, 0)
      assert.equal(nextPeriodStart(new Date(at), period).getTime(), start + period)
    }),
  )
})

test('a period must be a positive whole number of milliseconds', () => {
  for (const period of [0, -5, 1.5, Number.NaN]) assert.throws(() => periodStartOf(new Date(), period), RangeError)
})

test('SCHEDULE_PERIODS: name=duration pairs with units', () => {
  assert.deepEqual(parseSchedulePeriods('prices.record=200ms, jobs.retention=1h,kyc.self-categorization-expiry=30s'), {
    periods: new Map([['prices.record', 200], ['jobs.retention', 3_600_000], ['kyc.self-categorization-expiry', 30_000]]),
  })
  for (const text of ['prices.record', 'prices.record=', 'prices.record=5', 'prices.record=0s', 'prices.record=1d', 'prices=1s', 'Prices.Record=1s', 'a.b=1s=2s', '=1s', 'prices.record=1s,,jobs.retention=1s']) {
    assert.ok('problem' in parseSchedulePeriods(text), text)
  }
  assert.deepEqual(parseSchedulePeriods('prices.record=1s,prices.record=2s'), { problem: 'prices.record is named more than once' })
})
