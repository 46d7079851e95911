import { sql, type Kysely } from 'kysely'

export async function up(db: Kysely<unknown>): Promise<void> {
  // Background work. A worker claims due jobs with `FOR UPDATE SKIP LOCKED` and a lease (`locked_until`): a job
  // whose worker died becomes claimable again once its lease has passed, so no job is lost and, while the lease
  // holds, no two workers run the same job.
  await db.schema
    .createTable('jobs')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('organization_id', 'uuid')
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('payload', 'jsonb', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('max_attempts', 'integer', (c) => c.notNull())
    .addColumn('run_at', 'timestamptz', (c) => c.notNull())
    .addColumn('locked_until', 'timestamptz')
    .addColumn('locked_by', 'text')
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .addColumn('finished_at', 'timestamptz')
    .addCheckConstraint('jobs_status', sql`status in ('pending', 'running', 'completed', 'failed')`)
    .addCheckConstraint('jobs_attempts', sql`attempts >= 0 and max_attempts >= 1`)
    .execute()
  // Only unfinished jobs are ever looked for; finished ones stay as a record and cost the poll nothing.
  await db.schema
    .createIndex('jobs_due_idx')
    .on('jobs')
    .columns(['run_at'])
    .where(sql.ref('status'), 'in', sql`('pending', 'running')`)
    .execute()

  // Business-level transactions (deposits, …) as the API shows them; their money moves in the ledger, whose
  // posting carries the transaction's id as its reference.
  await db.schema
    .createTable('transactions')
    .addColumn('organization_id', 'uuid', (c) => c.notNull().references('organizations.id'))
    .addColumn('id', 'uuid', (c) => c.notNull())
    .addColumn('owner_id', 'uuid', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('reason', 'text')
    .addColumn('asset', 'text', (c) => c.notNull())
    .addColumn('amount', 'numeric', (c) => c.notNull())
    // The user's account the transaction credits (deposit) or debits.
    .addColumn('account_id', 'uuid', (c) => c.notNull())
    .addColumn('network', 'text', (c) => c.notNull())
    .addColumn('origin', 'jsonb', (c) => c.notNull())
    .addColumn('destination', 'jsonb', (c) => c.notNull())
    // The caller's own id for what caused it (e.g. the rail's payment id): recording it again records nothing.
    .addColumn('reference', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .addColumn('completed_at', 'timestamptz')
    .addPrimaryKeyConstraint('transactions_pkey', ['organization_id', 'id'])
    .addUniqueConstraint('transactions_reference_unique', ['organization_id', 'reference'])
    .addCheckConstraint('transactions_status', sql`status in ('processing', 'on-hold', 'completed', 'failed')`)
    .addCheckConstraint('transactions_amount_positive', sql`amount > 0`)
    .execute()
  await db.schema.createIndex('transactions_owner_idx').on('transactions').columns(['organization_id', 'owner_id', 'id']).execute()
  await db.schema.createIndex('transactions_account_idx').on('transactions').columns(['organization_id', 'account_id', 'id']).execute()
}
