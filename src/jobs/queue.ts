import type { Executor, JobRow } from '../db/schema.ts'
import { uuidv7 } from '../lib/ids.ts'
import { DEFAULT_RETRY_POLICY } from './backoff.ts'
import { hasActive, insertJob, wake } from './jobs.repository.ts'

export interface NewJob {
  type: string
  payload: Record<string, unknown>
  /** For readers of the table; jobs are not filtered by it. */
  organizationId?: string | null
  /** Not before this time; now by default. */
  runAt?: Date
  maxAttempts?: number
}

/**
 * Enqueues a job with the caller's executor. Given the transaction of the change that needs the job, the job
 * exists exactly when that change commits: never a change without its job, never a job for a rolled-back change.
 */
export async function enqueue(executor: Executor, job: NewJob): Promise<string> {
  const at = new Date()
  const id = uuidv7(at.getTime())
  const maxAttempts = job.maxAttempts ?? DEFAULT_RETRY_POLICY.maxAttempts
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1) throw new RangeError('maxAttempts must be a positive integer')
  await insertJob(executor, { id, organizationId: job.organizationId ?? null, type: job.type, payload: job.payload, maxAttempts, runAt: job.runAt ?? at, at })
  return id
}

/**
 * Makes the waiting jobs of a type due now, those whose payload has `field` among `values` (what they wait for
 * has come: they need not wait for their next look). Answers how many were waiting.
 */
export function wakeJobs(executor: Executor, type: string, organizationId: string, field: string, values: readonly string[]): Promise<number> {
  return wake(executor, type, organizationId, field, values, new Date())
}

/** Whether a job of the type whose payload has `field` = `value` is still to run or running. */
export function hasActiveJob(executor: Executor, type: string, organizationId: string | null, field: string, value: string): Promise<boolean> {
  return hasActive(executor, type, organizationId, field, value)
}

export interface JobContext {
  /** The attempt being made, from 1. */
  attempt: number
  /** Aborted when the worker stops: a long handler may give up early; its job is then released and run again. */
  signal: AbortSignal
}

/**
 * Runs one job. Execution is at least once: a job may run again after a crash, a lost lease or a failure after
 * its work committed, so a handler must make its effect idempotent (e.g. a conditional status change and an
 * idempotent ledger reference, in one database transaction). Throwing retries the job later.
 */
export type JobHandler = (job: JobRow, context: JobContext) => Promise<void>

/**
 * Not a failure: the job has nothing to do until `runAt` (a flow waiting for an outside party's outcome). A
 * handler returns it, as the value for the job, among its failures; the worker puts the job back to run then,
 * and the attempt is not counted, so a long wait never exhausts the job's retries.
 */
export class JobDeferral {
  readonly runAt: Date
  /** Why it waits, when that is worth an operator's eye (kept as the job's last error). */
  readonly reason: string | null
  constructor(runAt: Date, reason: string | null = null) {
    this.runAt = runAt
    this.reason = reason
  }
}

/**
 * Runs several due jobs of one type together, so that their work can share database round trips (e.g. one
 * transaction that settles many deposits). Each job's `attempts` is its own attempt. Resolves with the jobs that
 * failed and why (each is retried or failed on its own, the others complete), or that wait (`JobDeferral`);
 * throwing fails every one of them.
 * The same at-least-once rule as for a `JobHandler` applies to each job.
 */
export type BatchJobHandler = (jobs: readonly JobRow[], context: { signal: AbortSignal }) => Promise<ReadonlyMap<string, unknown>>

interface Registration {
  /** How many jobs the handler takes at once; 1 for a one-job handler. */
  maxJobs: number
  run: BatchJobHandler
}

/** Handlers by job type; a worker claims only the types it has a handler for. */
export class JobHandlers {
  private readonly handlers = new Map<string, Registration>()

  register(type: string, handler: JobHandler): void {
    this.add(type, {
      maxJobs: 1,
      run: async (jobs, { signal }) => {
        const failures = new Map<string, unknown>()
        for (const job of jobs) {
          try {
            await handler(job, { attempt: job.attempts, signal })
          } catch (error) {
            failures.set(job.id, error)
          }
        }
        return failures
      },
    })
  }

  /** Registers a handler that takes up to `maxJobs` due jobs of the type at once. */
  registerBatch(type: string, handler: BatchJobHandler, options: { maxJobs: number }): void {
    if (!Number.isInteger(options.maxJobs) || options.maxJobs < 1) throw new RangeError('maxJobs must be a positive integer')
    this.add(type, { maxJobs: options.maxJobs, run: handler })
  }

  /** Runs jobs of one registered type (at most its `maxJobs`); resolves with the ones that failed. */
  run(jobs: readonly JobRow[], signal: AbortSignal): Promise<ReadonlyMap<string, unknown>> {
    const registration = this.handlers.get(jobs[0]!.type)!
    return registration.run(jobs, { signal })
  }

  /** How many jobs of the type one run takes; undefined for a type without a handler. */
  maxJobsOf(type: string): number | undefined {
    return this.handlers.get(type)?.maxJobs
  }

  types(): string[] {
    return [...this.handlers.keys()]
  }

  private add(type: string, registration: Registration): void {
    if (this.handlers.has(type)) throw new Error(`A handler for job type "${type}" is already registered`)
    this.handlers.set(type, registration)
  }
}
