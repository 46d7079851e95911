import { sql, type Kysely } from 'kysely'

export async function up(db: Kysely<unknown>): Promise<void> {
  // A position per user account: its balances as the ledger last wrote them, and its cost basis in US dollars,
  // kept in the database transaction of every movement (src/modules/portfolio). `retained` is the product of what
  // each sale or withdrawal left of the position since `epoch` began (an epoch ends when the position is emptied):
  // with it, performance over a window is computed from two rows instead of the movements in between.
  await db.schema
    .createTable('portfolio_positions')
    .addColumn('organization_id', 'uuid', (c) => c.notNull())
    .addColumn('account_id', 'uuid', (c) => c.notNull())
    .addColumn('owner_id', 'uuid', (c) => c.notNull())
    .addColumn('asset', 'text', (c) => c.notNull())
    .addColumn('total', 'numeric', (c) => c.notNull())
    .addColumn('available', 'numeric', (c) => c.notNull())
    .addColumn('invested_usd', 'numeric', (c) => c.notNull())
    .addColumn('retained', 'numeric', (c) => c.notNull())
    .addColumn('epoch', 'integer', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .addPrimaryKeyConstraint('portfolio_positions_pk', ['organization_id', 'account_id'])
    .execute()
  await db.schema.createIndex('portfolio_positions_owner').on('portfolio_positions').columns(['organization_id', 'owner_id', 'asset']).execute()

  // The state of each position at the end of every minute it changed in: the history that balance charts,
  // statements and windowed performance read with one index lookup per point, whatever the number of movements.
  await db.schema
    .createTable('portfolio_history')
    .addColumn('organization_id', 'uuid', (c) => c.notNull())
    .addColumn('account_id', 'uuid', (c) => c.notNull())
    .addColumn('minute_at', 'timestamptz', (c) => c.notNull())
    .addColumn('total', 'numeric', (c) => c.notNull())
    .addColumn('available', 'numeric', (c) => c.notNull())
    .addColumn('invested_usd', 'numeric', (c) => c.notNull())
    .addColumn('retained', 'numeric', (c) => c.notNull())
    .addColumn('epoch', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('portfolio_history_pk', ['organization_id', 'account_id', 'minute_at'])
    .execute()

  // Transactions statements read a user's transactions completed in a month, in the order they completed.
  await db.schema
    .createIndex('transactions_completed')
    .on('transactions')
    .columns(['organization_id', 'owner_id', 'completed_at', 'id'])
    .where(sql.ref('status'), '=', 'completed')
    .execute()

  // Accounts that already hold money start with what they hold and an unknown cost (zero): the ledger does not
  // record what was paid for them.
  await sql`
    insert into portfolio_positions (organization_id, account_id, owner_id, asset, total, available, invested_usd, retained, epoch, updated_at)
    select l.organization_id, l.id, a.owner_id, l.asset, l.total, l.available, 0, 1, 0, l.updated_at
    from ledger_accounts l join accounts a on a.organization_id = l.organization_id and a.id = l.id
    where l.system_code is null and (l.total <> 0 or l.available <> 0)`.execute(db)
  await sql`
    insert into portfolio_history (organization_id, account_id, minute_at, total, available, invested_usd, retained, epoch)
    select organization_id, account_id, date_trunc('minute', updated_at), total, available, 0, 1, 0 from portfolio_positions`.execute(db)
}
