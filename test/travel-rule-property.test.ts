import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { describe, test } from 'node:test'
import BigNumber from 'bignumber.js'
import fc from 'fast-check'
import { checkLedger } from '../src/modules/ledger/index.ts'
import { bearer, ENGINES, useApp, type TestContext } from './helpers.ts'
import { balanceOf, commit, fund, openAccount, quoted, verifiedUser } from './money.ts'

/**
 * Property: whatever the order of crypto deposits and withdrawals below and above the travel rule's threshold, of
 * answers that are accepted or refused and of requests that expire, the ledger keeps every invariant, a held deposit
 * never raises the user's balance (total or available) until it is released, a held withdrawal keeps its money
 * reserved, and the suspense account holds exactly the deposits held or refused. A failure names its seed and path.
 */
const SEED = 20_261_124
const RUNS = 8
const MAX_COMMANDS = 12

const SENDER = 'tb1qxsy3qh8d44d5jkuvn98rxsjtxpmdlslg8d92cv'
const DESTINATION = 'tb1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3q0sl5k7'
const originator = (name: string) => ({ ivms101: { originator: { originatorPersons: [{ naturalPerson: { name: { nameIdentifier: [{ primaryIdentifier: name }] } } }] } } })
const beneficiary = (name: string) => ({ ivms101: { beneficiary: { beneficiaryPersons: [{ naturalPerson: { name: { nameIdentifier: [{ primaryIdentifier: name }] } } }] } } })

type Command =
  | { kind: 'deposit'; user: number; large: boolean; millis: number }
  | { kind: 'withdraw'; user: number; millis: number }
  | { kind: 'answer'; pick: number; accept: boolean }
  | { kind: 'expire'; pick: number }

const command: fc.Arbitrary<Command> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('deposit' as const), user: fc.nat(1), large: fc.boolean(), millis: fc.integer({ min: 1, max: 400 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('withdraw' as const), user: fc.nat(1), millis: fc.integer({ min: 20, max: 300 }) }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('answer' as const), pick: fc.nat(), accept: fc.integer({ min: 0, max: 3 }).map((n) => n > 0) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('expire' as const), pick: fc.nat() }) },
)

interface Held {
  user: number
  transactionId: string
  requestId: string
  kind: 'deposit' | 'withdrawal'
  /** Deposit: what arrives. Withdrawal: what the origin pays (reserved). */
  amount: BigNumber
}

for (const engine of ENGINES) {
  describe(`travel rule: property [${engine}]`, () => {
    const suite = useApp(engine, { VELOCITY_MAX_MOVEMENTS: '0', SANDBOX_RAIL_SETTLE_MS: '0' })
    const ctx = (): TestContext => suite.ctx

    async function suspense(): Promise<BigNumber> {
      const row = await ctx().database.db.selectFrom('ledger_accounts').select('total').where('organization_id', '=', ctx().client.organizationId).where('system_code', '=', 'suspense').where('asset', '=', 'BTC').executeTakeFirst()
      return new BigNumber(row?.total ?? 0)
    }

    test('holds, answers and expiries keep the books and the balances', async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(command, { minLength: 1, maxLength: MAX_COMMANDS }), async (commands) => {
          const users: { id: string; account: string; total: BigNumber; available: BigNumber }[] = []
          for (let i = 0; i < 2; i++) {
            const id = await verifiedUser(ctx(), suite.token)
            const account = await openAccount(ctx(), suite.token, id, 'BTC')
            await fund(ctx(), id, account, 'BTC', '1')
            users.push({ id, account, total: new BigNumber(1), available: new BigNumber(1) })
          }
          const held: Held[] = []
          let parked = await suspense()

          for (const step of commands) {
            if (step.kind === 'deposit') {
              const user = users[step.user]!
              // Large: 0.05–0.45 BTC (3,000–30,000 USD), held; small: below 0.005 BTC (325 USD), settled.
              const amount = new BigNumber(step.millis).shiftedBy(step.large ? -3 : -5).plus(step.large ? '0.05' : '0')
              const { transactionId } = await ctx().services.deposits.record(ctx().database.db, {
                organizationId: ctx().client.organizationId, userId: user.id, accountId: user.account, asset: 'BTC', amount: amount.toFixed(), network: 'bitcoin',
                source: { type: 'crypto-address', network: 'bitcoin', address: SENDER }, reference: `p-${randomBytes(8).toString('hex')}`,
              })
              await ctx().services.worker.drain()
              const requests = (await ctx().request({ method: 'GET', url: `/core/transactions/${transactionId}/requests-for-information`, headers: bearer(suite.token, user.id) })).json<{ requestsForInformation: { id: string }[] }>().requestsForInformation
              if (step.large) {
                assert.equal(requests.length, 1)
                held.push({ user: step.user, transactionId, requestId: requests[0]!.id, kind: 'deposit', amount })
                parked = parked.plus(amount)
              } else {
                assert.equal(requests.length, 0)
                user.total = user.total.plus(amount)
                user.available = user.available.plus(amount)
              }
            } else if (step.kind === 'withdraw') {
              const user = users[step.user]!
              const amount = new BigNumber(step.millis).shiftedBy(-3)
              if (user.available.isLessThan(amount.plus('0.001'))) continue
              const quote = await quoted(ctx(), suite.token, user.id, { origin: { type: 'account', id: user.account }, destination: { type: 'crypto-address', network: 'bitcoin', asset: 'BTC', address: DESTINATION }, denomination: { asset: 'BTC', amount: amount.toFixed() } })
              assert.deepEqual(quote.requirements, ['travel-rule'])
              const created = await commit(ctx(), suite.token, user.id, quote.id)
              assert.equal(created.status, 201, created.body)
              const transactionId = created.json<{ transaction: { id: string } }>().transaction.id
              await ctx().services.worker.drain()
              const requests = (await ctx().request({ method: 'GET', url: `/core/transactions/${transactionId}/requests-for-information`, headers: bearer(suite.token, user.id) })).json<{ requestsForInformation: { id: string }[] }>().requestsForInformation
              const paid = new BigNumber(quote.origin.amount)
              held.push({ user: step.user, transactionId, requestId: requests[0]!.id, kind: 'withdrawal', amount: paid })
              user.available = user.available.minus(paid)
            } else if (held.length > 0) {
              const [target] = held.splice(step.pick % held.length, 1)
              const user = users[target!.user]!
              let accepted = false
              if (step.kind === 'answer') {
                const data = target!.kind === 'deposit' ? originator(step.accept ? 'Doe' : 'Refused') : beneficiary(step.accept ? 'Roe' : 'Refused')
                const response = await ctx().request({ method: 'PUT', url: `/core/transactions/${target!.transactionId}/requests-for-information/${target!.requestId}`, headers: bearer(suite.token, user.id), payload: { data } })
                assert.equal(response.status, 200, response.body)
                accepted = step.accept
              } else {
                // Time passes: the request's expiry is now, and the flow's job comes back.
                await ctx().database.db.updateTable('requests_for_information').set({ expires_at: new Date(Date.now() - 1000) }).where('id', '=', target!.requestId).execute()
                await ctx().database.db.updateTable('jobs').set({ run_at: new Date() }).where('organization_id', '=', ctx().client.organizationId).execute()
              }
              await ctx().services.worker.drain()
              const status = (await ctx().request({ method: 'GET', url: `/core/transactions/${target!.transactionId}`, headers: bearer(suite.token, user.id) })).json<{ transaction: { status: string; statusDetails?: { reason: string } } }>().transaction
              assert.equal(status.status, accepted ? 'completed' : 'failed', JSON.stringify(status))
              if (!accepted) assert.deepEqual(status.statusDetails, { reason: 'travel-rule-verification-failed' })
              if (target!.kind === 'deposit') {
                if (accepted) {
                  parked = parked.minus(target!.amount)
                  user.total = user.total.plus(target!.amount)
                  user.available = user.available.plus(target!.amount)
                }
              } else if (accepted) user.total = user.total.minus(target!.amount)
              else user.available = user.available.plus(target!.amount)
            }

            for (const user of users) {
              const balance = await balanceOf(ctx(), suite.token, user.id, user.account)
              assert.equal(balance.total, user.total.toFixed(), `total of ${user.id} after ${JSON.stringify(step)}`)
              assert.equal(balance.available, user.available.toFixed(), `available of ${user.id} after ${JSON.stringify(step)}`)
            }
            assert.equal((await suspense()).toFixed(), parked.toFixed(), `suspense after ${JSON.stringify(step)}`)
            for (const pending of held) {
              const transaction = (await ctx().request({ method: 'GET', url: `/core/transactions/${pending.transactionId}`, headers: bearer(suite.token, users[pending.user]!.id) })).json<{ transaction: { status: string } }>().transaction
              assert.equal(transaction.status, 'on-hold')
            }
          }
          const report = await checkLedger(ctx().database.db)
          assert.deepEqual(report.violations, [], JSON.stringify(report.violations))
        }),
        { seed: SEED, numRuns: RUNS },
      )
    })
  })
}
