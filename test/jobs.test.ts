import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { openDatabase, type DatabaseHandle } from '../src/db/database.ts'
import type { Db } from '../src/db/schema.ts'
import { claimDue, findJob } from '../src/jobs/jobs.repository.ts'
import { enqueue, JobDeferral, JobHandlers, wakeJobs, type JobHandler } from '../src/jobs/queue.ts'
import { Worker } from '../src/jobs/worker.ts'
import { DomainError } from '../src/lib/errors.ts'
import { ENGINES, openTestDatabase, TEST_DATABASE_URL, testConfig } from './helpers.ts'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

let typeCounter = 0
/** A job type of its own per test, so that tests sharing a database never run each other's jobs. */
const freshType = () => `test.job-${++typeCounter}`

function workerFor(db: Db, handlers: Record<string, JobHandler>, options: Partial<ConstructorParameters<typeof Worker>[0]> = {}): Worker {
  const registry = new JobHandlers()
  for (const [type, handler] of Object.entries(handlers)) registry.register(type, handler)
  return new Worker({ db, handlers: registry, pollIntervalMs: 20, concurrency: 4, leaseMs: 5_000, retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 5 }, ...options })
}

async function waitFor(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('timed out waiting')
    await sleep(10)
  }
}

for (const engine of ENGINES) {
  describe(`background jobs [${engine}]`, () => {
    let database: DatabaseHandle
    let cleanup: () => Promise<void>
    before(async () => ({ database, cleanup } = await openTestDatabase(engine, testConfig())))
    after(async () => {
      await database.close()
      await cleanup()
    })

    test('a job enqueued in a transaction exists only if the transaction commits', async () => {
      const type = freshType()
      let rolledBack = ''
      await assert.rejects(
        database.db.transaction().execute(async (tx) => {
          rolledBack = await enqueue(tx, { type, payload: {} })
          throw new Error('rolled back')
        }),
      )
      const committed = await database.db.transaction().execute((tx) => enqueue(tx, { type, payload: { n: 1 } }))
      assert.equal(await findJob(database.db, rolledBack), undefined)
      assert.equal((await findJob(database.db, committed))?.status, 'pending')
    })

    test('the loop runs due jobs with the handler of their type and marks them completed', async () => {
      const type = freshType()
      const seen: unknown[] = []
      const worker = workerFor(database.db, { [type]: async (job) => void seen.push(job.payload) })
      const ids = await Promise.all([1, 2, 3].map((n) => enqueue(database.db, { type, payload: { n } })))
      const later = await enqueue(database.db, { type, payload: { n: 4 }, runAt: new Date(Date.now() + 60_000) })
      worker.start()
      await waitFor(async () => (await Promise.all(ids.map((id) => findJob(database.db, id)))).every((job) => job?.status === 'completed'))
      await worker.stop(1000)
      assert.deepEqual(seen.map((p) => (p as { n: number }).n).sort(), [1, 2, 3])
      const job = await findJob(database.db, ids[0]!)
      assert.equal(job?.attempts, 1)
      assert.ok(job?.finished_at)
      assert.equal(job?.locked_by, null)
      assert.equal((await findJob(database.db, later))?.status, 'pending')
    })

    test('a failing job is retried later, then marked failed after its last attempt and never lost', async () => {
      const type = freshType()
      let calls = 0
      const errors: unknown[] = []
      const logger = { info: () => {}, warn: () => {}, error: (o: object) => void errors.push(o) }
      const worker = workerFor(database.db, { [type]: async () => { calls++; throw new Error('rail unavailable') } }, { logger, retry: { maxAttempts: 3, baseDelayMs: 50, maxDelayMs: 50 } })
      const id = await enqueue(database.db, { type, payload: {}, maxAttempts: 3 })
      await worker.drain()
      const afterFirst = await findJob(database.db, id)
      assert.equal(afterFirst?.status, 'pending')
      assert.equal(afterFirst?.attempts, 1)
      assert.equal(afterFirst?.last_error, 'Error: rail unavailable')
      assert.ok(afterFirst!.run_at.getTime() > Date.now() - 10, 'retried later, not at once')
      worker.start()
      await waitFor(async () => (await findJob(database.db, id))?.status === 'failed')
      await worker.stop(1000)
      assert.equal(calls, 3)
      const failed = await findJob(database.db, id)
      assert.equal(failed?.attempts, 3)
      assert.equal(failed?.last_error, 'Error: rail unavailable')
      assert.equal(errors.length, 1)
    })

    test('a job failing with an error that is not retryable fails at once; a retryable one is retried', async () => {
      const final = freshType()
      const transient = freshType()
      let transientCalls = 0
      const worker = workerFor(database.db, {
        [final]: async () => { throw new DomainError('operation_not_allowed', 'refused for good') },
        [transient]: async () => { if (++transientCalls === 1) throw new DomainError('service_unavailable', 'provider down', { retryable: true }) },
      }, { retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 1 } })
      const refused = await enqueue(database.db, { type: final, payload: {}, maxAttempts: 3 })
      const retried = await enqueue(database.db, { type: transient, payload: {}, maxAttempts: 3 })
      await worker.drain()
      const failed = await findJob(database.db, refused)
      assert.deepEqual([failed?.status, failed?.attempts, failed?.last_error], ['failed', 1, 'DomainError: refused for good'])
      await sleep(5)
      await worker.drain()
      const done = await findJob(database.db, retried)
      assert.deepEqual([done?.status, done?.attempts], ['completed', 2])
    })

    test('a job whose worker died is taken over once its lease has passed', async () => {
      const type = freshType()
      const id = await enqueue(database.db, { type, payload: {} })
      const [claimed] = await claimDue(database.db, { workerId: 'dead-worker', limit: 1, leaseMs: 300, types: [type] })
      assert.equal(claimed?.id, id)
      let runs = 0
      const worker = workerFor(database.db, { [type]: async () => void runs++ })
      assert.equal(await worker.drain(), 0, 'still leased to the dead worker')
      await sleep(400)
      assert.equal(await worker.drain(), 1)
      const job = await findJob(database.db, id)
      assert.equal(job?.status, 'completed')
      assert.equal(job?.attempts, 2)
      assert.equal(runs, 1)
    })

    test('a worker whose lease lapsed while it ran a job does not claim the job again: it runs once', async () => {
      const type = freshType()
      const id = await enqueue(database.db, { type, payload: {} })
      let runs = 0
      let finish!: () => void
      const finished = new Promise<void>((resolve) => (finish = resolve))
      const worker = workerFor(database.db, { [type]: async () => ((runs += 1), await finished) }, { leaseMs: 60_000 })
      worker.start()
      try {
        await waitFor(async () => runs === 1)
        // The lease lapses as when a stalled event loop delays its renewal.
        await database.db.updateTable('jobs').set({ locked_until: new Date(Date.now() - 1_000) }).where('id', '=', id).execute()
        worker.poke()
        await sleep(100)
        assert.equal(runs, 1, 'the worker did not take its own job over')
        assert.equal((await findJob(database.db, id))?.attempts, 1)
        finish()
        await waitFor(async () => (await findJob(database.db, id))?.status === 'completed')
      } finally {
        finish()
        await worker.stop(1_000)
      }
      assert.equal(runs, 1)
      assert.equal((await findJob(database.db, id))?.attempts, 1)
    })

    test('stopping finishes running jobs, or gives back those that outlast the timeout', async () => {
      const type = freshType()
      let release!: () => void
      const blocked = new Promise<void>((resolve) => (release = resolve))
      const worker = workerFor(database.db, { [type]: () => blocked })
      const id = await enqueue(database.db, { type, payload: {} })
      worker.start()
      await waitFor(async () => (await findJob(database.db, id))?.status === 'running')
      await worker.stop(50)
      const job = await findJob(database.db, id)
      assert.equal(job?.status, 'pending')
      assert.equal(job?.attempts, 0)
      assert.equal(job?.locked_by, null)
      release()

      const quick = workerFor(database.db, { [type]: async () => void (await sleep(100)) })
      quick.start()
      await waitFor(async () => (await findJob(database.db, id))?.status === 'running')
      await quick.stop(5_000)
      assert.equal((await findJob(database.db, id))?.status, 'completed')
    })

    test('a worker claims only the types it has handlers for', async () => {
      const mine = freshType()
      const other = freshType()
      const id = await enqueue(database.db, { type: other, payload: {} })
      const worker = workerFor(database.db, { [mine]: async () => {} })
      assert.equal(await worker.drain(), 0)
      assert.equal((await findJob(database.db, id))?.status, 'pending')
    })

    test('a batch handler gets the due jobs of its type together, at most maxJobs at a time', async () => {
      const type = freshType()
      const single = freshType()
      const batches: number[][] = []
      const singles: number[] = []
      const registry = new JobHandlers()
      registry.registerBatch(type, async (jobs) => {
        batches.push(jobs.map((job) => (job.payload as { n: number }).n).sort((x, y) => x - y))
        return new Map()
      }, { maxJobs: 4 })
      registry.register(single, async (job) => void singles.push((job.payload as { n: number }).n))
      assert.throws(() => registry.registerBatch(freshType(), async () => new Map(), { maxJobs: 0 }), RangeError)
      const ids: string[] = []
      for (let n = 0; n < 10; n++) ids.push(await enqueue(database.db, { type, payload: { n } }))
      for (let n = 0; n < 3; n++) ids.push(await enqueue(database.db, { type: single, payload: { n } }))
      const worker = new Worker({ db: database.db, handlers: registry, pollIntervalMs: 20, concurrency: 2, leaseMs: 5_000 })
      assert.equal(await worker.drain(), 13)
      assert.deepEqual(batches.flat().sort((x, y) => x - y), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
      assert.ok(batches.every((batch) => batch.length <= 4), JSON.stringify(batches))
      assert.ok(batches.length <= 4, `10 due jobs in batches of at most 4 make 3 runs, not ${batches.length}`)
      assert.deepEqual(singles.sort(), [0, 1, 2])
      for (const id of ids) {
        const job = await findJob(database.db, id)
        assert.equal(job?.status, 'completed')
        assert.equal(job?.attempts, 1, 'claimed once, never given back and claimed again')
      }
    })

    test('jobs a batch handler reports failed are retried alone; the others of the batch complete', async () => {
      const type = freshType()
      const calls: number[][] = []
      const registry = new JobHandlers()
      registry.registerBatch(type, async (jobs) => {
        calls.push(jobs.map((job) => (job.payload as { n: number }).n))
        return new Map(jobs.filter((job) => (job.payload as { n: number }).n === 1 && job.attempts === 1).map((job) => [job.id, new Error('not yet')]))
      }, { maxJobs: 10 })
      const ids = [await enqueue(database.db, { type, payload: { n: 0 } }), await enqueue(database.db, { type, payload: { n: 1 } }), await enqueue(database.db, { type, payload: { n: 2 } })]
      const worker = new Worker({ db: database.db, handlers: registry, pollIntervalMs: 20, concurrency: 1, leaseMs: 5_000, retry: { maxAttempts: 3, baseDelayMs: 200, maxDelayMs: 200 } })
      await worker.drain()
      const retried = await findJob(database.db, ids[1]!)
      assert.equal(retried?.status, 'pending')
      assert.equal(retried?.last_error, 'Error: not yet')
      assert.equal((await findJob(database.db, ids[0]!))?.status, 'completed')
      assert.equal((await findJob(database.db, ids[2]!))?.status, 'completed')
      await sleep(250)
      await worker.drain()
      assert.equal((await findJob(database.db, ids[1]!))?.status, 'completed')
      assert.deepEqual(calls.map((call) => call.sort()), [[0, 1, 2], [1]])

      // A batch handler that throws fails every job of its run.
      const broken = freshType()
      const failing = new JobHandlers()
      failing.registerBatch(broken, async () => {
        throw new Error('database unavailable')
      }, { maxJobs: 10 })
      const both = [await enqueue(database.db, { type: broken, payload: {} }), await enqueue(database.db, { type: broken, payload: {} })]
      await new Worker({ db: database.db, handlers: failing, pollIntervalMs: 20, concurrency: 1, leaseMs: 5_000 }).drain()
      for (const id of both) {
        const job = await findJob(database.db, id)
        assert.equal(job?.status, 'pending')
        assert.equal(job?.last_error, 'Error: database unavailable')
      }
    })

    test('a job woken while it runs is not deferred past the news: it runs again at once; unwoken, it waits', async () => {
      const type = freshType()
      const runs: number[] = []
      const registry = new JobHandlers()
      registry.registerBatch(type, async (jobs) => {
        runs.push(Date.now())
        // The news arrives while the first run looks (a request answered while its flow checked it).
        if (runs.length === 1) assert.equal(await wakeJobs(database.db, type, jobs[0]!.organization_id!, 'key', ['k']), 1)
        return new Map(jobs.map((job) => [job.id, new JobDeferral(new Date(Date.now() + 3_600_000))]))
      }, { maxJobs: 1 })
      const org = '0190a8c1-0000-7000-8000-00000000000a'
      const id = await enqueue(database.db, { type, organizationId: org, payload: { key: 'k' } })
      const worker = new Worker({ db: database.db, handlers: registry, pollIntervalMs: 20, concurrency: 1, leaseMs: 5_000 })
      await worker.drain()
      assert.equal(runs.length, 2, 'woken during its first run, it ran again')
      const job = await findJob(database.db, id)
      assert.equal(job?.status, 'pending')
      assert.ok(job!.run_at.getTime() > Date.now() + 3_000_000, 'then, unwoken, it waits as it asked')
      assert.equal(job?.attempts, 0, 'waiting spends no attempt')
    })

    test('enqueue refuses a job that could never run', async () => {
      await assert.rejects(enqueue(database.db, { type: freshType(), payload: {}, maxAttempts: 0 }), RangeError)
    })
  })
}

if (TEST_DATABASE_URL) {
  describe('background jobs with several workers [postgres]', () => {
    let database: DatabaseHandle
    let second: DatabaseHandle
    let cleanup: () => Promise<void>
    before(async () => {
      ;({ database, cleanup } = await openTestDatabase('postgres', testConfig()))
      second = await openDatabase({ ...testConfig(), databaseUrl: database.url!, databaseDirectUrl: database.directUrl!, databasePoolSize: 4 })
    })
    after(async () => {
      await second.close()
      await database.close()
      await cleanup()
    })

    test('two workers on separate connection pools run every job once, never the same job at the same time', async () => {
      const type = freshType()
      const running = new Set<string>()
      const runs = new Map<string, number>()
      const byWorker = new Map<string, number>()
      let overlaps = 0
      const handler = (name: string): JobHandler => async (job) => {
        if (running.has(job.id)) overlaps++
        running.add(job.id)
        runs.set(job.id, (runs.get(job.id) ?? 0) + 1)
        byWorker.set(name, (byWorker.get(name) ?? 0) + 1)
        await sleep(Math.random() * 5)
        running.delete(job.id)
      }
      const ids: string[] = []
      for (let i = 0; i < 200; i++) ids.push(await enqueue(database.db, { type, payload: { i } }))
      const a = workerFor(database.db, { [type]: handler('a') }, { concurrency: 4 })
      const b = workerFor(second.db, { [type]: handler('b') }, { concurrency: 4 })
      a.start()
      b.start()
      await waitFor(async () => {
        const left = await database.db.selectFrom('jobs').select('id').where('type', '=', type).where('status', '!=', 'completed').execute()
        return left.length === 0
      }, 30_000)
      await Promise.all([a.stop(1000), b.stop(1000)])
      assert.equal(overlaps, 0)
      assert.equal(runs.size, 200)
      assert.ok([...runs.values()].every((n) => n === 1), 'every job ran exactly once')
      assert.ok((byWorker.get('a') ?? 0) > 0 && (byWorker.get('b') ?? 0) > 0, `both workers took part: ${JSON.stringify([...byWorker])}`)
    })
  })
}
