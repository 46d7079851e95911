import { sql } from 'kysely'
import type { Executor, JobRow } from '../db/schema.ts'

export async function insertJob(db: Executor, row: { id: string; organizationId: string | null; type: string; payload: Record<string, unknown>; maxAttempts: number; runAt: Date; at: Date }): Promise<void> {
  await db
    .insertInto('jobs')
    .values({
      id: row.id,
      organization_id: row.organizationId,
      type: row.type,
      payload: JSON.stringify(row.payload),
      status: 'pending',
      attempts: 0,
      max_attempts: row.maxAttempts,
      run_at: row.runAt,
      locked_until: null,
      locked_by: null,
      last_error: null,
      created_at: row.at,
      updated_at: row.at,
      finished_at: null,
    })
    .execute()
}

/**
 * Claims up to `limit` due jobs for one worker: pending ones whose time has come, and running ones whose lease
 * has passed (their worker died or hung). `SKIP LOCKED` lets workers claim side by side without waiting on or
 * taking each other's rows; the lease is what keeps a claimed job away from the others once this commits. The jobs
 * the worker is running (`running`) are never claimed again by it, even when their lease lapsed (a stalled event
 * loop delayed its renewal): it would only run them twice.
 */
export async function claimDue(db: Executor, input: { workerId: string; limit: number; leaseMs: number; types: readonly string[]; running?: readonly string[] }): Promise<JobRow[]> {
  if (input.limit < 1 || input.types.length === 0) return []
  const notRunning = input.running && input.running.length > 0 ? sql`and not (id = any(${input.running}::uuid[]))` : sql``
  const result = await sql<JobRow>`
    update jobs set status = 'running', attempts = attempts + 1, locked_by = ${input.workerId},
      locked_until = now() + make_interval(secs => ${input.leaseMs / 1000}::double precision), updated_at = now()
    where id in (
      select id from jobs
      where type in (${sql.join(input.types)})
        and ((status = 'pending' and run_at <= now()) or (status = 'running' and locked_until <= now()))
        ${notRunning}
      order by run_at, id
      limit ${input.limit}
      for update skip locked
    )
    returning *`.execute(db)
  return result.rows
}

/** Extends the lease of jobs this worker still holds, so that a long job is not taken over while it runs. */
export async function extendLeases(db: Executor, workerId: string, ids: readonly string[], leaseMs: number): Promise<void> {
  if (ids.length === 0) return
  await sql`update jobs set locked_until = now() + make_interval(secs => ${leaseMs / 1000}::double precision)
    where id in (${sql.join(ids)}) and locked_by = ${workerId} and status = 'running'`.execute(db)
}

/** Marks jobs done; returns the ones this worker no longer held (their lease had passed and another took them). */
export async function complete(db: Executor, ids: readonly string[], workerId: string, at: Date): Promise<string[]> {
  if (ids.length === 0) return []
  const done = await db
    .updateTable('jobs')
    .set({ status: 'completed', locked_by: null, locked_until: null, last_error: null, updated_at: at, finished_at: at })
    .where('id', 'in', ids)
    .where('locked_by', '=', workerId)
    .where('status', '=', 'running')
    .returning('id')
    .execute()
  const completed = new Set(done.map((row) => row.id))
  return ids.filter((id) => !completed.has(id))
}

export async function reschedule(db: Executor, id: string, workerId: string, runAt: Date, error: string, at: Date): Promise<void> {
  await db
    .updateTable('jobs')
    .set({ status: 'pending', run_at: runAt, locked_by: null, locked_until: null, last_error: error, updated_at: at })
    .where('id', '=', id)
    .where('locked_by', '=', workerId)
    .where('status', '=', 'running')
    .execute()
}

export async function fail(db: Executor, id: string, workerId: string, error: string, at: Date): Promise<void> {
  await db
    .updateTable('jobs')
    .set({ status: 'failed', locked_by: null, locked_until: null, last_error: error, updated_at: at, finished_at: at })
    .where('id', '=', id)
    .where('locked_by', '=', workerId)
    .where('status', '=', 'running')
    .execute()
}

/**
 * Puts a job back to run at `runAt` without counting the attempt: it waits, it did not fail. A job woken while it ran
 * (its `wakes` moved past `claimedWakes`, the count its claim read) is due at once instead: the news it waits for may
 * have come after it looked.
 */
export async function defer(db: Executor, id: string, workerId: string, runAt: Date, reason: string | null, claimedWakes: number): Promise<void> {
  const now = new Date()
  await db
    .updateTable('jobs')
    .set((eb) => ({
      status: 'pending',
      attempts: eb('attempts', '-', 1),
      run_at: sql<Date>`case when ${eb.ref('wakes')} > ${claimedWakes} then ${now}::timestamptz else ${runAt}::timestamptz end`,
      locked_by: null,
      locked_until: null,
      last_error: reason,
      updated_at: now,
    }))
    .where('id', '=', id)
    .where('locked_by', '=', workerId)
    .where('status', '=', 'running')
    .execute()
}

/** Gives claimed jobs back untouched (a stopping worker): due at once, the attempt not counted. */
export async function release(db: Executor, workerId: string, ids: readonly string[], at: Date): Promise<void> {
  if (ids.length === 0) return
  await db
    .updateTable('jobs')
    .set((eb) => ({ status: 'pending', attempts: eb('attempts', '-', 1), run_at: at, locked_by: null, locked_until: null, updated_at: at }))
    .where('id', 'in', ids)
    .where('locked_by', '=', workerId)
    .where('status', '=', 'running')
    .execute()
}

export function findJob(db: Executor, id: string): Promise<JobRow | undefined> {
  return db.selectFrom('jobs').selectAll().where('id', '=', id).executeTakeFirst()
}

/**
 * Makes waiting jobs of a type due now, those whose payload has `field` among `values` (a flow whose outside
 * party answered: it need not wait for its next look). Answers how many.
 */
export async function wake(db: Executor, type: string, organizationId: string, field: string, values: readonly string[], at: Date): Promise<number> {
  if (values.length === 0) return 0
  // A job running now is woken too (its `wakes` count moves past the one its claim read): should it defer itself,
  // having looked before the news, `defer` puts it back due at once rather than lose the wake-up.
  const result = await db
    .updateTable('jobs')
    .set((eb) => ({ run_at: sql<Date>`least(${eb.ref('run_at')}, ${at}::timestamptz)`, wakes: eb('wakes', '+', 1), updated_at: at }))
    .where('type', '=', type)
    .where('organization_id', '=', organizationId)
    .where((eb) => eb.or([eb.and([eb('status', '=', 'pending'), eb('run_at', '>', at)]), eb('status', '=', 'running')]))
    .where(sql<string>`payload->>${field}`, 'in', values)
    .executeTakeFirst()
  return Number(result.numUpdatedRows)
}

/** Whether a job of the type whose payload has `field` = `value` is waiting or running (not finished). */
export async function hasActive(db: Executor, type: string, organizationId: string | null, field: string, value: string): Promise<boolean> {
  const row = await db
    .selectFrom('jobs')
    .select('id')
    .where('type', '=', type)
    .where('organization_id', organizationId === null ? 'is' : '=', organizationId)
    .where('status', 'in', ['pending', 'running'])
    .where(sql<string>`payload->>${field}`, '=', value)
    .limit(1)
    .executeTakeFirst()
  return row !== undefined
}
