import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import BigNumber from 'bignumber.js'
import { fund, openAccount, verifiedUser } from './money.ts'
import { Crash, POSTGRES_ONLY, sleep, type Commit } from './crash.ts'

/** Parallel streams of quote-then-commit against the server, spread over the users. */
const TRADERS = 32
const USERS = 16
/** Kill-and-restart rounds, until a commit is made whose answer the kill lost. */
const ROUNDS_AT_MOST = 5
/** The server is killed once this many commits of the round were answered 201. */
const ANSWERED_BEFORE_KILL = 60

interface Trader {
  userId: string
  eur: string
  btc: string
  eur2: string
}

/** One commit of the stream: its quote and key, and what the first request got. */
type Attempt = Commit<Trader>

describe('trades while the server is killed with SIGKILL [postgres]', POSTGRES_ONLY, () => {
  // The in-process app prepares the users and records deposits as the rails do.
  const crash = new Crash<Trader, Attempt>({
    name: 'trades-crash',
    prepare: async ({ ctx, token }) => {
      const traders: Trader[] = []
      for (let i = 0; i < USERS; i++) {
        const userId = await verifiedUser(ctx, token)
        const trader = { userId, eur: await openAccount(ctx, token, userId, 'EUR'), btc: await openAccount(ctx, token, userId, 'BTC'), eur2: await openAccount(ctx, token, userId, 'EUR') }
        await fund(ctx, userId, trader.eur, 'EUR', '100000')
        await fund(ctx, userId, trader.btc, 'BTC', '2')
        traders.push(trader)
      }
      return traders
    },
  })

  test('every commit is made once whatever the kill interrupted; retries with the same key replay it; the books balance', async (t) => {
    const deposits: { accountId: string; transactionId: string }[] = []
    const traders = crash.users
    await crash.start()

    // A round: the stream runs, the server is killed in its middle and restarted, every commit of the round is
    // retried. Rounds go on (ROUNDS_AT_MOST at most) until one commit was made but its answer lost, the hardest case.
    await crash.run({
      streams: TRADERS,
      more: () => crash.rounds < ROUNDS_AT_MOST && (crash.rounds === 0 || crash.madeBeforeKill === 0),
      next: (trader, n, i) => {
        const [origin, destination, asset, amount] = [
          [trader.eur, trader.btc, 'EUR', `${10 + (i % 40)}.${String(i % 100).padStart(2, '0')}`],
          [trader.eur, trader.eur2, 'EUR', `${1 + (i % 9)}.25`],
          [trader.btc, trader.eur, 'BTC', `0.000${10 + (i % 80)}`],
        ][(n + i) % 3]!
        return {
          quote: { origin: { type: 'account', id: origin }, destination: { type: 'account', id: destination }, denomination: { asset, amount, target: 'origin' }, ttl: 300_000 },
          with: {},
        }
      },
      answeredBeforeKill: ANSWERED_BEFORE_KILL,
      waitingFor: `${ANSWERED_BEFORE_KILL} answered commits`,
      // Deposits keep arriving through the kill, recorded straight into the database as the rails do.
      beside: () => {
        let depositing = true
        const recording = (async () => {
          for (let i = 0; depositing && i < 300; i++) {
            const trader = traders[i % traders.length]!
            const [accountId, asset, amount, network] = i % 2 === 0
              ? [trader.eur, 'EUR', `${1 + (i % 50)}.${String(i % 100).padStart(2, '0')}`, 'sepa']
              : [trader.btc, 'BTC', `0.00${String(100 + i).padStart(4, '0')}`, 'bitcoin']
            const { transactionId } = await crash.services.deposits.record(crash.database.db, {
              organizationId: crash.client.organizationId, userId: trader.userId, accountId, asset, amount, network, reference: `crash-${crash.rounds}-${i}`,
            })
            deposits.push({ accountId, transactionId })
            await sleep(5)
          }
        })()
        return {
          stop: async () => {
            await sleep(200)
            depositing = false
            await recording
          },
        }
      },
      atKill: () => crash.statuses(),
      landed: (atKill) => assert.ok((atKill.processing ?? 0) > 0, `the kill landed while transactions were processing: ${JSON.stringify(atKill)}`),
      check: (attempt, transaction) => {
        assert.deepEqual([transaction.origin, transaction.destination, transaction.fees], [attempt.quote.origin, attempt.quote.destination, attempt.quote.fees], attempt.key)
      },
      report: ({ number, round, unanswered, replayed, atKill }) =>
        t.diagnostic(
          `round ${number}: ${round.length} commits sent, ${unanswered.length} unanswered at the kill (${replayed} of them made before it, ` +
            `${unanswered.length - replayed} by their retry); transactions at the kill ${JSON.stringify(atKill)}; ${deposits.length} deposits so far`,
        ),
    })

    await crash.replayAll()
    await crash.drain('every transaction to finish')

    // One transaction per key and per quote, and none besides.
    const movements = await crash.query<{ id: string; quote_id: string; origin_amount: string; destination_amount: string }>(
      "select id, quote_id, origin_amount, destination_amount from transactions where type in ('trade', 'transfer')",
    )
    crash.onePerKey(movements, 'transaction')
    const recorded = await crash.query<{ id: string }>("select id from transactions where type = 'deposit'")
    assert.equal(recorded.length, deposits.length + 2 * traders.length, 'every deposit recorded once')

    // Every flow finished, and nothing failed: the money was there and velocity is off.
    const everything = crash.attempts.length + deposits.length + 2 * traders.length
    const flows = await crash.query<{ status: string; n: string }>('select status, count(*) as n from flows group by status')
    assert.deepEqual(Object.fromEntries(flows.map((row) => [row.status, Number(row.n)])), { completed: everything })
    assert.deepEqual(await crash.statuses(), { completed: everything })
    await crash.nothingLeft()

    // Each account holds what its completed transactions say.
    const completed = await crash.query<{ origin_account_id: string | null; destination_account_id: string | null; origin_amount: string; destination_amount: string }>(
      "select origin_account_id, destination_account_id, origin_amount, destination_amount from transactions where status = 'completed'",
    )
    const expected = new Map<string, BigNumber>()
    const add = (id: string | null, amount: BigNumber.Value) => {
      if (id !== null) expected.set(id, (expected.get(id) ?? new BigNumber(0)).plus(amount))
    }
    for (const row of completed) {
      add(row.origin_account_id, new BigNumber(row.origin_amount).negated())
      add(row.destination_account_id, row.destination_amount)
    }
    for (const trader of traders) {
      for (const accountId of [trader.eur, trader.btc, trader.eur2]) {
        const want = (expected.get(accountId) ?? new BigNumber(0)).toFixed()
        assert.deepEqual(await crash.balance(trader, accountId), { total: want, available: want }, `balance of ${accountId}`)
      }
    }

    await crash.finish()
  })
})
