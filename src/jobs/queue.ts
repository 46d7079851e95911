import type { Executor, JobRow } from '../db/schema.ts'
import { uuidv7 } from '../lib/ids.ts'
import { DEFAULT_RETRY_POLICY } from './backoff.ts'
import { insertJob } from './jobs.repository.ts'

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

/** Handlers by job type; a worker claims only the types it has a handler for. */
export class JobHandlers {
  private readonly handlers = new Map<string, JobHandler>()

  register(type: string, handler: JobHandler): void {
    if (this.handlers.has(type)) throw new Error(`A handler for job type "${type}" is already registered`)
    this.handlers.set(type, handler)
  }

  get(type: string): JobHandler | undefined {
    return this.handlers.get(type)
  }

  types(): string[] {
    return [...this.handlers.keys()]
  }
}
