import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import BigNumber from 'bignumber.js'
import { AssetsFile } from '../src/modules/reference/assets.schemas.ts'
import { AssetCatalogue } from '../src/modules/reference/assets.service.ts'
import { RatesService } from '../src/modules/reference/rates.service.ts'
import { loadReferenceData } from '../src/modules/reference/reference-data.ts'
import { SANDBOX_PRICE_SEED, SandboxPriceFeed } from '../src/providers/prices/sandbox.ts'
import { bearer, ENGINES, startApp, startPeer, type TestContext } from './helpers.ts'

const catalogue = new AssetCatalogue(loadReferenceData<AssetsFile>('assets.json', AssetsFile, null))

type Rate = { bid: string; ask: string; mid: string }
type Point = { timestamp: string; rate?: { mid: string } }
const DECIMAL = /^\d+(\.\d+)?$/

for (const engine of ENGINES) {
  describe(`rates [${engine}]`, () => {
    let ctx: TestContext
    let token: string
    /** The service the app runs, on the app's database: what other modules call for conversions. */
    let rates: RatesService
    before(async () => {
      ctx = await startApp(engine)
      token = await ctx.token()
      rates = new RatesService({ catalogue, feed: new SandboxPriceFeed(SANDBOX_PRICE_SEED, catalogue.fiatCodes()), db: ctx.database.db })
    })
    after(() => ctx.close())

    const get = (url: string) => ctx.request({ method: 'GET', url, headers: bearer(token) })

    test('rates of an asset in the default denominations, as decimal strings with bid < mid < ask', async () => {
      const response = await get('/core/assets/BTC/rates')
      assert.equal(response.status, 200)
      const { rates } = response.json<{ rates: Record<string, Rate> }>()
      assert.deepEqual(Object.keys(rates).sort(), ['ETH', 'EUR', 'GBP', 'LTC', 'SOL', 'USD', 'USDC', 'USDT', 'XRP'])
      for (const [code, rate] of Object.entries(rates)) {
        for (const value of Object.values(rate)) assert.match(value, DECIMAL, code)
        assert.ok(new BigNumber(rate.bid).lt(rate.mid) && new BigNumber(rate.mid).lt(rate.ask), code)
      }
      const usd = new BigNumber(rates.USD!.mid)
      assert.ok(usd.gt(25_000) && usd.lt(170_000), `BTC at ${usd.toFixed()} USD`)
      assert.ok(new BigNumber(rates.USDC!.mid).div(usd).minus(1).abs().lt(0.01), 'USDC is about a dollar')
    })

    test('cross rates through USD for any denomination', async () => {
      const { rates } = (await get('/core/assets/EUR/rates?denomination=USD,GBP,XOF,JPY,BTC,EUR')).json<{ rates: Record<string, Rate> }>()
      assert.deepEqual(Object.keys(rates), ['USD', 'GBP', 'XOF', 'JPY', 'BTC', 'EUR'])
      const eurUsd = new BigNumber(rates.USD!.mid)
      assert.ok(eurUsd.gt(0.8) && eurUsd.lt(1.4), eurUsd.toFixed())
      assert.deepEqual(rates.EUR, { bid: '1', ask: '1', mid: '1' })
      const { rates: gbp } = (await get('/core/assets/GBP/rates?denomination=USD')).json<{ rates: Record<string, Rate> }>()
      const implied = eurUsd.div(gbp.USD!.mid)
      assert.ok(implied.div(rates.GBP!.mid).minus(1).abs().lt('1e-9'), 'EUR/GBP = EUR/USD ÷ GBP/USD')
    })

    test('an unknown asset is 404, an unknown denomination 404 naming it, one without a price 409', async () => {
      const unknown = await get('/core/assets/DOGE/rates')
      assert.equal(unknown.status, 404)
      assert.equal(unknown.json().code, 'entity_not_found')
      const denomination = await get('/core/assets/BTC/rates?denomination=USD,DOGE')
      assert.equal(denomination.status, 404)
      assert.deepEqual(denomination.json(), {
        code: 'entity_not_found',
        message: 'The asset cannot be found',
        details: { context: 'query', property: 'denomination', entity: 'asset' },
      })
      const delisted = await get('/core/assets/BTC/rates?denomination=BUSD')
      assert.equal(delisted.status, 409)
      assert.deepEqual(delisted.json<{ code: string; details: unknown }>().code, 'asset_not_supported')
      assert.deepEqual(delisted.json<{ details: Record<string, unknown> }>().details, { context: 'query', property: 'denomination', asset: 'BUSD' })
      assert.equal((await get('/core/assets/BUSD/rates')).status, 409)
      assert.equal((await get('/core/assets/BTC/rates?denomination=')).status, 400)
      assert.equal((await get(`/core/assets/BTC/rates?denomination=${Array.from({ length: 101 }, () => 'USD').join(',')}`)).status, 400)
    })

    test('historical rates for every interval, oldest first, in any denomination', async () => {
      const expected = { 'one-hour': 60, 'one-day': 96, 'one-week': 168, 'one-month': 120, 'one-year': 365, 'five-years': 260 }
      for (const [interval, count] of Object.entries(expected)) {
        const response = await get(`/core/assets/BTC/historical-rates?interval=${interval}`)
        assert.equal(response.status, 200, interval)
        const points = response.json<{ historicalRates: Record<string, Point[]> }>().historicalRates.BTC!
        assert.equal(points.length, count, interval)
        assert.ok(points.every((p, i) => i === 0 || Date.parse(p.timestamp) > Date.parse(points[i - 1]!.timestamp)))
        assert.ok(points.every((p) => p.rate && DECIMAL.test(p.rate.mid)))
      }
      const byDefault = (await get('/core/assets/ETH/historical-rates')).json<{ historicalRates: Record<string, Point[]> }>().historicalRates
      assert.deepEqual(Object.keys(byDefault), ['ETH'])
      assert.equal(byDefault.ETH!.length, 96, 'one day by default')
      const again = (await get('/core/assets/ETH/historical-rates?denomination=USD&interval=one-day')).json<{ historicalRates: Record<string, Point[]> }>().historicalRates
      const first = new Map(byDefault.ETH!.map((p) => [p.timestamp, p.rate?.mid]))
      const common = again.ETH!.filter((p) => first.has(p.timestamp))
      assert.ok(common.length >= 95)
      assert.ok(common.every((p) => p.rate?.mid === first.get(p.timestamp)), 'history does not change once recorded')
      const inGbp = (await get('/core/assets/ETH/historical-rates?denomination=GBP&interval=one-week')).json<{ historicalRates: Record<string, Point[]> }>().historicalRates
      const inUsd = (await get('/core/assets/ETH/historical-rates?interval=one-week')).json<{ historicalRates: Record<string, Point[]> }>().historicalRates
      assert.ok(new BigNumber(inGbp.ETH![0]!.rate!.mid).lt(inUsd.ETH![0]!.rate!.mid), 'a pound is worth more than a dollar')
    })

    test('historical rates: 404 and 409 name the parameter; a bad interval is 400', async () => {
      const path = await get('/core/assets/DOGE/historical-rates')
      assert.equal(path.status, 404)
      assert.deepEqual(path.json<{ details: unknown }>().details, { context: 'path', entity: 'asset' })
      const denomination = await get('/core/assets/BTC/historical-rates?denomination=DOGE')
      assert.deepEqual(denomination.json(), { code: 'entity_not_found', message: 'The asset cannot be found', details: { context: 'query', property: 'denomination', entity: 'asset' } })
      const unsupported = await get('/core/assets/BTC/historical-rates?denomination=BUSD')
      assert.equal(unsupported.status, 409)
      assert.equal(unsupported.json().code, 'asset_not_supported')
      assert.equal((await get('/core/assets/BTC/historical-rates?interval=one-decade')).status, 400)
    })

    test('conversions for other modules: decimals in, decimals out, rounded to the target asset', async () => {
      const at = new Date('2025-03-01T00:00:00.000Z')
      const mid = (await rates.rate('BTC', 'GBP', at)).mid
      assert.equal(await rates.convert('0.5', 'BTC', 'GBP', { at }), new BigNumber(mid).times('0.5').decimalPlaces(2, BigNumber.ROUND_HALF_EVEN).toFixed())
      const sats = await rates.convert('100', 'GBP', 'BTC', { at, side: 'ask', rounding: 'up' })
      assert.match(sats, /^0\.\d{1,8}$/)
      assert.equal(await rates.convert('12.34', 'USD', 'USD'), '12.34')
      await assert.rejects(rates.convert('1', 'BTC', 'BUSD'), { code: 'asset_not_supported' })
      await assert.rejects(rates.convert('1', 'NOPE', 'USD'), { code: 'entity_not_found' })
    })

    test('the recorder back-fills a year of daily prices and samples minutes, idempotently', async () => {
      await rates.backfill()
      await rates.backfill()
      await rates.sample()
      const rows = await ctx.database.db
        .selectFrom('price_points')
        .select(['resolution', (eb) => eb.fn.countAll<string>().as('count')])
        .where('asset', '=', 'BTC')
        .groupBy('resolution')
        .execute()
      const counts = Object.fromEntries(rows.map((r) => [r.resolution, Number(r.count)]))
      assert.ok(counts.day! >= 366, JSON.stringify(counts))
      assert.ok(counts.minute! >= 1)
      const eur = await ctx.database.db.selectFrom('price_points').select('asset').where('asset', '=', 'XOF').where('resolution', '=', 'day').execute()
      assert.equal(eur.length, 0, 'currencies nothing is done with are recorded when first asked for')
    })

    if (engine === 'postgres') {
      test('two processes serve one history', async () => {
        const peer = await startPeer(ctx)
        try {
          const peerToken = await peer.token()
          const url = '/core/assets/SOL/historical-rates?interval=one-month&denomination=EUR'
          const [a, b] = await Promise.all([get(url), peer.request({ method: 'GET', url, headers: bearer(peerToken) })])
          assert.equal(a.status, 200)
          assert.deepEqual(a.json(), b.json())
        } finally {
          await peer.close()
        }
      })
    }
  })
}
