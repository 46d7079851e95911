import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import BigNumber from 'bignumber.js'
import pg from 'pg'
import { buildApp, type Services } from '../src/app.ts'
import { migrateToLatest, openDatabase, type DatabaseHandle } from '../src/db/database.ts'
import type { ClientCredentials } from '../src/modules/auth/clients.service.ts'
import { loadOrCreateSecrets } from '../src/lib/data-dir.ts'
import { basicAuth, bearer, localContext, TEST_DATABASE_URL, testConfig } from './helpers.ts'
import { fund, openAccount, verifiedUser, type Quote, type Transaction } from './money.ts'
import { cli, freePort, scratchDatabase, serve, type Server } from './processes.ts'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

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
/** Every request gives up after this long: the test stops by itself whatever the server does. */
const REQUEST_TIMEOUT_MS = 15_000

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
interface Attempt {
  withdrawer: Withdrawer
  destination: Destination
  quote: Quote
  key: string
  answer?: { status: number; body: string; transactionId?: string }
  error?: string
}

// Several processes share one database: PostgreSQL only.
describe('withdrawals while the server is killed with SIGKILL [postgres]', { skip: TEST_DATABASE_URL ? false : 'needs PostgreSQL (TEST_DATABASE_URL)' }, () => {
  let dataDir: string
  let url: string
  let dropDatabase = async () => {}
  let env: Record<string, string>
  let baseUrl: string
  let services: Services
  let database: DatabaseHandle
  let close: () => Promise<void> = async () => {}
  /** A token the server issued (its issuer is the server's public URL). */
  let token: string
  let client: ClientCredentials
  const withdrawers: Withdrawer[] = []
  const servers: Server[] = []

  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-withdrawals-crash-'))
    const scratch = await scratchDatabase('withdrawals_crash')
    url = scratch.url
    dropDatabase = scratch.drop
    const port = await freePort()
    baseUrl = `http://127.0.0.1:${port}`
    env = {
      DATA_DIR: dataDir,
      DATABASE_URL: url,
      HOST: '127.0.0.1',
      PORT: String(port),
      PUBLIC_URL: baseUrl,
      LOG_LEVEL: 'silent',
      RATE_LIMIT_PER_MINUTE: '0',
      TOKEN_RATE_LIMIT_PER_MINUTE: '0',
      VELOCITY_MAX_MOVEMENTS: '0',
      WORKER_POLL_INTERVAL_MS: '20',
      // The killed server's claimed jobs are taken over a second after its death.
      WORKER_LEASE_MS: '1000',
      WORKER_CONCURRENCY: '8',
      DATABASE_POOL_SIZE: '32',
      // Orders stay with the rail (submitted, not settled) this long: some are in flight at every kill.
      SANDBOX_RAIL_SETTLE_MS: String(RAIL_SETTLE_MS),
    }
    // This process prepares the users, their accounts and their linked bank accounts; it shares the server's keys
    // (so its tokens are the server's) but never runs jobs once the server is up.
    const config = testConfig({ DATABASE_URL: url, DATABASE_POOL_SIZE: '8', VELOCITY_MAX_MOVEMENTS: '0' })
    database = await openDatabase(config)
    await migrateToLatest(database)
    const built = await buildApp({ config, database, secrets: loadOrCreateSecrets(dataDir, config) })
    services = built.services
    close = () => built.app.close()
    client = await services.clients.create({ name: 'Crash test', scopes: '*' })
    const tokenResponse = await built.app.inject({
      method: 'POST',
      url: '/core/oauth2/token',
      headers: { authorization: basicAuth(client), 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'grant_type=client_credentials',
    })
    assert.equal(tokenResponse.statusCode, 200, tokenResponse.body)
    const localToken = tokenResponse.json<{ access_token: string }>().access_token
    const ctx = localContext(built.app, services, database)
    const link = async (userId: string, iban: string) => {
      const response = await ctx.request({
        method: 'POST',
        url: '/core/external-accounts',
        headers: bearer(localToken, userId),
        payload: { type: 'bank', asset: 'EUR', network: 'sepa', label: `IBAN ${iban.slice(-4)}`, iban, bic: 'COBADEFFXXX' },
      })
      assert.equal(response.status, 201, response.body)
      return response.json<{ externalAccount: { id: string } }>().externalAccount.id
    }
    for (let i = 0; i < USERS; i++) {
      const userId = await verifiedUser(ctx, localToken)
      const eur = await openAccount(ctx, localToken, userId, 'EUR')
      await fund(ctx, userId, eur, 'EUR', FUNDING)
      const banks = { completes: await link(userId, IBAN.completes), holderMismatch: await link(userId, IBAN.holderMismatch), countryRestricted: await link(userId, IBAN.countryRestricted) }
      withdrawers.push({ userId, eur, banks })
    }
  })

  after(async () => {
    for (const server of servers) if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL')
    await close()
    await dropDatabase()
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true })
  })

  /** A request to the server as the user; rejects on a connection error or after REQUEST_TIMEOUT_MS. */
  async function send(method: string, withdrawer: Withdrawer, route: string, body?: unknown, headers: Record<string, string> = {}) {
    const response = await fetch(`${baseUrl}${route}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'x-on-behalf-of': `user ${withdrawer.userId}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    })
    return { status: response.status, headers: response.headers, body: await response.text() }
  }

  async function query<T extends pg.QueryResultRow>(text: string): Promise<T[]> {
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    try {
      return (await client.query<T>(text)).rows
    } finally {
      await client.end()
    }
  }

  async function statuses(): Promise<Record<string, number>> {
    const rows = await query<{ status: string; n: string }>("select status, count(*) as n from transactions where type = 'withdrawal' group by status")
    return Object.fromEntries(rows.map((row) => [row.status, Number(row.n)]))
  }

  /**
   * Withdrawals still processing, at `at` (now by default): those whose order the rail holds and has not settled
   * yet (in flight), those the rail settled but whose flow has not confirmed it yet, and those not submitted yet.
   */
  async function inFlight(at?: Date): Promise<{ pendingAtRail: number; settledAtRail: number; notSubmitted: number }> {
    const when = at ? `'${at.toISOString()}'::timestamptz` : 'now()'
    const [row] = await query<{ pending: string; settled: string; not_submitted: string }>(`
      select count(*) filter (where o.settles_at > ${when}) as pending, count(*) filter (where o.settles_at <= ${when}) as settled,
        count(*) filter (where o.key is null) as not_submitted
      from transactions t left join sandbox_rail_orders o on o.key = t.id::text || ':submit'
      where t.type = 'withdrawal' and t.status = 'processing'`)
    return { pendingAtRail: Number(row!.pending), settledAtRail: Number(row!.settled), notSubmitted: Number(row!.not_submitted) }
  }

  async function waitUntil(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
    const deadline = Date.now() + timeoutMs
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
      await sleep(50)
    }
  }

  test('every withdrawal ends once, its order sent to the rail once, whatever the kill interrupted; the books balance', async (t) => {
    const attempts: Attempt[] = []
    /** Per key, the transaction its retries answered. */
    const ids = new Map<string, string>()
    let server: Server | undefined
    let madeBeforeKill = 0
    let rounds = 0
    /** Makes every amount unique: a second withdrawal of one amount to one place within two minutes is refused. */
    let counter = 0

    const start = async () => {
      server = await serve(env)
      servers.push(server)
    }
    await start()
    const issued = await fetch(`${baseUrl}/core/oauth2/token`, {
      method: 'POST',
      headers: { authorization: basicAuth(client), 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=client_credentials',
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    })
    assert.equal(issued.status, 200)
    token = ((await issued.json()) as { access_token: string }).access_token

    // A round: the stream runs, the server is killed in its middle (with orders at the rail not settled yet) and
    // restarted, every commit of the round is retried. At least ROUNDS_AT_LEAST rounds, and more (ROUNDS_AT_MOST
    // at most) until one commit was made but its answer lost, the hardest case.
    while (rounds < ROUNDS_AT_LEAST || (rounds < ROUNDS_AT_MOST && madeBeforeKill === 0)) {
      rounds++
      const round: Attempt[] = []
      const unexpected: string[] = []
      let stopping = false

      // Quote, then commit under a key; stops at the first request the server does not answer.
      const withdraw = async (n: number) => {
        const withdrawer = withdrawers[n % withdrawers.length]!
        for (let i = 0; !stopping; i++) {
          const slot = (n + i) % 8
          const destination: Destination = slot === 6 ? 'holderMismatch' : slot === 7 ? 'countryRestricted' : 'completes'
          const amount = new BigNumber(++counter).div(100).plus(1).toFixed()
          let quote: Quote
          try {
            const response = await send('POST', withdrawer, '/core/transactions/quote', {
              origin: { type: 'account', id: withdrawer.eur },
              destination: { type: 'external-account', id: withdrawer.banks[destination] },
              denomination: { asset: 'EUR', amount },
              ttl: 300_000,
            })
            if (response.status !== 201) {
              unexpected.push(`quote: ${response.status} ${response.body}`)
              return
            }
            quote = (JSON.parse(response.body) as { quote: Quote }).quote
          } catch {
            return
          }
          const attempt: Attempt = { withdrawer, destination, quote, key: `crash-${quote.id}` }
          round.push(attempt)
          try {
            const response = await send('POST', withdrawer, '/core/transactions', { quoteId: quote.id }, { 'idempotency-key': attempt.key })
            attempt.answer = { status: response.status, body: response.body }
            if (response.status === 201) attempt.answer.transactionId = (JSON.parse(response.body) as { transaction: Transaction }).transaction.id
            else unexpected.push(`commit: ${response.status} ${response.body}`)
          } catch (error) {
            attempt.error = String((error as Error).cause ?? error)
            return
          }
        }
      }

      const streams = Array.from({ length: WITHDRAWERS }, (_, n) => withdraw(n))
      let streaming = WITHDRAWERS
      for (const stream of streams) void stream.finally(() => streaming--)
      await waitUntil(
        async () => (round.filter((a) => a.answer?.status === 201).length >= ANSWERED_BEFORE_KILL && (await inFlight()).pendingAtRail >= IN_FLIGHT_BEFORE_KILL) || streaming === 0,
        30_000,
        `${ANSWERED_BEFORE_KILL} answered commits and ${IN_FLIGHT_BEFORE_KILL} orders in flight`,
      )
      assert.deepEqual(unexpected, [], 'the stream runs as it should until the kill')
      assert.ok(streaming > 0, 'the stream runs until the kill')
      // Frozen first, then killed: the database finishes what the server had already sent it (a COMMIT among
      // others, or the rail's record of an order whose step has not committed), but the server never answers.
      server!.child.kill('SIGSTOP')
      const frozenAt = new Date()
      stopping = true
      await sleep(300)
      server!.child.kill('SIGKILL')
      await server!.exited
      const atKill = await statuses()
      const flightAtKill = await inFlight(frozenAt)
      await Promise.all(streams)

      const unanswered = round.filter((a) => a.answer === undefined)
      assert.deepEqual(unexpected, [])
      assert.ok(unanswered.length > 0, 'the kill landed while commits were in flight')
      assert.ok(unanswered.every((a) => a.error !== undefined))
      assert.ok(flightAtKill.pendingAtRail > 0, `the kill landed while orders were in flight at the rail: ${JSON.stringify(flightAtKill)}`)

      await start()
      // Retries with the same key and quote: an answered commit replays its answer; an unanswered one is made
      // now, or was made before the kill and replays it. Either way one transaction per key.
      let replayed = 0
      for (const attempt of round) {
        const retry = await send('POST', attempt.withdrawer, '/core/transactions', { quoteId: attempt.quote.id }, { 'idempotency-key': attempt.key })
        assert.equal(retry.status, 201, `${attempt.key}: ${retry.body}`)
        const transaction = (JSON.parse(retry.body) as { transaction: Transaction }).transaction
        if (attempt.answer) {
          assert.equal(retry.headers.get('idempotent-replayed'), 'true', attempt.key)
          assert.equal(transaction.id, attempt.answer.transactionId)
          assert.deepEqual(JSON.parse(retry.body), JSON.parse(attempt.answer.body))
        } else if (retry.headers.get('idempotent-replayed') === 'true') {
          replayed++
        }
        assert.equal(transaction.type, 'withdrawal')
        assert.deepEqual([transaction.origin, transaction.destination, transaction.fees], [attempt.quote.origin, attempt.quote.destination, attempt.quote.fees], attempt.key)
        ids.set(attempt.key, transaction.id)
      }
      madeBeforeKill += replayed
      attempts.push(...round)
      t.diagnostic(
        `round ${rounds}: ${round.length} commits sent, ${unanswered.length} unanswered at the kill (${replayed} of them made before it, ` +
          `${unanswered.length - replayed} by their retry); withdrawals at the kill ${JSON.stringify(atKill)}, of the processing ones ` +
          `${flightAtKill.pendingAtRail} with an order in flight at the rail, ${flightAtKill.settledAtRail} settled by the rail but not confirmed yet, ` +
          `${flightAtKill.notSubmitted} not submitted yet`,
      )
    }

    // Once more, every key: the same transaction, replayed.
    for (const attempt of attempts) {
      const again = await send('POST', attempt.withdrawer, '/core/transactions', { quoteId: attempt.quote.id }, { 'idempotency-key': attempt.key })
      assert.equal(again.status, 201, again.body)
      assert.equal(again.headers.get('idempotent-replayed'), 'true')
      assert.equal((JSON.parse(again.body) as { transaction: Transaction }).transaction.id, ids.get(attempt.key))
    }

    await waitUntil(async () => (await statuses()).processing === undefined, 60_000, 'every withdrawal to finish')

    // One transaction per key and per quote, and none besides (every row, even one whose answer was lost, is one
    // of the keys': its retry found it).
    const rows = await query<{ id: string; quote_id: string; status: string; reason: string | null; origin_account_id: string; origin_amount: string; destination_asset: string; destination_amount: string }>(
      "select id, quote_id, status, reason, origin_account_id, origin_amount, destination_asset, destination_amount from transactions where type = 'withdrawal'",
    )
    assert.equal(new Set(ids.values()).size, attempts.length, 'a transaction per key')
    assert.equal(rows.length, attempts.length, 'as many withdrawals as keys answered 201')
    assert.equal(new Set(rows.map((row) => row.quote_id)).size, rows.length, 'at most one withdrawal per quote')
    const byId = new Map(rows.map((row) => [row.id, row]))
    const destinationOf = new Map(attempts.map((attempt) => [ids.get(attempt.key)!, attempt.destination]))
    for (const attempt of attempts) {
      const row = byId.get(ids.get(attempt.key)!)
      assert.ok(row, `the withdrawal of ${attempt.key} exists`)
      assert.equal(row.quote_id, attempt.quote.id)
      assert.ok(new BigNumber(row.origin_amount).isEqualTo(attempt.quote.origin.amount))
      assert.ok(new BigNumber(row.destination_amount).isEqualTo(attempt.quote.destination.amount))
      // Each ends as the rail's test value says: a crash never fails a withdrawal for a reason of its own.
      const outcome = OUTCOME[attempt.destination]
      assert.deepEqual([row.status, row.reason], [outcome.status, outcome.reason ?? null], `the end of ${row.id} (to ${attempt.destination})`)
    }

    // Each reached its final status exactly once: one status change, to that status, announced once.
    const events = await query<{ subject_id: string; type: string; status: string }>(
      "select subject_id, type, data->'transaction'->>'status' as status from outbox_events where subject_type = 'transaction' order by id",
    )
    const eventsOf = Map.groupBy(events.filter((event) => byId.has(event.subject_id)), (event) => event.subject_id)
    for (const row of rows) {
      const announced = (eventsOf.get(row.id) ?? []).map((event) => `${event.type}:${event.status}`)
      assert.deepEqual(announced, ['core.transaction.created:processing', `core.transaction.status-changed:${row.status}`], `the events of ${row.id}`)
    }

    // The rail: one order per withdrawal that reached the submit step, under its key, none besides; the completed
    // withdrawals are exactly its completed orders. A key submitted again (a crash between the call and the commit
    // of its step; also, today, a batch whose step failed for one flow and was run again flow by flow) is the same
    // order: same amount, same beneficiary, counted in `received`.
    const steps = await query<{ flow_id: string; step: string; action: string }>("select s.flow_id, s.step, s.action from flow_steps s join flows f on f.organization_id = s.organization_id and f.id = s.flow_id where f.type = 'withdrawal'")
    const stepsOf = Map.groupBy(steps, (step) => step.flow_id)
    // Reached it: the submit step committed (the rail took the order), or the flow failed there with the rail's refusal.
    const reachedSubmit = new Set(
      rows
        .filter((row) => (stepsOf.get(row.id) ?? []).some((step) => step.step === 'submit' && (step.action === 'run' || (step.action === 'fail' && RAIL_REASONS.has(row.reason!)))))
        .map((row) => row.id),
    )
    const failedBeforeSubmit = rows.filter((row) => !reachedSubmit.has(row.id))
    for (const row of failedBeforeSubmit) assert.ok(row.status === 'failed' && !RAIL_REASONS.has(row.reason!), `${row.id} never reached the rail, yet ${row.status} ${row.reason}`)
    const orders = await query<{ key: string; reference: string; status: string; reason: string | null; amount: string; asset: string; iban: string; received: number; direction: string }>(
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
    const flows = await query<{ status: string; n: string }>("select status, count(*) as n from flows where type = 'withdrawal' group by status")
    const ended = await statuses()
    assert.deepEqual(Object.fromEntries(flows.map((row) => [row.status, Number(row.n)])), ended, 'every withdrawal flow ended as its withdrawal')
    assert.deepEqual(await query("select id, type from flows where status = 'running'"), [], 'no flow is left running')
    assert.deepEqual(await query("select id, type, status from jobs where status <> 'completed'"), [])
    assert.deepEqual(await query("select id, account_id from ledger_holds where status = 'open'"), [], 'no hold is left open')
    const holds = await query<{ reference: string; status: string }>("select reference, status from ledger_holds where reference like '%:hold'")
    const holdOf = new Map(holds.map((hold) => [hold.reference, hold.status]))
    for (const row of rows) assert.equal(holdOf.get(`${row.id}:hold`), row.status === 'completed' ? 'captured' : 'released', `the hold of ${row.id}`)
    assert.deepEqual(await query('select reference, count(*) as n from ledger_transactions where reference is not null group by reference having count(*) > 1'), [], 'nothing is posted twice')

    // Each account holds its funding less what its completed withdrawals took.
    for (const withdrawer of withdrawers) {
      const spent = rows.filter((row) => row.origin_account_id === withdrawer.eur && row.status === 'completed').reduce((sum, row) => sum.plus(row.origin_amount), new BigNumber(0))
      const response = await send('GET', withdrawer, `/core/accounts/${withdrawer.eur}`)
      assert.equal(response.status, 200, response.body)
      const { balance } = (JSON.parse(response.body) as { account: { balance: { total: string; available: string } } }).account
      const want = new BigNumber(FUNDING).minus(spent).toFixed()
      assert.deepEqual(balance, { total: want, available: want }, `balance of ${withdrawer.eur}`)
    }

    t.diagnostic(
      `${attempts.length} withdrawals committed over ${rounds} rounds (${madeBeforeKill} made before a kill that lost their answer): ${JSON.stringify(ended)}; ` +
        `${orders.length} orders at the rail, ${resubmitted.length} of them submitted more than once (orders by submissions: ${submissions}); ` +
        `${failedBeforeSubmit.length} failed before the submit step`,
    )

    server!.child.kill('SIGTERM')
    assert.equal(await server!.exited, 0)
    const check = await cli(['ledger', 'check'], env)
    assert.equal(check.code, 0, check.stderr)
    assert.equal((JSON.parse(check.stdout) as { ok: boolean }).ok, true)
  })
})
