import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import BigNumber from 'bignumber.js'
import fc from 'fast-check'
import { pseudoLevel, SANDBOX_LEVELS, SandboxPriceFeed, walkFactor } from './sandbox.ts'

const DAY = 86_400_000
const NOW = Date.UTC(2025, 5, 1, 12, 0, 0)

describe('sandbox price feed', () => {
  const feed = new SandboxPriceFeed('seed-a', ['EUR', 'GBP', 'XOF', 'KES'])

  test('the walk is a pure function of seed, asset and second', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 4_000_000_000_000 }), fc.constantFrom('BTC', 'ETH', 'EUR', 'XOF'), (at, asset) => {
        assert.deepEqual(feed.quoteAt(asset, at), new SandboxPriceFeed('seed-a', ['EUR', 'XOF']).quoteAt(asset, at))
        assert.deepEqual(feed.quoteAt(asset, at), feed.quoteAt(asset, Math.floor(at / 1000) * 1000 + 999), 'constant within a second')
      }),
    )
    assert.notEqual(feed.quoteAt('BTC', NOW)!.mid, new SandboxPriceFeed('seed-b', []).quoteAt('BTC', NOW)!.mid)
    assert.notEqual(feed.quoteAt('BTC', NOW)!.mid, feed.quoteAt('BTC', NOW + 60_000)!.mid)
  })

  test('bid < mid < ask, all positive decimals', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 4_000_000_000_000 }), fc.constantFrom('BTC', 'ETH', 'XRP', 'SOL', 'LTC', 'USDC', 'USDT', 'EUR', 'KES'), (at, asset) => {
        const quote = feed.quoteAt(asset, at)!
        for (const value of Object.values(quote)) assert.match(value, /^\d+(\.\d+)?$/)
        assert.ok(new BigNumber(quote.bid).lt(quote.mid) && new BigNumber(quote.mid).lt(quote.ask), JSON.stringify(quote))
        assert.ok(new BigNumber(quote.bid).gt(0))
      }),
    )
  })

  test('prices stay around their levels; stablecoins within a few tenths of a cent; USD is 1', () => {
    for (let day = 0; day < 5 * 365; day += 3) {
      const at = NOW - day * DAY
      for (const asset of ['BTC', 'ETH', 'EUR']) {
        const ratio = new BigNumber(feed.quoteAt(asset, at)!.mid).div(SANDBOX_LEVELS[asset]!.usd)
        assert.ok(ratio.gt(0.4) && ratio.lt(2.5), `${asset} ${day} days ago: ${ratio.toFixed(3)} of its level`)
      }
      assert.ok(new BigNumber(feed.quoteAt('USDC', at)!.mid).minus(1).abs().lt(0.005))
    }
    assert.deepEqual(feed.quoteAt('USD', NOW), { mid: '1', bid: '1', ask: '1' })
  })

  test('an asset the feed does not know has no price; a fiat currency it does not know gets a stable pseudo level', async () => {
    assert.equal(await feed.usdQuote('BUSD', new Date(NOW)), null)
    assert.equal(await feed.marketCapUsd('EUR', new Date(NOW)), null)
    assert.match((await feed.marketCapUsd('BTC', new Date(NOW)))!, /^\d+(\.\d{1,2})?$/)
    assert.deepEqual(pseudoLevel('KES'), pseudoLevel('KES'))
    for (const code of ['KES', 'XOF', 'VND', 'ZWG', 'AAA']) {
      const level = new BigNumber(pseudoLevel(code).usd)
      assert.ok(level.gte('0.0001') && level.lt(10), `${code}: ${level.toFixed()}`)
    }
    assert.ok(feed.quoteAt('KES', NOW))
  })

  test('the walk factor is positive and symmetric in form', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 4_000_000_000_000 }), (at) => {
        assert.ok(walkFactor('s', 'BTC', '0.05', at).gt(0))
      }),
      { numRuns: 200 },
    )
    assert.equal(walkFactor('s', 'USD', '0', NOW).toFixed(), '1')
  })
})
