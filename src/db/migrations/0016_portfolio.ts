import { sql, type Kysely } from 'kysely'

export async function up(db: Kysely<unknown>): Promise<void> {
  // A position per user account: its balances as the ledger last wrote them, and its cost basis in US dollars,
  // kept in the database transaction of every movement (src/modules/portfolio). `retained` is the product of what
  // each sale or withdrawal left of the position since `epoch` began (an epoch ends when the position is emptied):
  // with it, performance over a window is computed from two rows instead of the movements in between. Its power of
  // ten is kept apart (`retained_scale`) so that it stays a short number after any number of disposals.
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
    .addColumn('retained_scale', 'integer', (c) => c.notNull().defaultTo(0))
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
    .addColumn('retained_scale', 'integer', (c) => c.notNull().defaultTo(0))
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

  // Accounts that already moved money start with what they hold and an unknown cost (zero): the ledger does not
  // record what was paid. Their balance history is rebuilt from the ledger's entries (running totals per minute;
  // what holds set aside then is not recorded, so the available balance of the past is taken as the total).
  await sql`
    insert into portfolio_positions (organization_id, account_id, owner_id, asset, total, available, invested_usd, retained, retained_scale, epoch, updated_at)
    select l.organization_id, l.id, a.owner_id, l.asset, l.total, l.available, 0, 1, 0, 0, l.updated_at
    from ledger_accounts l join accounts a on a.organization_id = l.organization_id and a.id = l.id
    where l.system_code is null and exists (select 1 from ledger_entries e where e.organization_id = l.organization_id and e.account_id = l.id)`.execute(db)
  await sql`
    insert into portfolio_history (organization_id, account_id, minute_at, total, available, invested_usd, retained, retained_scale, epoch)
    select organization_id, account_id, minute_at, running, running, 0, 1, 0, 0 from (
      select e.organization_id, e.account_id, date_trunc('minute', e.created_at) as minute_at,
        sum(sum(e.amount)) over (partition by e.organization_id, e.account_id order by date_trunc('minute', e.created_at)) as running
      from ledger_entries e join portfolio_positions p on p.organization_id = e.organization_id and p.account_id = e.account_id
      group by e.organization_id, e.account_id, date_trunc('minute', e.created_at)
    ) minutes`.execute(db)
}
