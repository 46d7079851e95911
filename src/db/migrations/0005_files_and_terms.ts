import { sql, type Kysely } from 'kysely'

export async function up(db: Kysely<unknown>): Promise<void> {
  // Files a user uploads (identity documents, proofs of address, …). The row exists from creation (`pending`);
  // the bytes live in the file storage under `storage_key`, set when an upload completes (`uploaded`).
  await db.schema
    .createTable('files')
    .addColumn('organization_id', 'uuid', (c) => c.notNull().references('organizations.id'))
    .addColumn('id', 'uuid', (c) => c.notNull())
    .addColumn('user_id', 'uuid', (c) => c.notNull())
    .addColumn('category', 'text', (c) => c.notNull())
    .addColumn('content_type', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('pending', 'uploaded')`))
    .addColumn('storage_key', 'text')
    .addColumn('size', 'bigint')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .addColumn('uploaded_at', 'timestamptz')
    .addPrimaryKeyConstraint('files_pkey', ['organization_id', 'id'])
    .addForeignKeyConstraint('files_user_fkey', ['organization_id', 'user_id'], 'users', ['organization_id', 'id'])
    .execute()
  await db.schema.createIndex('files_user_idx').on('files').columns(['organization_id', 'user_id']).execute()

  // Which terms of service each user accepted, and when: one row per user and terms.
  await db.schema
    .createTable('terms_of_service_acceptances')
    .addColumn('organization_id', 'uuid', (c) => c.notNull().references('organizations.id'))
    .addColumn('user_id', 'uuid', (c) => c.notNull())
    .addColumn('code', 'text', (c) => c.notNull())
    .addColumn('accepted_at', 'timestamptz', (c) => c.notNull())
    /** The end-user context headers of the request that accepted. */
    .addColumn('context', 'jsonb', (c) => c.notNull())
    .addPrimaryKeyConstraint('terms_of_service_acceptances_pkey', ['organization_id', 'user_id', 'code'])
    .addForeignKeyConstraint('terms_of_service_acceptances_user_fkey', ['organization_id', 'user_id'], 'users', ['organization_id', 'id'])
    .execute()
}
