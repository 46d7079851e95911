import type { Executor } from '../db/schema.ts'
import type { Schedules } from './schedules.ts'

export const JOB_RETENTION_SCHEDULE = 'jobs.retention'

/** Rows one statement deletes: a large backlog goes in several short transactions, never one long one. */
const BATCH = 1_000

export interface JobRetention {
  /** How long a completed job is kept after it finished (JOB_RETENTION). */
  completedMs: number
  /** How long a job that failed for good is kept: what an operator investigates (FAILED_JOB_RETENTION). */
  failedMs: number
}

/**
 * Deletes the jobs of a status that finished before `before`; answers how many. Nothing reads a finished job (the
 * queue only claims unfinished ones): it is a record for operators, kept for the retention.
 */
export async function deleteFinishedJobs(db: Executor, status: 'completed' | 'failed', before: Date): Promise<number> {
  let deleted = 0
  for (;;) {
    const result = await db
      .deleteFrom('jobs')
      .where('id', 'in', (eb) => eb.selectFrom('jobs').select('id').where('status', '=', status).where('finished_at', '<', before).limit(BATCH))
      .executeTakeFirst()
    const count = Number(result.numDeletedRows)
    deleted += count
    if (count < BATCH) return deleted
  }
}

/** Registers `jobs.retention`: every hour, finished jobs past their retention are deleted. */
export function registerJobRetention(schedules: Schedules, db: Executor, retention: JobRetention): void {
  schedules.register({
    name: JOB_RETENTION_SCHEDULE,
    periodMs: 60 * 60_000,
    run: async ({ periodStart }) => {
      await deleteFinishedJobs(db, 'completed', new Date(periodStart.getTime() - retention.completedMs))
      await deleteFinishedJobs(db, 'failed', new Date(periodStart.getTime() - retention.failedMs))
    },
  })
}
