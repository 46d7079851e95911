import { sql, type Kysely } from 'kysely'

export async function up(db: Kysely<unknown>): Promise<void> {
  // The outbox: every state change a client may hear about, written in the transaction that made the change,
  // so that an event exists exactly when its change does. Webhook delivery reads it from here.
  await db.schema
    .createTable('outbox_events')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('organization_id', 'uuid', (c) => c.notNull().references('organizations.id'))
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('subject_type', 'text', (c) => c.notNull())
    .addColumn('subject_id', 'text', (c) => c.notNull())
    .addColumn('user_id', 'uuid')
    .addColumn('data', 'jsonb', (c) => c.notNull())
    .addColumn('occurred_at', 'timestamptz', (c) => c.notNull())
    .addColumn('dispatched_at', 'timestamptz')
    .execute()
  // What the dispatcher scans: events not delivered yet, oldest first.
  await db.schema
    .createIndex('outbox_events_pending_idx')
    .on('outbox_events')
    .column('id')
    .where(sql.ref('dispatched_at'), 'is', null)
    .execute()
  await db.schema.createIndex('outbox_events_subject_idx').on('outbox_events').columns(['organization_id', 'subject_type', 'subject_id']).execute()
}
