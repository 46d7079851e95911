import { sql } from 'kysely'
import { notifying, type Announcement } from '../../db/changes.ts'
import { compiledOnce } from '../../db/compiled.ts'
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
 * Every write returns, besides its own columns, the change feed's notification of the key (db/changes.ts), so that
 * the write and its announcement are one statement.
 */
export type { Announcement }

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
    .returning([sql<boolean>`(xmax = 0)`.as('created'), notifying(announce).as('announced')])
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

const replaceIf = compiledOnce(
  ['data', 'etag', 'updatedAt', 'organizationId', 'entityType', 'entityId', 'expected', 'channel', 'key'],
  (db, values) =>
    db
      .updateTable('metadata')
      .set({ data: values.data, etag: values.etag, updated_at: values.updatedAt })
      .where((eb) => eb.and({ organization_id: values.organizationId, entity_type: values.entityType, entity_id: values.entityId }))
      // A null list matches any tag (`*`).
      .where(sql<boolean>`(${values.expected}::text[] is null or etag = any(${values.expected}::text[]))`)
      .returning(notifying({ channel: values.channel, key: values.key }).as('announced')),
)

/**
 * Replaces the revision when its tag is one of `expected` (any tag when `*`); false when none matched. The PUT with
 * `If-Match` of every metadata entity: compiled once.
 */
export async function replaceMetadataIf(
  db: Executor,
  key: MetadataKey,
  expected: '*' | string[],
  revision: MetadataRevision,
  at: Date,
  announce: Announcement,
): Promise<boolean> {
  const { rows } = await replaceIf(db, {
    data: revision.text,
    etag: revision.etag,
    updatedAt: at,
    organizationId: key.organizationId,
    entityType: key.entityType,
    entityId: key.entityId,
    expected: expected === '*' ? null : expected,
    channel: announce.channel,
    key: announce.key,
  })
  return rows.length > 0
}

/** Deletes the metadata, when its tag is one of `expected` if given; false when nothing was deleted. */
export async function deleteMetadataIf(db: Executor, key: MetadataKey, expected: '*' | string[] | undefined, announce: Announcement): Promise<boolean> {
  let query = db.deleteFrom('metadata').where((eb) => eb.and(byKey(key)))
  if (expected !== undefined && expected !== '*') query = query.where('etag', 'in', expected)
  return (await query.returning(notifying(announce).as('announced')).executeTakeFirst()) !== undefined
}
