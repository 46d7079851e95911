/**
 * Recurring jobs across processes on PostgreSQL: three `serve --role worker` processes with fast periods run every
 * schedule once per period (never twice, none skipped while they run), expire a statement once, and delete the bytes
 * of an upload whose API process was killed mid-stream; a period missed while no worker ran is not caught up.
 */
import assert from 'node:assert/strict'
import { randomBytes, randomUUID } from 'node:crypto'
import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import pg from 'pg'
import { POSTGRES_ONLY, REQUEST_TIMEOUT_MS, sleep, waitUntil } from './crash.ts'
import { basicAuth, bearer, individualUser, USER_IP } from './helpers.ts'
import { cli, freePort, scratchDatabase, serve, type Server } from './processes.ts'
import { statementRequests, uploadParts } from './scheduling.ts'

/**
 * Every schedule, fast: the longer one is the year of daily prices, whose run takes longest. A second, not less: a
 * period is skipped when no worker looks during all of it, and on a CI machine running other suites beside this one
 * three starved workers once all missed a half-second period.
 */
const PERIODS: Record<string, number> = {
  'prices.record': 1_000,
  'prices.backfill': 2_000,
  'idempotency.purge': 1_000,
  'jobs.retention': 1_000,
  'kyc.self-categorization-expiry': 1_000,
  'files.orphan-bytes': 1_000,
}

interface Run {
  status: string
  attempts: number
  periodStart: number
}

describe('recurring jobs across three worker processes [postgres]', POSTGRES_ONLY, () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-scheduled-workers-'))
  const servers: Server[] = []
  const client = { clientId: randomUUID(), clientSecret: randomBytes(16).toString('hex') }
  let env: Record<string, string> = {}
  let baseUrl = ''
  let directUrl = ''
  let dropDatabase = async () => {}

  before(async () => {
    const scratch = await scratchDatabase('scheduled_workers')
    dropDatabase = scratch.drop
    directUrl = scratch.directUrl
    const port = await freePort()
    baseUrl = `http://127.0.0.1:${port}`
    env = {
      DATA_DIR: dataDir,
      DATABASE_URL: scratch.url,
      DATABASE_DIRECT_URL: scratch.directUrl,
      HOST: '127.0.0.1',
      PORT: String(port),
      PUBLIC_URL: baseUrl,
      LOG_LEVEL: 'silent',
      RATE_LIMIT_PER_MINUTE: '0',
      TOKEN_RATE_LIMIT_PER_MINUTE: '0',
      INITIAL_CLIENT_ID: client.clientId,
      INITIAL_CLIENT_SECRET: client.clientSecret,
      WORKER_POLL_INTERVAL_MS: '20',
      SCHEDULE_PERIODS: Object.entries(PERIODS).map(([name, ms]) => `${name}=${ms}ms`).join(','),
      FILE_ORPHAN_GRACE: '1s',
    }
    const migrated = await cli(['migrate'], env)
    assert.equal(migrated.code, 0, migrated.stderr)
  })

  after(async () => {
    for (const server of servers) if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL')
    await Promise.all(servers.map((server) => server.exited))
    await dropDatabase()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  async function query<T extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<T[]> {
    const connection = new pg.Client({ connectionString: directUrl })
    await connection.connect()
    try {
      return (await connection.query<T>(text, values)).rows
    } finally {
      await connection.end()
    }
  }

  async function runsOf(name: string): Promise<Run[]> {
    const rows = await query<{ status: string; attempts: number; period_start: string }>(
      "select status, attempts, payload->>'periodStart' as period_start from jobs where type = $1 order by payload->>'periodStart'",
      [name],
    )
    return rows.map((row) => ({ status: row.status, attempts: row.attempts, periodStart: Date.parse(row.period_start) }))
  }

  async function start(role: 'api' | 'worker'): Promise<Server> {
    const server = await serve(env, role)
    servers.push(server)
    return server
  }

  async function stop(server: Server): Promise<void> {
    server.child.kill('SIGTERM')
    assert.equal(await server.exited, 0)
  }

  async function send(method: string, route: string, options: { token?: string; userId?: string; body?: unknown } = {}) {
    const response = await fetch(`${baseUrl}${route}`, {
      method,
      headers: {
        ...(options.token ? bearer(options.token, options.userId) : {}),
        ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
        'x-service-user-ip': USER_IP,
      },
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    })
    return { status: response.status, json: (await response.json()) as Record<string, unknown> }
  }

  /** The files a write left in the storage directory for a file: whole objects and writes cut short. */
  const storedFor = (fileId: string) => {
    const root = path.join(dataDir, 'files')
    if (!fs.existsSync(root)) return []
    return fs.readdirSync(root).flatMap((org) => {
      const dir = path.join(root, org, fileId)
      return fs.existsSync(dir) ? fs.readdirSync(dir) : []
    })
  }

  test('three workers run each schedule once per period, expire a statement once and delete abandoned bytes; missed periods are not caught up', async () => {
    const api = await start('api')
    const workers = await Promise.all([start('worker'), start('worker'), start('worker')])
    const upAt = Date.now()

    const tokenResponse = await fetch(`${baseUrl}/core/oauth2/token`, {
      method: 'POST',
      headers: { authorization: basicAuth(client), 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=client_credentials',
    })
    const token = ((await tokenResponse.json()) as { access_token: string }).access_token
    const created = await send('POST', '/core/users', { token, body: individualUser() })
    assert.equal(created.status, 201, JSON.stringify(created.json))
    const userId = (created.json.user as { id: string }).id

    // A statement valid for a few more seconds: one of the three workers expires it, once.
    for (const body of statementRequests(new Date(Date.now() + 3_000))) {
      const answered = await send('PATCH', '/core/kyc/processes/self-categorization-statement', { token, userId, body })
      assert.equal(answered.status, 200, JSON.stringify(answered.json))
    }

    // An upload whose API process is killed while the bytes stream in: they stay in storage, their file pending.
    const file = await send('POST', '/core/files', { token, userId, body: { category: 'image', contentType: 'image/png' } })
    assert.equal(file.status, 201, JSON.stringify(file.json))
    const { id: fileId, upload } = file.json.file as { id: string; upload: { url: string; formData: Record<string, string> } }
    const parts = uploadParts(upload.formData)
    const request = http.request(`${baseUrl}${new URL(upload.url).pathname}`, { method: 'POST', headers: { 'content-type': parts.contentType } })
    request.on('error', () => {})
    request.write(parts.head)
    request.write(randomBytes(64 * 1024))
    await waitUntil(async () => storedFor(fileId).some((name) => name.includes('.partial-')), 15_000, 'the upload to be written to storage')
    api.child.kill('SIGKILL')
    await api.exited
    request.destroy()
    assert.equal((await query('select storage_key from file_uploads')).length, 1, 'the upload is noted as begun')

    await waitUntil(async () => (await query("select 1 from kyc_processes where user_id = $1 and code = 'self-categorization-statement' and status = 'pending'", [userId])).length === 1, 20_000, 'the statement to expire')
    await waitUntil(async () => storedFor(fileId).length === 0 && (await query('select 1 from file_uploads')).length === 0, 20_000, 'the abandoned bytes to be deleted')
    // Many periods of each schedule with the three workers up.
    await waitUntil(async () => (await runsOf('prices.backfill')).filter((run) => run.periodStart >= upAt).length >= 4, 60_000, 'several periods to pass')
    await Promise.all(workers.map(stop))

    const lastBefore = new Map<string, number>()
    for (const [name, period] of Object.entries(PERIODS)) {
      const runs = await runsOf(name)
      const periods = runs.map((run) => run.periodStart)
      assert.equal(new Set(periods).size, periods.length, `${name}: no period ran twice`)
      assert.ok(periods.every((start) => start % period === 0), `${name}: periods aligned`)
      // From when the three were up (each spends its first seconds starting, the machine's CPUs with it).
      const first = periods.find((start) => start >= upAt)!
      const last = periods.at(-1)!
      const missed = Array.from({ length: (last - first) / period + 1 }, (_, i) => first + i * period).filter((start) => !periods.includes(start))
      assert.deepEqual(missed.map((start) => new Date(start).toISOString()), [], `${name}: no period skipped while the three workers ran (up at ${new Date(upAt).toISOString()})`)
      // The last period may have been scheduled as the workers stopped (its job given back, to run when one returns).
      assert.ok(runs.slice(0, -1).every((run) => run.status === 'completed' && run.attempts === 1), `${name}: every run completed at its first attempt`)
      lastBefore.set(name, last)
    }
    const pending = await query<{ n: string }>(
      "select count(*) as n from outbox_events where type = 'core.kyc.self-categorization-statement.status-changed' and subject_id = $1 and data->>'status' = 'pending'",
      [userId],
    )
    assert.equal(Number(pending[0]!.n), 1, 'the statement expired once')
    assert.equal((await query("select 1 from files where id = $1 and status = 'pending'", [fileId])).length, 1)

    // No worker for several periods of every schedule, then one comes back: it runs the current period only.
    await sleep(6_500)
    const restartedAt = Date.now()
    const worker = await start('worker')
    await waitUntil(async () => {
      for (const name of Object.keys(PERIODS)) if (!(await runsOf(name)).some((run) => run.periodStart > lastBefore.get(name)!)) return false
      return true
    }, 30_000, 'the worker to run every schedule again')
    await stop(worker)
    for (const [name, period] of Object.entries(PERIODS)) {
      const after = (await runsOf(name)).filter((run) => run.periodStart > lastBefore.get(name)!)
      assert.ok(after[0]!.periodStart > restartedAt - period, `${name}: the first run after the pause is for the period current when a worker came back`)
      assert.ok(after[0]!.periodStart - lastBefore.get(name)! >= 2 * period, `${name}: the periods of the pause were not run`)
    }
    const taken = await query<{ name: string; period_start: Date }>('select name, period_start from schedules')
    for (const name of Object.keys(PERIODS)) {
      assert.equal(taken.find((row) => row.name === name)?.period_start.getTime(), (await runsOf(name)).at(-1)!.periodStart, `${name}: the schedule holds its last period`)
    }
  })
})
