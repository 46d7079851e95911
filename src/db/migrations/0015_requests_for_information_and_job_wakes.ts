import { sql, type Kysely } from 'kysely'

export async function up(db: Kysely<unknown>): Promise<void> {
  // Requests for information (the travel rule): what Tessera asks the user about the other party of a crypto
  // movement. One is bound to the transaction it holds, or first to the quote a withdrawal form answered before the
  // quote was executed (then to the transaction that executes it). `context` is what was asked (the direction, the
  // network, the addresses, the amount), `data` the answer as it was accepted.
  await db.schema
    .createTable('requests_for_information')
    .addColumn('organization_id', 'uuid', (c) => c.notNull())
    .addColumn('id', 'uuid', (c) => c.notNull())
    .addColumn('owner_id', 'uuid', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('transaction_id', 'uuid')
    .addColumn('quote_id', 'uuid')
    .addColumn('context', 'jsonb', (c) => c.notNull())
    .addColumn('data', 'jsonb')
    .addColumn('reason', 'text')
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .addPrimaryKeyConstraint('requests_for_information_pk', ['organization_id', 'id'])
    .addCheckConstraint('requests_for_information_status', sql`status in ('pending', 'ok', 'expired', 'failed')`)
    .addCheckConstraint('requests_for_information_bound', sql`transaction_id is not null or quote_id is not null`)
    .execute()
  await db.schema.createIndex('requests_for_information_transaction').on('requests_for_information').columns(['organization_id', 'transaction_id']).execute()
  // A quote is answered once: a second withdrawal form for it finds the first request.
  await db.schema.createIndex('requests_for_information_quote').unique().on('requests_for_information').columns(['organization_id', 'quote_id']).execute()

  // Jobs count their wake-ups, so that a job woken while it runs (a request answered while its flow looked) is not
  // deferred past the news it was waiting for (src/jobs/jobs.repository.ts, `wake` and `defer`).
  await db.schema.alterTable('jobs').addColumn('wakes', 'integer', (c) => c.notNull().defaultTo(0)).execute()

  // Withdrawals gained a step after `reserve` (`screen`, the travel rule). Those already past `reserve` were created
  // before the travel rule was checked: they keep their place in the new list of steps. Deposits gained `screen` as
  // their first step: those not settled yet are screened.
  await sql`update flows set step = step + 1 where type = 'withdrawal' and status = 'running' and step >= 1`.execute(db)
}
