import { sql, type Insertable } from 'kysely'
import type { Executor, FileRow, FilesTable } from '../../db/schema.ts'

export async function insertFile(db: Executor, row: Insertable<FilesTable>): Promise<void> {
  await db.insertInto('files').values(row).execute()
}

export function findFile(db: Executor, organizationId: string, id: string): Promise<FileRow | undefined> {
  return db.selectFrom('files').selectAll().where('organization_id', '=', organizationId).where('id', '=', id).executeTakeFirst()
}

/** The file when it belongs to the user; a file of another user of the organization is not theirs to see. */
export function findUserFile(db: Executor, organizationId: string, userId: string, id: string): Promise<FileRow | undefined> {
  return db
    .selectFrom('files')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('user_id', '=', userId)
    .where('id', '=', id)
    .executeTakeFirst()
}

/** `pending` → `uploaded`; returns the updated row, or undefined when the file was not pending any more. */
export function markUploaded(db: Executor, organizationId: string, id: string, upload: { storageKey: string; size: number; at: Date }): Promise<FileRow | undefined> {
  return db
    .updateTable('files')
    .set({ status: 'uploaded', storage_key: upload.storageKey, size: upload.size, uploaded_at: upload.at, updated_at: upload.at })
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .returningAll()
    .executeTakeFirst()
}

/** Serializes the creations of one user's files until the transaction ends, so that a count stays true. */
export async function lockUserFiles(tx: Executor, organizationId: string, userId: string): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtext(${`files:${organizationId}:${userId}`}))`.execute(tx)
}

export async function countUserFiles(db: Executor, organizationId: string, userId: string): Promise<number> {
  const row = await db
    .selectFrom('files')
    .select((eb) => eb.fn.countAll<string>().as('count'))
    .where('organization_id', '=', organizationId)
    .where('user_id', '=', userId)
    .executeTakeFirstOrThrow()
  return Number(row.count)
}
