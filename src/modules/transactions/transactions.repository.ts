import type { Executor, TransactionRow, TransactionsTable } from '../../db/schema.ts'
import { fetchPage } from '../../db/paging.ts'
import type { PageWindow } from '../../http/pagination.ts'
import type { Insertable } from 'kysely'

/** Inserts the transaction unless its reference was already recorded; true when it inserted. */
export async function insertOnce(db: Executor, row: Insertable<TransactionsTable>): Promise<boolean> {
  const result = await db.insertInto('transactions').values(row).onConflict((oc) => oc.columns(['organization_id', 'reference']).doNothing()).executeTakeFirst()
  return (result.numInsertedOrUpdatedRows ?? 0n) > 0n
}

export function findByReference(db: Executor, organizationId: string, reference: string): Promise<TransactionRow | undefined> {
  return db.selectFrom('transactions').selectAll().where('organization_id', '=', organizationId).where('reference', '=', reference).executeTakeFirst()
}

export function find(db: Executor, organizationId: string, id: string): Promise<TransactionRow | undefined> {
  return db.selectFrom('transactions').selectAll().where('organization_id', '=', organizationId).where('id', '=', id).executeTakeFirst()
}

export function findOwned(db: Executor, organizationId: string, ownerId: string, id: string): Promise<TransactionRow | undefined> {
  return db
    .selectFrom('transactions')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('owner_id', '=', ownerId)
    .where('id', '=', id)
    .executeTakeFirst()
}

/** Locks a transaction that is still in `status`; undefined when it has moved on (or does not exist). */
export function lockInStatus(db: Executor, organizationId: string, id: string, status: TransactionRow['status']): Promise<TransactionRow | undefined> {
  return db
    .selectFrom('transactions')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .where('status', '=', status)
    .forUpdate()
    .executeTakeFirst()
}

/** Moves a transaction on from `from`; undefined when it was no longer there (someone else moved it). */
export function transition(
  db: Executor,
  organizationId: string,
  id: string,
  from: TransactionRow['status'],
  to: { status: TransactionRow['status']; reason: string | null; at: Date },
): Promise<TransactionRow | undefined> {
  return db
    .updateTable('transactions')
    .set({ status: to.status, reason: to.reason, updated_at: to.at, completed_at: to.status === 'completed' ? to.at : null })
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .where('status', '=', from)
    .returningAll()
    .executeTakeFirst()
}

/** The user's transactions (of one account, when given), newest first. */
export function listPage(db: Executor, filter: { organizationId: string; ownerId: string; accountId?: string; statuses?: readonly string[] }, window: PageWindow) {
  let query = db.selectFrom('transactions').selectAll().where('organization_id', '=', filter.organizationId).where('owner_id', '=', filter.ownerId)
  if (filter.accountId !== undefined) query = query.where('account_id', '=', filter.accountId)
  if (filter.statuses !== undefined) query = query.where('status', 'in', filter.statuses as TransactionRow['status'][])
  return fetchPage(query, 'id', window)
}
