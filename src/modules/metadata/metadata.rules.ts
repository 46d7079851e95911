import { contentTooLarge, DomainError } from '../../lib/errors.ts'

export const METADATA_MAX_CHARACTERS = 1024

/** Unicode characters (code points) of a text, as the metadata size limit counts them. */
export function characterCount(text: string): number {
  let count = 0
  for (const _ of text) count++
  return count
}

export function metadataTooLarge(): DomainError {
  return contentTooLarge('characters', METADATA_MAX_CHARACTERS, 'The entity metadata size is greater than maximum size limit')
}

function invalid(message: string, rule: string, ruleParams: Record<string, unknown>): { error: DomainError } {
  return { error: new DomainError('request_invalid', message, { details: { context: 'body', violations: [{ property: 'metadata', rule, ruleParams }] } }) }
}

/**
 * Returns the metadata and the JSON text to store when it is a non-empty JSON object within the size
 * limit; otherwise the error to report.
 */
export function checkMetadata(value: unknown): { data: Record<string, unknown>; text: string } | { error: DomainError } {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return invalid('The metadata must be a JSON object', 'type', { type: 'object' })
  const data = value as Record<string, unknown>
  if (Object.keys(data).length === 0) return invalid('The metadata must have at least one property', 'minProperties', { limit: 1 })
  const text = JSON.stringify(data)
  if (characterCount(text) > METADATA_MAX_CHARACTERS) return { error: metadataTooLarge() }
  return { data, text }
}
