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
import { basicAuth, localContext, TEST_DATABASE_URL, testConfig } from './helpers.ts'
import { fund, openAccount, verifiedUser, type Quote, type Transaction } from './money.ts'
import { cli, freePort, scratchDatabase, serve, type Server } from './processes.ts'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Parallel streams of quote-then-commit against the server, spread over the users. */
const TRADERS = 32
const USERS = 16
/** Kill-and-restart rounds, until a commit is made whose answer the kill lost. */
const ROUNDS_AT_MOST = 5
/** The server is killed once this many commits of the round were answered 201. */
const ANSWERED_BEFORE_KILL = 60
/** Every request gives up after this long: the test stops by itself whatever the server does. */
const REQUEST_TIMEOUT_MS = 15_000

interface Trader {
  userId: string
  eur: string
  btc: string
  eur2: string
}

/** One commit of the stream: its quote and key, and what the first request got. */
interface Attempt {
  trader: Trader
  quote: Quote
  key: string
  answer?: { status: number; body: string; transactionId?: string }
  error?: string
}

// Several processes share one database: PostgreSQL only.
describe('trades while the server is killed with SIGKILL [postgres]', { skip: TEST_DATABASE_URL ? false : 'needs PostgreSQL (TEST_DATABASE_URL)' }, () => {
  let dataDir: string
  let url: string
  let dropDatabase = async () => {}
  let env: Record<string, string>
  let baseUrl: string
  let services: Services
  let database: DatabaseHandle
  let close: () => Promise<void> = async () => {}
  let organizationId: string
  /** A token of the local app, for the setup. */
  let localToken: string
  /** A token the server issued (its issuer is the server's public URL). */
  let token: string
  let client: ClientCredentials
  const traders: Trader[] = []
  const servers: Server[] = []

  before(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-trades-crash-'))
    const scratch = await scratchDatabase('trades_crash')
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
    }
    // This process prepares the users and records deposits as the rails do; it shares the server's keys (so its
    // tokens are the server's) but never runs jobs once the server is up.
    const config = testConfig({ DATABASE_URL: url, DATABASE_POOL_SIZE: '8', VELOCITY_MAX_MOVEMENTS: '0' })
    database = await openDatabase(config)
    await migrateToLatest(database)
    const built = await buildApp({ config, database, secrets: loadOrCreateSecrets(dataDir, config) })
    services = built.services
    close = () => built.app.close()
    client = await services.clients.create({ name: 'Crash test', scopes: '*' })
    organizationId = client.organizationId
    const tokenResponse = await built.app.inject({
      method: 'POST',
      url: '/core/oauth2/token',
      headers: { authorization: basicAuth(client), 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'grant_type=client_credentials',
    })
    assert.equal(tokenResponse.statusCode, 200, tokenResponse.body)
    localToken = tokenResponse.json<{ access_token: string }>().access_token
    const ctx = localContext(built.app, services, database)
    for (let i = 0; i < USERS; i++) {
      const userId = await verifiedUser(ctx, localToken)
      const trader = { userId, eur: await openAccount(ctx, localToken, userId, 'EUR'), btc: await openAccount(ctx, localToken, userId, 'BTC'), eur2: await openAccount(ctx, localToken, userId, 'EUR') }
      await fund(ctx, userId, trader.eur, 'EUR', '100000')
      await fund(ctx, userId, trader.btc, 'BTC', '2')
      traders.push(trader)
    }
  })

  after(async () => {
    for (const server of servers) if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL')
    await close()
    await dropDatabase()
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true })
  })

  /** A request to the server as the trader; rejects on a connection error or after REQUEST_TIMEOUT_MS. */
  async function send(method: string, trader: Trader, route: string, body?: unknown, headers: Record<string, string> = {}) {
    const response = await fetch(`${baseUrl}${route}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'x-on-behalf-of': `user ${trader.userId}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
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
    const rows = await query<{ status: string; n: string }>('select status, count(*) as n from transactions group by status')
    return Object.fromEntries(rows.map((row) => [row.status, Number(row.n)]))
  }

  async function waitUntil(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
    const deadline = Date.now() + timeoutMs
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
      await sleep(50)
    }
  }

  test('every commit is made once whatever the kill interrupted; retries with the same key replay it; the books balance', async (t) => {
    const attempts: Attempt[] = []
    const deposits: { accountId: string; transactionId: string }[] = []
    /** Per key, the transaction its retries answered. */
    const ids = new Map<string, string>()
    let server: Server | undefined
    let madeBeforeKill = 0
    let rounds = 0

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

    // A round: the stream runs, the server is killed in its middle and restarted, every commit of the round is
    // retried. Rounds go on (ROUNDS_AT_MOST at most) until one commit was made but its answer lost, the hardest case.
    while (rounds < ROUNDS_AT_MOST && (rounds === 0 || madeBeforeKill === 0)) {
      rounds++
      const round: Attempt[] = []
      const unexpected: string[] = []
      let stopping = false

      // Quote, then commit under a key; stops at the first request the server does not answer.
      const trade = async (n: number) => {
        const trader = traders[n % traders.length]!
        for (let i = 0; !stopping; i++) {
          const [origin, destination, asset, amount] = [
            [trader.eur, trader.btc, 'EUR', `${10 + (i % 40)}.${String(i % 100).padStart(2, '0')}`],
            [trader.eur, trader.eur2, 'EUR', `${1 + (i % 9)}.25`],
            [trader.btc, trader.eur, 'BTC', `0.000${10 + (i % 80)}`],
          ][(n + i) % 3]!
          let quote: Quote
          try {
            const response = await send('POST', trader, '/core/transactions/quote', {
              origin: { type: 'account', id: origin },
              destination: { type: 'account', id: destination },
              denomination: { asset, amount, target: 'origin' },
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
          const attempt: Attempt = { trader, quote, key: `crash-${quote.id}` }
          round.push(attempt)
          try {
            const response = await send('POST', trader, '/core/transactions', { quoteId: quote.id }, { 'idempotency-key': attempt.key })
            attempt.answer = { status: response.status, body: response.body }
            if (response.status === 201) attempt.answer.transactionId = (JSON.parse(response.body) as { transaction: Transaction }).transaction.id
            else unexpected.push(`commit: ${response.status} ${response.body}`)
          } catch (error) {
            attempt.error = String((error as Error).cause ?? error)
            return
          }
        }
      }

      // Deposits keep arriving through the kill, recorded straight into the database as the rails do.
      let depositing = true
      const recordDeposits = async () => {
        for (let i = 0; depositing && i < 300; i++) {
          const trader = traders[i % traders.length]!
          const [accountId, asset, amount, network] = i % 2 === 0
            ? [trader.eur, 'EUR', `${1 + (i % 50)}.${String(i % 100).padStart(2, '0')}`, 'sepa']
            : [trader.btc, 'BTC', `0.00${String(100 + i).padStart(4, '0')}`, 'bitcoin']
          const { transactionId } = await services.deposits.record(database.db, { organizationId, userId: trader.userId, accountId, asset, amount, network, reference: `crash-${rounds}-${i}` })
          deposits.push({ accountId, transactionId })
          await sleep(5)
        }
      }

      const recording = recordDeposits()
      const streams = Array.from({ length: TRADERS }, (_, n) => trade(n))
      let streaming = TRADERS
      for (const stream of streams) void stream.finally(() => streaming--)
      await waitUntil(async () => round.filter((a) => a.answer?.status === 201).length >= ANSWERED_BEFORE_KILL || streaming === 0, 30_000, `${ANSWERED_BEFORE_KILL} answered commits`)
      assert.deepEqual(unexpected, [], 'the stream runs as it should until the kill')
      assert.ok(streaming > 0, 'the stream runs until the kill')
      // Frozen first, then killed: the database finishes what the server had already sent it (a COMMIT among
      // others), but the server never answers. This is a kill at the instant of the freeze, and it makes the
      // hardest case (the commit is made, its answer is lost) likelier.
      server!.child.kill('SIGSTOP')
      stopping = true
      await sleep(300)
      server!.child.kill('SIGKILL')
      await server!.exited
      const atKill = await statuses()
      await Promise.all(streams)
      await sleep(200)
      depositing = false
      await recording

      const unanswered = round.filter((a) => a.answer === undefined)
      assert.deepEqual(unexpected, [])
      assert.ok(unanswered.length > 0, 'the kill landed while commits were in flight')
      assert.ok(unanswered.every((a) => a.error !== undefined))
      assert.ok((atKill.processing ?? 0) > 0, `the kill landed while transactions were processing: ${JSON.stringify(atKill)}`)

      await start()
      // Retries with the same key and quote: an answered commit replays its answer; an unanswered one is made
      // now, or was made before the kill and replays it. Either way one transaction per key.
      let replayed = 0
      for (const attempt of round) {
        const retry = await send('POST', attempt.trader, '/core/transactions', { quoteId: attempt.quote.id }, { 'idempotency-key': attempt.key })
        assert.equal(retry.status, 201, `${attempt.key}: ${retry.body}`)
        const transaction = (JSON.parse(retry.body) as { transaction: Transaction }).transaction
        if (attempt.answer) {
          assert.equal(retry.headers.get('idempotent-replayed'), 'true', attempt.key)
          assert.equal(transaction.id, attempt.answer.transactionId)
          assert.deepEqual(JSON.parse(retry.body), JSON.parse(attempt.answer.body))
        } else if (retry.headers.get('idempotent-replayed') === 'true') {
          replayed++
        }
        assert.deepEqual([transaction.origin, transaction.destination, transaction.fees], [attempt.quote.origin, attempt.quote.destination, attempt.quote.fees], attempt.key)
        ids.set(attempt.key, transaction.id)
      }
      madeBeforeKill += replayed
      attempts.push(...round)
      t.diagnostic(
        `round ${rounds}: ${round.length} commits sent, ${unanswered.length} unanswered at the kill (${replayed} of them made before it, ` +
          `${unanswered.length - replayed} by their retry); transactions at the kill ${JSON.stringify(atKill)}; ${deposits.length} deposits so far`,
      )
    }

    // Once more, every key: the same transaction, replayed.
    for (const attempt of attempts) {
      const again = await send('POST', attempt.trader, '/core/transactions', { quoteId: attempt.quote.id }, { 'idempotency-key': attempt.key })
      assert.equal(again.status, 201, again.body)
      assert.equal(again.headers.get('idempotent-replayed'), 'true')
      assert.equal((JSON.parse(again.body) as { transaction: Transaction }).transaction.id, ids.get(attempt.key))
    }

    await waitUntil(async () => (await statuses()).processing === undefined, 60_000, 'every transaction to finish')

    // One transaction per key and per quote, and none besides.
    const movements = await query<{ id: string; quote_id: string; origin_amount: string; destination_amount: string }>(
      "select id, quote_id, origin_amount, destination_amount from transactions where type in ('trade', 'transfer')",
    )
    assert.equal(new Set(ids.values()).size, attempts.length, 'a transaction per key')
    assert.equal(movements.length, attempts.length, 'as many transactions as keys answered 201')
    assert.equal(new Set(movements.map((row) => row.quote_id)).size, movements.length, 'at most one transaction per quote')
    const byId = new Map(movements.map((row) => [row.id, row]))
    for (const attempt of attempts) {
      const row = byId.get(ids.get(attempt.key)!)
      assert.ok(row, `the transaction of ${attempt.key} exists`)
      assert.equal(row.quote_id, attempt.quote.id)
      assert.ok(new BigNumber(row.origin_amount).isEqualTo(attempt.quote.origin.amount))
      assert.ok(new BigNumber(row.destination_amount).isEqualTo(attempt.quote.destination.amount))
    }
    const recorded = await query<{ id: string }>("select id from transactions where type = 'deposit'")
    assert.equal(recorded.length, deposits.length + 2 * traders.length, 'every deposit recorded once')

    // Every flow finished, and nothing failed: the money was there and velocity is off.
    const everything = attempts.length + deposits.length + 2 * traders.length
    const flows = await query<{ status: string; n: string }>('select status, count(*) as n from flows group by status')
    assert.deepEqual(Object.fromEntries(flows.map((row) => [row.status, Number(row.n)])), { completed: everything })
    assert.deepEqual(await statuses(), { completed: everything })
    assert.deepEqual(await query("select id, type, status from jobs where status <> 'completed'"), [])
    assert.deepEqual(await query("select id, account_id from ledger_holds where status = 'open'"), [], 'no hold is left open')
    assert.deepEqual(await query('select reference, count(*) as n from ledger_transactions where reference is not null group by reference having count(*) > 1'), [], 'nothing is posted twice')

    // Each account holds what its completed transactions say.
    const completed = await query<{ origin_account_id: string | null; destination_account_id: string | null; origin_amount: string; destination_amount: string }>(
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
        const response = await send('GET', trader, `/core/accounts/${accountId}`)
        assert.equal(response.status, 200, response.body)
        const { balance } = (JSON.parse(response.body) as { account: { balance: { total: string; available: string } } }).account
        const want = (expected.get(accountId) ?? new BigNumber(0)).toFixed()
        assert.deepEqual(balance, { total: want, available: want }, `balance of ${accountId}`)
      }
    }

    server!.child.kill('SIGTERM')
    assert.equal(await server!.exited, 0)
    const check = await cli(['ledger', 'check'], env)
    assert.equal(check.code, 0, check.stderr)
    assert.equal((JSON.parse(check.stdout) as { ok: boolean }).ok, true)
  })
})
