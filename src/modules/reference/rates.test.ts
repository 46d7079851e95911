import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import BigNumber from 'bignumber.js'
import fc from 'fast-check'
import { convertAmount, crossRate, historyBuckets, HISTORY_INTERVALS, INTERVAL_STEPS, RATE_SIGNIFICANT_DIGITS } from './rates.ts'

const quote = (mid: string, halfSpread = '0.001') => ({
  mid,
  bid: new BigNumber(mid).times(new BigNumber(1).minus(halfSpread)).toFixed(),
  ask: new BigNumber(mid).times(new BigNumber(1).plus(halfSpread)).toFixed(),
})
const usd = { mid: '1', bid: '1', ask: '1' }
const decimal = fc.integer({ min: 1, max: 10 ** 9 }).chain((n) => fc.integer({ min: 0, max: 12 }).map((scale) => new BigNumber(n).shiftedBy(-scale).toFixed()))

describe('cross rates', () => {
  test('through USD: mid is the ratio of mids; bid sells base at its bid for quote at its ask', () => {
    const btc = { mid: '60000', bid: '59940', ask: '60060' }
    const gbp = { mid: '1.25', bid: '1.24', ask: '1.26' }
    assert.deepEqual(crossRate(btc, gbp), { mid: '48000', bid: '47571.4285714', ask: '48435.483871' })
    assert.deepEqual(crossRate(btc, usd), { mid: '60000', bid: '59940', ask: '60060' })
    assert.deepEqual(crossRate(usd, { mid: '4', bid: '4', ask: '4' }), { mid: '0.25', bid: '0.25', ask: '0.25' })
  })

  test('bid < mid < ask whenever there is a spread, with at most 12 significant digits', () => {
    fc.assert(
      fc.property(decimal, decimal, (a, b) => {
        const rate = crossRate(quote(a), quote(b))
        assert.ok(new BigNumber(rate.bid).lt(rate.mid) && new BigNumber(rate.mid).lt(rate.ask), JSON.stringify(rate))
        for (const value of Object.values(rate)) {
          assert.match(value, /^\d+(\.\d+)?$/)
          assert.ok(new BigNumber(value).precision() <= RATE_SIGNIFICANT_DIGITS)
        }
      }),
    )
  })

  test('a rate and its inverse multiply to 1 within rounding', () => {
    fc.assert(
      fc.property(decimal, decimal, (a, b) => {
        const product = new BigNumber(crossRate(quote(a), quote(b)).mid).times(crossRate(quote(b), quote(a)).mid)
        assert.ok(product.minus(1).abs().lt('1e-10'), product.toFixed())
      }),
    )
  })

  test('conversion rounds to the target decimals, as asked', () => {
    assert.equal(convertAmount('0.5', '48000.123', 2), '24000.06')
    assert.equal(convertAmount('1', '0.125', 2), '0.12')
    assert.equal(convertAmount('1', '0.125', 2, 'up'), '0.13')
    assert.equal(convertAmount('1', '0.129', 2, 'down'), '0.12')
    assert.equal(convertAmount('100', '0.0000163', 8), '0.00163')
    assert.equal(convertAmount('0.1', '0.2', 18), '0.02')
  })
})

describe('history buckets', () => {
  const now = new Date('2025-06-01T12:34:56.789Z')

  test('every interval has its count of aligned points, the last containing now', () => {
    const counts = { 'one-hour': 60, 'one-day': 96, 'one-week': 168, 'one-month': 120, 'one-year': 365, 'five-years': 260 }
    for (const interval of HISTORY_INTERVALS) {
      const buckets = historyBuckets(interval, now)
      const { stepMs } = INTERVAL_STEPS[interval]
      assert.equal(buckets.length, counts[interval], interval)
      assert.ok(buckets.every((bucket, i) => bucket.getTime() % stepMs === 0 && (i === 0 || bucket.getTime() - buckets[i - 1]!.getTime() === stepMs)))
      const last = buckets.at(-1)!.getTime()
      assert.ok(last <= now.getTime() && now.getTime() < last + stepMs)
    }
    assert.equal(historyBuckets('one-hour', now)[0]!.toISOString(), '2025-06-01T11:35:00.000Z')
    assert.equal(historyBuckets('one-day', now).at(-1)!.toISOString(), '2025-06-01T12:30:00.000Z')
  })
})
