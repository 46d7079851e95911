import type { Kysely } from 'kysely'

export async function up(db: Kysely<unknown>): Promise<void> {
  // Prices are reference data, shared by every organization: the USD mid of an asset per time bucket,
  // written once (the first writer wins) so that every process serves the same history.
  await db.schema
    .createTable('price_points')
    .addColumn('asset', 'text', (c) => c.notNull())
    .addColumn('resolution', 'text', (c) => c.notNull())
    .addColumn('bucket_at', 'timestamptz', (c) => c.notNull())
    .addColumn('usd_mid', 'numeric', (c) => c.notNull())
    .addColumn('recorded_at', 'timestamptz', (c) => c.notNull())
    .addPrimaryKeyConstraint('price_points_pkey', ['asset', 'resolution', 'bucket_at'])
    .execute()

  // A user whose sandbox cooldowns were skipped (test helper): cooldowns that began before then are over.
  await db.schema
    .createTable('asset_cooldown_skips')
    .addColumn('organization_id', 'uuid', (c) => c.notNull().references('organizations.id'))
    .addColumn('user_id', 'uuid', (c) => c.notNull())
    .addColumn('skipped_at', 'timestamptz', (c) => c.notNull())
    .addPrimaryKeyConstraint('asset_cooldown_skips_pkey', ['organization_id', 'user_id'])
    .execute()
}
