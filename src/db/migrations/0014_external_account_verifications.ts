import { sql, type Kysely } from 'kysely'

export async function up(db: Kysely<unknown>): Promise<void> {
  // The verifications of crypto external accounts: one row per level (`declared`, `verified`) ever started for an
  // account, completed once by a proof that holds (a self-declaration, a signed message). The row's id is also the
  // id of its request for information. `address` is the account's as written; `canonical_address` its one spelling
  // on the network, so that the travel rule finds a user's declared addresses however they are written.
  await db.schema
    .createTable('external_account_verifications')
    .addColumn('organization_id', 'uuid', (c) => c.notNull())
    .addColumn('id', 'uuid', (c) => c.notNull())
    .addColumn('external_account_id', 'uuid', (c) => c.notNull())
    .addColumn('owner_id', 'uuid', (c) => c.notNull())
    .addColumn('level', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('network', 'text', (c) => c.notNull())
    .addColumn('address', 'text', (c) => c.notNull())
    .addColumn('canonical_address', 'text', (c) => c.notNull())
    .addColumn('proof_options', 'jsonb', (c) => c.notNull())
    .addColumn('proof', 'jsonb')
    .addColumn('completed_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .addPrimaryKeyConstraint('external_account_verifications_pkey', ['organization_id', 'id'])
    .addUniqueConstraint('external_account_verifications_level', ['organization_id', 'external_account_id', 'level'])
    .addForeignKeyConstraint('external_account_verifications_account', ['organization_id', 'external_account_id'], 'external_accounts', ['organization_id', 'id'])
    .addCheckConstraint('external_account_verifications_level_known', sql`level in ('declared', 'verified')`)
    .addCheckConstraint(
      'external_account_verifications_type_of_level',
      sql`(level = 'declared' and type = 'crypto-address-travel-rule') or (level = 'verified' and type = 'crypto-address-verification')`,
    )
    .addCheckConstraint('external_account_verifications_status_known', sql`status in ('pending', 'completed')`)
    // Completed exactly when a proof was recorded, and at a known time.
    .addCheckConstraint('external_account_verifications_completed', sql`(status = 'completed') = (proof is not null and completed_at is not null)`)
    .execute()
  // The travel rule asks which of some addresses a user has declared on a network: completed rows only.
  await db.schema
    .createIndex('external_account_verifications_completed_idx')
    .on('external_account_verifications')
    .columns(['organization_id', 'owner_id', 'network', 'canonical_address'])
    .where(sql.ref('status'), '=', 'completed')
    .execute()
}
