import { sql, type Kysely } from 'kysely'

export async function up(db: Kysely<unknown>): Promise<void> {
  // Where an account receives from outside: one method per account and network (the US rails share one bank
  // account, kept under the network `us`). Details are fixed when issued, so that a later change of the bank's
  // settings never changes numbers a user has already given to a payer.
  await db.schema
    .createTable('deposit_methods')
    .addColumn('organization_id', 'uuid', (c) => c.notNull().references('organizations.id'))
    .addColumn('id', 'uuid', (c) => c.notNull())
    .addColumn('account_id', 'uuid', (c) => c.notNull())
    .addColumn('owner_id', 'uuid', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('network', 'text', (c) => c.notNull())
    .addColumn('asset', 'text', (c) => c.notNull())
    // The payment reference (bank) or destination tag (XRP Ledger) the payer must quote, when there is one.
    .addColumn('reference', 'text')
    .addColumn('details', 'jsonb', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .addPrimaryKeyConstraint('deposit_methods_pkey', ['organization_id', 'id'])
    .addUniqueConstraint('deposit_methods_account_network_unique', ['organization_id', 'account_id', 'network'])
    .addCheckConstraint('deposit_methods_status_valid', sql`status in ('processing', 'ok', 'failed')`)
    .execute()
  // A bank payment reference names one deposit method, across all organizations.
  await db.schema
    .createIndex('deposit_methods_bank_reference_unique')
    .on('deposit_methods')
    .columns(['network', 'reference'])
    .unique()
    .where(sql.ref('type'), '=', 'bank')
    .execute()

  // Every form under which a deposit method receives (each address format, an IBAN, a sort code and account
  // number…), normalized. Unique across organizations: an address or a bank number is never given to two
  // accounts, so an incoming deposit always has exactly one owner.
  await db.schema
    .createTable('deposit_destinations')
    .addColumn('network', 'text', (c) => c.notNull())
    .addColumn('destination', 'text', (c) => c.notNull())
    .addColumn('organization_id', 'uuid', (c) => c.notNull())
    .addColumn('deposit_method_id', 'uuid', (c) => c.notNull())
    .addPrimaryKeyConstraint('deposit_destinations_pkey', ['network', 'destination'])
    .addForeignKeyConstraint('deposit_destinations_method_fk', ['organization_id', 'deposit_method_id'], 'deposit_methods', ['organization_id', 'id'])
    .execute()
  await db.schema.createIndex('deposit_destinations_method_idx').on('deposit_destinations').columns(['organization_id', 'deposit_method_id']).execute()
}

