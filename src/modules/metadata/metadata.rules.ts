import { ApiError, contentTooLarge } from '../../http/errors.ts'

export const METADATA_MAX_CHARACTERS = 1024

/** Size of metadata as the specification counts it: Unicode characters of its JSON serialization. */
export function metadataSize(data: Record<string, unknown>): number {
  let count = 0
  for (const _ of JSON.stringify(data)) count++
  return count
}

/** Returns the metadata when it is a non-empty JSON object within the size limit; otherwise the error to report. */
export function checkMetadata(value: unknown): { data: Record<string, unknown> } | { error: ApiError } {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { error: new ApiError(400, 'request_invalid', 'The metadata must be a JSON object', { context: 'body', violations: [{ property: 'metadata', rule: 'type', ruleParams: { type: 'object' } }] }) }
  }
  const data = value as Record<string, unknown>
  if (Object.keys(data).length === 0) {
    return { error: new ApiError(400, 'request_invalid', 'The metadata must have at least one property', { context: 'body', violations: [{ property: 'metadata', rule: 'minProperties', ruleParams: { limit: 1 } }] }) }
  }
  if (metadataSize(data) > METADATA_MAX_CHARACTERS) {
    return { error: contentTooLarge('characters', METADATA_MAX_CHARACTERS, 'The entity metadata size is greater than maximum size limit') }
  }
  return { data }
}
