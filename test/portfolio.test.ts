import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import BigNumber from 'bignumber.js'
import { sql } from 'kysely'
import { bearer, ENGINES, individualUser, useApp } from './helpers.ts'
import { AverageCost, assertError, commit, fund, openAccount, quoteBody, quoted, verifiedUser, withoutTravelRule, type Quote, type Transaction } from './money.ts'

const BTC_ADDRESS = 'tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx'
const UNKNOWN_ID = '0190a8c1-0000-7000-8000-000000000000'

interface Figures {
  averagePricePaid: string
  totalInvested: string
  unrealizedGains: string
}

const cents = (value: BigNumber) => value.decimalPlaces(2, BigNumber.ROUND_HALF_EVEN).toFixed()
const price12 = (value: BigNumber) => value.precision(12, BigNumber.ROUND_HALF_EVEN).toFixed()

for (const engine of ENGINES) {
  describe(`portfolio [${engine}]`, () => {
    const suite = useApp(engine, { VELOCITY_MAX_MOVEMENTS: '0', SANDBOX_RAIL_SETTLE_MS: '0', ...withoutTravelRule() })
    const ctx = () => suite.ctx

    async function execute(userId: string, quote: Quote): Promise<Transaction> {
      const response = await commit(ctx(), suite.token, userId, quote.id)
      assert.equal(response.status, 201, response.body)
      await ctx().services.worker.drain()
      const done = await ctx().request({ method: 'GET', url: `/core/transactions/${response.json<{ transaction: Transaction }>().transaction.id}`, headers: bearer(suite.token, userId) })
      const transaction = done.json<{ transaction: Transaction }>().transaction
      assert.equal(transaction.status, 'completed', done.body)
      return transaction
    }

    const get = (userId: string, url: string, headers: Record<string, string> = {}) => ctx().request({ method: 'GET', url, headers: { ...bearer(suite.token, userId), ...headers } })
    const post = (userId: string, url: string, payload: Record<string, unknown>) => ctx().request({ method: 'POST', url, headers: bearer(suite.token, userId), payload })
    const btcUsd = async () => new BigNumber((await ctx().services.rates.usdQuote('BTC'))!.mid)

    /** A user with 100,000 USD, an empty BTC account, and the trades of the worked example behind them. */
    async function workedExample() {
      const userId = await verifiedUser(ctx(), suite.token)
      const usd = await openAccount(ctx(), suite.token, userId, 'USD')
      const btc = await openAccount(ctx(), suite.token, userId, 'BTC')
      await fund(ctx(), userId, usd, 'USD', '100000')
      const expected = new AverageCost()
      // 1. A buy: 10,000 USD, fee included.
      const first = await execute(userId, await quoted(ctx(), suite.token, userId, quoteBody(usd, btc, 'USD', '10000')))
      expected.buy(first.destination.amount, first.origin.amount)
      // 2. A second buy, at another price (the sandbox price moves every second; 15,000 USD this time).
      const second = await execute(userId, await quoted(ctx(), suite.token, userId, quoteBody(usd, btc, 'USD', '15000')))
      expected.buy(second.destination.amount, second.origin.amount)
      // 3. A partial sale: 40 % of the BTC, back to dollars.
      const sold = expected.quantity.times('0.4').decimalPlaces(8, BigNumber.ROUND_DOWN).toFixed()
      const sale = await execute(userId, await quoted(ctx(), suite.token, userId, quoteBody(btc, usd, 'BTC', sold)))
      expected.dispose(sale.origin.amount)
      // 4. A withdrawal of 0.01 BTC; the network fee leaves the account with it.
      const withdrawal = await execute(userId, await quoted(ctx(), suite.token, userId, {
        origin: { type: 'account', id: btc },
        destination: { type: 'crypto-address', asset: 'BTC', network: 'bitcoin', address: BTC_ADDRESS },
        denomination: { asset: 'BTC', amount: '0.01' },
      }))
      assert.ok(withdrawal.fees.some((fee) => fee.type === 'network'))
      expected.dispose(withdrawal.origin.amount)
      return { userId, usd, btc, expected, trades: { first, second, sale, withdrawal } }
    }

    test('the worked example through the API: two buys, a partial sale, a withdrawal with its fee; exact figures', async () => {
      const { userId, usd, btc, expected } = await workedExample()
      const before = await btcUsd()
      const response = await get(userId, `/core/portfolio/accounts/${btc}/performance?interval=all-time`)
      const after = await btcUsd()
      assert.equal(response.status, 200, response.body)
      const figures = response.json<{ performance: Figures }>().performance
      assert.equal(figures.totalInvested, cents(expected.cost))
      assert.equal(figures.averagePricePaid, price12(expected.average))
      // Gains are the position at the current price less its cost: the price read around the call brackets it.
      const gains = new BigNumber(figures.unrealizedGains)
      const bounds = [before, after].map((p) => expected.quantity.times(p).minus(expected.cost))
      assert.ok(gains.isGreaterThanOrEqualTo(BigNumber.min(...bounds).minus('0.01')) && gains.isLessThanOrEqualTo(BigNumber.max(...bounds).plus('0.01')), `${gains.toFixed()} not within ${bounds.map((b) => b.toFixed()).join(' … ')}`)

      // The same through the asset, the _mget forms and (its only crypto) the overall performance.
      const asset = (await get(userId, '/core/portfolio/assets/BTC/performance?interval=all-time')).json<{ performance: Figures }>().performance
      assert.deepEqual([asset.averagePricePaid, asset.totalInvested], [figures.averagePricePaid, figures.totalInvested])
      const many = await post(userId, '/core/portfolio/accounts/_mget/performance?interval=all-time', { ids: [btc, usd, UNKNOWN_ID] })
      assert.equal(many.status, 200, many.body)
      const byAccount = many.json<{ performance: Record<string, Figures> }>().performance
      assert.deepEqual(Object.keys(byAccount).sort(), [btc, usd].sort())
      assert.equal(byAccount[btc]!.totalInvested, figures.totalInvested)
      // Dollars cost dollars: what the USD account holds is what it cost, with no gain.
      assert.equal(byAccount[usd]!.averagePricePaid, '1')
      assert.equal(byAccount[usd]!.unrealizedGains, '0')
      const assets = await post(userId, '/core/portfolio/assets/_mget/performance?interval=all-time', { codes: ['BTC', 'USD', 'NOPE'] })
      assert.equal(assets.status, 200, assets.body)
      assert.deepEqual(Object.keys(assets.json<{ performance: Record<string, Figures> }>().performance).sort(), ['BTC', 'USD'])
      const overall = await get(userId, '/core/portfolio/performance?interval=all-time')
      assert.equal(overall.status, 200, overall.body)
      assert.equal(overall.json<{ performance: { totalInvested: string } }>().performance.totalInvested, figures.totalInvested)

      // Positions always agree with the ledger.
      const positions = await ctx().database.db.selectFrom('portfolio_positions').select(['account_id', 'total', 'available']).where('owner_id', '=', userId).execute()
      const balances = await ctx().services.ledger.balances(ctx().database.db, ctx().client.organizationId, [usd, btc])
      for (const position of positions) {
        const balance = balances.get(position.account_id)!
        assert.deepEqual([new BigNumber(position.total).toFixed(), new BigNumber(position.available).toFixed()], [balance.total, balance.available])
      }
      assert.equal(new BigNumber(positions.find((p) => p.account_id === btc)!.total).toFixed(), expected.quantity.toFixed())
    })

    test('a trade between two crypto assets: what is bought costs what was given, at the market then; the origin keeps its average', async () => {
      const { userId, btc, expected } = await workedExample()
      const eth = await openAccount(ctx(), suite.token, userId, 'ETH')
      const averageBefore = (await get(userId, `/core/portfolio/accounts/${btc}/performance?interval=all-time`)).json<{ performance: Figures }>().performance.averagePricePaid
      const before = await btcUsd()
      const trade = await execute(userId, await quoted(ctx(), suite.token, userId, quoteBody(btc, eth, 'BTC', '0.05')))
      const after = await btcUsd()
      const cost = new BigNumber((await get(userId, `/core/portfolio/accounts/${eth}/performance?interval=all-time`)).json<{ performance: Figures }>().performance.totalInvested)
      const bounds = [before, after].map((price) => new BigNumber(trade.origin.amount).times(price))
      assert.ok(cost.isGreaterThanOrEqualTo(BigNumber.min(...bounds).minus('0.01')) && cost.isLessThanOrEqualTo(BigNumber.max(...bounds).plus('0.01')), `${cost.toFixed()} not within ${bounds.join(' … ')}`)
      expected.dispose(trade.origin.amount)
      const btcAfter = (await get(userId, `/core/portfolio/accounts/${btc}/performance?interval=all-time`)).json<{ performance: Figures }>().performance
      assert.equal(btcAfter.averagePricePaid, averageBefore)
      assert.equal(btcAfter.totalInvested, cents(expected.cost))
    })

    test('over a window, what was held at its start counts as bought then; the default window is the past day', async () => {
      const { userId, btc, expected } = await workedExample()
      // Everything happened within the hour: every window sees the whole story, like all-time.
      for (const interval of ['one-hour', 'one-day', '']) {
        const response = await get(userId, `/core/portfolio/accounts/${btc}/performance${interval ? `?interval=${interval}` : ''}`)
        assert.equal(response.status, 200, response.body)
        assert.equal(response.json<{ performance: Figures }>().performance.totalInvested, cents(expected.cost))
      }
      // Move the history back two hours: the one-hour window now starts with the position as it stood then.
      const db = ctx().database.db
      await sql`update portfolio_history set minute_at = minute_at - interval '2 hours' where account_id = ${btc}`.execute(db)
      const start = new Date(Math.floor((Date.now() - 3_600_000) / 60_000) * 60_000)
      const startPrice = new BigNumber((await ctx().services.rates.usdMids('BTC', 'minute', [start])).get(start.getTime())!)
      const hour = (await get(userId, `/core/portfolio/accounts/${btc}/performance?interval=one-hour`)).json<{ performance: Figures }>().performance
      assert.equal(hour.totalInvested, cents(expected.quantity.times(startPrice)))
      assert.equal(hour.averagePricePaid, price12(startPrice))
    })

    test('denomination: figures converted at the current rate; unknown is 404, unpriced is 409; ids 0, 101 and malformed are 400', async () => {
      const { userId, btc, expected } = await workedExample()
      const eurUsd = new BigNumber((await ctx().services.rates.usdQuote('EUR'))!.mid)
      const inEur = (await get(userId, `/core/portfolio/accounts/${btc}/performance?interval=all-time&denomination=EUR`)).json<{ performance: Figures }>().performance
      assert.equal(inEur.totalInvested, cents(expected.cost.div(eurUsd)))

      for (const url of [`/core/portfolio/accounts/${btc}/performance`, '/core/portfolio/performance', '/core/portfolio', '/core/portfolio/historical-balance', `/core/portfolio/accounts/${btc}/historical-balance`, '/core/portfolio/assets/BTC/performance', '/core/portfolio/assets/BTC/historical-balance']) {
        const unknown = assertError(await get(userId, `${url}?denomination=NOPE`), 404, 'entity_not_found')
        assert.deepEqual(unknown, { context: 'query', property: 'denomination', entity: 'asset' }, url)
        const unpriced = assertError(await get(userId, `${url}?denomination=BUSD`), 409, 'asset_not_supported')
        assert.equal(unpriced?.context, 'query', url)
        assert.equal(unpriced?.property, 'denomination', url)
      }
      for (const url of ['/core/portfolio/accounts/_mget/performance', '/core/portfolio/assets/_mget/performance']) {
        const key = url.includes('accounts') ? 'ids' : 'codes'
        assertError(await post(userId, `${url}?denomination=NOPE`, { [key]: [key === 'ids' ? btc : 'BTC'] }), 404, 'entity_not_found')
        assertError(await post(userId, url, { [key]: [] }), 400, 'request_invalid')
        assertError(await post(userId, url, { [key]: Array.from({ length: 101 }, () => (key === 'ids' ? btc : 'BTC')) }), 400, 'request_invalid')
        assertError(await post(userId, url, {}), 400, 'request_invalid')
        assertError(await post(userId, url, { [key]: 'BTC' }), 400, 'request_invalid')
      }
      assertError(await post(userId, '/core/portfolio/accounts/_mget/performance', { ids: ['not-a-uuid'] }), 400, 'request_invalid')
      assertError(await get(userId, `/core/portfolio/accounts/${btc}/performance?interval=one-week`), 400, 'request_invalid')
      assertError(await get(userId, '/core/portfolio/historical-balance?interval=five-years'), 400, 'request_invalid')
      assertError(await get(userId, '/core/portfolio/assets/NOPE/performance'), 404, 'entity_not_found')
      assertError(await get(userId, '/core/portfolio/assets/NOPE/historical-balance'), 404, 'entity_not_found')
    })

    test('another user\'s, or another organization\'s, accounts are never shown; subjects and scopes as the reference says', async () => {
      const { userId, btc } = await workedExample()
      const other = await verifiedUser(ctx(), suite.token)
      assertError(await get(other, `/core/portfolio/accounts/${btc}/performance`), 404, 'entity_not_found')
      assertError(await get(other, `/core/portfolio/accounts/${btc}/historical-balance`), 404, 'entity_not_found')
      assertError(await get(other, `/core/portfolio/accounts/${UNKNOWN_ID}/performance`), 404, 'entity_not_found')
      const foreign = await post(other, '/core/portfolio/accounts/_mget/performance', { ids: [btc] })
      assert.equal(foreign.status, 200, foreign.body)
      assert.deepEqual(foreign.json<{ performance: object }>().performance, {})
      const overview = (await get(other, '/core/portfolio')).json<{ holdings: unknown[]; summary: { total: string } }>()
      assert.deepEqual(overview, { summary: { total: '0', available: '0' }, holdings: [] })

      // Another organization's client acting for its own user.
      const peerToken = await ctx().token(await ctx().newClient())
      const stranger = (await ctx().createUser(peerToken, individualUser())).id
      const strangerAnswer = await ctx().request({ method: 'GET', url: `/core/portfolio/accounts/${btc}/performance`, headers: bearer(peerToken, stranger) })
      assertError(strangerAnswer, 404, 'entity_not_found')

      // The client itself is not a user; performance is for individuals only; scopes are checked.
      assertError(await ctx().request({ method: 'GET', url: '/core/portfolio', headers: bearer(suite.token) }), 403, 'subject_not_allowed')
      const business = (await ctx().createUser(suite.token, { type: 'business', email: `biz-${Date.now()}@example.com`, country: 'GB', legalEntityType: 'private-limited-company', termsOfService: 'general-gb-fca' })).id
      assertError(await get(business, '/core/portfolio/performance'), 403, 'subject_not_allowed')
      assertError(await post(business, '/core/portfolio/accounts/_mget/performance', { ids: [btc] }), 403, 'subject_not_allowed')
      const businessOverview = await get(business, '/core/portfolio')
      assert.equal(businessOverview.status, 200, businessOverview.body)
      const narrow = await ctx().token(ctx().client, 'core.users:act-on-behalf-of')
      assertError(await ctx().request({ method: 'GET', url: '/core/portfolio', headers: bearer(narrow, userId) }), 403, 'token_insufficient_scopes')
    })

    test('overview and historical balances: holdings by asset valued now; series end with the present balance', async () => {
      const { userId, usd, btc, expected } = await workedExample()
      const usdHeld = (await ctx().services.ledger.balances(ctx().database.db, ctx().client.organizationId, [usd])).get(usd)!.total
      const overview = await get(userId, '/core/portfolio?includeBase=true')
      assert.equal(overview.status, 200, overview.body)
      const body = overview.json<{ summary: { total: string; available: string }; holdings: { asset: string; total: string; baseTotal?: string }[] }>()
      assert.deepEqual(body.holdings.map((h) => h.asset), ['BTC', 'USD'])
      assert.equal(body.holdings[0]!.baseTotal, expected.quantity.toFixed())
      assert.equal(body.holdings[1]!.total, cents(new BigNumber(usdHeld)))
      assert.equal(body.holdings[1]!.baseTotal, usdHeld)
      const withoutBase = (await get(userId, '/core/portfolio')).json<{ holdings: Record<string, unknown>[] }>()
      assert.ok(withoutBase.holdings.every((h) => !('baseTotal' in h)))

      for (const [interval, points] of [['one-hour', 61], ['one-day', 97], ['one-week', 169], ['one-month', 121], ['one-year', 366]] as const) {
        const response = await get(userId, `/core/portfolio/accounts/${btc}/historical-balance?interval=${interval}&includeBase=true`)
        assert.equal(response.status, 200, response.body)
        const series = response.json<{ historicalBalance: { timestamp: string; balance: { total: string; baseTotal?: string } }[] }>().historicalBalance
        assert.equal(series.length, points, interval)
        // Nothing was held a year, a month… ago; the last point is now, holding what the account holds.
        assert.equal(series[0]!.balance.baseTotal, '0', interval)
        assert.equal(series.at(-1)!.balance.baseTotal, expected.quantity.toFixed(), interval)
        assert.ok(Date.parse(series.at(-1)!.timestamp) > Date.parse(series.at(-2)!.timestamp))
      }
      const all = await get(userId, '/core/portfolio/historical-balance?interval=one-hour')
      assert.equal(all.status, 200, all.body)
      const last = all.json<{ historicalBalance: { balance: Record<string, string> }[] }>().historicalBalance.at(-1)!
      assert.ok(!('baseTotal' in last.balance))
      // Dollars are worth their amount at every point: the USD account's series ends with what it holds.
      const dollars = (await get(userId, `/core/portfolio/accounts/${usd}/historical-balance?interval=one-hour`)).json<{ historicalBalance: { balance: { total: string } }[] }>()
      assert.equal(dollars.historicalBalance.at(-1)!.balance.total, cents(new BigNumber(usdHeld)))
      const asset = await get(userId, '/core/portfolio/assets/BTC/historical-balance?interval=one-day')
      assert.equal(asset.status, 200, asset.body)
    })

    test('statements of a generated month: JSON pages, the CSV download and the printable page say the same', async () => {
      const userId = await verifiedUser(ctx(), suite.token)
      const generated = await post(userId, '/core/portfolio/test-helpers/history', { months: 4, seed: 42 })
      assert.equal(generated.status, 201, generated.body)
      const now = new Date()
      const month = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 2, 1))
      const query = `period=one-month&year=${month.getUTCFullYear()}&month=${month.getUTCMonth() + 1}`
      const end = new Date(Date.UTC(month.getUTCFullYear(), month.getUTCMonth() + 1, 1))

      // Every page, walked by its links; the union is the month's completed transactions, in completion order.
      const seen: { transaction: Transaction; rates: Record<string, string> }[] = []
      let url: string | undefined = `/core/statements/transactions?${query}&perPage=3&denomination=EUR`
      while (url !== undefined) {
        const page = await get(userId, url)
        assert.equal(page.status, 200, page.body)
        const body = page.json<{ statement: { period: { from: string; to: string }; transactions: { transaction: Transaction; rates: Record<string, string> }[] }; pagination: { next?: string } }>()
        assert.deepEqual(body.statement.period, { from: month.toISOString(), to: new Date(end.getTime() - 1).toISOString() })
        seen.push(...body.statement.transactions)
        url = body.pagination.next?.replace('http://tessera.test', '')
      }
      assert.ok(seen.length >= 3, `${seen.length} transactions`)
      const completed = seen.map((entry) => Date.parse(entry.transaction.completedAt!))
      assert.deepEqual(completed, [...completed].sort((a, b) => a - b))
      assert.ok(completed.every((t) => t >= month.getTime() && t < end.getTime()))
      for (const { transaction, rates } of seen) {
        for (const asset of [transaction.origin.asset, transaction.destination.asset]) assert.match(rates[`${asset}-EUR`] ?? '', /^\d+(\.\d+)?$/, `${asset}-EUR`)
      }

      const csv = await get(userId, `/core/statements/transactions?${query}&denomination=EUR`, { accept: 'text/csv' })
      assert.equal(csv.status, 200, csv.body)
      assert.match(String(csv.headers['content-type']), /^text\/csv; charset=utf-8/)
      assert.match(String(csv.headers['content-disposition']), /^attachment; filename="transactions-statement-\d{4}-\d{2}\.csv"$/)
      const lines = csv.body.split('\r\n').filter((line) => line !== '')
      assert.equal(lines.length, seen.length + 1)
      assert.deepEqual(lines.slice(1).map((line) => line.split(',')[1]), seen.map((entry) => entry.transaction.id))

      const page = await get(userId, `/core/statements/transactions?${query}`, { accept: 'text/html' })
      assert.equal(page.status, 200)
      assert.match(String(page.headers['content-security-policy']), /^default-src 'none'/)
      assert.equal(page.body.match(/<tr><td>/g)?.length, seen.length)

      const holdings = await get(userId, `/core/statements/portfolio?${query}`)
      assert.equal(holdings.status, 200, holdings.body)
      const statement = holdings.json<{ statement: { rates: Record<string, string>; holdings: { asset: string; total: string }[] } }>().statement
      assert.ok(statement.holdings.length > 0)
      for (const holding of statement.holdings) assert.ok(statement.rates[`${holding.asset}-USD`], holding.asset)
      const holdingsCsv = await get(userId, `/core/statements/portfolio?${query}`, { accept: 'text/csv' })
      assert.equal(holdingsCsv.body.split('\r\n').filter((line) => line !== '').length, statement.holdings.length + 1)
      // What was held at the end of the month is what the balance history says then.
      const usd = statement.holdings.find((holding) => holding.asset === 'USD')
      if (usd) assert.ok(new BigNumber(usd.total).isGreaterThan(0))
    })

    test('statements: a month not over, or over before the user existed, is 409 date_invalid; bad periods are 400', async () => {
      const { userId } = await workedExample()
      const now = new Date()
      const thisMonth = `year=${now.getUTCFullYear()}&month=${now.getUTCMonth() + 1}`
      const lastYear = `year=${now.getUTCFullYear() - 1}&month=${now.getUTCMonth() + 1}`
      for (const kind of ['portfolio', 'transactions']) {
        const notOver = assertError(await get(userId, `/core/statements/${kind}?period=one-month&${thisMonth}`), 409, 'date_invalid')
        assert.deepEqual(notOver, { context: 'query' })
        assertError(await get(userId, `/core/statements/${kind}?period=one-month&${lastYear}`), 409, 'date_invalid')
        assertError(await get(userId, `/core/statements/${kind}?period=one-month&${lastYear}&denomination=NOPE`), 404, 'entity_not_found')
        for (const query of ['period=one-year&year=2025&month=1', 'period=one-month&year=2009&month=1', 'period=one-month&year=2025&month=13', 'period=one-month&year=2025', 'year=2025&month=1']) {
          assertError(await get(userId, `/core/statements/${kind}?${query}`), 400, 'request_invalid')
        }
      }
    })
  })
}
