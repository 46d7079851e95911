import type { Executor } from '../../db/schema.ts'

export type MetadataEntity = 'users' | 'accounts' | 'external-accounts' | 'files' | 'transactions'

export async function insertMetadata(
  db: Executor,
  row: { organizationId: string; entityType: MetadataEntity; entityId: string; data: Record<string, unknown>; etag: string; at: Date },
): Promise<void> {
  await db
    .insertInto('metadata')
    .values({
      organization_id: row.organizationId,
      entity_type: row.entityType,
      entity_id: row.entityId,
      data: JSON.stringify(row.data),
      etag: row.etag,
      created_at: row.at,
      updated_at: row.at,
    })
    .execute()
}
