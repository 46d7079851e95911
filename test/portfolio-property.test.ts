import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import BigNumber from 'bignumber.js'
import fc from 'fast-check'
import { bearer, ENGINES, useApp } from './helpers.ts'
import { AverageCost, commit, fund, openAccount, quoted, quoteBody, verifiedUser, withoutTravelRule, type Transaction } from './money.ts'

/**
 * Property: whatever users do with their money, every position equals what the ledger says (total and available),
 * and its cost basis equals the average-cost method replayed from the transactions' own figures. Movements are
 * bought and sold against dollars, so that every cost is exactly known from the transactions (docs/portfolio.md).
 * A failure names the seed and path: replay it with `{ seed: SEED, path: '<path>', endOnFailure: true }`.
 */
const SEED = 20_261_124
const RUNS = 20
const BTC_ADDRESS = 'tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx'
const CRYPTO = ['BTC', 'ETH'] as const

type Command =
  | { kind: 'buy'; asset: 0 | 1; dollars: number; settle: boolean }
  | { kind: 'sell'; asset: 0 | 1; percent: number; settle: boolean }
  | { kind: 'withdraw'; percent: number; settle: boolean }
  | { kind: 'move'; asset: 0 | 1; percent: number }
  | { kind: 'drain' }

const asset = fc.constantFrom(0 as const, 1 as const)
const command: fc.Arbitrary<Command> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('buy' as const), asset, dollars: fc.integer({ min: 20, max: 3000 }), settle: fc.boolean() }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('sell' as const), asset, percent: fc.integer({ min: 1, max: 100 }), settle: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('withdraw' as const), percent: fc.integer({ min: 5, max: 100 }), settle: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('move' as const), asset, percent: fc.integer({ min: 1, max: 100 }) }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'drain' as const }) },
)

for (const engine of ENGINES) {
  describe(`portfolio property [${engine}]`, () => {
    const suite = useApp(engine, { VELOCITY_MAX_MOVEMENTS: '0', SANDBOX_RAIL_SETTLE_MS: '0', ...withoutTravelRule() })
    const ctx = () => suite.ctx

    test('positions always equal the ledger, and their cost the average-cost method replayed', async () => {
      // Counts what the runs really did, so that a generator that stopped producing movements cannot pass silently.
      const seen = { completed: 0, disposals: 0 }
      await fc.assert(fc.asyncProperty(fc.array(command, { minLength: 3, maxLength: 14 }), async (commands) => {
        const userId = await verifiedUser(ctx(), suite.token)
        const usd = await openAccount(ctx(), suite.token, userId, 'USD')
        // Two accounts of each crypto asset: moves between them keep their cost.
        const accounts = { BTC: [await openAccount(ctx(), suite.token, userId, 'BTC'), await openAccount(ctx(), suite.token, userId, 'BTC')], ETH: [await openAccount(ctx(), suite.token, userId, 'ETH'), await openAccount(ctx(), suite.token, userId, 'ETH')] }
        await fund(ctx(), userId, usd, 'USD', '50000')
        const models = new Map([...Object.values(accounts).flat()].map((id) => [id, new AverageCost()]))
        const pending: string[] = []
        const headers = bearer(suite.token, userId)
        const balance = async (id: string) => (await ctx().services.ledger.balances(ctx().database.db, ctx().client.organizationId, [id])).get(id)!

        /** Applies completed transactions to the model, in the order they completed. */
        const settle = async () => {
          await ctx().services.worker.drain()
          const done: Transaction[] = []
          for (const id of pending.splice(0)) {
            const response = await ctx().request({ method: 'GET', url: `/core/transactions/${id}`, headers })
            done.push(response.json<{ transaction: Transaction }>().transaction)
          }
          done.sort((a, b) => Date.parse(a.completedAt ?? a.updatedAt) - Date.parse(b.completedAt ?? b.updatedAt) || (a.id < b.id ? -1 : 1))
          for (const transaction of done) {
            if (transaction.status !== 'completed') continue
            seen.completed++
            const origin = transaction.origin.node as { type: string; id?: string }
            const destination = transaction.destination.node as { type: string; id?: string }
            const removed = origin.type === 'account' && models.has(origin.id!) ? models.get(origin.id!)!.dispose(transaction.origin.amount) : undefined
            if (removed !== undefined) seen.disposals++
            if (destination.type === 'account' && models.has(destination.id!)) {
              models.get(destination.id!)!.buy(transaction.destination.amount, removed ?? new BigNumber(transaction.origin.amount))
            }
          }
        }

        const start = async (body: Record<string, unknown>, now: boolean) => {
          const quote = await quoted(ctx(), suite.token, userId, body)
          const response = await commit(ctx(), suite.token, userId, quote.id)
          if (response.status !== 201) return
          pending.push(response.json<{ transaction: { id: string } }>().transaction.id)
          if (now) await settle()
        }
        const available = async (id: string, percent: number) => {
          const free = new BigNumber((await balance(id)).available)
          return free.times(percent).div(100).decimalPlaces(8, BigNumber.ROUND_DOWN)
        }

        for (const step of commands) {
          if (step.kind === 'drain') await settle()
          if (step.kind === 'buy') await start(quoteBody(usd, accounts[CRYPTO[step.asset]][0]!, 'USD', String(step.dollars)), step.settle)
          if (step.kind === 'sell') {
            const from = accounts[CRYPTO[step.asset]][0]!
            const amount = await available(from, step.percent)
            if (amount.isGreaterThan('0.0001')) await start(quoteBody(from, usd, CRYPTO[step.asset], amount.toFixed()), step.settle)
          }
          if (step.kind === 'withdraw') {
            const from = accounts.BTC[0]!
            const amount = await available(from, step.percent)
            if (amount.isGreaterThan('0.001')) {
              await start({ origin: { type: 'account', id: from }, destination: { type: 'crypto-address', asset: 'BTC', network: 'bitcoin', address: BTC_ADDRESS }, denomination: { asset: 'BTC', amount: amount.toFixed() } }, step.settle)
            }
          }
          if (step.kind === 'move') {
            const [from, to] = accounts[CRYPTO[step.asset]]
            const amount = await available(from!, step.percent)
            if (amount.isGreaterThan('0.0001')) await start(quoteBody(from!, to!, CRYPTO[step.asset], amount.toFixed()), true)
          }

          // Whatever is still in flight (holds), every position equals the ledger.
          const positions = await ctx().database.db.selectFrom('portfolio_positions').selectAll().where('owner_id', '=', userId).execute()
          for (const position of positions) {
            const ledger = await balance(position.account_id)
            assert.equal(new BigNumber(position.total).toFixed(), ledger.total, `total of ${position.asset} ${position.account_id}`)
            assert.equal(new BigNumber(position.available).toFixed(), ledger.available, `available of ${position.asset} ${position.account_id}`)
          }
        }
        await settle()
        for (const [id, model] of models) {
          const position = await ctx().database.db.selectFrom('portfolio_positions').selectAll().where('account_id', '=', id).executeTakeFirst()
          const quantity = position ? new BigNumber(position.total) : new BigNumber(0)
          const invested = position ? new BigNumber(position.invested_usd) : new BigNumber(0)
          assert.equal(quantity.toFixed(), model.quantity.toFixed(), `quantity of ${id}`)
          assert.ok(invested.minus(model.cost).abs().isLessThan('1e-12'), `cost of ${id}: ${invested.toFixed()} vs ${model.cost.toFixed()}`)
        }
        assert.deepEqual(await ctx().services.ledger.check(), [])
      }), { seed: SEED, numRuns: RUNS, endOnFailure: true })
      assert.ok(seen.completed >= RUNS * 3 && seen.disposals >= RUNS / 2, JSON.stringify(seen))
    })
  })
}
