import type { Executor, TransactionRow } from '../../db/schema.ts'
import { fetchPage } from '../../db/paging.ts'
import type { PageWindow } from '../../http/pagination.ts'
import { sql } from 'kysely'

/**
 * Inserts the transaction if its account is an account of its owner holding its asset, and its reference was not
 * recorded yet: the check and the write are one statement. The row as stored; undefined when nothing was inserted
 * (the caller tells the two reasons apart, off the usual path).
 */
export async function insertForAccount(
  db: Executor,
  row: Omit<TransactionRow, 'reason' | 'completed_at' | 'origin' | 'destination'> & { origin: string; destination: string },
): Promise<TransactionRow | undefined> {
  const result = await sql<TransactionRow>`
    insert into transactions (organization_id, id, owner_id, type, status, reason, asset, amount, account_id, network, origin, destination,
      reference, created_at, updated_at, completed_at)
    select a.organization_id, ${row.id}::uuid, a.owner_id, ${row.type}, ${row.status}, null, a.asset, ${row.amount}::numeric, a.id,
      ${row.network}, ${row.origin}::jsonb, ${row.destination}::jsonb, ${row.reference}, ${row.created_at}::timestamptz,
      ${row.updated_at}::timestamptz, null
    from accounts a
    where a.organization_id = ${row.organization_id} and a.owner_id = ${row.owner_id} and a.id = ${row.account_id} and a.asset = ${row.asset}
    on conflict (organization_id, reference) do nothing
    returning *`.execute(db)
  return result.rows[0]
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
