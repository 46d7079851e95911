import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import BigNumber from 'bignumber.js'
import { buildApp } from '../src/app.ts'
import { migrateToLatest, openDatabase } from '../src/db/database.ts'
import { loadOrCreateSecrets } from '../src/lib/data-dir.ts'
import { bearer, ENGINES, testConfig, useApp, type TestContext } from './helpers.ts'
import { assertError, fund, openAccount, verifiedUser, type Transaction } from './money.ts'

const URL_HISTORY = '/core/portfolio/test-helpers/history'
const DAY = 86_400_000
const DECIMALS: Record<string, number> = { USD: 2, BTC: 8, ETH: 18 }

interface Summary {
  from: string
  to: string
  seed: number
  transactions: number
  accounts: { id: string; asset: string }[]
}

/** What the transactions moved in and out of each of the user's accounts, completed before `before` when given. */
function movedBy(transactions: readonly Transaction[], before?: number): Map<string, BigNumber> {
  const moved = new Map<string, BigNumber>()
  const add = (node: Record<string, unknown>, amount: BigNumber) => {
    if (node.type !== 'account') return
    const id = String(node.id)
    moved.set(id, (moved.get(id) ?? new BigNumber(0)).plus(amount))
  }
  for (const transaction of transactions) {
    if (before !== undefined && Date.parse(transaction.completedAt!) >= before) continue
    add(transaction.origin.node, new BigNumber(transaction.origin.amount).negated())
    add(transaction.destination.node, new BigNumber(transaction.destination.amount))
  }
  return moved
}

/** The month before the current one (UTC): its year, its month (1 to 12), its first instant and the first after it. */
function lastMonth(now = new Date()): { year: number; month: number; from: number; end: number } {
  const from = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1)
  const start = new Date(from)
  return { year: start.getUTCFullYear(), month: start.getUTCMonth() + 1, from, end: Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1) }
}

for (const engine of ENGINES) {
  describe(`sandbox portfolio history [${engine}]`, () => {
    const suite = useApp(engine)
    const ctx = (): TestContext => suite.ctx

    const generate = (userId: string, payload: Record<string, unknown>, token = suite.token) =>
      ctx().request({ method: 'POST', url: URL_HISTORY, headers: bearer(token, userId), payload })
    const get = (userId: string, url: string) => ctx().request({ method: 'GET', url, headers: bearer(suite.token, userId) })

    async function generated(userId: string, payload: Record<string, unknown>): Promise<Summary> {
      const response = await generate(userId, payload)
      assert.equal(response.status, 201, response.body)
      return response.json<{ history: Summary }>().history
    }

    /** Every transaction of the user, through the API, newest first. */
    async function transactionsOf(userId: string): Promise<Transaction[]> {
      const all: Transaction[] = []
      let url: string | undefined = '/core/transactions?perPage=100'
      while (url !== undefined) {
        const response = await get(userId, url)
        assert.equal(response.status, 200, response.body)
        const body = response.json<{ transactions: Transaction[]; pagination: { next?: string } }>()
        all.push(...body.transactions)
        url = body.pagination.next === undefined ? undefined : new URL(body.pagination.next).pathname + new URL(body.pagination.next).search
      }
      return all
    }

    /** What a refused request must leave as it was. */
    async function snapshot(userId: string): Promise<string> {
      const db = ctx().database.db
      const count = async (table: 'transactions' | 'ledger_entries' | 'ledger_transactions' | 'accounts' | 'portfolio_history') =>
        Number((await db.selectFrom(table).select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow()).n)
      const user = await db.selectFrom('users').select(['created_at', 'updated_at']).where('id', '=', userId).executeTakeFirstOrThrow()
      return JSON.stringify([...(await Promise.all((['transactions', 'ledger_entries', 'ledger_transactions', 'accounts', 'portfolio_history'] as const).map(count))), user])
    }

    test('three months of activity: transactions, balances, positions, charts and statements agree', async () => {
      const userId = await verifiedUser(ctx(), suite.token)
      const createdAt = (await get(userId, '/core/users/me')).json<{ user: { createdAt: string } }>().user.createdAt
      const history = await generated(userId, { months: 3, seed: 20240601 })
      const now = new Date()
      const today = Math.floor(now.getTime() / DAY) * DAY
      const from = Date.parse(history.from)
      assert.equal(history.seed, 20240601)
      assert.equal(new Date(from).getUTCHours(), 0)
      assert.ok(from < today - 85 * DAY && from > today - 95 * DAY, history.from)
      assert.deepEqual(history.accounts.map((account) => account.asset), ['USD', 'BTC', 'ETH'])
      assert.ok(history.transactions >= 10, `${history.transactions} transactions`)
      // The accounts it opened are the user's defaults.
      const defaults = (await get(userId, '/core/accounts/defaults')).json<{ accounts: { id: string; asset: string }[] }>().accounts
      assert.deepEqual(defaults.map((account) => account.id).sort(), history.accounts.map((account) => account.id).sort())
      // The user now begins with the history.
      const user = (await get(userId, '/core/users/me')).json<{ user: { createdAt: string } }>().user
      assert.equal(user.createdAt, history.from)
      assert.ok(Date.parse(user.createdAt) < Date.parse(createdAt))

      // The transactions list shows them, completed, each at its moment within the history, newest first.
      const transactions = await transactionsOf(userId)
      assert.equal(transactions.length, history.transactions)
      const times = transactions.map((transaction) => Date.parse(transaction.createdAt))
      assert.deepEqual(times, [...times].sort((a, b) => b - a))
      const account = new Map(history.accounts.map(({ id, asset }) => [asset, id]))
      for (const transaction of transactions) {
        assert.equal(transaction.status, 'completed')
        assert.equal(transaction.completedAt, transaction.createdAt)
        assert.equal(transaction.quotedAt, transaction.createdAt)
        assert.ok(Date.parse(transaction.createdAt) >= from && Date.parse(transaction.createdAt) < today, transaction.createdAt)
        if (transaction.type === 'deposit') {
          assert.deepEqual(transaction.origin.node, { type: 'bank-address', network: 'ach' })
          assert.deepEqual(transaction.destination.node, { type: 'account', id: account.get('USD'), ownerId: userId })
          assert.equal(transaction.origin.asset, 'USD')
          assert.ok(new BigNumber(transaction.destination.amount).isGreaterThanOrEqualTo(500) && new BigNumber(transaction.destination.amount).isLessThanOrEqualTo(3000))
          assert.deepEqual(transaction.fees, [])
          assert.deepEqual(transaction.denomination, { asset: 'USD', amount: transaction.destination.amount, rate: '1', target: 'destination' })
        } else if (transaction.type === 'trade') {
          const { origin, destination } = transaction
          assert.ok((origin.asset === 'USD') !== (destination.asset === 'USD'), 'USD on one side')
          assert.deepEqual(origin.node, { type: 'account', id: account.get(origin.asset), ownerId: userId })
          assert.deepEqual(destination.node, { type: 'account', id: account.get(destination.asset), ownerId: userId })
          // The exchange fee as real trades charge it: 0.5 % of what the origin pays, rounded up, in its asset.
          const fee = new BigNumber(origin.amount).times('0.005').decimalPlaces(DECIMALS[origin.asset]!, BigNumber.ROUND_UP).toFixed()
          assert.deepEqual(transaction.fees, [{ type: 'exchange', code: 'exchange-fee', asset: origin.asset, amount: fee, percentage: '0.5' }])
          assert.deepEqual(transaction.denomination, { asset: origin.asset, amount: origin.amount, rate: '1', target: 'origin' })
          // Priced from the feed at its moment, less the spread: within a few percent of the mid then.
          const at = new Date(transaction.createdAt)
          const mid = async (asset: string) => new BigNumber((await ctx().services.rates.usdQuote(asset, at))!.mid)
          const expected = new BigNumber(origin.amount).minus(fee).times(await mid(origin.asset)).div(await mid(destination.asset))
          const ratio = new BigNumber(destination.amount).div(expected)
          assert.ok(ratio.isGreaterThan('0.99') && ratio.isLessThanOrEqualTo(1), `${destination.amount} for ${expected.toFixed()}`)
          assert.ok(new BigNumber(origin.rate).times(destination.rate).minus(1).abs().isLessThan('1e-9'))
        } else {
          assert.equal(transaction.type, 'withdrawal')
          assert.equal(transaction.origin.asset, 'BTC')
          const node = transaction.destination.node as { type: string; network: string; execution?: { mode: string; transactionHash: string } }
          assert.equal(node.type, 'crypto-address')
          assert.equal(node.network, 'bitcoin')
          assert.equal(node.execution?.mode, 'simulated')
          assert.match(node.execution?.transactionHash ?? '', /^[0-9a-f]{64}$/)
          assert.deepEqual(transaction.fees, [{ type: 'network', code: 'network-fee', asset: 'BTC', amount: '0.00002' }])
          assert.equal(new BigNumber(transaction.origin.amount).minus('0.00002').toFixed(), transaction.destination.amount)
        }
      }
      const kinds = new Set(transactions.map((transaction) => `${transaction.type}:${transaction.origin.asset}:${transaction.destination.asset}`))
      for (const kind of ['deposit:USD:USD', 'trade:USD:BTC', 'trade:USD:ETH']) assert.ok(kinds.has(kind), `a ${kind} in ${[...kinds].join(', ')}`)

      // Each transaction's postings are dated at its moment and name it.
      const db = ctx().database.db
      const postings = await db.selectFrom('ledger_transactions').select(['created_at', 'data', 'reference']).where('organization_id', '=', suite.ctx.client.organizationId).execute()
      for (const transaction of transactions) {
        const own = postings.filter((posting) => (posting.data as { transactionId?: string }).transactionId === transaction.id)
        assert.equal(own.length, transaction.type === 'trade' ? 2 : 1)
        for (const posting of own) {
          assert.equal(posting.created_at.toISOString(), transaction.createdAt)
          assert.ok(posting.reference?.startsWith(`${transaction.id}:history:`))
        }
      }

      // Balances are the sum of the movements; the books are right; the positions follow the ledger.
      const moved = movedBy(transactions)
      for (const { id } of history.accounts) {
        const balance = (await get(userId, `/core/accounts/${id}`)).json<{ account: { balance: { total: string; available: string } } }>().account.balance
        const expected = (moved.get(id) ?? new BigNumber(0)).toFixed()
        assert.deepEqual(balance, { total: expected, available: expected })
      }
      assert.ok(new BigNumber(moved.get(account.get('BTC')!)!).isGreaterThan(0))
      assert.deepEqual(await ctx().services.ledger.check(), [])
      const ids = history.accounts.map((a) => a.id)
      const positions = await db.selectFrom('portfolio_positions').select(['account_id', 'total', 'available']).where('account_id', 'in', ids).orderBy('account_id').execute()
      const ledger = await db.selectFrom('ledger_accounts').select(['id', 'total', 'available']).where('id', 'in', ids).orderBy('id').execute()
      assert.equal(positions.length, 3)
      assert.deepEqual(
        positions.map((p) => [p.account_id, new BigNumber(p.total).toFixed(), new BigNumber(p.available).toFixed()]),
        ledger.map((l) => [l.id, new BigNumber(l.total).toFixed(), new BigNumber(l.available).toFixed()]),
      )
      // The history of positions begins with the generated one, minute by minute.
      const firstMinute = await db.selectFrom('portfolio_history').select((eb) => eb.fn.min('minute_at').as('first')).where('account_id', 'in', ids).executeTakeFirstOrThrow()
      assert.ok(new Date(firstMinute.first as Date).getTime() >= from && new Date(firstMinute.first as Date).getTime() < from + DAY)

      // The balance chart of the past month moves.
      const chart = await get(userId, '/core/portfolio/historical-balance?interval=one-month')
      assert.equal(chart.status, 200, chart.body)
      const points = chart.json<{ historicalBalance: { timestamp: string; balance: { total: string } }[] }>().historicalBalance
      assert.ok(points.length > 100)
      assert.ok(new Set(points.map((point) => point.balance.total)).size > 10, 'values change over the month')
      assert.ok(points.every((point) => new BigNumber(point.balance.total).isGreaterThan(0)), 'the month lies inside the history')

      // Last month lies fully inside the history: its statements exist.
      const month = lastMonth(now)
      assert.ok(from <= month.from)
      const query = `period=one-month&year=${month.year}&month=${month.month}`
      const portfolio = await get(userId, `/core/statements/portfolio?${query}`)
      assert.equal(portfolio.status, 200, portfolio.body)
      const statement = portfolio.json<{ statement: { holdings: { asset: string; total: string }[]; rates: Record<string, string> } }>().statement
      const held = movedBy(transactions, month.end)
      const expectedHoldings = history.accounts
        .map(({ id, asset }) => ({ asset, total: (held.get(id) ?? new BigNumber(0)).toFixed() }))
        .filter((holding) => holding.total !== '0')
        .sort((a, b) => (a.asset < b.asset ? -1 : 1))
      assert.ok(expectedHoldings.length > 0)
      assert.deepEqual(statement.holdings, expectedHoldings)
      for (const { asset } of expectedHoldings) assert.ok(statement.rates[`${asset}-USD`], `a rate for ${asset}`)

      const listed = await get(userId, `/core/statements/transactions?${query}&perPage=100`)
      assert.equal(listed.status, 200, listed.body)
      const entries = listed.json<{ statement: { transactions: { transaction: Transaction }[] } }>().statement.transactions.map((entry) => entry.transaction)
      const inMonth = transactions.filter((t) => Date.parse(t.completedAt!) >= month.from && Date.parse(t.completedAt!) < month.end).reverse()
      assert.ok(inMonth.length > 0)
      assert.deepEqual(entries.map((t) => t.id), inMonth.map((t) => t.id), 'that month\'s transactions, oldest first')

      // Once is all: a second call is refused and changes nothing.
      const before = await snapshot(userId)
      const again = await generate(userId, { months: 3, seed: 20240601 })
      assert.deepEqual(assertError(again, 409, 'operation_not_allowed'), { reasons: ['user-has-transactions'] })
      assert.equal(await snapshot(userId), before)
    })

    test('the same seed gives the same history to two users; another seed another', async () => {
      const first = await verifiedUser(ctx(), suite.token)
      const second = await verifiedUser(ctx(), suite.token)
      const third = await verifiedUser(ctx(), suite.token)
      const a = await generated(first, { months: 2, seed: 7 })
      const b = await generated(second, { months: 2, seed: 7 })
      assert.equal((await generated(third, { months: 2, seed: 8 })).seed, 8)
      const shape = (transactions: Transaction[]) => transactions.map((t) => ({
        type: t.type,
        at: t.createdAt,
        origin: [t.origin.asset, t.origin.amount, t.origin.rate],
        destination: [t.destination.asset, t.destination.amount, t.destination.rate],
        fees: t.fees,
      }))
      const [ofA, ofB, ofC] = await Promise.all([transactionsOf(first), transactionsOf(second), transactionsOf(third)])
      if (a.from === b.from) {
        assert.deepEqual(shape(ofB), shape(ofA))
      } else {
        // Generated across midnight (UTC): the days differ, the pay days' amounts do not.
        const deposits = (list: Transaction[]) => list.filter((t) => t.type === 'deposit').map((t) => t.destination.amount).reverse()
        assert.deepEqual(deposits(ofB).slice(0, 3), deposits(ofA).slice(0, 3))
      }
      assert.equal(b.transactions, ofB.length)
      assert.notDeepEqual(shape(ofC), shape(ofA))
      assert.deepEqual(await ctx().services.ledger.check(), [])
    })

    test('two calls at once for one user: one generates, the other is refused', async () => {
      const userId = await verifiedUser(ctx(), suite.token)
      const responses = await Promise.all([generate(userId, { months: 1, seed: 1 }), generate(userId, { months: 1, seed: 2 })])
      assert.deepEqual(responses.map((response) => response.status).sort(), [201, 409])
      const winner = responses.find((response) => response.status === 201)!.json<{ history: Summary }>().history
      assertError(responses.find((response) => response.status === 409)!, 409, 'operation_not_allowed')
      assert.equal((await transactionsOf(userId)).length, winner.transactions)
      const defaults = (await get(userId, '/core/accounts/defaults')).json<{ accounts: { id: string }[] }>().accounts
      assert.deepEqual(defaults.map((account) => account.id).sort(), winner.accounts.map((account) => account.id).sort())
      assert.deepEqual(await ctx().services.ledger.check(), [])
    })

    test('refused: a user with a transaction, a token without the scope, a bad body', async () => {
      const userId = await verifiedUser(ctx(), suite.token)
      const usd = await openAccount(ctx(), suite.token, userId, 'USD')
      await fund(ctx(), userId, usd, 'USD', '100')
      const before = await snapshot(userId)
      assert.deepEqual(assertError(await generate(userId, { months: 2 }), 409, 'operation_not_allowed'), { reasons: ['user-has-transactions'] })
      assert.equal(await snapshot(userId), before)

      const fresh = await verifiedUser(ctx(), suite.token)
      const limited = await ctx().token(undefined, 'core.portfolio:read core.users:read')
      assertError(await generate(fresh, { months: 2 }, limited), 403, 'token_insufficient_scopes')
      for (const body of [{ months: 0 }, { months: 25 }, { months: 1.5 }, { seed: -1 }, { months: 2, extra: true }]) {
        assertError(await generate(fresh, body), 400, 'request_invalid')
      }
      assert.equal((await transactionsOf(fresh)).length, 0)
    })
  })
}

describe('sandbox portfolio history in production', () => {
  test('the test helper does not exist', async () => {
    const config = testConfig({ TESSERA_ENV: 'production', TOKEN_SIGNING_KEY: loadOrCreateSecrets(null, testConfig()).tokenSigningKey, SEALING_KEY: Buffer.alloc(32, 3).toString('base64'), PRICE_FEED: 'simulated' })
    const database = await openDatabase({ ...config, databaseUrl: null, dataDir: null })
    await migrateToLatest(database)
    const { app, services } = await buildApp({ config, database, secrets: loadOrCreateSecrets(null, config) })
    try {
      assert.equal(services.portfolioHistory, null)
      const response = await app.inject({ method: 'POST', url: URL_HISTORY, payload: { months: 1 } })
      assert.equal(response.statusCode, 404)
      assert.equal(response.json<{ code: string }>().code, 'route_not_found')
      const document = app.swagger() as { paths: Record<string, unknown> }
      assert.ok(!Object.keys(document.paths).includes(URL_HISTORY))
    } finally {
      await app.close()
    }
  })
})
