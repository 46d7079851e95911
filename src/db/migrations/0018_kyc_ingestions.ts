import type { Kysely } from 'kysely'

export async function up(db: Kysely<unknown>): Promise<void> {
  // A user's verification imported from an identity-verification provider (src/modules/kyc-connector): what was
  // asked (`processes`, `parameters`), where the import stands, and each process's outcome as it comes (`result`).
  // The import runs as one job (`kyc-connector.ingestion`) whose payload names the ingestion.
  await db.schema
    .createTable('kyc_ingestions')
    .addColumn('organization_id', 'uuid', (c) => c.notNull().references('organizations.id'))
    .addColumn('id', 'uuid', (c) => c.notNull())
    .addColumn('user_id', 'uuid', (c) => c.notNull())
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('processes', 'jsonb', (c) => c.notNull())
    .addColumn('parameters', 'jsonb', (c) => c.notNull())
    // Never shown: the integration (Sumsub) or integrations (Veriff, by session) the import uses, and what the
    // provider answered that a later attempt needs (the applicant a share token was exchanged for: a token works once).
    .addColumn('state', 'jsonb', (c) => c.notNull())
    .addColumn('result', 'jsonb')
    .addColumn('started_at', 'timestamptz')
    .addColumn('finished_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .addPrimaryKeyConstraint('kyc_ingestions_pk', ['organization_id', 'id'])
    .execute()
  // A user's ingestions of one provider, newest first.
  await db.schema.createIndex('kyc_ingestions_by_user').on('kyc_ingestions').columns(['organization_id', 'user_id', 'provider', 'id']).execute()

  // What a provider's callback names (a Veriff session, a Sumsub applicant) → the unfinished ingestions waiting on
  // it: a verified callback wakes them. Rows go when their ingestion finishes.
  await db.schema
    .createTable('kyc_ingestion_references')
    .addColumn('organization_id', 'uuid', (c) => c.notNull())
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('reference', 'text', (c) => c.notNull())
    .addColumn('ingestion_id', 'uuid', (c) => c.notNull())
    .addPrimaryKeyConstraint('kyc_ingestion_references_pk', ['organization_id', 'provider', 'reference', 'ingestion_id'])
    .execute()
  // A callback names no organization: it is found by what it names.
  await db.schema.createIndex('kyc_ingestion_references_by_reference').on('kyc_ingestion_references').columns(['provider', 'reference']).execute()
}
