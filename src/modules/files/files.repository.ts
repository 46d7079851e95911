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

/** Notes, before the first byte is stored, that an upload's bytes may soon be under `storageKey`. */
export async function beginUpload(db: Executor, upload: { storageKey: string; organizationId: string; fileId: string; at: Date }): Promise<void> {
  await db.insertInto('file_uploads').values({ storage_key: upload.storageKey, organization_id: upload.organizationId, file_id: upload.fileId, started_at: upload.at }).execute()
}

/**
 * Forgets an upload: its bytes were committed to the file, or removed. False when it was already forgotten: the
 * orphan clean-up found it abandoned and deleted its bytes (waiting, here, for that clean-up to commit).
 */
export async function endUpload(db: Executor, storageKey: string): Promise<boolean> {
  const row = await db.deleteFrom('file_uploads').where('storage_key', '=', storageKey).returning('storage_key').executeTakeFirst()
  return row !== undefined
}

/**
 * Uploads begun before `before` and never ended, locked until the transaction ends (skipping those another
 * clean-up holds, and those whose upload is committing right now).
 */
export function lockAbandonedUploads(tx: Executor, before: Date, limit: number): Promise<{ storage_key: string }[]> {
  return tx.selectFrom('file_uploads').select('storage_key').where('started_at', '<', before).orderBy('started_at').limit(limit).forUpdate().skipLocked().execute()
}
