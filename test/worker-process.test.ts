import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import pg from 'pg'
import { buildApp, type Services } from '../src/app.ts'
import { migrateToLatest, openDatabase } from '../src/db/database.ts'
import type { Db } from '../src/db/schema.ts'
import { loadOrCreateSecrets } from '../src/lib/data-dir.ts'
import { basicAuth, bearer, individualUser, TEST_DATABASE_URL, testConfig, USER_IP } from './helpers.ts'
import { withoutTravelRule } from './money.ts'
import { cli, freePort, MAIN, ROOT, scratchDatabase } from './processes.ts'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

interface Server {
  child: ChildProcess
  exited: Promise<number | null>
  stderr: () => string
}

/** Starts `serve` with a role and resolves once its banner is printed. */
function serve(env: Record<string, string>, role: string): Promise<Server> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN, 'serve', '--role', role], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env } })
    const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)))
    let stderr = ''
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString()
      if (/(listening on|is running background jobs)[\s\S]*\n\n$/.test(stderr)) resolve({ child, exited, stderr: () => stderr })
    })
    child.stdout.resume()
    void exited.then((code) => reject(new Error(`serve exited with ${code}: ${stderr}`)))
  })
}

test('serve refuses an unknown role', async () => {
  const result = await cli(['serve', '--role', 'janitor'], { DATA_DIR: ':memory:', LOG_LEVEL: 'silent' })
  assert.equal(result.code, 2)
  assert.match(result.stderr, /--role must be one of all, api, worker/)
})

if (TEST_DATABASE_URL) {
  describe('worker processes on PostgreSQL', () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-worker-'))
    let url: URL
    let dropDatabase = async () => {}
    let env: Record<string, string>
    let services: Services
    let db: Db
    let close: () => Promise<void>
    let organizationId: string
    let userId: string
    const servers: Server[] = []

    before(async () => {
      const scratch = await scratchDatabase('worker')
      url = new URL(scratch.url)
      dropDatabase = scratch.drop
      const port = await freePort()
      env = {
        DATA_DIR: dataDir,
        DATABASE_URL: url.href,
        HOST: '127.0.0.1',
        PORT: String(port),
        PUBLIC_URL: `http://127.0.0.1:${port}`,
        LOG_LEVEL: 'silent',
        WORKER_POLL_INTERVAL_MS: '20',
        WORKER_LEASE_MS: '1000',
        WORKER_CONCURRENCY: '8',
        // These deposits are about settlement across processes, not the travel rule (test/travel-rule.test.ts).
        ...withoutTravelRule(),
      }
      // This process records deposits through the service, as the deposit rails do; it never runs jobs itself.
      const config = testConfig({ DATABASE_URL: url.href, DATABASE_POOL_SIZE: '8' })
      const database = await openDatabase(config)
      await migrateToLatest(database)
      db = database.db
      const built = await buildApp({ config, database, secrets: loadOrCreateSecrets(null, config) })
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
      const openAccount = async () => {
        const response = await built.app.inject({ method: 'POST', url: '/core/accounts', headers: bearer(token, userId), payload: { label: 'Main', asset: 'BTC' } })
        assert.equal(response.statusCode, 201, response.body)
        return response.json<{ account: { id: string } }>().account.id
      }
      accounts.push(await openAccount(), await openAccount(), await openAccount())
    })
    const accounts: string[] = []

    after(async () => {
      for (const server of servers) if (server.child.exitCode === null) server.child.kill('SIGKILL')
      await close?.()
      await dropDatabase()
      fs.rmSync(dataDir, { recursive: true, force: true })
    })

    let sequence = 0
    const record = (accountId: string, amount: string) =>
      services.deposits.record(db, {
        organizationId,
        userId,
        accountId,
        asset: 'BTC',
        amount,
        network: 'bitcoin',
        reference: `crash-${++sequence}`,
      })

    async function statuses(): Promise<Map<string, number>> {
      const client = new pg.Client({ connectionString: url.href })
      await client.connect()
      const result = await client.query<{ status: string; n: string }>('select status, count(*) as n from transactions group by status')
      await client.end()
      return new Map(result.rows.map((row) => [row.status, Number(row.n)]))
    }

    async function waitUntil(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
      const deadline = Date.now() + timeoutMs
      while (!(await check())) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
        await sleep(50)
      }
    }

    test('the api role runs no jobs; the worker role settles them without serving HTTP', async () => {
      const api = await serve(env, 'api')
      servers.push(api)
      await record(accounts[0]!, '0.001')
      await sleep(300)
      assert.equal((await statuses()).get('processing'), 1, 'the api role left the deposit processing')
      api.child.kill('SIGTERM')
      assert.equal(await api.exited, 0)

      const worker = await serve(env, 'worker')
      servers.push(worker)
      await waitUntil(async () => (await statuses()).get('processing') === undefined, 10_000, 'the worker to settle')
      await assert.rejects(fetch(`${env.PUBLIC_URL}/health/live`), 'the worker role listens on no port')
      worker.child.kill('SIGTERM')
      assert.equal(await worker.exited, 0)
    })

    test('deposits recorded while the server is killed with SIGKILL all settle exactly once after a restart', async () => {
      const amounts = new Map<string, string>()
      const recordMany = async (count: number) => {
        for (let i = 0; i < count; i += 10) {
          await Promise.all(
            Array.from({ length: Math.min(10, count - i) }, async (_, j) => {
              const accountId = accounts[(i + j) % accounts.length]!
              const amount = `0.${String(((i + j) % 97) + 1).padStart(3, '0')}`
              const { transactionId } = await record(accountId, amount)
              amounts.set(transactionId, amount)
            }),
          )
        }
      }
      const first = await serve(env, 'all')
      servers.push(first)
      // Deposits keep arriving (straight into the database) while the server settles them; kill it mid-stream.
      const recording = recordMany(300)
      await waitUntil(async () => ((await statuses()).get('completed') ?? 0) > 10, 10_000, 'some settlements')
      first.child.kill('SIGKILL')
      await first.exited
      await recording
      const atKill = await statuses()
      assert.ok((atKill.get('processing') ?? 0) > 0, `the kill landed while deposits were still settling: ${JSON.stringify([...atKill])}`)
      await recordMany(100)

      const second = await serve(env, 'all')
      servers.push(second)
      await waitUntil(async () => (await statuses()).get('processing') === undefined, 30_000, 'every deposit to settle')

      const client = new pg.Client({ connectionString: url.href })
      await client.connect()
      try {
        const transactions = await client.query<{ id: string; status: string; account_id: string; amount: string }>(
          "select id, status, destination_account_id as account_id, destination_amount as amount from transactions where reference like 'crash-%'",
        )
        const mine = transactions.rows.filter((row) => amounts.has(row.id))
        assert.equal(mine.length, 400)
        assert.ok(mine.every((row) => row.status === 'completed'))
        const postings = await client.query<{ reference: string; n: string }>(
          "select reference, count(*) as n from ledger_transactions where type = 'deposit' group by reference",
        )
        const postingsByReference = new Map(postings.rows.map((row) => [row.reference, Number(row.n)]))
        for (const row of mine) assert.equal(postingsByReference.get(row.id), 1, `deposit ${row.id} posted once`)
        const entries = await client.query<{ n: string }>(
          "select count(*) as n from ledger_entries e join ledger_transactions t on t.organization_id = e.organization_id and t.id = e.transaction_id where t.type = 'deposit'",
        )
        assert.equal(Number(entries.rows[0]!.n), 2 * postings.rows.length)
        const expected = new Map<string, number>()
        for (const row of transactions.rows) expected.set(row.account_id, (expected.get(row.account_id) ?? 0) + Number(row.amount) * 1000)
        const balances = await client.query<{ id: string; total: string }>('select id, total from ledger_accounts where system_code is null')
        for (const row of balances.rows) assert.equal(Math.round(Number(row.total) * 1000), Math.round(expected.get(row.id) ?? 0), `balance of ${row.id}`)
        // Announcements due at a later moment (a user's cooldown ending, a card expiring) are not work left over, nor is
        // webhook delivery's dispatcher, a job that lives for ever.
        const unfinished = await client.query(
          "select id, type from jobs where status <> 'completed' and not ((type in ('assets.cooldown-end', 'external-accounts.status-change') and run_at > now()) or (type = 'webhooks.dispatch' and status in ('pending', 'running')))",
        )
        assert.deepEqual(unfinished.rows, [])
      } finally {
        await client.end()
      }

      const check = await cli(['ledger', 'check'], env)
      assert.equal(check.code, 0, check.stderr)
      assert.equal((JSON.parse(check.stdout) as { ok: boolean }).ok, true)
      second.child.kill('SIGTERM')
      assert.equal(await second.exited, 0)
    })
  })
}
