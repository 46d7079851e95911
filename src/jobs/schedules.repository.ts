import { sql } from 'kysely'
import type { Executor } from '../db/schema.ts'

/**
 * Takes the period of a schedule that starts at `periodStart` and enqueues its job (of the schedule's name, due
 * now), unless a worker (this one or another) already took that period or a later one: the schedule's row only
 * ever moves forward. One statement, so one round trip and atomic: two workers taking the same period at once are
 * ordered by the row's lock, and the second finds it taken and enqueues nothing. True when this call took it.
 */
export async function takePeriod(
  db: Executor,
  row: { name: string; periodStart: Date; periodMs: number; job: { id: string; payload: Record<string, unknown>; maxAttempts: number }; at: Date },
): Promise<boolean> {
  const result = await sql<{ id: string }>`
    with taken as (
      insert into schedules (name, period_start, period_ms, job_id, scheduled_at)
      values (${row.name}, ${row.periodStart}, ${row.periodMs}, ${row.job.id}, ${row.at})
      on conflict (name) do update set period_start = excluded.period_start, period_ms = excluded.period_ms,
        job_id = excluded.job_id, scheduled_at = excluded.scheduled_at
      where schedules.period_start < excluded.period_start
      returning name
    )
    insert into jobs (id, organization_id, type, payload, status, attempts, max_attempts, run_at, created_at, updated_at)
    select ${row.job.id}, null, name, ${JSON.stringify(row.job.payload)}::jsonb, 'pending', 0, ${row.job.maxAttempts}, ${row.at}, ${row.at}, ${row.at}
    from taken
    returning id`.execute(db)
  return result.rows.length > 0
}
