import type { Executor, NewUserRow, UserRow } from '../../db/schema.ts'

export async function insertUser(db: Executor, row: NewUserRow): Promise<void> {
  await db.insertInto('users').values(row).execute()
}

function activeUser(db: Executor, organizationId: string, id: string) {
  return db.selectFrom('users').selectAll().where('organization_id', '=', organizationId).where('id', '=', id).where('deleted_at', 'is', null)
}

export async function findActiveUser(db: Executor, organizationId: string, id: string): Promise<UserRow | undefined> {
  return activeUser(db, organizationId, id).executeTakeFirst()
}

/** Marks the user deleted (announce the change in the same transaction); returns false when it was not an active user of the organization. */
/** Marks an active user deleted; the row as it now stands, or undefined when there was no such active user. */
export function markUserDeleted(db: Executor, organizationId: string, id: string, at: Date, review: unknown): Promise<UserRow | undefined> {
  return db
    .updateTable('users')
    .set({ deleted_at: at, updated_at: at, deletion_review: JSON.stringify(review) })
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .returningAll()
    .executeTakeFirst()
}

export async function updateDeclared(
  db: Executor,
  organizationId: string,
  id: string,
  values: { email?: string; email_key?: string; profile?: string; updated_at: Date },
): Promise<void> {
  await db.updateTable('users').set(values).where('organization_id', '=', organizationId).where('id', '=', id).where('deleted_at', 'is', null).execute()
}

export function lockActiveUser(db: Executor, organizationId: string, id: string): Promise<UserRow | undefined> {
  return activeUser(db, organizationId, id).forUpdate().executeTakeFirst()
}

/** Moves an active user's creation back to `to` (never forward); returns whether it moved. */
export async function backdateCreation(db: Executor, organizationId: string, id: string, to: Date, at: Date): Promise<boolean> {
  const result = await db
    .updateTable('users')
    .set({ created_at: to, updated_at: at })
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .where('deleted_at', 'is', null)
    .where('created_at', '>', to)
    .executeTakeFirst()
  return Number(result.numUpdatedRows) > 0
}
