import { sql, type Kysely } from 'kysely'

export async function up(db: Kysely<unknown>): Promise<void> {
  // One row per user and KYC process, written the first time the process changes; until then its state follows
  // from what the user's creation declared. `state` holds what clients never see (e.g. form attempts).
  await db.schema
    .createTable('kyc_processes')
    .addColumn('organization_id', 'uuid', (c) => c.notNull().references('organizations.id'))
    .addColumn('user_id', 'uuid', (c) => c.notNull())
    .addColumn('code', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('model', 'text', (c) => c.notNull())
    .addColumn('type', 'text')
    .addColumn('input', 'jsonb')
    .addColumn('output', 'jsonb')
    .addColumn('state', 'jsonb', (c) => c.notNull())
    .addColumn('verified_key', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .addPrimaryKeyConstraint('kyc_processes_pkey', ['organization_id', 'user_id', 'code'])
    .execute()
  // A verified phone number belongs to one user of an organization; registering it unverified claims nothing.
  await db.schema
    .createIndex('kyc_processes_verified_key_unique')
    .on('kyc_processes')
    .columns(['organization_id', 'code', 'verified_key'])
    .unique()
    .where(sql.ref('verified_key'), 'is not', null)
    .execute()
}
