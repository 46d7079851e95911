import { sql, type Kysely } from 'kysely'

export async function up(db: Kysely<unknown>): Promise<void> {
  // Rate-limit windows shared by the API processes of a PostgreSQL deployment (src/http/rate-limit.repository.ts):
  // one row a limited key (policy and client, or policy and address), holding how much of the current window's
  // allowance the processes have leased. The embedded engine keeps its counters in memory and leaves it empty.
  //
  // UNLOGGED: the counters are worth less than the WAL they would write (a row changes on every lease). After a
  // crash PostgreSQL empties the table, and standbys never see it, so after a crash or a failover clients start
  // fresh windows: at worst one extra window of allowance, never a lost answer or a refused request.
  // No index beside the key, and room left on each page, so that a lease is a HOT update in place.
  await sql`
    create unlogged table rate_limits (
      key text primary key,
      -- When the current window ends; a lease after it starts a new one.
      window_ends_at timestamptz not null,
      -- Allowance of the current window leased so far, by every process together; never above the limit.
      used integer not null,
      -- What the last lease took (RETURNING reports the row after the update, and this is the one figure of it
      -- that the lease cannot work out from the others).
      granted integer not null
    ) with (fillfactor = 70)
  `.execute(db)
}
