import { sql } from 'kysely'
import type { Executor, ExternalAccountRow, Tx } from '../../db/schema.ts'
import { fetchPage } from '../../db/paging.ts'
import type { PageWindow } from '../../http/pagination.ts'

export type NewExternalAccount = Omit<ExternalAccountRow, 'details' | 'deleted_at' | 'updated_at'> & { details: Record<string, unknown> }

/** Inserts an external account; undefined when the user already has a live one with the same fingerprint. */
export async function insert(tx: Tx, row: NewExternalAccount): Promise<ExternalAccountRow | undefined> {
  return tx
    .insertInto('external_accounts')
    .values({ ...row, details: JSON.stringify(row.details), updated_at: row.created_at, deleted_at: null })
    .onConflict((conflict) => conflict.columns(['organization_id', 'owner_id', 'fingerprint']).where(sql.ref('deleted_at'), 'is', null).doNothing())
    .returningAll()
    .executeTakeFirst()
}

/** Live (not deleted) external accounts of the user among `ids`. */
export function findLiveMany(db: Executor, organizationId: string, ownerId: string, ids: readonly string[]): Promise<ExternalAccountRow[]> {
  if (ids.length === 0) return Promise.resolve([])
  return db
    .selectFrom('external_accounts')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('owner_id', '=', ownerId)
    .where('id', 'in', ids)
    .where('deleted_at', 'is', null)
    .execute()
}

/** External accounts, deleted or not: a movement keeps reaching the account it started with. */
export function findAnyMany(db: Executor, organizationId: string, ids: readonly string[]): Promise<ExternalAccountRow[]> {
  if (ids.length === 0) return Promise.resolve([])
  return db.selectFrom('external_accounts').selectAll().where('organization_id', '=', organizationId).where('id', 'in', ids).execute()
}

export function listPage(db: Executor, organizationId: string, ownerId: string, type: string | undefined, window: PageWindow) {
  let query = db
    .selectFrom('external_accounts')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('owner_id', '=', ownerId)
    .where('deleted_at', 'is', null)
  if (type !== undefined) query = query.where('type', '=', type as ExternalAccountRow['type'])
  return fetchPage(query, 'id', window)
}

export function updateLabel(db: Executor, organizationId: string, ownerId: string, id: string, label: string, at: Date): Promise<ExternalAccountRow | undefined> {
  return db
    .updateTable('external_accounts')
    .set({ label, updated_at: at })
    .where('organization_id', '=', organizationId)
    .where('owner_id', '=', ownerId)
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .returningAll()
    .executeTakeFirst()
}

/**
 * Moves a live external account's status from `from` to `to` (with the reason for it); the row as it now stands,
 * or undefined when it was not live in `from` (deleted, or moved already: a change is made once).
 */
export function changeStatus(
  tx: Tx,
  organizationId: string,
  id: string,
  change: { from: ExternalAccountRow['status']; to: ExternalAccountRow['status']; reason: string | null; at: Date },
): Promise<ExternalAccountRow | undefined> {
  return tx
    .updateTable('external_accounts')
    .set({ status: change.to, reason: change.reason, updated_at: change.at })
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .where('status', '=', change.from)
    .where('deleted_at', 'is', null)
    .returningAll()
    .executeTakeFirst()
}

export function markDeleted(tx: Tx, organizationId: string, ownerId: string, id: string, at: Date): Promise<ExternalAccountRow | undefined> {
  return tx
    .updateTable('external_accounts')
    .set({ deleted_at: at, updated_at: at })
    .where('organization_id', '=', organizationId)
    .where('owner_id', '=', ownerId)
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .returningAll()
    .executeTakeFirst()
}

/** How many cards the user has linked: live ones, and distinct cards ever (deleted ones included). */
export async function cardCounts(db: Executor, organizationId: string, ownerId: string): Promise<{ live: number; distinct: number }> {
  const row = await db
    .selectFrom('external_accounts')
    .select([
      sql<string>`count(*) filter (where deleted_at is null)`.as('live'),
      sql<string>`count(distinct fingerprint)`.as('distinct'),
    ])
    .where('organization_id', '=', organizationId)
    .where('owner_id', '=', ownerId)
    .where('type', '=', 'card')
    .executeTakeFirstOrThrow()
  return { live: Number(row.live), distinct: Number(row.distinct) }
}

/** Whether the user has a live external account with this fingerprint. */
export async function hasLive(db: Executor, organizationId: string, ownerId: string, fingerprint: string): Promise<boolean> {
  const row = await db
    .selectFrom('external_accounts')
    .select('id')
    .where('organization_id', '=', organizationId)
    .where('owner_id', '=', ownerId)
    .where('fingerprint', '=', fingerprint)
    .where('deleted_at', 'is', null)
    .executeTakeFirst()
  return row !== undefined
}

/** Whether the user has linked this card before (a fingerprint of theirs, live or deleted). */
export async function hasFingerprint(db: Executor, organizationId: string, ownerId: string, fingerprint: string): Promise<boolean> {
  const row = await db
    .selectFrom('external_accounts')
    .select('id')
    .where('organization_id', '=', organizationId)
    .where('owner_id', '=', ownerId)
    .where('fingerprint', '=', fingerprint)
    .limit(1)
    .executeTakeFirst()
  return row !== undefined
}

/** Serializes the card links of one user: the card limits are counted and kept under this lock. */
export async function lockOwnerCards(tx: Tx, organizationId: string, ownerId: string): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtextextended(${`external-accounts:cards:${organizationId}:${ownerId}`}, 0))`.execute(tx)
}
