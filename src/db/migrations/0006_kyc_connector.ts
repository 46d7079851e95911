import type { Kysely } from 'kysely'

export async function up(db: Kysely<unknown>): Promise<void> {
  // One identity-verification provider configuration per organization and provider. `integrations` holds each
  // integration's name and processes in clear and its API key and shared secret sealed (src/lib/sealing.ts):
  // nothing in this table is usable without the deployment's sealing key.
  await db.schema
    .createTable('kyc_connector_configs')
    .addColumn('organization_id', 'uuid', (c) => c.notNull().references('organizations.id'))
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('integrations', 'jsonb', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .addPrimaryKeyConstraint('kyc_connector_configs_pkey', ['organization_id', 'provider'])
    .execute()
}
