import { sql, type Insertable } from 'kysely'
import type { Executor, SandboxRailOrderRow, SandboxRailOrdersTable } from '../../db/schema.ts'

// PostgreSQL binds at most 65535 parameters to a statement; a row takes 16, so a larger batch goes in parts.
const ROWS_PER_STATEMENT = 1000

/**
 * Records orders by key: a new key is inserted as given; a key already held keeps its first order and adds this
 * submission's `received` to its count. Returns every row as it now stands, in no particular order.
 */
export async function recordOrders(db: Executor, rows: readonly Insertable<SandboxRailOrdersTable>[]): Promise<SandboxRailOrderRow[]> {
  const recorded: SandboxRailOrderRow[] = []
  for (let start = 0; start < rows.length; start += ROWS_PER_STATEMENT) {
    const part = await db
      .insertInto('sandbox_rail_orders')
      .values(rows.slice(start, start + ROWS_PER_STATEMENT))
      .onConflict((conflict) => conflict.column('key').doUpdateSet({ received: sql<number>`sandbox_rail_orders.received + excluded.received` }))
      .returningAll()
      .execute()
    recorded.push(...part)
  }
  return recorded
}

export function findByOrderIds(db: Executor, orderIds: readonly string[]): Promise<SandboxRailOrderRow[]> {
  return db.selectFrom('sandbox_rail_orders').selectAll().where('order_id', 'in', orderIds).execute()
}

export function listOrders(db: Executor, organizationId?: string): Promise<SandboxRailOrderRow[]> {
  let query = db.selectFrom('sandbox_rail_orders').selectAll().orderBy('received_at').orderBy('order_id')
  if (organizationId !== undefined) query = query.where('organization_id', '=', organizationId)
  return query.execute()
}
