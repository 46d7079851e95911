import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import BigNumber from 'bignumber.js'
import fc from 'fast-check'
import { displayRate, inverseRate, price, PricingError, roundTarget, withSpread, type FeeRule } from './pricing.ts'

const places = (value: string) => new BigNumber(value).decimalPlaces() ?? 0

describe('quote pricing', () => {
  test('target origin: the origin pays exactly the amount; fees come out of it, the rest is exchanged and rounded down', () => {
    const pricing = price({
      target: 'origin',
      amount: '100.00',
      rate: '0.0000153846',
      originDecimals: 2,
      destinationDecimals: 8,
      fees: [{ type: 'exchange', code: 'exchange-fee', percentage: '0.5' }],
    })
    assert.deepEqual(pricing, {
      originAmount: '100',
      exchangedAmount: '99.5',
      destinationAmount: '0.00153076',
      fees: [{ type: 'exchange', code: 'exchange-fee', amount: '0.5', percentage: '0.5' }],
    })
  })

  test('target destination: the destination receives exactly the amount; the origin pays what buys it plus the fees', () => {
    const pricing = price({
      target: 'destination',
      amount: '0.001',
      rate: '0.0000153846',
      originDecimals: 2,
      destinationDecimals: 8,
      fees: [{ type: 'exchange', code: 'exchange-fee', percentage: '0.5' }, { type: 'exchange', code: 'fixed', fixed: '0.25' }],
    })
    // 0.001 / 0.0000153846 = 65.0000650… → 65.01 exchanged; fees on 65.61 (≥ (65.01 + 0.25) / 0.995): 0.33 and 0.25.
    assert.deepEqual(pricing, {
      originAmount: '65.59',
      exchangedAmount: '65.01',
      destinationAmount: '0.001',
      fees: [{ type: 'exchange', code: 'exchange-fee', amount: '0.33', percentage: '0.5' }, { type: 'exchange', code: 'fixed', amount: '0.25' }],
    })
  })

  test('between accounts of one asset without fees, both ends carry the same amount', () => {
    assert.deepEqual(price({ target: 'origin', amount: '1.5', rate: '1', originDecimals: 8, destinationDecimals: 8, fees: [] }), {
      originAmount: '1.5', exchangedAmount: '1.5', destinationAmount: '1.5', fees: [],
    })
  })

  test('an amount that leaves nothing after fees and rounding is refused', () => {
    assert.throws(() => price({ target: 'origin', amount: '0.01', rate: '0.00001', originDecimals: 2, destinationDecimals: 6, fees: [] }), PricingError)
    assert.throws(
      () => price({ target: 'origin', amount: '0.25', rate: '1', originDecimals: 2, destinationDecimals: 2, fees: [{ type: 'exchange', code: 'fixed', fixed: '0.25' }] }),
      PricingError,
    )
  })

  test('a denomination converted to the target rounds up for the origin and down for the destination', () => {
    assert.equal(roundTarget('10', '0.123456789', 'origin', 2), '1.24')
    assert.equal(roundTarget('10', '0.123456789', 'destination', 2), '1.23')
    assert.equal(roundTarget('10', '1', 'origin', 2), '10')
  })

  test('rates: 12 significant digits, inverse, spread taken off the mid', () => {
    assert.equal(displayRate('47619.047619047619047'), '47619.047619')
    assert.equal(inverseRate('0.000021'), '47619.047619')
    assert.equal(withSpread('100', '0.005'), '99.5')
    assert.equal(withSpread('100', '0'), '100')
  })

  test('property: amounts balance exactly, never exceed the rate, respect decimals and the target', () => {
    const decimal = (max: number, decimals: number) =>
      fc.bigInt({ min: 1n, max: BigInt(max) * 10n ** BigInt(decimals) }).map((units) => new BigNumber(units.toString()).shiftedBy(-decimals).toFixed())
    const feeRule = fc.record({
      type: fc.constant<FeeRule['type']>('exchange'),
      code: fc.constantFrom('exchange-fee', 'fixed', 'other'),
      percentage: fc.option(fc.constantFrom('0.1', '0.25', '0.5', '1', '2.5'), { nil: undefined }),
      fixed: fc.option(fc.constantFrom('0.01', '0.5', '1'), { nil: undefined }),
    })
    fc.assert(
      fc.property(
        fc.constantFrom<'origin' | 'destination'>('origin', 'destination'),
        fc.integer({ min: 0, max: 8 }),
        fc.integer({ min: 0, max: 8 }),
        fc.integer({ min: 1, max: 1_000_000 }).chain((n) => decimal(n, 4)),
        fc.constantFrom('1', '0.0000153846', '65000', '3.5', '0.92', '123.456789'),
        fc.array(feeRule, { maxLength: 3 }),
        (target, originDecimals, destinationDecimals, rawAmount, rate, fees) => {
          const amount = new BigNumber(rawAmount).decimalPlaces(target === 'origin' ? originDecimals : destinationDecimals, BigNumber.ROUND_DOWN).toFixed()
          if (new BigNumber(amount).isZero()) return
          const rules = fees.map((fee) => ({ ...fee, fixed: fee.fixed && new BigNumber(fee.fixed).decimalPlaces(originDecimals, BigNumber.ROUND_UP).toFixed() }))
          let pricing
          try {
            pricing = price({ target, amount, rate, originDecimals, destinationDecimals, fees: rules })
          } catch (error) {
            assert.ok(error instanceof PricingError, String(error))
            return
          }
          const origin = new BigNumber(pricing.originAmount)
          const exchanged = new BigNumber(pricing.exchangedAmount)
          const destination = new BigNumber(pricing.destinationAmount)
          const feeTotal = pricing.fees.reduce((sum, fee) => sum.plus(fee.amount), new BigNumber(0))
          assert.ok(origin.isEqualTo(exchanged.plus(feeTotal)), 'origin = exchanged + fees')
          assert.ok(destination.isLessThanOrEqualTo(exchanged.times(rate)), 'the destination never gets more than the rate gives')
          assert.ok(exchanged.isGreaterThan(0) && destination.isGreaterThan(0))
          assert.ok(places(pricing.originAmount) <= originDecimals && places(pricing.destinationAmount) <= destinationDecimals)
          for (const fee of pricing.fees) assert.ok(places(fee.amount) <= originDecimals && new BigNumber(fee.amount).isGreaterThan(0))
          if (target === 'origin') assert.ok(origin.isEqualTo(amount))
          else assert.ok(destination.isEqualTo(amount))
          // Each percentage fee is its share of what the origin pays, to within one unit of the origin's asset.
          const unit = new BigNumber(1).shiftedBy(-originDecimals)
          for (const rule of rules) {
            if (rule.percentage === undefined) continue
            const charged = pricing.fees.filter((fee) => fee.code === rule.code).reduce((sum, fee) => sum.plus(fee.amount), new BigNumber(0))
            assert.ok(charged.isGreaterThanOrEqualTo(origin.times(rule.percentage).div(100).minus(unit)), `${rule.code} covers its percentage`)
          }
        },
      ),
      { numRuns: 500 },
    )
  })
})
