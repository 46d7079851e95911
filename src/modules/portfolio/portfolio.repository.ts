import { sql } from 'kysely'
import type { Executor, PortfolioHistoryRow, PortfolioPositionRow, Tx } from '../../db/schema.ts'

export type PositionValues = Omit<PortfolioPositionRow, 'updated_at'>

export function findPositions(db: Executor, organizationId: string, accountIds: readonly string[]): Promise<PortfolioPositionRow[]> {
  if (accountIds.length === 0) return Promise.resolve([])
  return db.selectFrom('portfolio_positions').selectAll().where('organization_id', '=', organizationId).where('account_id', 'in', accountIds).execute()
}

/** The positions of a user, of some assets only when given. */
export function positionsOf(db: Executor, organizationId: string, ownerId: string, assets?: readonly string[]): Promise<PortfolioPositionRow[]> {
  let query = db.selectFrom('portfolio_positions').selectAll().where('organization_id', '=', organizationId).where('owner_id', '=', ownerId)
  if (assets !== undefined) {
    if (assets.length === 0) return Promise.resolve([])
    query = query.where('asset', 'in', assets)
  }
  return query.orderBy('asset').orderBy('account_id').execute()
}

/** What an upsert of a position, or of its history row, replaces: the state columns, from the row proposed. */
const PROPOSED_STATE = {
  total: sql<string>`excluded.total`,
  available: sql<string>`excluded.available`,
  invested_usd: sql<string>`excluded.invested_usd`,
  retained: sql<string>`excluded.retained`,
  retained_scale: sql<number>`excluded.retained_scale`,
  epoch: sql<number>`excluded.epoch`,
}

/**
 * Writes the positions as they now stand, and the same into the history row of the minute: one statement (the
 * history is written from what the position upsert returns), since it runs inside every money movement.
 */
export async function savePositions(tx: Tx, positions: readonly PositionValues[], at: Date): Promise<void> {
  if (positions.length === 0) return
  const minute = new Date(Math.floor(at.getTime() / 60_000) * 60_000)
  await tx
    .with('saved', (db) => db
      .insertInto('portfolio_positions')
      .values(positions.map((position) => ({ ...position, updated_at: at })))
      .onConflict((conflict) => conflict.columns(['organization_id', 'account_id']).doUpdateSet((eb) => ({ ...PROPOSED_STATE, updated_at: eb.ref('excluded.updated_at') })))
      .returning(['organization_id', 'account_id', 'total', 'available', 'invested_usd', 'retained', 'retained_scale', 'epoch']))
    .insertInto('portfolio_history')
    .columns(['organization_id', 'account_id', 'minute_at', 'total', 'available', 'invested_usd', 'retained', 'retained_scale', 'epoch'])
    .expression((eb) => eb.selectFrom('saved').select([
      'saved.organization_id', 'saved.account_id', sql<Date>`${minute}::timestamptz`.as('minute_at'),
      'saved.total', 'saved.available', 'saved.invested_usd', 'saved.retained', 'saved.retained_scale', 'saved.epoch',
    ]))
    .onConflict((conflict) => conflict.columns(['organization_id', 'account_id', 'minute_at']).doUpdateSet(PROPOSED_STATE))
    .execute()
}

export type HistoryState = Pick<PortfolioHistoryRow, 'account_id' | 'total' | 'available' | 'invested_usd' | 'retained' | 'retained_scale' | 'epoch'> & { at: Date }

/**
 * How each account stood at each instant: its last history row of a minute before the instant (a row holds the
 * state at the end of its minute, so instants are best aligned to minutes). One index lookup per account and
 * instant, whatever the length of the history. Accounts with no row before an instant are left out for it.
 */
export async function statesAt(db: Executor, organizationId: string, accountIds: readonly string[], instants: readonly Date[]): Promise<HistoryState[]> {
  if (accountIds.length === 0 || instants.length === 0) return []
  const accounts = sql.join(accountIds.map((id) => sql`(${id}::uuid)`))
  const times = sql.join(instants.map((instant) => sql`(${instant}::timestamptz)`))
  const result = await sql<HistoryState>`
    select a.account_id, i.at, h.total, h.available, h.invested_usd, h.retained, h.retained_scale, h.epoch
    from (values ${accounts}) as a(account_id)
    cross join (values ${times}) as i(at)
    join lateral (
      select total, available, invested_usd, retained, retained_scale, epoch from portfolio_history
      where organization_id = ${organizationId} and account_id = a.account_id and minute_at < i.at
      order by minute_at desc limit 1
    ) h on true`.execute(db)
  return result.rows.map((row) => ({ ...row, at: new Date(row.at), total: String(row.total), available: String(row.available), invested_usd: String(row.invested_usd), retained: String(row.retained) }))
}

/**
 * What the accounts held of each asset at each instant, summed in the database (one row per asset and instant
 * instead of one per account and instant): like `statesAt`, one index lookup per account and instant. `point` is
 * the instant's position in `instants`.
 */
export async function balancesAt(
  db: Executor,
  organizationId: string,
  accounts: readonly { accountId: string; asset: string }[],
  instants: readonly Date[],
): Promise<{ point: number; asset: string; total: string; available: string }[]> {
  if (accounts.length === 0 || instants.length === 0) return []
  const accountRows = sql.join(accounts.map(({ accountId, asset }) => sql`(${accountId}::uuid, ${asset}::text)`))
  const times = sql.join(instants.map((instant, point) => sql`(${point}::integer, ${instant}::timestamptz)`))
  const result = await sql<{ point: number; asset: string; total: string; available: string }>`
    select i.point, a.asset, sum(h.total) as total, sum(h.available) as available
    from (values ${accountRows}) as a(account_id, asset)
    cross join (values ${times}) as i(point, at)
    join lateral (
      select total, available from portfolio_history
      where organization_id = ${organizationId} and account_id = a.account_id and minute_at < i.at
      order by minute_at desc limit 1
    ) h on true
    group by i.point, a.asset`.execute(db)
  return result.rows.map((row) => ({ point: Number(row.point), asset: row.asset, total: String(row.total), available: String(row.available) }))
}
