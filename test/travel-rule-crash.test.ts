/**
 * The travel rule while the server is killed with SIGKILL (src/flows/travel-rule.steps.ts): a real `tessera serve`
 * on its own database takes, over HTTP, a stream of crypto deposits from a sender nobody declared (the sandbox's
 * test helper; most of them above the threshold, so held for information, a few below it) and a stream of
 * withdrawals to a crypto address above the threshold (quoted with the `travel-rule` requirement, committed under
 * their keys), while the test answers every request for information it finds as a user would (most accepted, some
 * refused by the sandbox's travel-rule node), after a moment. The server is killed several times with requests
 * pending and answers in flight, and restarted; commits and answers are retried. In the end every held movement
 * ended as its answer says, held once, its money parked in suspense once and settled from there at most once, the
 * withdrawals' holds captured or released, the users' balances and the suspense account what the outcomes say, and
 * the books balance. A held movement that its answer did not wake is reported (what its request, flow and job say),
 * then woken as its request's expiry would wake it, so that the rest is checked all the same; the test fails for it
 * at the end.
 */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import BigNumber from 'bignumber.js'
import { checkLedger } from '../src/modules/ledger/index.ts'
import { bearer } from './helpers.ts'
import { fund, openAccount, verifiedUser } from './money.ts'
import { Crash, POSTGRES_ONLY, sleep, waitUntil, type Commit } from './crash.ts'

const USERS = 8
/** Parallel streams of withdrawal quote-then-commit (the harness's streams), spread over the users. */
const WITHDRAWERS = 8
/** Parallel streams of crypto deposits (the sandbox's test helper), spread over the users. */
const DEPOSITORS = 3
/** A deposit stream's pause between two deposits. */
const DEPOSIT_PAUSE_MS = 15
/** What each user's BTC account is funded with, in process, before the server starts. */
const FUNDING = '100'
/** Kill-and-restart rounds: at least this many, and more (up to the most) until the kills hit the cases sought. */
const ROUNDS_AT_LEAST = 3
const ROUNDS_AT_MOST = 6
/** The server is killed once this many withdrawal commits of the round were answered 201 … */
const ANSWERED_BEFORE_KILL = 6
/** … and this many requests of deposits, and of withdrawals, are pending (their flows at the screen step) … */
const PENDING_BEFORE_KILL = 3
/** … and some answered request's flow has not gone on yet, or the round has run this long already. */
const ANSWERED_NOT_RELEASED_WAIT_MS = 4_000
/** The user answers a request this long (at random between the two) after it is first seen. */
const ANSWER_DELAY_MS = [0, 800] as const
/** Every this many-th request seen is answered with a name the sandbox's travel-rule node refuses. */
const REFUSE_EVERY = 4
/** How long the sandbox rail takes to settle a withdrawal's order. */
const RAIL_SETTLE_MS = 100
/** How long, once everything was answered, the held movements are given to end (they need milliseconds). */
const END_WAIT_MS = 15_000

/** A sender on the sandbox's bitcoin test chain that no user declared. */
const SENDER = 'tb1qxsy3qh8d44d5jkuvn98rxsjtxpmdlslg8d92cv'
/** BIP-173's P2WSH test vector on the test chain: where the withdrawals go. */
const DESTINATION = 'tb1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3q0sl5k7'
/** Above the default threshold of 1000 US dollars (0.1 BTC is about 6500), and below it (about 65). */
const ABOVE = '0.1'
const BELOW = '0.001'
/** Every this many-th deposit is below the threshold: it settles with no request. */
const SMALL_EVERY = 8

const person = (primary: string) => ({ naturalPerson: { name: { nameIdentifier: [{ primaryIdentifier: primary, nameIdentifierType: 'LEGL' }] } } })
/** The answer to a request: the other party named; 'Refused' is refused by the sandbox's travel-rule node. */
const answerData = (direction: string, primary: string) =>
  direction === 'deposit' ? { ivms101: { originator: { originatorPersons: [person(primary)] } } } : { ivms101: { beneficiary: { beneficiaryPersons: [person(primary)] } } }

interface Holder {
  userId: string
  btc: string
  /** The BTC account's deposit address (bitcoin). */
  address: string
}

/** A withdrawal commit of the stream. */
interface Attempt extends Commit<Holder> {
  round: number
}

/** A crypto deposit the test helper was asked for: its amount makes it known in the database. */
interface DepositAttempt {
  user: Holder
  amount: string
  small: boolean
  round: number
  /** The status the test helper answered; undefined when the kill lost the answer. */
  status?: number
  error?: string
}

/** A request for information the user answers: how, and what came of it. */
interface Answering {
  id: string
  transactionId: string
  direction: string
  user: Holder
  refuse: boolean
  /** Requests sent (more than one when a kill interrupted one). */
  tries: number
  /** The request's status once answered, as the server tells the user. */
  status?: string
  reason?: string
  /** A retry found it answered already: the answer committed, its response lost to a kill. */
  lostAnswer?: boolean
  done: boolean
}

/** Where the running deposit and withdrawal flows stand, at a kill. */
interface Standing {
  /** At the screen step, not screened yet (no request). */
  notScreened: number
  /** At the screen step, their request pending: deposits, withdrawals. */
  pendingDeposits: number
  pendingWithdrawals: number
  /** At the screen step, their request answered (accepted or refused), the flow not gone on yet (its job due). */
  answeredNotReleased: number
  /** At the screen step, their request answered, yet the flow's job waits for the request's expiry: not woken. */
  answeredNotWoken: number
  /** Past the screen step, still running (a deposit to settle, a withdrawal at the rail). */
  pastScreen: number
}

/** The index of the screen step in each flow (a withdrawal reserves first). */
const SCREEN_STEP: Record<string, number> = { deposit: 0, withdrawal: 1 }

describe('the travel rule while the server is killed with SIGKILL [postgres]', POSTGRES_ONLY, () => {
  // The in-process app prepares the users: a BTC account, funded (its own request answered), its deposit address.
  const crash = new Crash<Holder, Attempt>({
    name: 'travel-rule-crash',
    env: { SANDBOX_RAIL_SETTLE_MS: String(RAIL_SETTLE_MS) },
    prepare: async ({ ctx, token }) => {
      const holders: Holder[] = []
      for (let i = 0; i < USERS; i++) {
        const userId = await verifiedUser(ctx, token)
        const btc = await openAccount(ctx, token, userId, 'BTC')
        await fund(ctx, userId, btc, 'BTC', FUNDING)
        // Settled, its request answered in process: a flow that its answer did not wake would leave it on hold.
        const funded = await ctx.request({ method: 'GET', url: `/core/accounts/${btc}`, headers: bearer(token, userId) })
        if (funded.json<{ account: { balance: { total: string } } }>().account.balance.total !== FUNDING) {
          const db = ctx.database.db
          const deposits = await db.selectFrom('transactions').select(['id', 'status', 'reason']).where('destination_account_id', '=', btc).execute()
          const requests = await db.selectFrom('requests_for_information').select(['status', 'created_at', 'updated_at']).where('owner_id', '=', userId).execute()
          const jobs = await db.selectFrom('jobs').select(['status', 'run_at', 'attempts', 'last_error', 'updated_at']).where(({ eb, ref }) => eb(ref('payload', '->>').key('flowId' as never), 'in', deposits.map((row) => row.id))).execute()
          assert.fail(`funding ${btc}: ${funded.body}; ${JSON.stringify({ deposits, requests, jobs })}`)
        }
        const method = await ctx.request({ method: 'PUT', url: `/core/accounts/${btc}/deposit-method?type=crypto&asset=BTC&network=bitcoin`, headers: bearer(token, userId) })
        assert.equal(method.status, 201, method.body)
        const address = method.json<{ depositMethod: { details: { address: string } } }>().depositMethod.details.address
        holders.push({ userId, btc, address })
      }
      return holders
    },
  })

  async function standing(): Promise<Standing> {
    const rows = await crash.query<{ type: string; step: number; rfi: string | null; asleep: boolean }>(`
      select f.type, f.step, r.status as rfi, coalesce(j.status = 'pending' and j.run_at > now() + interval '1 minute', false) as asleep
      from flows f
      left join requests_for_information r on r.organization_id = f.organization_id and r.transaction_id = f.id
      left join jobs j on j.organization_id = f.organization_id and j.payload->>'flowId' = f.id::text
      where f.status = 'running' and f.type in ('deposit', 'withdrawal')`)
    const atScreen = rows.filter((row) => row.step === SCREEN_STEP[row.type])
    return {
      notScreened: atScreen.filter((row) => row.rfi === null).length,
      pendingDeposits: atScreen.filter((row) => row.rfi === 'pending' && row.type === 'deposit').length,
      pendingWithdrawals: atScreen.filter((row) => row.rfi === 'pending' && row.type === 'withdrawal').length,
      answeredNotReleased: atScreen.filter((row) => (row.rfi === 'ok' || row.rfi === 'failed') && !row.asleep).length,
      answeredNotWoken: atScreen.filter((row) => (row.rfi === 'ok' || row.rfi === 'failed') && row.asleep).length,
      pastScreen: rows.filter((row) => row.step > SCREEN_STEP[row.type]!).length,
    }
  }

  test('every held deposit and withdrawal ends as its answer says, held once, parked once, settled at most once, whatever the kill interrupted; the books balance', async (t) => {
    const started = Date.now()
    const organizationId = crash.client.organizationId
    const usersById = new Map(crash.users.map((user) => [user.userId, user]))
    const standings: Standing[] = []
    const unexpected: string[] = []

    // The users: a task per request for information, which waits a moment as a person would and answers it (again
    // after a kill interrupted it: a retry that finds it answered already reads what it became).
    const answerings = new Map<string, Answering>()
    const tasks: Promise<void>[] = []
    let answering = true
    let seen = 0
    const answer = async (request: Answering) => {
      await sleep(ANSWER_DELAY_MS[0] + Math.random() * (ANSWER_DELAY_MS[1] - ANSWER_DELAY_MS[0]))
      const route = `/core/transactions/${request.transactionId}/requests-for-information/${request.id}`
      const data = answerData(request.direction, request.refuse ? 'Refused' : 'Doe')
      while (answering) {
        try {
          request.tries++
          const response = await crash.send('PUT', request.user, route, { data })
          if (response.status === 200) {
            const body = JSON.parse(response.body) as { requestForInformation: { status: string; statusDetails?: { reason: string } } }
            request.status = body.requestForInformation.status
            request.reason = body.requestForInformation.statusDetails?.reason
            request.done = true
            return
          }
          const refusal = JSON.parse(response.body) as { code?: string; details?: { reasons?: string[] } }
          if (response.status === 409 && request.tries > 1 && refusal.details?.reasons?.includes('request-for-information-update-not-allowed')) {
            // An earlier try committed and its answer was lost: the request tells what it became.
            const read = await crash.send('GET', request.user, route)
            assert.equal(read.status, 200, read.body)
            const body = JSON.parse(read.body) as { requestForInformation: { status: string; statusDetails?: { reason: string } } }
            request.status = body.requestForInformation.status
            request.reason = body.requestForInformation.statusDetails?.reason
            request.lostAnswer = true
            request.done = true
            return
          }
          // The travel-rule node is the server itself: unreachable while it starts, try again.
          if (response.status !== 503) {
            unexpected.push(`answer to ${request.id} (try ${request.tries}): ${response.status} ${response.body}`)
            request.done = true
            return
          }
        } catch {
          // The server is frozen, dead or starting: the user tries again.
        }
        await sleep(50)
      }
    }
    // Finds the requests as they are opened (in the database: a deposit's transaction id is not told to its sender).
    const finder = (async () => {
      while (answering) {
        try {
          const rows = await crash.query<{ id: string; transaction_id: string; owner_id: string; direction: string }>(`
            select id::text as id, transaction_id::text as transaction_id, owner_id::text as owner_id, context->>'direction' as direction
            from requests_for_information where status = 'pending' order by created_at, id`)
          for (const row of rows) {
            if (answerings.has(row.id)) continue
            const request: Answering = {
              id: row.id,
              transactionId: row.transaction_id,
              direction: row.direction,
              user: usersById.get(row.owner_id)!,
              refuse: ++seen % REFUSE_EVERY === 0,
              tries: 0,
              done: false,
            }
            answerings.set(row.id, request)
            tasks.push(answer(request))
          }
        } catch (error) {
          unexpected.push(`finding requests: ${String(error)}`)
        }
        await sleep(50)
      }
    })()
    // Whatever happens, the users stop answering once the test ends.
    t.after(async () => {
      answering = false
      await finder
      await Promise.all(tasks)
    })

    // The deposit streams: each round, from the start of its streams to the kill; a deposit whose answer the kill
    // lost is not sent again (it is a new transfer each time): its amount tells whether it was recorded.
    const deposits: DepositAttempt[] = []
    let depositCounter = 0
    let roundStartedAt = 0
    const depositStreams = () => {
      roundStartedAt = Date.now()
      let stopping = false
      const stream = async (n: number) => {
        for (let i = 0; !stopping; i++) {
          const user = crash.users[(n + i * DEPOSITORS) % crash.users.length]!
          const small = ++depositCounter % SMALL_EVERY === 0
          // A satoshi more each time: every deposit is its own amount.
          const amount = new BigNumber(depositCounter).shiftedBy(-8).plus(small ? BELOW : ABOVE).toFixed()
          const attempt: DepositAttempt = { user, amount, small, round: crash.rounds }
          deposits.push(attempt)
          try {
            const response = await crash.send('POST', user, '/core/accounts/test-helpers/crypto-deposits', { network: 'bitcoin', address: user.address, asset: 'BTC', amount, remitter: { addresses: [SENDER] } })
            attempt.status = response.status
            if (response.status !== 202) {
              unexpected.push(`deposit: ${response.status} ${response.body}`)
              return
            }
          } catch (error) {
            attempt.error = String((error as Error).cause ?? error)
            return
          }
          await sleep(DEPOSIT_PAUSE_MS)
        }
      }
      const streams = Array.from({ length: DEPOSITORS }, (_, n) => stream(n))
      return { stop: async () => { stopping = true; await Promise.all(streams) } }
    }

    await crash.start()

    /** Deposits of the sandbox's test helper, by account and amount. */
    const recordedDeposits = () =>
      crash.query<{ id: string; status: string; reason: string | null; destination_account_id: string; destination_amount: string }>(
        "select id::text as id, status, reason, destination_account_id::text as destination_account_id, destination_amount from transactions where type = 'deposit' and reference like 'simulated-deposit:%'",
      )
    const keyOf = (accountId: string, amount: string) => `${accountId}|${new BigNumber(amount).toFixed()}`
    /** Deposits whose answer a kill lost but which were recorded, by round. */
    const depositsLost = new Map<number, number>()

    // The cases of the travel rule the kills are after: a request answered whose flow had not gone on yet (asserted:
    // every run hits it), and an answer committed whose response the kill lost, its retry finding it answered (sought
    // with more rounds, reported: its window, between the answer's commit and its response, is a few milliseconds).
    // Those of the commits, a withdrawal commit made or a deposit recorded whose response the kill lost, are reported.
    const answeredNotReleased = () => standings.some((s) => s.answeredNotReleased > 0)
    const answerLost = () => [...answerings.values()].some((request) => request.lostAnswer)

    await crash.run({
      streams: WITHDRAWERS,
      more: () => crash.rounds < ROUNDS_AT_LEAST || (crash.rounds < ROUNDS_AT_MOST && !(answeredNotReleased() && answerLost())),
      next: (holder, n, i) => {
        // Each its own amount (by stream, commit and round): a second withdrawal of one amount to one place within two
        // minutes is refused.
        const amount = new BigNumber(n * 1_000_000 + i + 1).shiftedBy(-8).plus(ABOVE).plus(new BigNumber(crash.rounds).shiftedBy(-3)).toFixed()
        return {
          quote: {
            origin: { type: 'account', id: holder.btc },
            destination: { type: 'crypto-address', network: 'bitcoin', asset: 'BTC', address: DESTINATION },
            denomination: { asset: 'BTC', amount },
            ttl: 300_000,
          },
          with: { round: crash.rounds },
        }
      },
      answeredBeforeKill: ANSWERED_BEFORE_KILL,
      ready: async () => {
        // A refusal stops the wait at once, the test with it.
        assert.deepEqual(unexpected, [], 'the deposits and the answers run as they should until the kill')
        const stood = await standing()
        return stood.pendingDeposits >= PENDING_BEFORE_KILL && stood.pendingWithdrawals >= PENDING_BEFORE_KILL &&
          (stood.answeredNotReleased > 0 || Date.now() - roundStartedAt > ANSWERED_NOT_RELEASED_WAIT_MS)
      },
      waitingFor: `${ANSWERED_BEFORE_KILL} answered commits, ${PENDING_BEFORE_KILL} deposits and withdrawals held with their request pending`,
      beside: depositStreams,
      atKill: async () => {
        const stood = await standing()
        standings.push(stood)
        return { statuses: await crash.statuses(), stood, answersInFlight: [...answerings.values()].filter((request) => !request.done && request.tries > 0).length }
      },
      landed: ({ stood }) => assert.ok(stood.pendingDeposits > 0 && stood.pendingWithdrawals > 0, `the kill landed while requests were pending: ${JSON.stringify(stood)}`),
      check: (attempt, transaction) => {
        assert.deepEqual(attempt.quote.requirements, ['travel-rule'], attempt.key)
        assert.equal(transaction.type, 'withdrawal')
        assert.deepEqual([transaction.origin, transaction.destination, transaction.fees], [attempt.quote.origin, attempt.quote.destination, attempt.quote.fees], attempt.key)
      },
      report: ({ number, round, unanswered, replayed, atKill: { statuses, stood, answersInFlight }, started: roundStarted }) => {
        const mine = deposits.filter((deposit) => deposit.round === number)
        const lost = mine.filter((deposit) => deposit.status === undefined)
        t.diagnostic(
          `round ${number}: ${round.length} withdrawal commits sent, ${unanswered.length} unanswered at the kill (${replayed} of them made before it, ` +
            `${unanswered.length - replayed} by their retry); ${mine.length} deposits sent, ${lost.length} unanswered at the kill; ` +
            `${answersInFlight} answers in flight at the kill; transactions at the kill ${JSON.stringify(statuses)}; the running flows at the kill ${JSON.stringify(stood)}; ` +
            `${((Date.now() - roundStarted) / 1000).toFixed(1)} s`,
        )
      },
    })

    // Which deposits the kills lost the answer of, yet were recorded.
    {
      const recorded = new Set((await recordedDeposits()).map((row) => keyOf(row.destination_account_id, row.destination_amount)))
      for (const deposit of deposits) {
        if (deposit.status === undefined && recorded.has(keyOf(deposit.user.btc, deposit.amount))) depositsLost.set(deposit.round, (depositsLost.get(deposit.round) ?? 0) + 1)
      }
    }
    const hardCases = { answeredNotReleased: answeredNotReleased(), answerLost: answerLost(), commitLost: crash.madeBeforeKill > 0, depositLost: [...depositsLost.values()].some((n) => n > 0) }

    await crash.replayAll()

    // Every request is opened and answered; then every held movement has its answer and goes on.
    await waitUntil(async () => {
      const statuses = await crash.statuses()
      const [pending] = await crash.query<{ n: string }>("select count(*) as n from requests_for_information where status = 'pending'")
      return statuses.processing === undefined && Number(pending!.n) === 0 && [...answerings.values()].every((request) => request.done)
    }, 60_000, 'every request to be opened and answered')
    // Held movements whose request was answered go on at once (milliseconds): any still held after a while was
    // not woken by its answer. Recorded (the test fails for them at its end), then woken as their request's expiry
    // would wake them (TRAVEL_RULE_REQUEST_TTL_SECONDS, 3 days), so that everything else is checked all the same.
    const stuck: string[] = []
    try {
      await waitUntil(async () => (await crash.statuses())['on-hold'] === undefined, END_WAIT_MS, 'every held movement to end')
    } catch {
      const rows = await crash.query<{ id: string; type: string; rfi: string; rfi_at: Date; step: number; job: string; run_at: Date; job_at: Date }>(`
        select t.id::text as id, t.type, r.status as rfi, r.updated_at as rfi_at, f.step, j.status as job, j.run_at, j.updated_at as job_at
        from transactions t
        join requests_for_information r on r.organization_id = t.organization_id and r.transaction_id = t.id
        join flows f on f.organization_id = t.organization_id and f.id = t.id
        left join jobs j on j.organization_id = t.organization_id and j.payload->>'flowId' = t.id::text
        where t.status = 'on-hold' order by r.updated_at`)
      for (const row of rows) {
        const request = [...answerings.values()].find((candidate) => candidate.transactionId === row.id)
        // The job deferred after the answer: it ran (the screen step's call saw the request pending) while the answer
        // committed, and the answer's wake-up found no waiting job. Before it: the wake-up never came.
        const how = row.job_at > row.rfi_at ? `its job deferred ${row.job_at.getTime() - row.rfi_at.getTime()} ms after the answer` : 'its job deferred before the answer and never woken'
        stuck.push(
          `${row.type} ${row.id}: on-hold at step ${row.step}, its request ${row.rfi} at ${row.rfi_at.toISOString()} (answered in ${request?.tries} tries` +
            `${request?.lostAnswer ? ', the response of the answer that committed lost to a kill' : ''}), its job ${row.job} until ${row.run_at.toISOString()}; ${how}`,
        )
      }
      t.diagnostic(`${rows.length} held movements not woken by their answer: ${stuck.join('; ')}`)
      await crash.query(`update jobs set run_at = now() where status = 'pending' and payload->>'flowId' in (${rows.map((row) => `'${row.id}'`).join(', ') || "''"})`)
      await waitUntil(async () => (await crash.statuses())['on-hold'] === undefined, END_WAIT_MS, 'every held movement to end once woken')
    }
    await crash.drain('every deposit and withdrawal to finish')
    answering = false
    await finder
    await Promise.all(tasks)
    const drained = Date.now()
    assert.deepEqual(unexpected, [], 'the streams and the answers went as they should')

    // The deposits: exactly those the helper was asked for (every one answered 202, any whose answer a kill lost),
    // each once.
    const depositRows = await recordedDeposits()
    const depositOf = new Map(depositRows.map((row) => [keyOf(row.destination_account_id, row.destination_amount), row]))
    assert.equal(depositOf.size, depositRows.length, 'every deposit is its own account and amount')
    const asked = new Map(deposits.map((deposit) => [keyOf(deposit.user.btc, deposit.amount), deposit]))
    assert.deepEqual(depositRows.filter((row) => !asked.has(keyOf(row.destination_account_id, row.destination_amount))).map((row) => row.id), [], 'no deposit besides those asked for')
    for (const deposit of deposits) {
      if (deposit.status === 202) assert.ok(depositOf.has(keyOf(deposit.user.btc, deposit.amount)), `the deposit of ${deposit.amount} to ${deposit.user.btc}, answered 202, was recorded`)
    }
    const smallOf = new Map(depositRows.map((row) => [row.id, asked.get(keyOf(row.destination_account_id, row.destination_amount))!.small]))

    // The withdrawals: one per key and quote, none besides.
    const withdrawalRows = await crash.query<{ id: string; quote_id: string; status: string; reason: string | null; origin_account_id: string; origin_amount: string; destination_amount: string }>(
      "select id::text as id, quote_id::text as quote_id, status, reason, origin_account_id::text as origin_account_id, origin_amount, destination_amount from transactions where type = 'withdrawal'",
    )
    crash.onePerKey(withdrawalRows, 'withdrawal')

    // One request per held movement (each deposit above the threshold, each withdrawal), none for the others; each
    // was answered by its user and became what the answer says.
    const requests = await crash.query<{ id: string; transaction_id: string; status: string; reason: string | null; direction: string; amount: string }>(`
      select r.id::text as id, r.transaction_id::text as transaction_id, r.status, r.reason, r.context->>'direction' as direction, r.context->>'amount' as amount
      from requests_for_information r join transactions t on t.organization_id = r.organization_id and t.id = r.transaction_id
      where t.type = 'withdrawal' or t.reference like 'simulated-deposit:%'`)
    const requestsOf = Map.groupBy(requests, (request) => request.transaction_id)
    const held = [...depositRows.filter((row) => !smallOf.get(row.id)), ...withdrawalRows]
    for (const row of held) assert.equal(requestsOf.get(row.id)?.length, 1, `one request for ${row.id}, not ${requestsOf.get(row.id)?.length ?? 0}`)
    for (const row of depositRows.filter((one) => smallOf.get(one.id))) assert.equal(requestsOf.get(row.id), undefined, `no request for the small deposit ${row.id}`)
    assert.equal(requests.length, held.length)
    const refusedIds = new Set<string>()
    for (const request of requests) {
      const answered = answerings.get(request.id)
      assert.ok(answered?.done, `the request ${request.id} was answered`)
      const want = answered.refuse ? { status: 'failed', reason: 'counterparty-refused' } : { status: 'ok', reason: null }
      assert.deepEqual({ status: request.status, reason: request.reason }, want, `the request ${request.id} (${request.direction})`)
      assert.deepEqual({ status: answered.status, reason: answered.reason ?? null }, want, `the request ${request.id} as its user was told`)
      if (answered.refuse) refusedIds.add(request.transaction_id)
    }

    // Each movement ended as its answer says: accepted, completed; refused, failed for the travel rule. A crash never
    // fails one for a reason of its own.
    for (const row of [...depositRows, ...withdrawalRows]) {
      const want = refusedIds.has(row.id) ? ['failed', 'travel-rule-verification-failed'] : ['completed', null]
      assert.deepEqual([row.status, row.reason], want, `the end of ${row.id}`)
    }

    // The events: created, then each status once (held: on hold, processing again, completed; or on hold, failed).
    const events = await crash.query<{ subject_id: string; type: string; status: string }>(
      "select subject_id::text as subject_id, type, data->'transaction'->>'status' as status from outbox_events where subject_type = 'transaction' order by id",
    )
    const eventsOf = Map.groupBy(events, (event) => event.subject_id)
    for (const row of [...depositRows, ...withdrawalRows]) {
      const announced = (eventsOf.get(row.id) ?? []).map((event) => `${event.type}:${event.status}`)
      const want = smallOf.get(row.id)
        ? ['core.transaction.created:processing', 'core.transaction.status-changed:completed']
        : refusedIds.has(row.id)
          ? ['core.transaction.created:processing', 'core.transaction.status-changed:on-hold', 'core.transaction.status-changed:failed']
          : ['core.transaction.created:processing', 'core.transaction.status-changed:on-hold', 'core.transaction.status-changed:processing', 'core.transaction.status-changed:completed']
      assert.deepEqual(announced, want, `the events of ${row.id}`)
    }
    await crash.announcedOnce(depositRows.filter((row) => smallOf.get(row.id)))

    // The ledger: each held deposit parked in suspense once, settled once from there when accepted, never when
    // refused; a small deposit settled once from the clearing account, never parked.
    const postings = await crash.query<{ reference: string; n: string }>('select reference, count(*) as n from ledger_transactions where reference is not null group by reference')
    const postedOf = new Map(postings.map((posting) => [posting.reference, Number(posting.n)]))
    for (const row of depositRows) {
      const small = smallOf.get(row.id)!
      assert.equal(postedOf.get(`${row.id}:park`) ?? 0, small ? 0 : 1, `the parking of ${row.id}`)
      assert.equal(postedOf.get(row.id) ?? 0, row.status === 'completed' ? 1 : 0, `the settlement of ${row.id} (${row.status})`)
    }
    for (const row of withdrawalRows) assert.equal(postedOf.get(`${row.id}:park`), undefined, `a withdrawal parks nothing: ${row.id}`)
    // The suspense account holds exactly the refused deposits (the funding deposits went through it and out).
    const refusedSum = depositRows.filter((row) => row.status === 'failed').reduce((sum, row) => sum.plus(row.destination_amount), new BigNumber(0))
    const [suspense] = await crash.query<{ total: string; available: string }>(`select total, available from ledger_accounts where organization_id = '${organizationId}' and system_code = 'suspense' and asset = 'BTC'`)
    assert.ok(suspense, 'the BTC suspense account exists')
    assert.ok(new BigNumber(suspense.total).isEqualTo(refusedSum) && new BigNumber(suspense.available).isEqualTo(refusedSum), `the suspense account holds ${suspense.total} (${suspense.available} available), the refused deposits ${refusedSum.toFixed()}`)

    // Each withdrawal's hold captured (completed) or released (failed); the rail got an order for each completed
    // one, once, and none for a refused one.
    const holds = await crash.query<{ reference: string; status: string }>("select reference, status from ledger_holds where reference like '%:hold'")
    const holdOf = new Map(holds.map((hold) => [hold.reference, hold.status]))
    for (const row of withdrawalRows) assert.equal(holdOf.get(`${row.id}:hold`), row.status === 'completed' ? 'captured' : 'released', `the hold of ${row.id}`)
    const orders = await crash.query<{ key: string; status: string; received: number }>('select key, status, received from sandbox_rail_orders')
    assert.deepEqual(orders.map((order) => order.key).sort(), withdrawalRows.filter((row) => row.status === 'completed').map((row) => `${row.id}:submit`).sort(), 'an order for each completed withdrawal, none for a refused one')
    assert.ok(orders.every((order) => order.status === 'completed'), JSON.stringify(orders.filter((order) => order.status !== 'completed')))

    // Every flow ended as its transaction; nothing left to run, held or posted twice.
    for (const type of ['deposit', 'withdrawal']) {
      const flows = await crash.query<{ status: string; n: string }>(`select status, count(*) as n from flows where type = '${type}' group by status`)
      const transactions = await crash.query<{ status: string; n: string }>(`select status, count(*) as n from transactions where type = '${type}' group by status`)
      const count = (rows: { status: string; n: string }[]) => Object.fromEntries(rows.map((row) => [row.status, Number(row.n)]))
      assert.deepEqual(count(flows), count(transactions), `every ${type} flow ended as its transaction`)
    }
    await crash.nothingLeft()

    // Each account holds its funding, plus its completed deposits, less what its completed withdrawals took.
    for (const holder of crash.users) {
      const received = depositRows.filter((row) => row.destination_account_id === holder.btc && row.status === 'completed').reduce((sum, row) => sum.plus(row.destination_amount), new BigNumber(0))
      const spent = withdrawalRows.filter((row) => row.origin_account_id === holder.btc && row.status === 'completed').reduce((sum, row) => sum.plus(row.origin_amount), new BigNumber(0))
      const want = new BigNumber(FUNDING).plus(received).minus(spent).toFixed()
      assert.deepEqual(await crash.balance(holder, holder.btc), { total: want, available: want }, `balance of ${holder.btc}`)
    }

    const report = await checkLedger(crash.database.db)
    assert.deepEqual(report.violations, [], JSON.stringify(report.violations))

    const tally = (rows: { status: string }[]) => Object.fromEntries(Object.entries(Object.groupBy(rows, (row) => row.status)).map(([status, group]) => [status, group!.length]))
    const answers = [...answerings.values()]
    t.diagnostic(
      `${deposits.length} deposits sent, ${depositRows.length} recorded (${[...depositsLost.values()].reduce((a, b) => a + b, 0)} of them with their answer lost to a kill, ` +
        `${deposits.filter((deposit) => deposit.status === undefined).length} answers lost in all), ${depositRows.filter((row) => smallOf.get(row.id)).length} below the threshold: ` +
        `${JSON.stringify(tally(depositRows))}; ${crash.attempts.length} withdrawals committed over ${crash.rounds} rounds (${crash.madeBeforeKill} made before a kill that lost their answer): ` +
        `${JSON.stringify(tally(withdrawalRows))}; ${requests.length} requests answered (${answers.filter((request) => request.refuse).length} refused, ` +
        `${answers.filter((request) => request.tries > 1).length} after a try a kill interrupted, ${answers.filter((request) => request.lostAnswer).length} of them committed with their response lost); ` +
        `hard cases ${JSON.stringify(hardCases)}; suspense ${suspense.total}; ${((drained - started) / 1000).toFixed(1)} s to the end of the drain`,
    )
    assert.ok(hardCases.answeredNotReleased, 'a kill landed while an answered request\'s flow had not gone on yet')

    await crash.finish()

    // An answer wakes its movement's flow, whenever it comes: none waits for its request's expiry.
    assert.deepEqual(stuck, [], 'every held movement went on as soon as its request was answered')
  })
})
