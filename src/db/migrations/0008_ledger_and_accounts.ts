import { sql, type Kysely } from 'kysely'

export async function up(db: Kysely<unknown>): Promise<void> {
  // The ledger's accounts: users' accounts and the organization's system accounts (clearing per rail, fees,
  // liquidity). Balances live on the row so that a movement updates them under a row lock instead of summing
  // entries; `ledger check` proves they still equal the sum of their entries. The CHECKs are the last line of
  // defence behind the service's own checks: no code path can leave a user's available balance negative, or
  // the total below what is available (holds are never negative).
  await db.schema
    .createTable('ledger_accounts')
    .addColumn('organization_id', 'uuid', (c) => c.notNull().references('organizations.id'))
    .addColumn('id', 'uuid', (c) => c.notNull())
    .addColumn('asset', 'text', (c) => c.notNull())
    // Null for a user's account; e.g. `clearing:bitcoin`, `fees`, `liquidity` for system accounts.
    .addColumn('system_code', 'text')
    .addColumn('may_go_negative', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('total', 'numeric', (c) => c.notNull().defaultTo(0))
    .addColumn('available', 'numeric', (c) => c.notNull().defaultTo(0))
    .addColumn('closed_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .addPrimaryKeyConstraint('ledger_accounts_pkey', ['organization_id', 'id'])
    .addCheckConstraint('ledger_accounts_available_not_negative', sql`may_go_negative or available >= 0`)
    .addCheckConstraint('ledger_accounts_total_covers_available', sql`total >= available`)
    .execute()
  await db.schema
    .createIndex('ledger_accounts_system_code_unique')
    .on('ledger_accounts')
    .columns(['organization_id', 'system_code', 'asset'])
    .unique()
    .where(sql.ref('system_code'), 'is not', null)
    .execute()

  // One movement: its entries sum to zero per asset. `reference` makes a retried posting post once.
  await db.schema
    .createTable('ledger_transactions')
    .addColumn('organization_id', 'uuid', (c) => c.notNull().references('organizations.id'))
    .addColumn('id', 'uuid', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('reference', 'text')
    // Digest of what was asked, so that a reference reused for a different movement is refused, not replayed.
    .addColumn('request_hash', 'text', (c) => c.notNull())
    .addColumn('hold_id', 'uuid')
    .addColumn('data', 'jsonb', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addPrimaryKeyConstraint('ledger_transactions_pkey', ['organization_id', 'id'])
    .addUniqueConstraint('ledger_transactions_reference_unique', ['organization_id', 'reference'])
    .execute()

  await db.schema
    .createTable('ledger_entries')
    .addColumn('organization_id', 'uuid', (c) => c.notNull())
    .addColumn('id', 'uuid', (c) => c.notNull())
    .addColumn('transaction_id', 'uuid', (c) => c.notNull())
    .addColumn('account_id', 'uuid', (c) => c.notNull())
    .addColumn('asset', 'text', (c) => c.notNull())
    // Signed: positive credits the account, negative debits it.
    .addColumn('amount', 'numeric', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addPrimaryKeyConstraint('ledger_entries_pkey', ['organization_id', 'id'])
    .addForeignKeyConstraint('ledger_entries_transaction_fk', ['organization_id', 'transaction_id'], 'ledger_transactions', ['organization_id', 'id'])
    .addForeignKeyConstraint('ledger_entries_account_fk', ['organization_id', 'account_id'], 'ledger_accounts', ['organization_id', 'id'])
    .addCheckConstraint('ledger_entries_amount_not_zero', sql`amount <> 0`)
    .execute()
  await db.schema.createIndex('ledger_entries_account_idx').on('ledger_entries').columns(['organization_id', 'account_id', 'id']).execute()
  await db.schema.createIndex('ledger_entries_transaction_idx').on('ledger_entries').columns(['organization_id', 'transaction_id']).execute()

  // Money set aside for a movement in flight: it lowers `available` only, until released or captured.
  await db.schema
    .createTable('ledger_holds')
    .addColumn('organization_id', 'uuid', (c) => c.notNull())
    .addColumn('id', 'uuid', (c) => c.notNull())
    .addColumn('account_id', 'uuid', (c) => c.notNull())
    .addColumn('asset', 'text', (c) => c.notNull())
    .addColumn('amount', 'numeric', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('reference', 'text')
    .addColumn('request_hash', 'text', (c) => c.notNull())
    // The posting that captured it, when captured.
    .addColumn('transaction_id', 'uuid')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .addPrimaryKeyConstraint('ledger_holds_pkey', ['organization_id', 'id'])
    .addForeignKeyConstraint('ledger_holds_account_fk', ['organization_id', 'account_id'], 'ledger_accounts', ['organization_id', 'id'])
    .addUniqueConstraint('ledger_holds_reference_unique', ['organization_id', 'reference'])
    .addCheckConstraint('ledger_holds_amount_positive', sql`amount > 0`)
    .addCheckConstraint('ledger_holds_status', sql`status in ('open', 'released', 'captured')`)
    .execute()
  await db.schema
    .createIndex('ledger_holds_open_idx')
    .on('ledger_holds')
    .columns(['organization_id', 'account_id'])
    .where(sql.ref('status'), '=', 'open')
    .execute()

  // A user's account as the API shows it; its balance is the ledger account with the same id.
  await db.schema
    .createTable('accounts')
    .addColumn('organization_id', 'uuid', (c) => c.notNull().references('organizations.id'))
    .addColumn('id', 'uuid', (c) => c.notNull())
    .addColumn('owner_id', 'uuid', (c) => c.notNull())
    .addColumn('label', 'text', (c) => c.notNull())
    .addColumn('asset', 'text', (c) => c.notNull())
    .addColumn('archived_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .addPrimaryKeyConstraint('accounts_pkey', ['organization_id', 'id'])
    .addForeignKeyConstraint('accounts_ledger_fk', ['organization_id', 'id'], 'ledger_accounts', ['organization_id', 'id'])
    .execute()
  await db.schema
    .createIndex('accounts_owner_idx')
    .on('accounts')
    .columns(['organization_id', 'owner_id', 'asset', 'id'])
    .where(sql.ref('archived_at'), 'is', null)
    .execute()
}
