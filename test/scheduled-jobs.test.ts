import assert from 'node:assert/strict'
import { randomBytes, randomUUID } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { PassThrough } from 'node:stream'
import { after, describe, test } from 'node:test'
import { sql } from 'kysely'
import { periodStartOf } from '../src/jobs/periods.ts'
import { enqueue } from '../src/jobs/queue.ts'
import { Scheduler } from '../src/jobs/schedules.ts'
import { DomainError } from '../src/lib/errors.ts'
import { eventsAbout } from '../src/modules/events/outbox.ts'
import { bearer, ENGINES, individualUser, useApp, type TestResponse } from './helpers.ts'
import { waitUntil } from './crash.ts'
import { cli, deployment, freePort, serve } from './processes.ts'
import { DAY, HOUR, MINUTE, SCHEDULES, statementRequests, uploadParts } from './scheduling.ts'

const pathOf = (url: string) => {
  const parsed = new URL(url)
  return `${parsed.pathname}${parsed.search}`
}

interface ScheduledJob {
  status: string
  attempts: number
  periodStart: string
}

for (const engine of ENGINES) {
  describe(`scheduled jobs [${engine}]`, () => {
    const storageDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-scheduled-'))
    after(() => fs.rmSync(storageDir, { recursive: true, force: true }))
    const suite = useApp(engine, { FILE_STORAGE_DIR: storageDir })
    const db = () => suite.ctx.database.db

    // A clock the tests move forward (never back: the periods taken in the database only move forward).
    const start = Date.now()
    let clock = new Date(start)
    let scheduler: Scheduler | undefined
    const schedulerAt = (now: () => Date) => new Scheduler({ db: db(), schedules: suite.ctx.services.schedules, now })
    /** What a worker does when its clock reads `at`: schedules the periods that began, then runs what is due. */
    async function runAt(at: Date): Promise<void> {
      assert.ok(at >= clock, 'the clock only moves forward')
      clock = at
      scheduler ??= schedulerAt(() => clock)
      await scheduler.tick()
      await suite.ctx.services.worker.drain()
    }
    const jobsOf = async (type: string): Promise<ScheduledJob[]> =>
      (await db().selectFrom('jobs').select(['status', 'attempts', 'payload']).where('type', '=', type).orderBy(sql`payload->>'periodStart'`).execute()).map((row) => ({
        status: row.status,
        attempts: row.attempts,
        periodStart: String((row.payload as { periodStart: string }).periodStart),
      }))

    const newUser = async () => (await suite.ctx.createUser(suite.token, individualUser())).id
    const statement = async (userId: string) => {
      const response = await suite.ctx.request({ method: 'GET', url: '/core/kyc?detailed=selfCategorizationStatement', headers: bearer(suite.token, userId) })
      assert.equal(response.status, 200, response.body)
      return response.json<{ processes: { selfCategorizationStatement: { status: string; output?: Record<string, unknown>; hint?: { schema: { properties: Record<string, unknown> } } } } }>()
        .processes.selfCategorizationStatement
    }
    /** Gives the user's statement, attested until `expiresAt` when given; the last answer. */
    const giveStatement = async (userId: string, expiresAt?: Date) => {
      let response: TestResponse | undefined
      for (const payload of statementRequests(expiresAt)) {
        response = await suite.ctx.request({ method: 'PATCH', url: '/core/kyc/processes/self-categorization-statement', headers: bearer(suite.token, userId), payload })
        assert.equal(response.status, 200, response.body)
      }
      return response!
    }
    const statusEvents = async (userId: string) =>
      (await eventsAbout(db(), suite.ctx.client.organizationId, { type: 'user', id: userId }))
        .filter((event) => event.type === 'core.kyc.self-categorization-statement.status-changed')
        .map((event) => (event.data as { status: string }).status)

    const createFile = async (userId: string) => {
      const response = await suite.ctx.request({ method: 'POST', url: '/core/files', headers: bearer(suite.token, userId), payload: { category: 'image', contentType: 'image/png' } })
      assert.equal(response.status, 201, response.body)
      return response.json<{ file: { id: string; upload: { url: string; formData: Record<string, string> } } }>().file
    }
    const upload = (file: { upload: { url: string; formData: Record<string, string> } }, content: Buffer): Promise<TestResponse> => {
      const parts = uploadParts(file.upload.formData)
      return suite.ctx.request({ method: 'POST', url: pathOf(file.upload.url), headers: { 'content-type': parts.contentType }, payload: Buffer.concat([parts.head, content, parts.tail]) })
    }
    const storedIn = (fileId: string) => {
      const dir = path.join(storageDir, suite.ctx.client.organizationId, fileId)
      return fs.existsSync(dir) ? fs.readdirSync(dir).sort() : []
    }
    const pendingUploads = async () => (await db().selectFrom('file_uploads').select('storage_key').execute()).map((row) => row.storage_key).sort()

    test('bytes an upload left when its process died are deleted after the grace period; committed bytes stay', async () => {
      const userId = await newUser()
      const org = suite.ctx.client.organizationId
      const committed = await createFile(userId)
      const content = randomBytes(3000)
      assert.equal((await upload(committed, content)).status, 204)
      assert.deepEqual(await pendingUploads(), [], 'a committed upload is forgotten')

      // What a process killed mid-upload leaves: its upload noted, and the bytes it stored (whole, or a write cut short).
      const abandoned = await createFile(userId)
      const keys = [`${org}/${abandoned.id}/00112233aabbccdd`, `${org}/${abandoned.id}/44556677eeff0011`]
      fs.mkdirSync(path.join(storageDir, org, abandoned.id), { recursive: true })
      fs.writeFileSync(path.join(storageDir, org, abandoned.id, '00112233aabbccdd'), randomBytes(100))
      fs.writeFileSync(path.join(storageDir, org, abandoned.id, '44556677eeff0011.partial-a1b2c3d4e5f6'), randomBytes(50))
      for (const storageKey of keys) {
        await db().insertInto('file_uploads').values({ storage_key: storageKey, organization_id: org, file_id: abandoned.id, started_at: new Date(start) }).execute()
      }

      await runAt(new Date(start + 30 * MINUTE))
      assert.equal(storedIn(abandoned.id).length, 2, 'within the grace period (FILE_ORPHAN_GRACE, 1h) nothing is deleted')
      assert.deepEqual(await pendingUploads(), keys.sort())

      // An upload still streaming when the clean-up takes it for abandoned fails rather than commit bytes that are gone.
      const slow = await createFile(userId)
      const parts = uploadParts(slow.upload.formData)
      const body = new PassThrough()
      body.write(parts.head)
      body.write(randomBytes(1000))
      const answer = suite.ctx.request({ method: 'POST', url: pathOf(slow.upload.url), headers: { 'content-type': parts.contentType }, payload: body })
      await waitUntil(async () => (await pendingUploads()).some((key) => key.includes(slow.id)), 10_000, 'the slow upload to begin')

      await runAt(new Date(start + 2 * HOUR))
      assert.deepEqual(storedIn(abandoned.id), [], 'abandoned bytes, whole or partial, are gone')
      assert.deepEqual(await pendingUploads(), [])
      body.end(Buffer.concat([randomBytes(1000), parts.tail]))
      const refused = await answer
      assert.equal(refused.status, 503, refused.body)
      assert.equal(refused.json<{ code: string }>().code, 'service_unavailable')
      assert.deepEqual(storedIn(slow.id), [])
      assert.equal((await upload(slow, randomBytes(3000))).status, 204, 'sent again, the upload succeeds')

      assert.equal(storedIn(committed.id).length, 1, 'committed bytes are not touched')
      const got = await suite.ctx.request({ method: 'GET', url: `/core/files/${committed.id}`, headers: bearer(suite.token, userId) })
      const download = await suite.ctx.app.inject({ method: 'GET', url: pathOf(got.json<{ file: { download: { url: string } } }>().file.download.url) })
      assert.ok(download.rawPayload.equals(Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47]), content])))
      const files = await db().selectFrom('files').select(['id', 'status']).where('id', 'in', [committed.id, abandoned.id, slow.id]).execute()
      assert.deepEqual(new Map(files.map((row) => [row.id, row.status])), new Map([[committed.id, 'uploaded'], [abandoned.id, 'pending'], [slow.id, 'uploaded']]))
    })

    test('an Idempotency-Key is kept until it expires, then the purge forgets it', async () => {
      const key = randomUUID()
      const created = await suite.ctx.request({ method: 'POST', url: '/core/users', headers: { ...bearer(suite.token), 'idempotency-key': key, 'x-service-user-ip': '203.0.113.7' }, payload: individualUser() })
      assert.equal(created.status, 201, created.body)
      const keys = () => db().selectFrom('idempotency_keys').select('key').where('key', '=', key).execute()
      await runAt(new Date(start + 23 * HOUR))
      assert.equal((await keys()).length, 1, 'a key lives 24 hours')
      await runAt(new Date(start + 25 * HOUR))
      assert.deepEqual(await keys(), [])
    })

    test('each period is taken once, whichever worker looks first; missed periods run once, not once each', async () => {
      const t0 = new Date(periodStartOf(new Date(clock.getTime() + HOUR), DAY).getTime() + DAY)
      clock = t0
      const a = schedulerAt(() => clock)
      const b = schedulerAt(() => clock)
      assert.ok((await a.tick()) >= Object.keys(SCHEDULES).length)
      assert.equal(await b.tick(), 0, 'the other worker finds every period taken')
      for (const name of Object.keys(SCHEDULES)) assert.deepEqual((await jobsOf(name)).filter((job) => job.periodStart >= t0.toISOString()).map((job) => job.periodStart), [t0.toISOString()], name)
      await suite.ctx.services.worker.drain()

      clock = new Date(t0.getTime() + 30_000)
      assert.equal((await a.tick()) + (await b.tick()), 0, 'nothing new within the period')
      clock = new Date(t0.getTime() + MINUTE)
      const ofAMinute = suite.ctx.services.schedules.all().filter((schedule) => periodStartOf(clock, schedule.periodMs) > t0).length
      assert.equal((await b.tick()) + (await a.tick()), ofAMinute, 'a minute later: the schedules whose period is a minute, once')
      // An hour later: sixty periods of a minute went by, six of ten minutes, one of an hour: one run each.
      clock = new Date(t0.getTime() + HOUR + MINUTE)
      await Promise.all([a.tick(), b.tick()])
      const lagging = schedulerAt(() => t0)
      assert.equal(await lagging.tick(), 0, 'a worker whose clock lags takes no period again')
      await suite.ctx.services.worker.drain()

      const at = (offset: number) => new Date(t0.getTime() + offset).toISOString()
      const expected: Record<string, string[]> = {
        'prices.record': [at(0), at(MINUTE), at(HOUR + MINUTE)],
        'kyc.self-categorization-expiry': [at(0), at(MINUTE), at(HOUR + MINUTE)],
        'idempotency.purge': [at(0), at(HOUR)],
        'files.orphan-bytes': [at(0), at(HOUR)],
        'jobs.retention': [at(0), at(HOUR)],
        'prices.backfill': [at(0)],
      }
      for (const [name, periods] of Object.entries(expected)) {
        const jobs = (await jobsOf(name)).filter((job) => job.periodStart >= t0.toISOString())
        assert.deepEqual(jobs.map((job) => job.periodStart), periods, name)
        assert.ok(jobs.every((job) => job.status === 'completed' && job.attempts === 1), `${name}: every run completed at its first attempt`)
      }
      const taken = await db().selectFrom('schedules').select(['name', 'period_start']).execute()
      for (const [name, periods] of Object.entries(expected)) assert.equal(taken.find((row) => row.name === name)?.period_start.toISOString(), periods.at(-1), name)
      // The shared runAt continues from here.
      scheduler = a
    })

    test('an approved self-categorization statement returns to pending when it expires, once, and may be given again', async () => {
      const expiring = await newUser()
      const lasting = await newUser()
      const expiresAt = new Date(clock.getTime() + DAY)
      for (const [userId, until] of [[expiring, expiresAt], [lasting, new Date(expiresAt.getTime() + 10 * DAY)]] as const) await giveStatement(userId, until)
      const attested = await statement(expiring)
      assert.equal(attested.status, 'ok')

      await runAt(new Date(expiresAt.getTime() - MINUTE))
      assert.equal((await statement(expiring)).status, 'ok', 'valid until its expiresAt')

      await runAt(new Date(expiresAt.getTime() + MINUTE))
      const expired = await statement(expiring)
      assert.equal(expired.status, 'pending')
      assert.deepEqual(expired.output, attested.output, 'the last outcome stays on view')
      assert.deepEqual(Object.keys(expired.hint!.schema.properties), ['investor', 'investor-profile'], 'the whole form is asked again')
      assert.deepEqual(await statusEvents(expiring), ['ok', 'pending'])
      assert.equal((await statement(lasting)).status, 'ok', 'a statement still valid is left alone')

      await runAt(new Date(expiresAt.getTime() + 2 * MINUTE))
      assert.deepEqual(await statusEvents(expiring), ['ok', 'pending'], 'expiring is done once')

      const renewed = (await giveStatement(expiring)).json<{ selfCategorizationStatement: { status: string; output: { attempts: { used: number }; expiresAt: string } } }>().selfCategorizationStatement
      assert.equal(renewed.status, 'ok')
      assert.equal(renewed.output.attempts.used, 1, 'a new statement, from its first attempt')
      assert.ok(Date.parse(renewed.output.expiresAt) > Date.now() + 364 * DAY)
      assert.deepEqual(await statusEvents(expiring), ['ok', 'pending', 'ok'])
    })

    test('finished jobs are deleted after their retention: completed after JOB_RETENTION, failed after FAILED_JOB_RETENTION', async () => {
      const done = `test.retention-done-${randomBytes(3).toString('hex')}`
      const refused = `test.retention-refused-${randomBytes(3).toString('hex')}`
      suite.ctx.services.jobs.register(done, async () => {})
      suite.ctx.services.jobs.register(refused, async () => {
        throw new DomainError('operation_not_allowed', 'refused for good')
      })
      const completedId = await enqueue(db(), { type: done, payload: {} })
      const failedId = await enqueue(db(), { type: refused, payload: {} })
      const laterId = await enqueue(db(), { type: done, payload: {}, runAt: new Date(start + 365 * DAY) })
      await suite.ctx.services.worker.drain()
      const statuses = async () => {
        const rows = await db().selectFrom('jobs').select(['id', 'status']).where('id', 'in', [completedId, failedId, laterId]).execute()
        return Object.fromEntries(rows.map((row) => [row.id === completedId ? 'completed' : row.id === failedId ? 'failed' : 'later', row.status]))
      }
      assert.deepEqual(await statuses(), { completed: 'completed', failed: 'failed', later: 'pending' })

      await runAt(new Date(start + 7 * DAY - HOUR))
      assert.deepEqual(await statuses(), { completed: 'completed', failed: 'failed', later: 'pending' }, 'kept for 7 days (168h)')
      await runAt(new Date(start + 7 * DAY + 2 * HOUR))
      assert.deepEqual(await statuses(), { failed: 'failed', later: 'pending' })
      await runAt(new Date(start + 30 * DAY + 2 * HOUR))
      assert.deepEqual(await statuses(), { later: 'pending' }, 'a failure is kept 30 days (720h); what has not run yet never goes')
    })
  })

  describe(`scheduled jobs in the embedded process [${engine}]`, () => {
    test('serve (role all) runs the schedules through its worker', async () => {
      const { env, cleanup } = await deployment(engine, 'scheduled')
      const port = await freePort()
      const clientId = randomUUID()
      const clientSecret = randomBytes(16).toString('hex')
      const baseUrl = `http://127.0.0.1:${port}`
      const server = await serve({
        ...env,
        PORT: String(port),
        PUBLIC_URL: baseUrl,
        INITIAL_CLIENT_ID: clientId,
        INITIAL_CLIENT_SECRET: clientSecret,
        WORKER_POLL_INTERVAL_MS: '50',
        SCHEDULE_PERIODS: 'kyc.self-categorization-expiry=200ms',
      })
      try {
        const tokenResponse = await fetch(`${baseUrl}/core/oauth2/token`, {
          method: 'POST',
          headers: { authorization: `Basic ${Buffer.from(`${clientId}:${clientSecret}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
          body: 'grant_type=client_credentials',
        })
        const token = ((await tokenResponse.json()) as { access_token: string }).access_token
        const created = await fetch(`${baseUrl}/core/users`, { method: 'POST', headers: { ...bearer(token), 'content-type': 'application/json', 'x-service-user-ip': '203.0.113.7' }, body: JSON.stringify(individualUser()) })
        assert.equal(created.status, 201)
        const userId = ((await created.json()) as { user: { id: string } }).user.id
        for (const payload of statementRequests(new Date(Date.now() + 3_000))) {
          const answered = await fetch(`${baseUrl}/core/kyc/processes/self-categorization-statement`, {
            method: 'PATCH',
            headers: { ...bearer(token, userId), 'content-type': 'application/json' },
            body: JSON.stringify(payload),
          })
          assert.equal(answered.status, 200, await answered.text())
        }
        const status = async () => {
          const response = await fetch(`${baseUrl}/core/kyc`, { headers: bearer(token, userId) })
          return ((await response.json()) as { processes: { selfCategorizationStatement: { status: string } } }).processes.selfCategorizationStatement.status
        }
        await waitUntil(async () => (await status()) === 'pending', 20_000, 'the statement to expire')
      } finally {
        server.child.kill('SIGTERM')
        assert.equal(await server.exited, 0)
        await cleanup()
      }
    })
  })
}

test('SCHEDULE_PERIODS that cannot be read stop serve before it opens anything, saying why', async () => {
  const malformed = await cli(['serve'], { DATA_DIR: ':memory:', LOG_LEVEL: 'silent', SCHEDULE_PERIODS: 'prices.record=soon' })
  assert.equal(malformed.code, 2)
  assert.match(malformed.stderr, /SCHEDULE_PERIODS must be name=duration pairs separated by commas, e\.g\. prices\.record=30s: the period of prices\.record must be/)
})
