import { sql, type Kysely } from 'kysely'

export async function up(db: Kysely<unknown>): Promise<void> {
  // Where users' money comes from and goes to outside Tessera: bank accounts, cards, crypto addresses, payment
  // apps. `details` is what the API shows (never a card number); a card's number is sealed apart, and no column
  // ever holds a card security code. `fingerprint` is a keyed hash of what identifies the account (the numbers,
  // the card number, the address): the same details twice for one user are found without reading them in clear.
  await db.schema
    .createTable('external_accounts')
    .addColumn('organization_id', 'uuid', (c) => c.notNull().references('organizations.id'))
    .addColumn('id', 'uuid', (c) => c.notNull())
    .addColumn('owner_id', 'uuid', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('network', 'text', (c) => c.notNull())
    .addColumn('asset', 'text', (c) => c.notNull())
    .addColumn('method', 'text', (c) => c.notNull())
    .addColumn('label', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('reason', 'text')
    .addColumn('details', 'jsonb', (c) => c.notNull())
    .addColumn('fingerprint', 'text', (c) => c.notNull())
    .addColumn('sealed_number', 'text')
    .addColumn('issuer_country', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .addColumn('deleted_at', 'timestamptz')
    .addPrimaryKeyConstraint('external_accounts_pkey', ['organization_id', 'id'])
    .addCheckConstraint('external_accounts_type', sql`type in ('bank', 'card', 'crypto', 'apm')`)
    .addCheckConstraint('external_accounts_card_sealed', sql`(type = 'card') = (sealed_number is not null)`)
    .execute()
  // One live external account per details and user: a concurrent second creation fails on this index.
  await db.schema
    .createIndex('external_accounts_live_unique')
    .on('external_accounts')
    .columns(['organization_id', 'owner_id', 'fingerprint'])
    .unique()
    .where(sql.ref('deleted_at'), 'is', null)
    .execute()
  await db.schema.createIndex('external_accounts_owner_idx').on('external_accounts').columns(['organization_id', 'owner_id', 'id']).execute()

  // Where a movement leaves to or comes from outside Tessera (an external account, a crypto address), as one
  // key: the duplicate-withdrawal rule looks up a user's recent movements to the same place.
  await sql`alter table transactions add column counterparty text`.execute(db)
  await db.schema
    .createIndex('transactions_counterparty_idx')
    .on('transactions')
    .columns(['organization_id', 'owner_id', 'counterparty', 'created_at'])
    .where(sql.ref('counterparty'), 'is not', null)
    .execute()

  // The sandbox payment rail's own record of the orders it received (src/providers/rails/sandbox-payouts.ts):
  // what a real rail would hold on its side. `received` counts submissions of the same key, so tests can show
  // that a crash never sent an order twice. Card numbers are kept as their last four digits only.
  await db.schema
    .createTable('sandbox_rail_orders')
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('order_id', 'uuid', (c) => c.notNull().unique())
    .addColumn('organization_id', 'uuid', (c) => c.notNull())
    .addColumn('direction', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('network', 'text', (c) => c.notNull())
    .addColumn('asset', 'text', (c) => c.notNull())
    .addColumn('amount', 'numeric', (c) => c.notNull())
    .addColumn('counterparty', 'jsonb', (c) => c.notNull())
    .addColumn('reference', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('reason', 'text')
    .addColumn('network_reference', 'text')
    .addColumn('received', 'integer', (c) => c.notNull())
    .addColumn('received_at', 'timestamptz', (c) => c.notNull())
    .addColumn('settles_at', 'timestamptz', (c) => c.notNull())
    .execute()
}
