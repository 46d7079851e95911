import { sql } from 'kysely'
import type { Db } from '../db/schema.ts'
import type { AllowanceStore, Lease } from './rate-limit.ts'

/** A lease takes this fraction of what the window has left (at least one request). */
const LEASE_DIVISOR = 16
/** How often a process deletes the rows of ended windows (keys not seen since). */
const SWEEP_INTERVAL_MS = 5 * 60_000

/**
 * The windows of every API process of a deployment, in PostgreSQL's `rate_limits` (migration 0020). A lease is one
 * statement: it starts the key's window when there is none or it ended, then takes a slice of what is left, under
 * the row's lock, so that concurrent leases by any number of processes never add up to more than the limit.
 * The window is the database's (its clock), so processes whose clocks differ still agree on it.
 */
export class PostgresAllowanceStore implements AllowanceStore {
  private readonly db: Db
  private readonly onSweepError: (error: unknown) => void
  private readonly clock: () => number
  private lastSweep: number

  constructor(db: Db, onSweepError: (error: unknown) => void, clock: () => number = Date.now) {
    this.db = db
    this.onSweepError = onSweepError
    this.clock = clock
    this.lastSweep = clock()
  }

  async lease(key: string, limit: number, windowMs: number): Promise<Lease> {
    // In ON CONFLICT's SET, `rate_limits.*` is the row before the update: every expression reads the same old values.
    const ended = sql`rate_limits.window_ends_at <= now()`
    const divisor = sql.lit(LEASE_DIVISOR)
    const first = sql`least(${limit}::int, greatest(1, ${limit}::int / ${divisor}))`
    const next = sql`least(greatest(${limit}::int - rate_limits.used, 0), greatest(1, (${limit}::int - rate_limits.used) / ${divisor}))`
    const { rows } = await sql<{ granted: number; used: number; window_id: string; ends_in_ms: number }>`
      insert into rate_limits (key, window_ends_at, used, granted)
      values (${key}, now() + ${windowMs}::int * interval '1 millisecond', ${first}, ${first})
      on conflict (key) do update set
        window_ends_at = case when ${ended} then excluded.window_ends_at else rate_limits.window_ends_at end,
        used = case when ${ended} then excluded.used else rate_limits.used + ${next} end,
        granted = case when ${ended} then excluded.granted else ${next} end
      returning granted, used,
        (extract(epoch from window_ends_at) * 1000)::bigint::text as window_id,
        ceil(extract(epoch from window_ends_at - now()) * 1000)::int as ends_in_ms
    `.execute(this.db)
    const row = rows[0]!
    this.sweepNowAndThen()
    return { granted: row.granted, unleased: Math.max(0, limit - row.used), windowId: Number(row.window_id), endsInMs: row.ends_in_ms }
  }

  /**
   * Rows of ended windows are dead weight (a key seen again starts a new window in place). A row leased while the
   * delete waits for it is checked again and kept.
   */
  private sweepNowAndThen(): void {
    const now = this.clock()
    if (now - this.lastSweep < SWEEP_INTERVAL_MS) return
    this.lastSweep = now
    this.db
      .deleteFrom('rate_limits')
      .where('window_ends_at', '<', sql<Date>`now()`)
      .execute()
      .catch(this.onSweepError)
  }
}
