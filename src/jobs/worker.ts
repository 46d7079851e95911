import { randomBytes } from 'node:crypto'
import os from 'node:os'
import type { Db, JobRow } from '../db/schema.ts'
import { afterFailure, DEFAULT_RETRY_POLICY, type RetryPolicy } from './backoff.ts'
import * as repository from './jobs.repository.ts'
import type { JobHandlers } from './queue.ts'

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
  /** Jobs this worker runs at the same time. */
  concurrency: number
  /** How long a claim holds before another worker may take the job over; renewed while the job runs. */
  leaseMs: number
  retry?: RetryPolicy
  logger?: WorkerLogger
}

const SILENT: WorkerLogger = { info: () => {}, warn: () => {}, error: () => {} }

function describe(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error)
}

/**
 * Polls the job table and runs due jobs with their handlers. Any number of workers (in any number of processes)
 * may poll the same table: a claim locks rows with `SKIP LOCKED` and takes a lease, so a job runs in one worker
 * at a time, and one whose worker died is taken over when its lease passes.
 */
export class Worker {
  readonly id = `${os.hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`
  private readonly options: Required<WorkerOptions>
  private readonly running = new Map<string, Promise<void>>()
  private readonly abort = new AbortController()
  private loop: Promise<void> | null = null
  private stopping = false
  private wake: (() => void) | null = null
  private heartbeat: NodeJS.Timeout | null = null

  constructor(options: WorkerOptions) {
    this.options = { retry: DEFAULT_RETRY_POLICY, logger: SILENT, ...options }
  }

  get started(): boolean {
    return this.loop !== null
  }

  start(): void {
    if (this.loop || this.stopping) return
    this.heartbeat = setInterval(() => {
      repository.extendLeases(this.options.db, this.id, [...this.running.keys()], this.options.leaseMs).catch((error: unknown) => {
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
    const finished = Promise.allSettled([...this.running.values()])
    let timer: NodeJS.Timeout | undefined
    await Promise.race([finished, new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs)))])
    clearTimeout(timer)
    if (this.running.size > 0) {
      this.abort.abort()
      const ids = [...this.running.keys()]
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
      const jobs = await this.claim(this.options.concurrency)
      if (jobs.length === 0) {
        if (this.running.size === 0) return total
        await Promise.race(this.running.values())
        continue
      }
      total += jobs.length
      await Promise.all(jobs.map((job) => this.execute(job)))
    }
  }

  private async run(): Promise<void> {
    while (!this.stopping) {
      let claimed = 0
      try {
        const free = this.options.concurrency - this.running.size
        if (free > 0) {
          const jobs = await this.claim(free)
          claimed = jobs.length
          for (const job of jobs) void this.execute(job)
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
        const timer = setTimeout(done, this.options.pollIntervalMs)
        if (full) void Promise.race(this.running.values()).then(done, done)
        this.wake = done
      })
      this.wake = null
    }
  }

  private claim(limit: number): Promise<JobRow[]> {
    return repository.claimDue(this.options.db, { workerId: this.id, limit, leaseMs: this.options.leaseMs, types: this.options.handlers.types() })
  }

  private execute(job: JobRow): Promise<void> {
    const work = this.attempt(job).finally(() => this.running.delete(job.id))
    this.running.set(job.id, work)
    return work
  }

  private async attempt(job: JobRow): Promise<void> {
    const { db, handlers, logger, retry } = this.options
    const handler = handlers.get(job.type)!
    try {
      await handler(job, { attempt: job.attempts, signal: this.abort.signal })
    } catch (error) {
      if (this.abort.signal.aborted) return
      const at = new Date()
      const next = afterFailure(job.attempts, { ...retry, maxAttempts: job.max_attempts }, at)
      try {
        if ('giveUp' in next) {
          await repository.fail(db, job.id, this.id, describe(error), at)
          logger.error({ err: error, jobId: job.id, type: job.type, attempts: job.attempts }, 'job failed for good after its last attempt')
        } else {
          await repository.reschedule(db, job.id, this.id, next.retryAt, describe(error), at)
          logger.warn({ err: error, jobId: job.id, type: job.type, attempts: job.attempts, retryAt: next.retryAt }, 'job failed; retrying later')
        }
      } catch (writeError) {
        // The lease runs out and the job is taken over: it is not lost.
        logger.error({ err: writeError, jobId: job.id }, 'recording a job failure failed')
      }
      return
    }
    try {
      if (!(await repository.complete(db, job.id, this.id, new Date()))) {
        logger.warn({ jobId: job.id, type: job.type }, 'job finished after its lease passed; another worker may have run it too')
      }
    } catch (error) {
      logger.error({ err: error, jobId: job.id }, 'marking a job completed failed; it will run again')
    }
  }
}
