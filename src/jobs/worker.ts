import { randomBytes } from 'node:crypto'
import os from 'node:os'
import type { Db, JobRow } from '../db/schema.ts'
import { isRetryable } from '../lib/errors.ts'
import { afterFailure, DEFAULT_RETRY_POLICY, type RetryPolicy } from './backoff.ts'
import * as repository from './jobs.repository.ts'
import { JobDeferral, type JobHandlers } from './queue.ts'
import { formRuns } from './runs.ts'
import type { Scheduler } from './schedules.ts'

export interface WorkerLogger {
  info(object: object, message: string): void
  warn(object: object, message: string): void
  error(object: object, message: string): void
}

export interface WorkerOptions {
  db: Db
  handlers: JobHandlers
  /** How long the loop sleeps when no job is due. */
  pollIntervalMs: number
  /** Runs this worker makes at the same time: a run is one job, or several of a type whose handler takes a batch. */
  concurrency: number
  /** How long a claim holds before another worker may take the job over; renewed while the job runs. */
  leaseMs: number
  retry?: RetryPolicy
  logger?: WorkerLogger
  /** Recurring jobs this worker schedules as their periods begin, before each poll (not when draining). */
  scheduler?: Scheduler
}

const SILENT: WorkerLogger = { info: () => {}, warn: () => {}, error: () => {} }

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error)
}

/**
 * Polls the job table and runs due jobs with their handlers. Any number of workers (in any number of processes)
 * may poll the same table: a claim locks rows with `SKIP LOCKED` and takes a lease, so a job runs in one worker
 * at a time, and one whose worker died is taken over when its lease passes. Jobs of a type registered with a
 * batch handler are handed to it together, as many as are due up to its `maxJobs`: the busier the queue, the
 * larger the batches, and an idle queue still runs a lone job at once.
 */
export class Worker {
  readonly id = `${os.hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`
  private readonly options: Required<Omit<WorkerOptions, 'scheduler'>>
  private readonly scheduler: Scheduler | null
  /** Runs in progress, by their first job's id. */
  private readonly running = new Map<string, { jobIds: string[]; done: Promise<void> }>()
  private readonly abort = new AbortController()
  private loop: Promise<void> | null = null
  private stopping = false
  private wake: (() => void) | null = null
  private heartbeat: NodeJS.Timeout | null = null

  constructor(options: WorkerOptions) {
    const { scheduler, ...rest } = options
    this.options = { retry: DEFAULT_RETRY_POLICY, logger: SILENT, ...rest }
    this.scheduler = scheduler ?? null
  }

  get started(): boolean {
    return this.loop !== null
  }

  start(): void {
    if (this.loop || this.stopping) return
    this.heartbeat = setInterval(() => {
      repository.extendLeases(this.options.db, this.id, this.runningJobIds(), this.options.leaseMs).catch((error: unknown) => {
        this.options.logger.warn({ err: error, workerId: this.id }, 'extending job leases failed')
      })
    }, Math.max(10, Math.floor(this.options.leaseMs / 3)))
    this.heartbeat.unref()
    this.loop = this.run()
  }

  /** Polls now instead of at the end of the current sleep (e.g. after enqueuing in this process). */
  poke(): void {
    this.wake?.()
  }

  /**
   * Stops claiming, lets running jobs finish until `timeoutMs`, then gives back the ones still running so that
   * another worker picks them up at once (their attempt is not counted).
   */
  async stop(timeoutMs: number): Promise<void> {
    if (this.stopping) return
    this.stopping = true
    this.wake?.()
    await this.loop
    const finished = Promise.allSettled([...this.running.values()].map((run) => run.done))
    let timer: NodeJS.Timeout | undefined
    await Promise.race([finished, new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs)))])
    clearTimeout(timer)
    if (this.running.size > 0) {
      this.abort.abort()
      const ids = this.runningJobIds()
      await repository.release(this.options.db, this.id, ids, new Date())
      this.options.logger.warn({ workerId: this.id, jobIds: ids }, 'released jobs still running at shutdown')
    }
    if (this.heartbeat) clearInterval(this.heartbeat)
  }

  /**
   * Runs every job that is due now, and those they make due, until none is left; resolves when all finished.
   * For a process that wants the work done now rather than on the next poll (tests, one-off commands).
   */
  async drain(): Promise<number> {
    let total = 0
    for (;;) {
      const runs = await this.claim(this.options.concurrency)
      if (runs.length === 0) {
        if (this.running.size === 0) return total
        await this.anyRunFinished()
        continue
      }
      for (const run of runs) total += run.length
      await Promise.all(runs.map((run) => this.execute(run)))
    }
  }

  private async run(): Promise<void> {
    while (!this.stopping) {
      let claimed = 0
      // Its own failures are logged by the scheduler, schedule by schedule.
      if (this.scheduler) await this.scheduler.tick()
      try {
        const free = this.options.concurrency - this.running.size
        if (free > 0) {
          const runs = await this.claim(free)
          claimed = runs.length
          for (const run of runs) void this.execute(run)
        }
      } catch (error) {
        this.options.logger.error({ err: error, workerId: this.id }, 'claiming jobs failed')
      }
      if (this.stopping) break
      // Busy: come back as soon as a slot frees up. Idle: sleep until the next poll.
      const full = this.running.size >= this.options.concurrency
      if (claimed > 0 && !full) continue
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer)
          resolve()
        }
        // A period that begins during the sleep is scheduled when it begins, not at the next poll.
        const timer = setTimeout(done, Math.min(this.options.pollIntervalMs, this.scheduler?.msUntilNextLook() ?? Number.POSITIVE_INFINITY))
        if (full) void this.anyRunFinished().then(done, done)
        this.wake = done
      })
      this.wake = null
    }
  }

  /**
   * Claims due jobs for up to `slots` runs. A first claim takes one job per slot; for each type among them whose
   * handler takes batches, a second claim fills their runs up to its `maxJobs`, so that nothing is claimed that
   * has no run to go into (and a queue of one-job types is not claimed wholesale and given back).
   */
  private async claim(slots: number): Promise<JobRow[][]> {
    const { db, handlers, leaseMs } = this.options
    const maxJobsOf = (type: string) => handlers.maxJobsOf(type) ?? 1
    const running = this.runningJobIds()
    const jobs = await repository.claimDue(db, { workerId: this.id, limit: slots, leaseMs, types: handlers.types(), running })
    const counts = new Map<string, number>()
    for (const job of jobs) if (maxJobsOf(job.type) > 1) counts.set(job.type, (counts.get(job.type) ?? 0) + 1)
    for (const [type, count] of counts) {
      const room = Math.ceil(count / maxJobsOf(type)) * maxJobsOf(type) - count
      if (room > 0) jobs.push(...(await repository.claimDue(db, { workerId: this.id, limit: room, leaseMs, types: [type], running })))
    }
    const { runs, leftOver } = formRuns(jobs, slots, maxJobsOf)
    if (leftOver.length > 0) await repository.release(db, this.id, leftOver.map((job) => job.id), new Date())
    return runs
  }

  private runningJobIds(): string[] {
    return [...this.running.values()].flatMap((run) => run.jobIds)
  }

  private anyRunFinished(): Promise<void> {
    return Promise.race([...this.running.values()].map((run) => run.done))
  }

  private execute(run: JobRow[]): Promise<void> {
    const key = run[0]!.id
    const done = this.attempt(run).finally(() => this.running.delete(key))
    this.running.set(key, { jobIds: run.map((job) => job.id), done })
    return done
  }

  private async attempt(run: JobRow[]): Promise<void> {
    const { db, handlers, logger } = this.options
    let failures: ReadonlyMap<string, unknown>
    try {
      failures = await handlers.run(run, this.abort.signal)
    } catch (error) {
      failures = new Map(run.map((job) => [job.id, error]))
    }
    // A stopping worker gave its runs back; the failures are not counted against the jobs.
    if (!this.abort.signal.aborted) {
      for (const job of run) {
        if (!failures.has(job.id)) continue
        const failure = failures.get(job.id)
        if (failure instanceof JobDeferral) await this.defer(job, failure)
        else await this.recordFailure(job, failure)
      }
    }
    const succeeded = run.filter((job) => !failures.has(job.id)).map((job) => job.id)
    try {
      const lost = await repository.complete(db, succeeded, this.id, new Date())
      if (lost.length > 0) logger.warn({ jobIds: lost, type: run[0]!.type }, 'jobs finished after their lease passed; another worker may have run them too')
    } catch (error) {
      logger.error({ err: error, jobIds: succeeded }, 'marking jobs completed failed; they will run again')
    }
  }

  private async defer(job: JobRow, deferral: JobDeferral): Promise<void> {
    if (deferral.reason !== null) this.options.logger.error({ jobId: job.id, type: job.type, reason: deferral.reason, retryAt: deferral.runAt }, 'job cannot go on and may not give up; retrying later')
    try {
      await repository.defer(this.options.db, job.id, this.id, deferral.runAt, deferral.reason, job.wakes)
    } catch (error) {
      // The lease runs out and the job is taken over early: it is not lost.
      this.options.logger.error({ err: error, jobId: job.id }, 'deferring a job failed')
    }
  }

  private async recordFailure(job: JobRow, error: unknown): Promise<void> {
    const { db, logger, retry } = this.options
    const at = new Date()
    // The error decides: a refusal that no retry can cure (a domain error that is not retryable) fails at once.
    const next = isRetryable(error) ? afterFailure(job.attempts, { ...retry, maxAttempts: job.max_attempts }, at) : { giveUp: true as const }
    try {
      if ('giveUp' in next) {
        await repository.fail(db, job.id, this.id, describe(error), at)
        logger.error({ err: error, jobId: job.id, type: job.type, attempts: job.attempts }, isRetryable(error) ? 'job failed for good after its last attempt' : 'job failed for good: its error is not retryable')
      } else {
        await repository.reschedule(db, job.id, this.id, next.retryAt, describe(error), at)
        logger.warn({ err: error, jobId: job.id, type: job.type, attempts: job.attempts, retryAt: next.retryAt }, 'job failed; retrying later')
      }
    } catch (writeError) {
      // The lease runs out and the job is taken over: it is not lost.
      logger.error({ err: writeError, jobId: job.id }, 'recording a job failure failed')
    }
  }
}
