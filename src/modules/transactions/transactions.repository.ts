import { sql } from 'kysely'
import type { Executor, StoredDenomination, StoredFee, TransactionRow, Tx } from '../../db/schema.ts'
import { fetchPage } from '../../db/paging.ts'
import type { PageWindow } from '../../http/pagination.ts'

export interface NewTransaction {
  organization_id: string
  id: string
  owner_id: string
  type: string
  origin: Record<string, unknown>
  origin_asset: string
  origin_amount: string
  origin_rate: string
  destination: Record<string, unknown>
  destination_asset: string
  destination_amount: string
  destination_rate: string
  denomination: StoredDenomination
  fees: StoredFee[]
  origin_account_id: string | null
  destination_account_id: string | null
  network: string | null
  reference: string | null
  /** Where the money leaves to or comes from outside Tessera, as one key (the duplicate-withdrawal rule). */
  counterparty?: string | null
  quote_id: string | null
  quoted_at: Date
  created_at: Date
}

function processingRow(row: NewTransaction) {
  return {
    ...row,
    counterparty: row.counterparty ?? null,
    status: 'processing' as const,
    reason: null,
    origin: JSON.stringify(row.origin),
    destination: JSON.stringify(row.destination),
    denomination: JSON.stringify(row.denomination),
    fees: JSON.stringify(row.fees),
    updated_at: row.created_at,
    completed_at: null,
  }
}

/** Inserts a deposit (status `processing`) unless its reference was recorded already: the row as stored, or undefined. */
export function insertDeposit(db: Executor, row: NewTransaction & { destination_account_id: string; reference: string }): Promise<TransactionRow | undefined> {
  return db
    .insertInto('transactions')
    .values(processingRow(row))
    .onConflict((conflict) => conflict.columns(['organization_id', 'reference']).doNothing())
    .returningAll()
    .executeTakeFirst()
}

/** Inserts a movement decided by a quote (status `processing`); the quote's unique index refuses a second one. */
export async function insert(tx: Tx, row: NewTransaction): Promise<TransactionRow> {
  return tx.insertInto('transactions').values(processingRow(row)).returningAll().executeTakeFirstOrThrow()
}

export function findByReference(db: Executor, organizationId: string, reference: string): Promise<TransactionRow | undefined> {
  return db.selectFrom('transactions').selectAll().where('organization_id', '=', organizationId).where('reference', '=', reference).executeTakeFirst()
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

export function findMany(db: Executor, organizationId: string, ids: readonly string[]): Promise<TransactionRow[]> {
  if (ids.length === 0) return Promise.resolve([])
  return db.selectFrom('transactions').selectAll().where('organization_id', '=', organizationId).where('id', 'in', ids).orderBy('id').execute()
}

/** Locks the transactions that are still in `status`, in id order; those that moved on (or do not exist) are left out. */
export function lockInStatus(db: Executor, organizationId: string, ids: readonly string[], statuses: readonly TransactionRow['status'][]): Promise<TransactionRow[]> {
  if (ids.length === 0) return Promise.resolve([])
  return db
    .selectFrom('transactions')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('id', 'in', ids)
    .where('status', 'in', statuses)
    .orderBy('id')
    .forUpdate()
    .execute()
}

/**
 * Moves transactions on from `from` to the status the state machine chose; returns those moved (one that was no
 * longer in `from` was moved by someone else and is left alone).
 */
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

/**
 * Serializes the user's withdrawals to one place outside Tessera until the caller's transaction ends, so that
 * the duplicate check and the insert it guards happen as one.
 */
export async function lockCounterparty(tx: Tx, organizationId: string, ownerId: string, counterparty: string): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtextextended(${`transactions:counterparty:${organizationId}:${ownerId}:${counterparty}`}, 0))`.execute(tx)
}

/** Whether the user started a withdrawal of this denomination to the counterparty since `since` that has not failed. */
export async function hasRecentWithdrawal(tx: Tx, input: { organizationId: string; ownerId: string; counterparty: string; asset: string; amount: string; since: Date }): Promise<boolean> {
  const row = await tx
    .selectFrom('transactions')
    .select('id')
    .where('organization_id', '=', input.organizationId)
    .where('owner_id', '=', input.ownerId)
    .where('counterparty', '=', input.counterparty)
    .where('created_at', '>=', input.since)
    .where('type', '=', 'withdrawal')
    .where('status', '<>', 'failed')
    .where(sql<string>`denomination->>'asset'`, '=', input.asset)
    .where(sql<string>`(denomination->>'amount')::numeric`, '=', sql<string>`${input.amount}::numeric`)
    .limit(1)
    .executeTakeFirst()
  return row !== undefined
}

/** Replaces a transaction's destination node (what the rail reported of how it was reached). */
export async function setDestination(tx: Tx, organizationId: string, id: string, destination: Record<string, unknown>): Promise<void> {
  await tx.updateTable('transactions').set({ destination: JSON.stringify(destination) }).where('organization_id', '=', organizationId).where('id', '=', id).execute()
}

export async function setOrigin(tx: Tx, organizationId: string, id: string, origin: Record<string, unknown>): Promise<void> {
  await tx.updateTable('transactions').set({ origin: JSON.stringify(origin) }).where('organization_id', '=', organizationId).where('id', '=', id).execute()
}

/** How many movements of these types the user started since `since` (velocity). */
export async function countSince(db: Executor, organizationId: string, ownerId: string, types: readonly string[], since: Date, before: Date): Promise<number> {
  const row = await db
    .selectFrom('transactions')
    .select((eb) => eb.fn.countAll<string>().as('count'))
    .where('organization_id', '=', organizationId)
    .where('owner_id', '=', ownerId)
    .where('type', 'in', types)
    .where('created_at', '>=', since)
    .where('created_at', '<', before)
    .executeTakeFirstOrThrow()
  return Number(row.count)
}

export interface ListFilter {
  organizationId: string
  ownerId: string
  accountId?: string
  statuses?: readonly string[]
  types?: readonly string[]
}

/** The user's transactions (those debiting or crediting one account, when given), newest first. */
export function listPage(db: Executor, filter: ListFilter, window: PageWindow) {
  let query = db.selectFrom('transactions').selectAll().where('organization_id', '=', filter.organizationId).where('owner_id', '=', filter.ownerId)
  if (filter.accountId !== undefined) {
    const accountId = filter.accountId
    query = query.where((eb) => eb.or([eb('origin_account_id', '=', accountId), eb('destination_account_id', '=', accountId)]))
  }
  if (filter.statuses !== undefined) query = query.where('status', 'in', filter.statuses as TransactionRow['status'][])
  if (filter.types !== undefined) query = query.where('type', 'in', filter.types)
  return fetchPage(query, 'id', window)
}

/** The user's transactions completed in [from, to), in the order they completed; one more than asked tells a next page. */
export function completedBetween(db: Executor, organizationId: string, ownerId: string, from: Date, to: Date, window: { offset: number; limit: number }): Promise<TransactionRow[]> {
  return db
    .selectFrom('transactions')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('owner_id', '=', ownerId)
    .where('status', '=', 'completed')
    .where('completed_at', '>=', from)
    .where('completed_at', '<', to)
    .orderBy('completed_at')
    .orderBy('id')
    .offset(window.offset)
    .limit(window.limit)
    .execute()
}

/** Inserts a movement that already happened, completed at its creation (imported history). */
export async function insertCompleted(tx: Tx, row: NewTransaction): Promise<TransactionRow> {
  return tx
    .insertInto('transactions')
    .values({ ...processingRow(row), status: 'completed', completed_at: row.created_at })
    .returningAll()
    .executeTakeFirstOrThrow()
}

/** Whether the user has any transaction at all, whatever its status. */
export async function hasAny(db: Executor, organizationId: string, ownerId: string): Promise<boolean> {
  const row = await db.selectFrom('transactions').select('id').where('organization_id', '=', organizationId).where('owner_id', '=', ownerId).limit(1).executeTakeFirst()
  return row !== undefined
}
