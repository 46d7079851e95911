import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import pg from 'pg'
import { buildApp, type Services } from '../src/app.ts'
import { migrateToLatest, openDatabase } from '../src/db/database.ts'
import type { Db } from '../src/db/schema.ts'
import { loadOrCreateSecrets } from '../src/lib/data-dir.ts'
import { basicAuth, bearer, individualUser, TEST_DATABASE_URL, testConfig, USER_IP, type TestDatabase } from './helpers.ts'
import { withoutTravelRule } from './money.ts'
import { cli, freePort, scratchDatabase, serve, workerIdOf, type Server } from './processes.ts'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

test('serve refuses an unknown role', async () => {
  const result = await cli(['serve', '--role', 'janitor'], { DATA_DIR: ':memory:', LOG_LEVEL: 'silent' })
  assert.equal(result.code, 2)
  assert.match(result.stderr, /--role must be one of all, api, worker/)
})

if (TEST_DATABASE_URL) {
  // Two API processes and two workers on one database, as deployed (docs/deployment.md): through PgBouncer in the
  // run that has one (TEST_DATABASE_DIRECT_URL), with their LISTEN and migrations on direct connections.
  describe('worker processes on PostgreSQL', () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-worker-'))
    let database: TestDatabase
    let env: Record<string, string>
    let services: Services
    let db: Db
    let close: () => Promise<void>
    let organizationId: string
    let userId: string
    const servers: Server[] = []
    const ports = new Map<Server, number>()
    const accounts: string[] = []

    before(async () => {
      database = await scratchDatabase('worker')
      env = {
        DATA_DIR: dataDir,
        DATABASE_URL: database.url,
        DATABASE_DIRECT_URL: database.directUrl,
        HOST: '127.0.0.1',
        LOG_LEVEL: 'silent',
        WORKER_POLL_INTERVAL_MS: '20',
        WORKER_LEASE_MS: '1000',
        WORKER_CONCURRENCY: '8',
        // These deposits are about settlement across processes, not the travel rule (test/travel-rule.test.ts).
        ...withoutTravelRule(),
      }
      // This process records deposits through the service, as the deposit rails do; it never runs jobs itself. It
      // shares the processes' data directory, hence their keys.
      const config = testConfig({ DATABASE_URL: database.url, DATABASE_DIRECT_URL: database.directUrl, DATABASE_POOL_SIZE: '8' })
      const opened = await openDatabase(config)
      await migrateToLatest(opened)
      db = opened.db
      const built = await buildApp({ config, database: opened, secrets: loadOrCreateSecrets(dataDir, config) })
      services = built.services
      close = () => built.app.close()
      const client = await services.clients.create({ name: 'Rails', scopes: '*' })
      organizationId = client.organizationId
      const tokenResponse = await built.app.inject({
        method: 'POST',
        url: '/core/oauth2/token',
        headers: { authorization: basicAuth(client), 'content-type': 'application/x-www-form-urlencoded' },
        payload: 'grant_type=client_credentials',
      })
      const token = tokenResponse.json<{ access_token: string }>().access_token
      const user = await built.app.inject({ method: 'POST', url: '/core/users', headers: { ...bearer(token), 'x-service-user-ip': USER_IP }, payload: individualUser() })
      userId = user.json<{ user: { id: string } }>().user.id
      for (let i = 0; i < 3; i++) {
        const response = await built.app.inject({ method: 'POST', url: '/core/accounts', headers: bearer(token, userId), payload: { label: 'Main', asset: 'BTC' } })
        assert.equal(response.statusCode, 201, response.body)
        accounts.push(response.json<{ account: { id: string } }>().account.id)
      }
    })

    after(async () => {
      for (const server of servers) if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL')
      await close?.()
      await database?.drop()
      fs.rmSync(dataDir, { recursive: true, force: true })
    })

    async function start(role: 'api' | 'worker', count: number): Promise<Server[]> {
      const started = await Promise.all(
        Array.from({ length: count }, async () => {
          const port = await freePort()
          const server = await serve({ ...env, PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}` }, role)
          ports.set(server, port)
          return server
        }),
      )
      servers.push(...started)
      return started
    }

    async function stop(stopped: Server[]): Promise<void> {
      for (const server of stopped) server.child.kill('SIGTERM')
      assert.deepEqual(await Promise.all(stopped.map((server) => server.exited)), stopped.map(() => 0), 'each process exits 0 on SIGTERM')
    }

    let sequence = 0
    const record = (accountId: string, amount: string) =>
      services.deposits.record(db, { organizationId, userId, accountId, asset: 'BTC', amount, network: 'bitcoin', reference: `crash-${++sequence}` })

    /** Deposits arriving ten at a time, as a rail reports them; resolves with their amounts by transaction. */
    async function recordMany(count: number, amounts = new Map<string, string>()): Promise<Map<string, string>> {
      for (let i = 0; i < count; i += 10) {
        await Promise.all(
          Array.from({ length: Math.min(10, count - i) }, async (_, j) => {
            const amount = `0.${String(((i + j) % 97) + 1).padStart(3, '0')}`
            const { transactionId } = await record(accounts[(i + j) % accounts.length]!, amount)
            amounts.set(transactionId, amount)
          }),
        )
      }
      return amounts
    }

    async function query<T extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<T[]> {
      const client = new pg.Client({ connectionString: database.directUrl })
      await client.connect()
      try {
        return (await client.query<T>(text, values)).rows
      } finally {
        await client.end()
      }
    }

    async function statuses(): Promise<Map<string, number>> {
      const rows = await query<{ status: string; n: string }>('select status, count(*) as n from transactions group by status')
      return new Map(rows.map((row) => [row.status, Number(row.n)]))
    }

    async function waitUntil(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
      const deadline = Date.now() + timeoutMs
      while (!(await check())) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
        await sleep(20)
      }
    }

    test('two api processes run no jobs; two worker processes share them and serve no HTTP', async () => {
      const apis = await start('api', 2)
      await record(accounts[0]!, '0.001')
      await sleep(300)
      assert.equal((await statuses()).get('processing'), 1, 'the api processes left the deposit processing')

      const workers = await start('worker', 2)
      const ids = workers.map(workerIdOf)
      const seen = new Set<string>()
      let recorded = false
      const recording = recordMany(200).then(() => (recorded = true))
      // Who settles what shows only while it runs (a finished job keeps no worker): look while they settle.
      const running = "select distinct locked_by from jobs where type = 'flow:deposit' and status = 'running' and locked_by is not null"
      await waitUntil(
        async () => {
          for (const row of await query<{ locked_by: string }>(running)) seen.add(row.locked_by)
          return recorded && (await statuses()).get('processing') === undefined
        },
        30_000,
        'the workers to settle every deposit',
      )
      await recording
      assert.deepEqual([...seen].filter((id) => !ids.includes(id)), [], 'only the worker processes run jobs')
      assert.equal(seen.size, 2, 'both workers took a share')
      for (const worker of workers) await assert.rejects(fetch(`http://127.0.0.1:${ports.get(worker)}/health/live`), 'a worker listens on no port')
      await stop([...apis, ...workers])
    })

    test('deposits recorded while a worker is killed with SIGKILL all settle exactly once', async () => {
      const [first, second] = await start('worker', 2)
      const firstId = workerIdOf(first!)
      // Deposits keep arriving (straight into the database) while the workers settle them; kill one mid-job.
      const amounts = new Map<string, string>()
      const recording = recordMany(300, amounts)
      await waitUntil(
        async () => ((await statuses()).get('completed') ?? 0) > 10 && (await query('select 1 from jobs where locked_by = $1 and status = $2', [firstId, 'running'])).length > 0,
        10_000,
        'the first worker to be running jobs',
      )
      first!.child.kill('SIGKILL')
      await first!.exited
      await recording
      await recordMany(100, amounts)
      // The dead worker's jobs wait for their lease to pass; a restarted worker joins the survivor.
      const [restarted] = await start('worker', 1)
      await waitUntil(async () => (await statuses()).get('processing') === undefined, 30_000, 'every deposit to settle')

      const transactions = await query<{ id: string; status: string; account_id: string; amount: string }>(
        "select id, status, destination_account_id as account_id, destination_amount as amount from transactions where reference like 'crash-%'",
      )
      const mine = transactions.filter((row) => amounts.has(row.id))
      assert.equal(mine.length, 400)
      assert.ok(mine.every((row) => row.status === 'completed'))
      const postings = await query<{ reference: string; n: string }>("select reference, count(*) as n from ledger_transactions where type = 'deposit' group by reference")
      const postingsByReference = new Map(postings.map((row) => [row.reference, Number(row.n)]))
      for (const row of mine) assert.equal(postingsByReference.get(row.id), 1, `deposit ${row.id} posted once`)
      const entries = await query<{ n: string }>(
        "select count(*) as n from ledger_entries e join ledger_transactions t on t.organization_id = e.organization_id and t.id = e.transaction_id where t.type = 'deposit'",
      )
      assert.equal(Number(entries[0]!.n), 2 * postings.length)
      const expected = new Map<string, number>()
      for (const row of transactions) expected.set(row.account_id, (expected.get(row.account_id) ?? 0) + Number(row.amount) * 1000)
      const balances = await query<{ id: string; total: string }>('select id, total from ledger_accounts where system_code is null')
      for (const row of balances) assert.equal(Math.round(Number(row.total) * 1000), Math.round(expected.get(row.id) ?? 0), `balance of ${row.id}`)
      // Announcements due at a later moment (a user's cooldown ending, a card expiring) are not work left over, nor is
      // webhook delivery's dispatcher, a job that lives for ever, nor the run of a recurring job's current period.
      const unfinished = await query(
        "select id, type from jobs where status <> 'completed' and not ((type in ('assets.cooldown-end', 'external-accounts.status-change') and run_at > now()) or (type = 'webhooks.dispatch' and status in ('pending', 'running'))" +
          " or (type in (select name from schedules) and status in ('pending', 'running')))",
      )
      assert.deepEqual(unfinished, [])

      const check = await cli(['ledger', 'check'], env)
      assert.equal(check.code, 0, check.stderr)
      assert.equal((JSON.parse(check.stdout) as { ok: boolean }).ok, true)
      await stop([second!, restarted!])
    })
  })
}
