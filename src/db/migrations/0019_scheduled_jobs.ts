import { sql, type Kysely } from 'kysely'

export async function up(db: Kysely<unknown>): Promise<void> {
  // Recurring work (src/jobs/schedules.ts): one row per schedule, holding the last period a worker scheduled a run
  // for. A worker takes a period by moving `period_start` forward (an update that only ever moves it later), in the
  // transaction that enqueues the period's job: however many workers look, one of them takes each period, and a
  // worker whose clock lags never takes a period again. The table stays as small as the list of schedules.
  await db.schema
    .createTable('schedules')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('period_start', 'timestamptz', (c) => c.notNull())
    // The period the taking worker was configured with, for operators reading the table.
    .addColumn('period_ms', 'bigint', (c) => c.notNull())
    .addColumn('job_id', 'uuid', (c) => c.notNull())
    .addColumn('scheduled_at', 'timestamptz', (c) => c.notNull())
    .execute()

  // Job retention (`jobs.retention`) deletes finished jobs by the time they finished.
  await db.schema
    .createIndex('jobs_finished_idx')
    .on('jobs')
    .columns(['finished_at'])
    .where(sql.ref('status'), 'in', sql`('completed', 'failed')`)
    .execute()

  // Uploads whose bytes may be in storage without their file saying so (src/modules/files): a row is written before
  // the first byte is stored and removed in the transaction that marks the file uploaded (or once a failed upload
  // removed its bytes). A row left behind is a process that died mid-upload: past a grace period, its bytes are
  // deleted (`files.orphan-bytes`).
  await db.schema
    .createTable('file_uploads')
    .addColumn('storage_key', 'text', (c) => c.primaryKey())
    .addColumn('organization_id', 'uuid', (c) => c.notNull())
    .addColumn('file_id', 'uuid', (c) => c.notNull())
    .addColumn('started_at', 'timestamptz', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('file_uploads_started').on('file_uploads').columns(['started_at']).execute()

  // Approved self-categorization statements by the end of their validity (`kyc.self-categorization-expiry`). The
  // service writes every `expiresAt` with `toISOString()`, so the text orders as the time does.
  await sql`create index kyc_processes_statement_expiry on kyc_processes ((output->>'expiresAt'))
    where code = 'self-categorization-statement' and status = 'ok'`.execute(db)
}
