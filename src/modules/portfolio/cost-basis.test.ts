import assert from 'node:assert/strict'
import { test } from 'node:test'
import BigNumber from 'bignumber.js'
import fc from 'fast-check'
import { acquire, acquisitionCostUsd, applyChange, dispose, EMPTY_POSITION, performanceOf, windowBasisUsd, type PositionState } from './cost-basis.ts'

const fixed = (value: BigNumber) => value.toFixed()
const price = (prices: Record<string, string>) => (asset: string) => new BigNumber(prices[asset]!)

// The worked example of docs/portfolio.md, step by step.
test('the worked example: two buys, a partial sale, a withdrawal with its network fee', () => {
  // 1. Buy 0.5 BTC for 10,000 USD plus a 100 USD fee: the fee is part of the price paid.
  const firstCost = acquisitionCostUsd({ asset: 'BTC', amount: '0.5', terms: { originAsset: 'USD', originAmount: '10100', destinationAsset: 'BTC', destinationAmount: '0.5' }, carriedUsd: undefined, usdPrice: price({}) })
  assert.equal(fixed(firstCost), '10100')
  let position = acquire(EMPTY_POSITION, '0.5', firstCost)
  assert.equal(fixed(performanceOf(position.quantity, position.investedUsd, position.quantity.times('20000')).averagePricePaid), '20200')

  // 2. Buy 0.5 BTC more at 30,000: 15,000 plus a 150 fee.
  position = acquire(position, '0.5', '15150')
  assert.deepEqual([fixed(position.quantity), fixed(position.investedUsd)], ['1', '25250'])
  const beforeSale = position

  // 3. Sell 0.4 BTC: the cost leaves at the average price (25,250), which does not change.
  const sale = dispose(position, '0.4')
  position = sale.state
  assert.equal(fixed(sale.removedUsd), '10100')
  assert.deepEqual([fixed(position.quantity), fixed(position.investedUsd), fixed(position.retained)], ['0.6', '15150', '0.6'])

  // 4. Withdraw 0.1 BTC, the network fee (0.0001 BTC) debited with it.
  position = dispose(position, '0.1001').state
  assert.deepEqual([fixed(position.quantity), fixed(position.investedUsd)], ['0.4999', '12622.475'])

  // At 40,000 USD: worth 19,996, bought for 12,622.475.
  const allTime = performanceOf(position.quantity, position.investedUsd, position.quantity.times('40000'))
  assert.deepEqual([fixed(allTime.averagePricePaid), fixed(allTime.totalInvested), fixed(allTime.unrealizedGains)], ['25250', '12622.475', '7373.525'])

  // Over a window that began after the buys, at 35,000: what was held then counts as bought at 35,000.
  const windowBasis = windowBasisUsd(position, beforeSale, '35000')
  assert.equal(fixed(windowBasis), '17496.5')
  const window = performanceOf(position.quantity, windowBasis, position.quantity.times('40000'))
  assert.deepEqual([fixed(window.averagePricePaid), fixed(window.unrealizedGains)], ['35000', '2499.5'])
})

test('a position emptied starts over: nothing before it counts', () => {
  const bought = acquire(EMPTY_POSITION, '2', '100')
  const emptied = dispose(bought, '2')
  assert.deepEqual([fixed(emptied.state.quantity), fixed(emptied.state.investedUsd), emptied.state.epoch], ['0', '0', 1])
  assert.equal(fixed(emptied.removedUsd), '100')
  const again = acquire(emptied.state, '1', '70')
  // A window that began before the emptying sees only what came after.
  assert.equal(fixed(windowBasisUsd(again, bought, '80')), '70')
  // A window that began while nothing was held likewise.
  assert.equal(fixed(windowBasisUsd(again, null, '80')), '70')
})

test('dollars cost dollars; moves between own accounts keep their cost; others are valued at the market', () => {
  const usdPrice = price({ BTC: '50000', ETH: '2500', GBP: '1.25' })
  assert.equal(fixed(acquisitionCostUsd({ asset: 'USD', amount: '99', terms: { originAsset: 'USD', originAmount: '100', destinationAsset: 'USD', destinationAmount: '99' }, carriedUsd: undefined, usdPrice })), '99')
  assert.equal(fixed(acquisitionCostUsd({ asset: 'BTC', amount: '1', terms: undefined, carriedUsd: new BigNumber('31000'), usdPrice })), '31000')
  // A crypto deposit from outside: the market value on arrival.
  assert.equal(fixed(acquisitionCostUsd({ asset: 'BTC', amount: '0.1', terms: { originAsset: 'BTC', originAmount: '0.1', destinationAsset: 'BTC', destinationAmount: '0.1' }, carriedUsd: undefined, usdPrice })), '5000')
  // A trade from ETH: what the 2 ETH given were worth.
  assert.equal(fixed(acquisitionCostUsd({ asset: 'BTC', amount: '0.09', terms: { originAsset: 'ETH', originAmount: '2', destinationAsset: 'BTC', destinationAmount: '0.09' }, carriedUsd: undefined, usdPrice })), '5000')
  // Bought from pounds, arriving in two parts: each part its share.
  assert.equal(fixed(acquisitionCostUsd({ asset: 'BTC', amount: '0.05', terms: { originAsset: 'GBP', originAmount: '4000', destinationAsset: 'BTC', destinationAmount: '0.1' }, carriedUsd: undefined, usdPrice })), '2500')
  // No terms (an adjustment outside any transaction): the market value.
  assert.equal(fixed(acquisitionCostUsd({ asset: 'ETH', amount: '4', terms: undefined, carriedUsd: undefined, usdPrice })), '10000')
})

test('zero changes nothing and signs pick acquisition or disposal', () => {
  assert.equal(applyChange(EMPTY_POSITION, '0', () => { throw new Error('not valued') }).state, EMPTY_POSITION)
  const up = applyChange(EMPTY_POSITION, '3', () => new BigNumber(30)).state
  assert.equal(fixed(up.investedUsd), '30')
  const down = applyChange(up, '-1', () => { throw new Error('not valued') })
  assert.deepEqual([fixed(down.state.quantity), fixed(down.state.investedUsd), fixed(down.removedUsd)], ['2', '20', '10'])
  assert.throws(() => acquire(EMPTY_POSITION, '0', '1'), RangeError)
  assert.throws(() => dispose(up, '-1'), RangeError)
})

test('thousands of disposals keep retained short, and a window across them stays right', () => {
  // Sell half and buy it back, again and again: retained halves each time (2^-2000 after 2,000 rounds).
  let position = acquire(EMPTY_POSITION, '2', '200')
  let start: PositionState | null = null
  for (let i = 0; i < 2000; i++) {
    if (i === 1000) start = position
    position = acquire(dispose(position, '1').state, '1', '100')
  }
  assert.ok(position.retained.precision(true) <= 40 && position.retained.isGreaterThanOrEqualTo('0.1') && position.retained.isLessThanOrEqualTo(1))
  assert.ok(position.retainedScale < -600, String(position.retainedScale))
  assert.equal(position.epoch, 0)
  // A window that began before the last sale, at 300: the sale kept half of the start's position, valued at 300.
  const beforeLast = position
  const sold = dispose(position, '1').state
  const window = windowBasisUsd(sold, beforeLast, '300')
  const replayed = dispose({ ...beforeLast, investedUsd: beforeLast.quantity.times(300), retained: new BigNumber(1), retainedScale: 0 }, '1').state.investedUsd
  assert.equal(fixed(window), fixed(replayed))
  assert.equal(fixed(window), '300')
  // And one that began a thousand rounds ago: every round since halved what the start contributed.
  const far = windowBasisUsd(position, start, '300')
  assert.ok(far.minus(position.investedUsd).abs().isLessThan('1e-200'))
})

// Property: against a naive replay that resets the cost at the window's start, the two-ends formula agrees.
test('window performance from the two ends equals a replay from the window start', () => {
  const step = fc.record({ buy: fc.boolean(), quantity: fc.integer({ min: 1, max: 1000 }), cost: fc.integer({ min: 0, max: 100000 }), fraction: fc.integer({ min: 1, max: 100 }) })
  fc.assert(fc.property(fc.array(step, { minLength: 1, maxLength: 30 }), fc.array(step, { minLength: 0, maxLength: 30 }), fc.integer({ min: 1, max: 100000 }), (before, after, startPrice) => {
    const run = (start: PositionState, steps: typeof before) => steps.reduce((state, s) => {
      if (s.buy || state.quantity.isZero()) return acquire(state, s.quantity, s.cost)
      const quantity = state.quantity.times(s.fraction).div(100).decimalPlaces(8, BigNumber.ROUND_DOWN)
      return quantity.isZero() ? state : dispose(state, quantity).state
    }, start)
    const atStart = run(EMPTY_POSITION, before)
    const now = run(atStart, after)
    // The replay: the same movements from a position bought at the window start's price.
    const replayed = run({ ...atStart, investedUsd: atStart.quantity.times(startPrice), retained: new BigNumber(1), retainedScale: 0 }, after)
    const formula = windowBasisUsd(now, atStart, startPrice)
    assert.ok(formula.minus(replayed.investedUsd).abs().isLessThan('1e-12'), `${formula.toFixed()} vs ${replayed.investedUsd.toFixed()}`)
  }), { numRuns: 300 })
})
