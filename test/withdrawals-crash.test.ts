import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import BigNumber from 'bignumber.js'
import { fund, openAccount, verifiedUser } from './money.ts'
import { Crash, linkExternalAccount, POSTGRES_ONLY, type Commit } from './crash.ts'

/** Parallel streams of quote-then-commit against the server, spread over the users. */
const WITHDRAWERS = 32
const USERS = 16
/** What each user's EUR account is funded with, once, before the server starts. */
const FUNDING = '100000'
/** Kill-and-restart rounds: at least this many, and more (up to the most) until a commit is made whose answer the kill lost. */
const ROUNDS_AT_LEAST = 3
const ROUNDS_AT_MOST = 5
/** The server is killed once this many commits of the round were answered 201 … */
const ANSWERED_BEFORE_KILL = 40
/** … and this many orders are with the rail, submitted and not settled yet. */
const IN_FLIGHT_BEFORE_KILL = 10
/** How long the sandbox rail takes to settle an order: long enough for orders to be in flight at the kill. */
const RAIL_SETTLE_MS = 300

/** Sandbox test values (docs/sandbox.md): the IBAN's last four digits select the rail's outcome. */
const IBAN = {
  completes: 'DE67370400440532010001',
  holderMismatch: 'DE40370400440532010002',
  countryRestricted: 'DE13370400440532010003',
}
type Destination = keyof typeof IBAN
/** What the rail makes of a withdrawal to each destination: its order's status, and the transaction's end. */
const OUTCOME: Record<Destination, { order: string; status: string; reason?: string }> = {
  completes: { order: 'completed', status: 'completed' },
  holderMismatch: { order: 'failed', status: 'failed', reason: 'bank-account-holder-name-mismatch' },
  countryRestricted: { order: 'rejected', status: 'failed', reason: 'beneficiary-country-restricted' },
}
/** The rail's reasons, which a withdrawal can only fail with once its order reached the rail. */
const RAIL_REASONS = new Set(Object.values(OUTCOME).flatMap((outcome) => (outcome.reason ? [outcome.reason] : [])))

interface Withdrawer {
  userId: string
  eur: string
  /** The user's linked SEPA accounts, one per test value. */
  banks: Record<Destination, string>
}

/** One commit of the stream: its quote and key, where it goes, and what the first request got. */
interface Attempt extends Commit<Withdrawer> {
  destination: Destination
}

describe('withdrawals while the server is killed with SIGKILL [postgres]', POSTGRES_ONLY, () => {
  // The in-process app prepares the users, their accounts and their linked bank accounts.
  const crash = new Crash<Withdrawer, Attempt>({
    name: 'withdrawals-crash',
    // Orders stay with the rail (submitted, not settled) this long: some are in flight at every kill.
    env: { SANDBOX_RAIL_SETTLE_MS: String(RAIL_SETTLE_MS) },
    type: 'withdrawal',
    prepare: async ({ ctx, token }) => {
      const link = (userId: string, iban: string) =>
        linkExternalAccount(ctx, token, userId, { type: 'bank', asset: 'EUR', network: 'sepa', label: `IBAN ${iban.slice(-4)}`, iban, bic: 'COBADEFFXXX' })
      const withdrawers: Withdrawer[] = []
      for (let i = 0; i < USERS; i++) {
        const userId = await verifiedUser(ctx, token)
        const eur = await openAccount(ctx, token, userId, 'EUR')
        await fund(ctx, userId, eur, 'EUR', FUNDING)
        const banks = { completes: await link(userId, IBAN.completes), holderMismatch: await link(userId, IBAN.holderMismatch), countryRestricted: await link(userId, IBAN.countryRestricted) }
        withdrawers.push({ userId, eur, banks })
      }
      return withdrawers
    },
  })

  /**
   * Withdrawals still processing, at `at` (now by default): those whose order the rail holds and has not settled
   * yet (in flight), those the rail settled but whose flow has not confirmed it yet, and those not submitted yet.
   */
  async function inFlight(at?: Date): Promise<{ pendingAtRail: number; settledAtRail: number; notSubmitted: number }> {
    const when = at ? `'${at.toISOString()}'::timestamptz` : 'now()'
    const [row] = await crash.query<{ pending: string; settled: string; not_submitted: string }>(`
      select count(*) filter (where o.settles_at > ${when}) as pending, count(*) filter (where o.settles_at <= ${when}) as settled,
        count(*) filter (where o.key is null) as not_submitted
      from transactions t left join sandbox_rail_orders o on o.key = t.id::text || ':submit'
      where t.type = 'withdrawal' and t.status = 'processing'`)
    return { pendingAtRail: Number(row!.pending), settledAtRail: Number(row!.settled), notSubmitted: Number(row!.not_submitted) }
  }

  test('every withdrawal ends once, its order sent to the rail once, whatever the kill interrupted; the books balance', async (t) => {
    /** Makes every amount unique: a second withdrawal of one amount to one place within two minutes is refused. */
    let counter = 0
    await crash.start()

    // A round: the stream runs, the server is killed in its middle (with orders at the rail not settled yet) and
    // restarted, every commit of the round is retried. At least ROUNDS_AT_LEAST rounds, and more (ROUNDS_AT_MOST
    // at most) until one commit was made but its answer lost, the hardest case.
    await crash.run({
      streams: WITHDRAWERS,
      more: () => crash.rounds < ROUNDS_AT_LEAST || (crash.rounds < ROUNDS_AT_MOST && crash.madeBeforeKill === 0),
      next: (withdrawer, n, i) => {
        const slot = (n + i) % 8
        const destination: Destination = slot === 6 ? 'holderMismatch' : slot === 7 ? 'countryRestricted' : 'completes'
        const amount = new BigNumber(++counter).div(100).plus(1).toFixed()
        return {
          quote: {
            origin: { type: 'account', id: withdrawer.eur },
            destination: { type: 'external-account', id: withdrawer.banks[destination] },
            denomination: { asset: 'EUR', amount },
            ttl: 300_000,
          },
          with: { destination },
        }
      },
      answeredBeforeKill: ANSWERED_BEFORE_KILL,
      ready: async () => (await inFlight()).pendingAtRail >= IN_FLIGHT_BEFORE_KILL,
      waitingFor: `${ANSWERED_BEFORE_KILL} answered commits and ${IN_FLIGHT_BEFORE_KILL} orders in flight`,
      atKill: async (frozenAt) => ({ statuses: await crash.statuses(), flight: await inFlight(frozenAt) }),
      landed: ({ flight }) => assert.ok(flight.pendingAtRail > 0, `the kill landed while orders were in flight at the rail: ${JSON.stringify(flight)}`),
      check: (attempt, transaction) => {
        assert.equal(transaction.type, 'withdrawal')
        assert.deepEqual([transaction.origin, transaction.destination, transaction.fees], [attempt.quote.origin, attempt.quote.destination, attempt.quote.fees], attempt.key)
      },
      report: ({ number, round, unanswered, replayed, atKill: { statuses, flight } }) =>
        t.diagnostic(
          `round ${number}: ${round.length} commits sent, ${unanswered.length} unanswered at the kill (${replayed} of them made before it, ` +
            `${unanswered.length - replayed} by their retry); withdrawals at the kill ${JSON.stringify(statuses)}, of the processing ones ` +
            `${flight.pendingAtRail} with an order in flight at the rail, ${flight.settledAtRail} settled by the rail but not confirmed yet, ` +
            `${flight.notSubmitted} not submitted yet`,
        ),
    })

    await crash.replayAll()
    await crash.drain('every withdrawal to finish')

    // One transaction per key and per quote, and none besides (every row, even one whose answer was lost, is one
    // of the keys': its retry found it).
    const { attempts, ids } = crash
    const rows = await crash.query<{ id: string; quote_id: string; status: string; reason: string | null; origin_account_id: string; origin_amount: string; destination_asset: string; destination_amount: string }>(
      "select id, quote_id, status, reason, origin_account_id, origin_amount, destination_asset, destination_amount from transactions where type = 'withdrawal'",
    )
    const byId = crash.onePerKey(rows, 'withdrawal')
    const destinationOf = new Map(attempts.map((attempt) => [ids.get(attempt.key)!, attempt.destination]))
    for (const attempt of attempts) {
      const row = byId.get(ids.get(attempt.key)!)!
      // Each ends as the rail's test value says: a crash never fails a withdrawal for a reason of its own.
      const outcome = OUTCOME[attempt.destination]
      assert.deepEqual([row.status, row.reason], [outcome.status, outcome.reason ?? null], `the end of ${row.id} (to ${attempt.destination})`)
    }

    await crash.announcedOnce(rows)

    // The rail: one order per withdrawal that reached the submit step, under its key, none besides; the completed
    // withdrawals are exactly its completed orders. A key submitted again (a crash between the call and the commit
    // of its step; also, today, a batch whose step failed for one flow and was run again flow by flow) is the same
    // order: same amount, same beneficiary, counted in `received`.
    const steps = await crash.query<{ flow_id: string; step: string; action: string }>("select s.flow_id, s.step, s.action from flow_steps s join flows f on f.organization_id = s.organization_id and f.id = s.flow_id where f.type = 'withdrawal'")
    const stepsOf = Map.groupBy(steps, (step) => step.flow_id)
    // Reached it: the submit step committed (the rail took the order), or the flow failed there with the rail's refusal.
    const reachedSubmit = new Set(
      rows
        .filter((row) => (stepsOf.get(row.id) ?? []).some((step) => step.step === 'submit' && (step.action === 'run' || (step.action === 'fail' && RAIL_REASONS.has(row.reason!)))))
        .map((row) => row.id),
    )
    const failedBeforeSubmit = rows.filter((row) => !reachedSubmit.has(row.id))
    for (const row of failedBeforeSubmit) assert.ok(row.status === 'failed' && !RAIL_REASONS.has(row.reason!), `${row.id} never reached the rail, yet ${row.status} ${row.reason}`)
    const orders = await crash.query<{ key: string; reference: string; status: string; reason: string | null; amount: string; asset: string; iban: string; received: number; direction: string }>(
      "select key, reference, status, reason, amount, asset, counterparty->>'iban' as iban, received, direction from sandbox_rail_orders",
    )
    assert.deepEqual(orders.map((order) => order.key).sort(), [...reachedSubmit].map((id) => `${id}:submit`).sort(), 'one order per withdrawal that reached the submit step, and none besides')
    assert.equal(new Set(orders.map((order) => order.reference)).size, orders.length, 'never two orders for one withdrawal')
    for (const order of orders) {
      const row = byId.get(order.reference)!
      assert.equal(order.key, `${row.id}:submit`)
      assert.equal(order.direction, 'payout')
      assert.equal(order.asset, row.destination_asset)
      assert.ok(new BigNumber(order.amount).isEqualTo(row.destination_amount), `the amount of ${order.key}: ${order.amount}, not ${row.destination_amount}`)
      assert.equal(order.iban, IBAN[destinationOf.get(row.id)!], `the beneficiary of ${order.key}`)
      assert.ok(order.received >= 1)
      assert.equal(order.status === 'completed', row.status === 'completed', `${order.key} is ${order.status}, its withdrawal ${row.status}`)
      if (order.status !== 'completed') assert.equal(order.reason, row.reason, order.key)
    }
    assert.deepEqual(
      orders.filter((order) => order.status === 'completed').map((order) => order.reference).sort(),
      rows.filter((row) => row.status === 'completed').map((row) => row.id).sort(),
      'the completed withdrawals are the completed orders',
    )
    const resubmitted = orders.filter((order) => order.received > 1)
    const submissions = Object.entries(Object.groupBy(orders, (order) => String(order.received))).map(([received, group]) => `${group!.length} ×${received}`).join(', ')

    // Every flow finished; nothing is left to run, held or posted twice.
    const flows = await crash.query<{ status: string; n: string }>("select status, count(*) as n from flows where type = 'withdrawal' group by status")
    const ended = await crash.statuses()
    assert.deepEqual(Object.fromEntries(flows.map((row) => [row.status, Number(row.n)])), ended, 'every withdrawal flow ended as its withdrawal')
    await crash.nothingLeft()
    const holds = await crash.query<{ reference: string; status: string }>("select reference, status from ledger_holds where reference like '%:hold'")
    const holdOf = new Map(holds.map((hold) => [hold.reference, hold.status]))
    for (const row of rows) assert.equal(holdOf.get(`${row.id}:hold`), row.status === 'completed' ? 'captured' : 'released', `the hold of ${row.id}`)

    // Each account holds its funding less what its completed withdrawals took.
    for (const withdrawer of crash.users) {
      const spent = rows.filter((row) => row.origin_account_id === withdrawer.eur && row.status === 'completed').reduce((sum, row) => sum.plus(row.origin_amount), new BigNumber(0))
      const want = new BigNumber(FUNDING).minus(spent).toFixed()
      assert.deepEqual(await crash.balance(withdrawer, withdrawer.eur), { total: want, available: want }, `balance of ${withdrawer.eur}`)
    }

    t.diagnostic(
      `${attempts.length} withdrawals committed over ${crash.rounds} rounds (${crash.madeBeforeKill} made before a kill that lost their answer): ${JSON.stringify(ended)}; ` +
        `${orders.length} orders at the rail, ${resubmitted.length} of them submitted more than once (orders by submissions: ${submissions}); ` +
        `${failedBeforeSubmit.length} failed before the submit step`,
    )

    await crash.finish()
  })
})
