import type { Executor, TransactionRow, TransactionsTable } from '../../db/schema.ts'
import { fetchPage } from '../../db/paging.ts'
import type { PageWindow } from '../../http/pagination.ts'
import type { Insertable } from 'kysely'

/** Inserts the transaction unless its reference was already recorded; the row as stored, or undefined when it was not inserted. */
export function insertOnce(db: Executor, row: Insertable<TransactionsTable>): Promise<TransactionRow | undefined> {
  return db.insertInto('transactions').values(row).onConflict((oc) => oc.columns(['organization_id', 'reference']).doNothing()).returningAll().executeTakeFirst()
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

/** Locks the transactions that are still in `status`, in id order; those that moved on (or do not exist) are left out. */
export function lockInStatus(db: Executor, organizationId: string, ids: readonly string[], status: TransactionRow['status']): Promise<TransactionRow[]> {
  if (ids.length === 0) return Promise.resolve([])
  return db
    .selectFrom('transactions')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('id', 'in', ids)
    .where('status', '=', status)
    .orderBy('id')
    .forUpdate()
    .execute()
}

/** Moves transactions on from `from`; returns those moved (one that was no longer there was moved by someone else). */
export function transition(
  db: Executor,
  organizationId: string,
  ids: readonly string[],
  from: TransactionRow['status'],
  to: { status: TransactionRow['status']; reason: string | null; at: Date },
): Promise<TransactionRow[]> {
  if (ids.length === 0) return Promise.resolve([])
  return db
    .updateTable('transactions')
    .set({ status: to.status, reason: to.reason, updated_at: to.at, completed_at: to.status === 'completed' ? to.at : null })
    .where('organization_id', '=', organizationId)
    .where('id', 'in', ids)
    .where('status', '=', from)
    .returningAll()
    .execute()
}

/** The user's transactions (of one account, when given), newest first. */
export function listPage(db: Executor, filter: { organizationId: string; ownerId: string; accountId?: string; statuses?: readonly string[] }, window: PageWindow) {
  let query = db.selectFrom('transactions').selectAll().where('organization_id', '=', filter.organizationId).where('owner_id', '=', filter.ownerId)
  if (filter.accountId !== undefined) query = query.where('account_id', '=', filter.accountId)
  if (filter.statuses !== undefined) query = query.where('status', 'in', filter.statuses as TransactionRow['status'][])
  return fetchPage(query, 'id', window)
}
