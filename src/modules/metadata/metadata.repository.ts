import { sql, type RawBuilder } from 'kysely'
import type { Executor } from '../../db/schema.ts'

export type MetadataEntity = 'users' | 'accounts' | 'external-accounts' | 'files' | 'transactions'

/** Whose metadata: an entity instance of an organization. */
export interface MetadataKey {
  organizationId: string
  entityType: MetadataEntity
  entityId: string
}

/** A stored revision: the JSON text as received, and its tag. */
export interface MetadataRevision {
  text: string
  etag: string
}

/**
 * What a write returns besides its own columns: the change feed's notification of the key (db/changes.ts), so that
 * the write and its announcement are one statement.
 */
export type Announcement = RawBuilder<unknown>

const byKey = (key: MetadataKey) => ({ organization_id: key.organizationId, entity_type: key.entityType, entity_id: key.entityId })

export async function insertMetadata(db: Executor, key: MetadataKey, revision: MetadataRevision, at: Date): Promise<boolean> {
  const inserted = await db
    .insertInto('metadata')
    .values({ ...byKey(key), data: revision.text, etag: revision.etag, created_at: at, updated_at: at })
    .onConflict((oc) => oc.columns(['organization_id', 'entity_type', 'entity_id']).doNothing())
    .returning('etag')
    .executeTakeFirst()
  return inserted !== undefined
}

/** Creates or replaces; tells which it did. */
export async function upsertMetadata(db: Executor, key: MetadataKey, revision: MetadataRevision, at: Date, announce: Announcement): Promise<{ created: boolean }> {
  const row = await db
    .insertInto('metadata')
    .values({ ...byKey(key), data: revision.text, etag: revision.etag, created_at: at, updated_at: at })
    .onConflict((oc) =>
      oc.columns(['organization_id', 'entity_type', 'entity_id']).doUpdateSet({ data: revision.text, etag: revision.etag, updated_at: at }),
    )
    // xmax is 0 for a row this statement inserted, the updating transaction's id for one it updated.
    .returning([sql<boolean>`(xmax = 0)`.as('created'), announce.as('announced')])
    .executeTakeFirstOrThrow()
  return { created: row.created }
}

/** The current revision; with `lock`, locked until the transaction ends. */
export async function findMetadata(db: Executor, key: MetadataKey, options: { lock?: boolean } = {}): Promise<MetadataRevision | undefined> {
  const query = db
    .selectFrom('metadata')
    .select([sql<string>`data::text`.as('text'), 'etag'])
    .where((eb) => eb.and(byKey(key)))
  return (options.lock ? query.forUpdate() : query).executeTakeFirst()
}

/** Replaces the revision when its tag is one of `expected` (any tag when `*`); false when none matched. */
export async function replaceMetadataIf(
  db: Executor,
  key: MetadataKey,
  expected: '*' | string[],
  revision: MetadataRevision,
  at: Date,
  announce: Announcement,
): Promise<boolean> {
  let query = db
    .updateTable('metadata')
    .set({ data: revision.text, etag: revision.etag, updated_at: at })
    .where((eb) => eb.and(byKey(key)))
  if (expected !== '*') query = query.where('etag', 'in', expected)
  return (await query.returning(announce.as('announced')).executeTakeFirst()) !== undefined
}

/** Deletes the metadata, when its tag is one of `expected` if given; false when nothing was deleted. */
export async function deleteMetadataIf(db: Executor, key: MetadataKey, expected: '*' | string[] | undefined, announce: Announcement): Promise<boolean> {
  let query = db.deleteFrom('metadata').where((eb) => eb.and(byKey(key)))
  if (expected !== undefined && expected !== '*') query = query.where('etag', 'in', expected)
  return (await query.returning(announce.as('announced')).executeTakeFirst()) !== undefined
}
