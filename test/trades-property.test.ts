import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { describe, test } from 'node:test'
import BigNumber from 'bignumber.js'
import fc from 'fast-check'
import { bearer, ENGINES, useApp, type TestContext } from './helpers.ts'
import { assertError, balanceOf, commit, fund, openAccount, quoted, quoteBody, requestQuote, verifiedUser, type Quote, type Transaction, withoutTravelRule } from './money.ts'

/**
 * The seed of the generated command sequences. A failure report names it with a `path`: replay the shrunk case
 * with `{ seed: SEED, path: '<path>', endOnFailure: true }` in the `fc.assert` options below.
 */
const SEED = 20_250_611
const RUNS = 25
const MAX_COMMANDS = 15

const DECIMALS: Record<string, number> = { EUR: 2, BTC: 8 }
const NETWORK: Record<string, string> = { EUR: 'sepa', BTC: 'bitcoin' }
/** Every user of the world holds these accounts, in this order. */
const ASSETS = ['EUR', 'BTC', 'EUR'] as const

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const decimalsOf = (value: string) => new BigNumber(value).decimalPlaces() ?? 0
/** An amount of the asset from a number of its smallest units. */
const units = (asset: string, count: number) => new BigNumber(count).shiftedBy(-DECIMALS[asset]!).toFixed()

type Command =
  | { kind: 'deposit'; user: number; account: number; cents: number; sats: number; settle: boolean }
  | { kind: 'quote'; user: number; from: number; step: number; target: 'origin' | 'destination'; side: 'origin' | 'destination'; share: number | null; cents: number; sats: number; short: boolean; copies: number }
  | { kind: 'commit'; quote: number; unused: boolean; keyed: boolean; stranger: boolean }
  | { kind: 'replay'; commit: number }
  | { kind: 'drain' }
  | { kind: 'late-commit'; quote: number }

const command: fc.Arbitrary<Command> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('deposit' as const),
      user: fc.nat(2),
      account: fc.nat(2),
      cents: fc.integer({ min: 1_000, max: 100_000 }),
      sats: fc.integer({ min: 10_000, max: 2_000_000 }),
      settle: fc.boolean(),
    }),
  },
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('quote' as const),
      // Mostly the first user's main account: quotes then compete for the same money.
      user: fc.oneof({ weight: 2, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.nat(2) }),
      from: fc.oneof({ weight: 2, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.nat(2) }),
      step: fc.integer({ min: 1, max: 2 }),
      target: fc.constantFrom('origin' as const, 'destination' as const),
      side: fc.constantFrom('origin' as const, 'destination' as const),
      // Mostly a share (in percent) of what the origin has available, so that commits compete for it; else a
      // free amount (in the smallest units of the denomination asset).
      share: fc.option(fc.noBias(fc.integer({ min: 10, max: 110 })), { freq: 4 }),
      cents: fc.integer({ min: 100, max: 50_000 }),
      sats: fc.integer({ min: 2_000, max: 500_000 }),
      short: fc.integer({ min: 0, max: 3 }).map((n) => n === 0),
      copies: fc.integer({ min: 1, max: 2 }),
    }),
  },
  {
    weight: 8,
    // `quote` counts back from the newest quote; `unused`: among those not executed yet, else among all of them.
    arbitrary: fc.record({ kind: fc.constant('commit' as const), quote: fc.noBias(fc.nat(3)), unused: fc.integer({ min: 0, max: 2 }).map((n) => n > 0), keyed: fc.boolean(), stranger: fc.integer({ min: 0, max: 9 }).map((n) => n === 0) }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('replay' as const), commit: fc.nat() }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'drain' as const }) },
  // Waits past the `ttl: 1000` of the short quotes, then commits one of them (or any quote, when there is none).
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('late-commit' as const), quote: fc.nat() }) },
)

/** What each user's accounts receive before the commands, in smallest units (0: nothing). */
const initialFunds = fc.array(
  fc.tuple(
    fc.noBias(fc.integer({ min: 20_000, max: 100_000 })),
    fc.oneof(fc.constant(0), fc.noBias(fc.integer({ min: 100_000, max: 2_000_000 }))),
    fc.oneof(fc.constant(0), fc.noBias(fc.integer({ min: 1_000, max: 50_000 }))),
  ),
  { minLength: 3, maxLength: 3 },
)

/** Roughly what a bitcoin costs in euros: only to size amounts denominated in the other asset of a trade. */
const EUR_PER_BTC = 60_000
/** The least amount of each asset the generated quotes ask for: well above the limits' minimum of 0.50 USD. */
const MINIMUM: Record<string, string> = { EUR: '1', BTC: '0.00002' }

interface ModelAccount {
  id: string
  asset: string
  total: BigNumber
  available: BigNumber
}

interface ModelUser {
  id: string
  accounts: ModelAccount[]
}

interface ModelQuote {
  quote: Quote
  user: ModelUser
  origin: ModelAccount
  destination: ModelAccount
  /** Asked with `ttl: 1000`. */
  short: boolean
  used: boolean
}

/** A commit sent with an Idempotency-Key, and what it was answered. */
interface KeyedCommit {
  quote: ModelQuote
  key: string
  status: number
  body: unknown
}

/** Rows a refused commit must not add to, to compare before and after. */
async function snapshot(ctx: TestContext): Promise<string> {
  const db = ctx.database.db
  const tables = ['transactions', 'ledger_transactions', 'ledger_entries', 'ledger_holds', 'flows', 'jobs'] as const
  const counts = await Promise.all(tables.map(async (table) => Number((await db.selectFrom(table).select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow()).n)))
  return JSON.stringify(Object.fromEntries(tables.map((table, i) => [table, counts[i]])))
}

/**
 * A quote's figures balance exactly: the origin pays the exchanged amount plus the fees; the destination gets
 * what the exchanged amount buys at the quoted rate, rounded down (target origin), or the exchanged amount is
 * the least that buys the destination amount (target destination); no amount has more decimals than its asset.
 */
function assertQuoteFigures(quote: Quote, userId: string, origin: ModelAccount, destination: ModelAccount, request: { asset: string; amount: string; target: 'origin' | 'destination' }): void {
  const label = JSON.stringify(quote)
  assert.equal(quote.origin.asset, origin.asset, label)
  assert.equal(quote.destination.asset, destination.asset, label)
  assert.deepEqual(quote.origin.node, { type: 'account', id: origin.id, ownerId: userId }, label)
  assert.deepEqual(quote.destination.node, { type: 'account', id: destination.id, ownerId: userId }, label)
  const originDecimals = DECIMALS[origin.asset]!
  const destinationDecimals = DECIMALS[destination.asset]!
  assert.ok(decimalsOf(quote.origin.amount) <= originDecimals, `origin decimals: ${label}`)
  assert.ok(decimalsOf(quote.destination.amount) <= destinationDecimals, `destination decimals: ${label}`)
  for (const fee of quote.fees) {
    assert.equal(fee.asset, origin.asset, label)
    assert.ok(decimalsOf(fee.amount) <= originDecimals, `fee decimals: ${label}`)
    assert.ok(new BigNumber(fee.amount).isGreaterThan(0), label)
    // Each fee is at least its percentage of what the origin pays.
    if (fee.percentage !== undefined) assert.ok(new BigNumber(fee.amount).isGreaterThanOrEqualTo(new BigNumber(quote.origin.amount).times(fee.percentage).div(100)), `fee below its percentage: ${label}`)
  }
  const fees = quote.fees.reduce((sum, fee) => sum.plus(fee.amount), new BigNumber(0))
  const exchanged = new BigNumber(quote.origin.amount).minus(fees)
  const rate = new BigNumber(quote.destination.rate)
  const destinationAmount = new BigNumber(quote.destination.amount)
  assert.ok(exchanged.isGreaterThan(0) && destinationAmount.isGreaterThan(0), label)
  assert.ok(destinationAmount.isLessThanOrEqualTo(exchanged.times(rate)), `the destination gets more than the exchanged amount buys: ${label}`)
  if (request.target === 'origin') {
    // Rounded down, by less than one smallest unit.
    assert.ok(destinationAmount.plus(new BigNumber(1).shiftedBy(-destinationDecimals)).isGreaterThan(exchanged.times(rate)), `the destination is short-changed: ${label}`)
    for (const fee of quote.fees) {
      if (fee.percentage !== undefined) assert.equal(fee.amount, new BigNumber(quote.origin.amount).times(fee.percentage).div(100).decimalPlaces(originDecimals, BigNumber.ROUND_UP).toFixed(), label)
    }
  } else {
    // The least exchanged amount that buys it.
    assert.ok(exchanged.minus(new BigNumber(1).shiftedBy(-originDecimals)).times(rate).isLessThan(destinationAmount), `the origin pays more than it needs: ${label}`)
  }
  assert.deepEqual({ asset: quote.denomination.asset, target: quote.denomination.target }, { asset: request.asset, target: request.target }, label)
  assert.ok(new BigNumber(quote.denomination.amount).isEqualTo(request.amount), label)
  const targetEnd = request.target === 'origin' ? quote.origin : quote.destination
  if (request.asset === targetEnd.asset) {
    assert.equal(quote.denomination.rate, '1', label)
    assert.ok(new BigNumber(targetEnd.amount).isEqualTo(request.amount), `the target end moves exactly the amount: ${label}`)
  }
  if (origin.asset === destination.asset) {
    assert.deepEqual([quote.origin.rate, quote.destination.rate, quote.fees, quote.origin.amount], ['1', '1', [], quote.destination.amount], label)
  } else {
    assert.ok(new BigNumber(quote.origin.rate).times(rate).minus(1).abs().isLessThan('1e-9'), label)
  }
}

for (const engine of ENGINES) {
  describe(`trades, property [${engine}]`, () => {
    const suite = useApp(engine, { VELOCITY_MAX_MOVEMENTS: '0', ...withoutTravelRule() })

    test('random deposits, quotes, commits and drains through the API keep balances, quotes and the ledger exact', async () => {
      const ctx = () => suite.ctx
      const token = () => suite.token
      const seen = { commands: 0, quotes: 0, refusedQuotes: 0, commits: 0, created: 0, insufficient: 0, used: 0, expired: 0, strangers: 0, replays: 0, drains: 0 }

      // The users are verified once (it takes a dozen requests each); every run starts from what the API says
      // they hold, after the previous run's work has settled.
      const world: { id: string; accounts: string[] }[] = []
      for (let i = 0; i < 3; i++) {
        const id = await verifiedUser(ctx(), token())
        const accounts = []
        for (const asset of ASSETS) accounts.push(await openAccount(ctx(), token(), id, asset))
        world.push({ id, accounts })
      }

      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 2, max: 3 }), initialFunds, fc.array(command, { minLength: 8, maxLength: MAX_COMMANDS, size: 'max' }), async (userCount, funds, commands) => {
          await ctx().services.worker.drain()
          const users: ModelUser[] = []
          for (const { id, accounts } of world.slice(0, userCount)) {
            const model: ModelAccount[] = []
            for (const [i, accountId] of accounts.entries()) {
              const balance = await balanceOf(ctx(), token(), id, accountId)
              assert.equal(balance.total, balance.available, 'nothing is held between runs')
              model.push({ id: accountId, asset: ASSETS[i]!, total: new BigNumber(balance.total), available: new BigNumber(balance.available) })
            }
            users.push({ id, accounts: model })
          }
          const quotes: ModelQuote[] = []
          const keyed: KeyedCommit[] = []
          let pendingTrades: ModelQuote[] = []
          let pendingDeposits: { account: ModelAccount; amount: string }[] = []
          const trail: string[] = []

          const checkBalances = async () => {
            for (const user of users) {
              const listed = await ctx().request({ method: 'GET', url: '/core/accounts?perPage=10', headers: bearer(token(), user.id) })
              assert.equal(listed.status, 200, listed.body)
              const balances = new Map(listed.json<{ accounts: { id: string; balance: { total: string; available: string } }[] }>().accounts.map((account) => [account.id, account.balance]))
              for (const account of user.accounts) {
                assert.deepEqual(balances.get(account.id), { total: account.total.toFixed(), available: account.available.toFixed() }, `balance of ${account.asset} account ${account.id} after ${trail.join(', ')}`)
              }
            }
          }

          const drain = async () => {
            seen.drains++
            await ctx().services.worker.drain()
            for (const trade of pendingTrades) {
              trade.origin.total = trade.origin.total.minus(trade.quote.origin.amount)
              trade.destination.total = trade.destination.total.plus(trade.quote.destination.amount)
              trade.destination.available = trade.destination.available.plus(trade.quote.destination.amount)
            }
            for (const deposit of pendingDeposits) {
              deposit.account.total = deposit.account.total.plus(deposit.amount)
              deposit.account.available = deposit.account.available.plus(deposit.amount)
            }
            pendingTrades = []
            pendingDeposits = []
            for (const user of users) {
              const listed = await ctx().request({ method: 'GET', url: '/core/transactions?status=processing,on-hold,failed&perPage=100', headers: bearer(token(), user.id) })
              assert.equal(listed.status, 200, listed.body)
              assert.deepEqual(listed.json<{ transactions: Transaction[] }>().transactions, [], 'every transaction completed in the drain')
            }
          }

          const deposit = async (user: ModelUser, account: ModelAccount, amount: string) => {
            await ctx().services.deposits.record(ctx().database.db, {
              organizationId: ctx().client.organizationId,
              userId: user.id,
              accountId: account.id,
              asset: account.asset,
              amount,
              network: NETWORK[account.asset]!,
              reference: `property-${randomBytes(8).toString('hex')}`,
            })
            pendingDeposits.push({ account, amount })
          }

          /** Commits the quote as its owner and checks the answer against the model: created, or refused with nothing changed. */
          const commitAsOwner = async (q: ModelQuote, key: string | undefined) => {
            seen.commits++
            const expiresAt = Date.parse(q.quote.expiresAt)
            const before = await snapshot(ctx())
            const sentAt = Date.now()
            const response = await commit(ctx(), token(), q.user.id, q.quote.id, key !== undefined ? { key } : {})
            const answeredAt = Date.now()
            // The server reads its clock between the two: only a commit sent after the expiry is surely late, and
            // only one answered before it surely in time.
            const expiry = sentAt >= expiresAt ? 'expired' : answeredAt < expiresAt ? 'valid' : 'either'
            if (key !== undefined) keyed.push({ quote: q, key, status: response.status, body: response.json() })
            if (q.used) {
              assert.deepEqual(assertError(response, 404, 'entity_not_found'), { entity: 'quote', reasons: ['quote-already-used'] })
              seen.used++
            } else if (expiry === 'expired' || (expiry === 'either' && response.status === 404)) {
              assert.deepEqual(assertError(response, 404, 'entity_not_found'), { entity: 'quote', reasons: ['quote-expired'] })
              seen.expired++
            } else if (q.origin.available.isLessThan(q.quote.origin.amount)) {
              // Its details are checked by the test below.
              assertError(response, 409, 'insufficient_balance')
              seen.insufficient++
            } else {
              assert.equal(response.status, 201, response.body)
              const transaction = response.json<{ transaction: Transaction }>().transaction
              assert.equal(transaction.status, 'processing')
              assert.equal(transaction.type, q.origin.asset === q.destination.asset ? 'transfer' : 'trade')
              assert.deepEqual([transaction.origin, transaction.destination, transaction.denomination, transaction.fees], [q.quote.origin, q.quote.destination, q.quote.denomination, q.quote.fees])
              q.used = true
              q.origin.available = q.origin.available.minus(q.quote.origin.amount)
              pendingTrades.push(q)
              seen.created++
            }
            if (response.status !== 201) assert.equal(await snapshot(ctx()), before, `a refused commit (${response.body}) changed rows`)
          }

          for (const [i, user] of users.entries()) {
            for (const [j, account] of user.accounts.entries()) if (funds[i]![j]! > 0) await deposit(user, account, units(account.asset, funds[i]![j]!))
          }
          await drain()
          await checkBalances()

          for (const c of commands) {
            trail.push(c.kind)
            seen.commands++
            if (c.kind === 'deposit') {
              const user = users[c.user % users.length]!
              const account = user.accounts[c.account]!
              await deposit(user, account, units(account.asset, account.asset === 'EUR' ? c.cents : c.sats))
              if (c.settle) await drain()
            } else if (c.kind === 'quote') {
              const user = users[c.user % users.length]!
              const origin = user.accounts[c.from]!
              const destination = user.accounts[(c.from + c.step) % ASSETS.length]!
              const asset = c.side === 'origin' ? origin.asset : destination.asset
              let amount = units(asset, asset === 'EUR' ? c.cents : c.sats)
              if (c.share !== null && origin.available.isGreaterThan(0)) {
                let wanted = origin.available.times(c.share).div(100)
                if (asset !== origin.asset) wanted = asset === 'BTC' ? wanted.div(EUR_PER_BTC) : wanted.times(EUR_PER_BTC)
                amount = BigNumber.max(wanted.decimalPlaces(DECIMALS[asset]!, BigNumber.ROUND_DOWN), MINIMUM[asset]!).toFixed()
              }
              const body = { ...quoteBody(origin.id, destination.id, asset, amount, c.target), ...(c.short ? { ttl: 1000 } : {}) }
              // Asked once or twice: two quotes of more than half of what is available cannot both be executed.
              for (let copy = 0; copy < c.copies; copy++) {
                const response = await requestQuote(ctx(), token(), user.id, body)
                seen.quotes++
                // Where the origin pays exactly the amount asked, whether it can is known in advance.
                const exact = origin.asset === destination.asset || (c.target === 'origin' && asset === origin.asset)
                if (exact) assert.equal(response.status, origin.available.isGreaterThanOrEqualTo(amount) ? 201 : 409, response.body)
                if (response.status !== 201) {
                  assertError(response, 409, 'insufficient_balance')
                  seen.refusedQuotes++
                  continue
                }
                const quote = response.json<{ quote: Quote }>().quote
                assertQuoteFigures(quote, user.id, origin, destination, { asset, amount, target: c.target })
                assert.ok(origin.available.isGreaterThanOrEqualTo(quote.origin.amount), `quoted beyond the available balance: ${JSON.stringify(quote)}`)
                const ttl = Date.parse(quote.expiresAt) - Date.now()
                assert.ok(ttl <= (c.short ? 1000 : 30_000) && ttl > (c.short ? -1000 : 20_000), `expires in ${ttl} ms`)
                quotes.push({ quote, user, origin, destination, short: c.short, used: false })
              }
            } else if (c.kind === 'commit') {
              const unused = quotes.filter((q) => !q.used)
              const candidates = c.unused && unused.length > 0 ? unused : quotes
              if (candidates.length === 0) continue
              const q = candidates[candidates.length - 1 - (c.quote % candidates.length)]!
              if (c.stranger) {
                // Another user of the same client cannot see the quote: 404 whatever its state, and it stays as it was.
                const stranger = users.find((user) => user !== q.user)!
                const before = await snapshot(ctx())
                assertError(await commit(ctx(), token(), stranger.id, q.quote.id), 404, 'entity_not_found')
                assert.equal(await snapshot(ctx()), before, 'a commit of a stranger\'s quote changed rows')
                seen.strangers++
              } else {
                await commitAsOwner(q, c.keyed ? `property-${q.quote.id}-${randomBytes(4).toString('hex')}` : undefined)
              }
            } else if (c.kind === 'late-commit') {
              if (quotes.length === 0) continue
              await sleep(1100)
              const short = quotes.filter((q) => q.short && !q.used)
              const candidates = short.length > 0 ? short : quotes
              await commitAsOwner(candidates[c.quote % candidates.length]!, undefined)
            } else if (c.kind === 'replay') {
              if (keyed.length === 0) continue
              // The same key and quote again: the first answer, whatever happened since, and nothing moves.
              const first = keyed[c.commit % keyed.length]!
              const before = await snapshot(ctx())
              const again = await commit(ctx(), token(), first.quote.user.id, first.quote.quote.id, { key: first.key })
              assert.equal(again.status, first.status, again.body)
              assert.equal(again.headers['idempotent-replayed'], 'true')
              assert.deepEqual(again.json(), first.body)
              assert.equal(await snapshot(ctx()), before, 'a replay changed rows')
              seen.replays++
            } else {
              await drain()
            }
            await checkBalances()
            assert.deepEqual(await ctx().services.ledger.check(), [], `ledger after ${trail.join(', ')}`)
          }
          // Whatever was left pending settles, and every total holds.
          await drain()
          await checkBalances()
          assert.deepEqual(await ctx().services.ledger.check(), [])
        }),
        { seed: SEED, numRuns: RUNS },
      )
      // The seed reaches every outcome; a change of the generators that stops doing so is caught here.
      for (const [outcome, count] of Object.entries(seen)) assert.ok(count > 0, `no ${outcome} in ${JSON.stringify(seen)}`)
    })

    // The reference document's example of this refusal for POST /core/transactions (components.responses
    // create-transaction-conflict-response) names the origin, as the quote's refusal does: details
    // {context: 'body', property: 'origin'}. The commit answers the ledger's own details instead ({accountId}).
    test('a commit the origin cannot fund any more is refused with the details the reference document shows', async () => {
      const userId = await verifiedUser(suite.ctx, suite.token)
      const eur = await openAccount(suite.ctx, suite.token, userId, 'EUR')
      const btc = await openAccount(suite.ctx, suite.token, userId, 'BTC')
      await fund(suite.ctx, userId, eur, 'EUR', '100')
      const first = await quoted(suite.ctx, suite.token, userId, quoteBody(eur, btc, 'EUR', '80'))
      const second = await quoted(suite.ctx, suite.token, userId, quoteBody(eur, btc, 'EUR', '80'))
      assert.equal((await commit(suite.ctx, suite.token, userId, first.id)).status, 201)
      const refused = await commit(suite.ctx, suite.token, userId, second.id)
      assert.equal(refused.status, 409, refused.body)
      assert.deepEqual(refused.json(), {
        code: 'insufficient_balance',
        message: 'The origin does not have enough balance to perform the transaction',
        details: { context: 'body', property: 'origin' },
      })
    })
  })
}
