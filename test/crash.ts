/**
 * The machinery of the kill -9 tests (test/*-crash.test.ts): a real `tessera serve` on its own scratch PostgreSQL
 * database (prepared in this process first), parallel streams of quote-then-commit against it, the server frozen
 * (SIGSTOP) then killed (SIGKILL) in their middle and restarted, every commit retried under its key; and the checks
 * those tests share once every transaction ended. What differs (the users, the quotes, what the kill should land
 * on, what each transaction should end as) is each test's.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before } from 'node:test'
import BigNumber from 'bignumber.js'
import pg from 'pg'
import { buildApp, type Services } from '../src/app.ts'
import { migrateToLatest, openDatabase, type DatabaseHandle } from '../src/db/database.ts'
import type { ClientCredentials } from '../src/modules/auth/clients.service.ts'
import { loadOrCreateSecrets } from '../src/lib/data-dir.ts'
import { basicAuth, bearer, localContext, TEST_DATABASE_URL, testConfig, type TestContext } from './helpers.ts'
import type { Quote, Transaction } from './money.ts'
import { cli, freePort, scratchDatabase, serve, type Server } from './processes.ts'

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Several processes share one database: PostgreSQL only. */
export const POSTGRES_ONLY = { skip: TEST_DATABASE_URL ? false : 'needs PostgreSQL (TEST_DATABASE_URL)' }

/** Every request gives up after this long: the test stops by itself whatever the server does. */
export const REQUEST_TIMEOUT_MS = 15_000

export async function waitUntil(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(50)
  }
}

/** Links an external account (a bank account, a card) to the user, in process; its id. */
export async function linkExternalAccount(ctx: TestContext, token: string, userId: string, payload: Record<string, unknown>): Promise<string> {
  const response = await ctx.request({ method: 'POST', url: '/core/external-accounts', headers: bearer(token, userId), payload })
  assert.equal(response.status, 201, response.body)
  return response.json<{ externalAccount: { id: string } }>().externalAccount.id
}

export interface User {
  userId: string
}

/** One commit of a stream: as whom, its quote and key, and what the first request got. */
export interface Commit<U extends User = User> {
  user: U
  quote: Quote
  key: string
  answer?: { status: number; body: string; transactionId?: string }
  error?: string
}

/** What the before hook hands the test's preparation: the in-process app, on the server's database and keys. */
export interface Setup {
  ctx: TestContext
  /** A token of the in-process app. */
  token: string
}

export interface CrashOptions<U extends User> {
  /** Names the data directory and the scratch database ('withdrawals-crash'). */
  name: string
  /** The server's environment, besides what every crash test runs with. */
  env?: Record<string, string>
  /** The in-process app's environment, besides what every crash test prepares with. */
  config?: Record<string, string>
  /** The transactions the test makes: statuses() counts only these (every transaction without). */
  type?: string
  /** The body that commits a quote ({ quoteId } without). */
  commitBody?: (quote: Quote) => unknown
  /** Prepares the users (accounts, funds, linked accounts) in process, before the server starts. */
  prepare: (setup: Setup) => Promise<U[]>
}

export interface RoundSpec<U extends User, A extends Commit<U>, P> {
  /** Parallel streams of quote-then-commit, stream n as user n (modulo the users). */
  streams: number
  /** Whether to run another round; asked before each. */
  more: () => boolean
  /** Commit i of stream n: its quote request, and what its attempt carries besides the commit. */
  next: (user: U, n: number, i: number) => { quote: Record<string, unknown>; with: Omit<A, keyof Commit<U>> }
  /** Called with each commit answered 201, first or on retry. */
  committed?: (attempt: A, transaction: Transaction) => void
  /** The server is killed once this many commits of the round were answered 201 … */
  answeredBeforeKill: number
  /** … and this says the moment is right too; what both wait for, in words. */
  ready?: () => Promise<boolean>
  waitingFor: string
  /** What is looked at once the server is dead, before the streams end; `frozenAt` is when it was frozen. */
  atKill: (frozenAt: Date) => Promise<P>
  /** Started with each round's streams and stopped once they ended. */
  beside?: () => { stop: () => Promise<void> }
  /** Asserts what the kill landed on, before the restart. */
  landed: (atKill: P) => void
  /** Asserts the transaction a retry answered, against its attempt. */
  check: (attempt: A, transaction: Transaction) => void
  /** Reports the round, once every commit of it was retried. */
  report: (round: RoundReport<A, P>) => void
}

export interface RoundReport<A, P> {
  number: number
  round: A[]
  unanswered: A[]
  /** Of the unanswered commits, those made before the kill (their retry replayed them). */
  replayed: number
  atKill: P
  started: number
}

/**
 * A crash test's fixture and machinery; created in a describe, whose before and after hooks it registers: the
 * scratch database and data directory, migrated, the users prepared in process, and on the way out every server
 * killed and everything dropped.
 */
export class Crash<U extends User, A extends Commit<U>> {
  env: Record<string, string> = {}
  baseUrl = ''
  url = ''
  services!: Services
  database!: DatabaseHandle
  client!: ClientCredentials
  users: U[] = []
  /** A token the server issued (its issuer is the server's public URL). */
  token = ''
  server: Server | undefined
  readonly servers: Server[] = []
  /** Every commit of the finished rounds. */
  readonly attempts: A[] = []
  /** Per key, the transaction its retries answered. */
  readonly ids = new Map<string, string>()
  /** Commits made before a kill that lost their answer. */
  madeBeforeKill = 0
  rounds = 0
  private readonly options: CrashOptions<U>

  constructor(options: CrashOptions<U>) {
    this.options = options
    let dataDir: string | undefined
    let dropDatabase = async () => {}
    let close = async () => {}

    before(async () => {
      dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `tessera-${options.name}-`))
      const scratch = await scratchDatabase(options.name.replaceAll('-', '_'))
      this.url = scratch.url
      dropDatabase = scratch.drop
      const port = await freePort()
      this.baseUrl = `http://127.0.0.1:${port}`
      this.env = {
        DATA_DIR: dataDir,
        DATABASE_URL: this.url,
        HOST: '127.0.0.1',
        PORT: String(port),
        PUBLIC_URL: this.baseUrl,
        LOG_LEVEL: 'silent',
        RATE_LIMIT_PER_MINUTE: '0',
        TOKEN_RATE_LIMIT_PER_MINUTE: '0',
        VELOCITY_MAX_MOVEMENTS: '0',
        WORKER_POLL_INTERVAL_MS: '20',
        // The killed server's claimed jobs are taken over a second after its death.
        WORKER_LEASE_MS: '1000',
        WORKER_CONCURRENCY: '8',
        DATABASE_POOL_SIZE: '32',
        ...options.env,
      }
      // This process prepares the users; it shares the server's keys (so its tokens are the server's) but never
      // runs jobs once the server is up.
      const config = testConfig({ DATABASE_URL: this.url, DATABASE_POOL_SIZE: '8', VELOCITY_MAX_MOVEMENTS: '0', ...options.config })
      this.database = await openDatabase(config)
      await migrateToLatest(this.database)
      const built = await buildApp({ config, database: this.database, secrets: loadOrCreateSecrets(dataDir, config) })
      this.services = built.services
      close = () => built.app.close()
      this.client = await this.services.clients.create({ name: 'Crash test', scopes: '*' })
      const tokenResponse = await built.app.inject({
        method: 'POST',
        url: '/core/oauth2/token',
        headers: { authorization: basicAuth(this.client), 'content-type': 'application/x-www-form-urlencoded' },
        payload: 'grant_type=client_credentials',
      })
      assert.equal(tokenResponse.statusCode, 200, tokenResponse.body)
      const token = tokenResponse.json<{ access_token: string }>().access_token
      this.users = await options.prepare({ ctx: localContext(built.app, this.services, this.database), token })
    })

    after(async () => {
      for (const server of this.servers) if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL')
      await close()
      await dropDatabase()
      if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true })
    })
  }

  /** A request to the server as the user; rejects on a connection error or after REQUEST_TIMEOUT_MS. */
  async send(method: string, user: User, route: string, body?: unknown, headers: Record<string, string> = {}) {
    const response = await fetch(`${this.baseUrl}${route}`, {
      method,
      headers: { authorization: `Bearer ${this.token}`, 'x-on-behalf-of': `user ${user.userId}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    })
    return { status: response.status, headers: response.headers, body: await response.text() }
  }

  /** Commits the attempt's quote under its key. */
  commit(attempt: A) {
    const body = this.options.commitBody?.(attempt.quote) ?? { quoteId: attempt.quote.id }
    return this.send('POST', attempt.user, '/core/transactions', body, { 'idempotency-key': attempt.key })
  }

  async query<T extends pg.QueryResultRow>(text: string): Promise<T[]> {
    const client = new pg.Client({ connectionString: this.url })
    await client.connect()
    try {
      return (await client.query<T>(text)).rows
    } finally {
      await client.end()
    }
  }

  /** The test's transactions (options.type), counted by status. */
  async statuses(): Promise<Record<string, number>> {
    const where = this.options.type ? ` where type = '${this.options.type}'` : ''
    const rows = await this.query<{ status: string; n: string }>(`select status, count(*) as n from transactions${where} group by status`)
    return Object.fromEntries(rows.map((row) => [row.status, Number(row.n)]))
  }

  /** Starts the server; the first time, has it issue the token the requests carry. */
  async start(): Promise<void> {
    this.server = await serve(this.env)
    this.servers.push(this.server)
    if (this.token) return
    const issued = await fetch(`${this.baseUrl}/core/oauth2/token`, {
      method: 'POST',
      headers: { authorization: basicAuth(this.client), 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=client_credentials',
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    })
    assert.equal(issued.status, 200)
    this.token = ((await issued.json()) as { access_token: string }).access_token
  }

  /**
   * Rounds, while spec.more() says so: the streams run, the server is frozen and killed in their middle and
   * restarted, every commit of the round is retried with the same key and quote. An answered commit replays its
   * answer; an unanswered one is made by its retry, or was made before the kill and replays it. Either way one
   * transaction per key.
   */
  async run<P>(spec: RoundSpec<U, A, P>): Promise<void> {
    while (spec.more()) {
      this.rounds++
      const started = Date.now()
      const round: A[] = []
      const unexpected: string[] = []
      let stopping = false
      /** Commits sent and not answered yet: the freeze waits for one, so that every kill lands in a commit. */
      let committing = 0

      // Quote, then commit under a key; stops at the first request the server does not answer.
      const stream = async (n: number) => {
        const user = this.users[n % this.users.length]!
        for (let i = 0; !stopping; i++) {
          const next = spec.next(user, n, i)
          let quote: Quote
          try {
            const response = await this.send('POST', user, '/core/transactions/quote', next.quote)
            if (response.status !== 201) {
              unexpected.push(`quote: ${response.status} ${response.body}`)
              return
            }
            quote = (JSON.parse(response.body) as { quote: Quote }).quote
          } catch {
            return
          }
          const attempt = { ...next.with, user, quote, key: `crash-${quote.id}` } as A
          round.push(attempt)
          committing++
          try {
            const response = await this.commit(attempt)
            attempt.answer = { status: response.status, body: response.body }
            if (response.status === 201) {
              const transaction = (JSON.parse(response.body) as { transaction: Transaction }).transaction
              attempt.answer.transactionId = transaction.id
              spec.committed?.(attempt, transaction)
            } else unexpected.push(`commit: ${response.status} ${response.body}`)
          } catch (error) {
            attempt.error = String((error as Error).cause ?? error)
            return
          } finally {
            committing--
          }
        }
      }

      const beside = spec.beside?.()
      const streams = Array.from({ length: spec.streams }, (_, n) => stream(n))
      let streaming = spec.streams
      for (const one of streams) void one.finally(() => streaming--)
      await waitUntil(
        async () => (round.filter((a) => a.answer?.status === 201).length >= spec.answeredBeforeKill && (spec.ready ? await spec.ready() : true)) || streaming === 0,
        30_000,
        spec.waitingFor,
      )
      assert.deepEqual(unexpected, [], 'the stream runs as it should until the kill')
      assert.ok(streaming > 0, 'the stream runs until the kill')
      // The streams spend most of their time quoting: a freeze at a moment none was committing would test nothing (and
      // did happen with eight streams on a busy machine). Waits, a millisecond at a time, until one is.
      const deadline = Date.now() + 10_000
      while (committing === 0 && streaming > 0 && Date.now() < deadline) await sleep(1)
      assert.ok(committing > 0, 'a commit is in flight when the server is frozen')
      // Frozen first, then killed: the database finishes what the server had already sent it (a COMMIT among
      // others, or a rail's or an issuer's record of a call whose step has not committed), but the server never
      // answers. This is a kill at the instant of the freeze, and it makes the hardest case (the commit is made,
      // its answer is lost) likelier.
      const server = this.server!
      server.child.kill('SIGSTOP')
      const frozenAt = new Date()
      stopping = true
      await sleep(300)
      server.child.kill('SIGKILL')
      await server.exited
      const atKill = await spec.atKill(frozenAt)
      await Promise.all(streams)
      await beside?.stop()

      const unanswered = round.filter((a) => a.answer === undefined)
      assert.deepEqual(unexpected, [])
      assert.ok(unanswered.length > 0, 'the kill landed while commits were in flight')
      assert.ok(unanswered.every((a) => a.error !== undefined))
      spec.landed(atKill)

      await this.start()
      let replayed = 0
      for (const attempt of round) {
        const retry = await this.commit(attempt)
        assert.equal(retry.status, 201, `${attempt.key}: ${retry.body}`)
        const transaction = (JSON.parse(retry.body) as { transaction: Transaction }).transaction
        if (attempt.answer) {
          assert.equal(retry.headers.get('idempotent-replayed'), 'true', attempt.key)
          assert.equal(transaction.id, attempt.answer.transactionId)
          assert.deepEqual(JSON.parse(retry.body), JSON.parse(attempt.answer.body))
        } else if (retry.headers.get('idempotent-replayed') === 'true') {
          replayed++
        }
        spec.check(attempt, transaction)
        this.ids.set(attempt.key, transaction.id)
        spec.committed?.(attempt, transaction)
      }
      this.madeBeforeKill += replayed
      this.attempts.push(...round)
      spec.report({ number: this.rounds, round, unanswered, replayed, atKill, started })
    }
  }

  /** Once more, every key: the same transaction, replayed. */
  async replayAll(): Promise<void> {
    for (const attempt of this.attempts) {
      const again = await this.commit(attempt)
      assert.equal(again.status, 201, again.body)
      assert.equal(again.headers.get('idempotent-replayed'), 'true')
      assert.equal((JSON.parse(again.body) as { transaction: Transaction }).transaction.id, this.ids.get(attempt.key))
    }
  }

  /**
   * Waits until none of the test's transactions is processing; past the deadline, fails naming each one left, with
   * its flow, its job and its history, so that a stall says what it is stuck on.
   */
  async drain(what: string): Promise<void> {
    try {
      await waitUntil(async () => (await this.statuses()).processing === undefined, 60_000, what)
    } catch (error) {
      const where = this.options.type ? ` and t.type = '${this.options.type}'` : ''
      const stuck = await this.query(`
        select t.id, t.type, f.status as flow, f.step, f.error as flow_error,
          (select json_agg(json_build_object('status', j.status, 'attempts', j.attempts, 'run_at', j.run_at, 'locked_until', j.locked_until, 'last_error', j.last_error, 'now', now()))
             from jobs j where j.payload->>'flowId' = t.id::text) as jobs,
          (select json_agg(json_build_object('step', s.step, 'action', s.action, 'error', s.error, 'at', s.at) order by s.position)
             from flow_steps s where s.organization_id = t.organization_id and s.flow_id = t.id) as history
        from transactions t left join flows f on f.organization_id = t.organization_id and f.id = t.id
        where t.status = 'processing'${where} limit 10`)
      throw new Error(`${(error as Error).message}; still processing: ${JSON.stringify(stuck, null, 1)}`, { cause: error })
    }
  }

  /**
   * One transaction per key and per quote, and none besides: `rows` are the test's transactions, each that of a
   * key, for its quote's amounts. Returns them by id.
   */
  onePerKey<R extends { id: string; quote_id: string; origin_amount: string; destination_amount: string }>(rows: R[], noun: string): Map<string, R> {
    assert.equal(new Set(this.ids.values()).size, this.attempts.length, 'a transaction per key')
    assert.equal(rows.length, this.attempts.length, `as many ${noun}s as keys answered 201`)
    assert.equal(new Set(rows.map((row) => row.quote_id)).size, rows.length, `at most one ${noun} per quote`)
    const byId = new Map(rows.map((row) => [row.id, row]))
    for (const attempt of this.attempts) {
      const row = byId.get(this.ids.get(attempt.key)!)
      assert.ok(row, `the ${noun} of ${attempt.key} exists`)
      assert.equal(row.quote_id, attempt.quote.id)
      assert.ok(new BigNumber(row.origin_amount).isEqualTo(attempt.quote.origin.amount))
      assert.ok(new BigNumber(row.destination_amount).isEqualTo(attempt.quote.destination.amount))
    }
    return byId
  }

  /** Each transaction reached its final status exactly once: one status change, to that status, announced once. */
  async announcedOnce(rows: { id: string; status: string }[]): Promise<void> {
    const ids = new Set(rows.map((row) => row.id))
    const events = await this.query<{ subject_id: string; type: string; status: string }>(
      "select subject_id::text as subject_id, type, data->'transaction'->>'status' as status from outbox_events where subject_type = 'transaction' order by id",
    )
    const eventsOf = Map.groupBy(events.filter((event) => ids.has(event.subject_id)), (event) => event.subject_id)
    for (const row of rows) {
      const announced = (eventsOf.get(row.id) ?? []).map((event) => `${event.type}:${event.status}`)
      assert.deepEqual(announced, ['core.transaction.created:processing', `core.transaction.status-changed:${row.status}`], `the events of ${row.id}`)
    }
  }

  /** Nothing is left to run or held, and nothing is posted twice. */
  async nothingLeft(): Promise<void> {
    assert.deepEqual(await this.query("select id, type from flows where status = 'running'"), [], 'no flow is left running')
    // Announcements due at a later moment (a user's cooldown ending, a card expiring) are not work left over, nor is
    // webhook delivery's dispatcher, a job that lives for ever (waiting or looking at the outbox), nor the run of a
    // recurring job's current period (src/jobs/schedules.ts).
    const later = "(type in ('assets.cooldown-end', 'external-accounts.status-change') and run_at > now()) or (type = 'webhooks.dispatch' and status in ('pending', 'running'))" +
      " or (type in (select name from schedules) and status in ('pending', 'running'))"
    assert.deepEqual(await this.query(`select id, type, status from jobs where status <> 'completed' and not (${later})`), [])
    assert.deepEqual(await this.query("select id, account_id from ledger_holds where status = 'open'"), [], 'no hold is left open')
    assert.deepEqual(await this.query('select reference, count(*) as n from ledger_transactions where reference is not null group by reference having count(*) > 1'), [], 'nothing is posted twice')
  }

  /** The account's balance, as the server tells the user. */
  async balance(user: User, accountId: string): Promise<{ total: string; available: string }> {
    const response = await this.send('GET', user, `/core/accounts/${accountId}`)
    assert.equal(response.status, 200, response.body)
    return (JSON.parse(response.body) as { account: { balance: { total: string; available: string } } }).account.balance
  }

  /** Stops the server as the operator does (it exits 0), and the books balance. */
  async finish(): Promise<void> {
    this.server!.child.kill('SIGTERM')
    assert.equal(await this.server!.exited, 0)
    const check = await cli(['ledger', 'check'], this.env)
    assert.equal(check.code, 0, check.stderr)
    assert.equal((JSON.parse(check.stdout) as { ok: boolean }).ok, true)
  }
}
