import type { Updateable } from 'kysely'
import type { AccountRow, AccountsTable, Executor } from '../../db/schema.ts'
import { fetchPage } from '../../db/paging.ts'
import type { PageWindow } from '../../http/pagination.ts'

export async function insertAccount(db: Executor, row: AccountRow): Promise<void> {
  await db.insertInto('accounts').values(row).execute()
}

/** An account of the user that is not archived. */
export async function findActive(db: Executor, organizationId: string, ownerId: string, id: string): Promise<AccountRow | undefined> {
  const [row] = await findActiveMany(db, organizationId, ownerId, [id])
  return row
}

/** The accounts of the user among `ids` that are not archived. */
export function findActiveMany(db: Executor, organizationId: string, ownerId: string, ids: readonly string[]): Promise<AccountRow[]> {
  if (ids.length === 0) return Promise.resolve([])
  return db
    .selectFrom('accounts')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('owner_id', '=', ownerId)
    .where('id', 'in', ids)
    .where('archived_at', 'is', null)
    .execute()
}

/** The asset of an account of the user and when it was archived, archived or not. */
export function findHolding(db: Executor, organizationId: string, ownerId: string, id: string): Promise<Pick<AccountRow, 'asset' | 'archived_at'> | undefined> {
  return db
    .selectFrom('accounts')
    .select(['asset', 'archived_at'])
    .where('organization_id', '=', organizationId)
    .where('owner_id', '=', ownerId)
    .where('id', '=', id)
    .executeTakeFirst()
}

export function findByIds(db: Executor, organizationId: string, ids: readonly string[]): Promise<AccountRow[]> {
  if (ids.length === 0) return Promise.resolve([])
  return db.selectFrom('accounts').selectAll().where('organization_id', '=', organizationId).where('id', 'in', ids).execute()
}

/** The user's accounts, newest first. */
export function listPage(db: Executor, organizationId: string, ownerId: string, assets: readonly string[] | undefined, window: PageWindow) {
  let query = db
    .selectFrom('accounts')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('owner_id', '=', ownerId)
    .where('archived_at', 'is', null)
  if (assets !== undefined) query = query.where('asset', 'in', assets)
  return fetchPage(query, 'id', window)
}

/** The user's default account of each asset: the oldest one that is not archived. */
export function defaults(db: Executor, organizationId: string, ownerId: string, assets: readonly string[] | undefined): Promise<AccountRow[]> {
  let query = db
    .selectFrom('accounts')
    .selectAll()
    .distinctOn('asset')
    .where('organization_id', '=', organizationId)
    .where('owner_id', '=', ownerId)
    .where('archived_at', 'is', null)
  if (assets !== undefined) query = query.where('asset', 'in', assets)
  return query.orderBy('asset').orderBy('id').execute()
}

/** Changes an active account of the user; undefined when it was not one (any more). */
function updateActive(db: Executor, organizationId: string, ownerId: string, id: string, values: Updateable<AccountsTable>): Promise<AccountRow | undefined> {
  return db
    .updateTable('accounts')
    .set(values)
    .where('organization_id', '=', organizationId)
    .where('owner_id', '=', ownerId)
    .where('id', '=', id)
    .where('archived_at', 'is', null)
    .returningAll()
    .executeTakeFirst()
}

export function updateLabel(db: Executor, organizationId: string, ownerId: string, id: string, label: string, at: Date): Promise<AccountRow | undefined> {
  return updateActive(db, organizationId, ownerId, id, { label, updated_at: at })
}

/** Archives the account; undefined when it was not an active account of the user (any more). */
export function archive(db: Executor, organizationId: string, ownerId: string, id: string, at: Date): Promise<AccountRow | undefined> {
  return updateActive(db, organizationId, ownerId, id, { archived_at: at, updated_at: at })
}
