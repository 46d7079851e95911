import type { Executor } from '../../db/schema.ts'
import type { ApiError } from '../../http/errors.ts'
import { sha256Hex } from '../../lib/secrets.ts'
import { insertMetadata, type MetadataEntity } from './metadata.repository.ts'
import { checkMetadata } from './metadata.rules.ts'

/** The ETag of a metadata revision: a digest of its serialized content (64 hexadecimal characters). */
export function metadataEtag(data: Record<string, unknown>): string {
  return sha256Hex(JSON.stringify(data))
}

/**
 * Stores the metadata given when an entity is created, inside the creating transaction. Metadata never
 * fails a creation: when it is invalid, nothing is stored and the error is returned for `errors.metadata`.
 */
export async function attachInitialMetadata(
  tx: Executor,
  entity: { organizationId: string; entityType: MetadataEntity; entityId: string; at: Date },
  value: unknown,
): Promise<ApiError | null> {
  const checked = checkMetadata(value)
  if ('error' in checked) return checked.error
  await insertMetadata(tx, { ...entity, data: checked.data, etag: metadataEtag(checked.data) })
  return null
}
