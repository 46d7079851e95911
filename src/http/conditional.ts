/**
 * Entity tags for conditional requests (RFC 9110 §8.8.3, §13.1). Tessera's tags are 64 hexadecimal
 * characters; clients may send them quoted or not, with or without the weak prefix `W/`, alone, in a
 * comma-separated list, or as `*`.
 */
const TAG = /^(?:W\/)?"?([0-9A-Fa-f]{64})"?$/

export type EntityTagCondition = '*' | string[]

/** The header as `*` or a list of lower-case tags; null when it is not well-formed. */
export function parseEntityTags(header: string | undefined): EntityTagCondition | null | undefined {
  if (header === undefined) return undefined
  const value = header.trim()
  if (value === '*') return '*'
  const tags: string[] = []
  for (const part of value.split(',')) {
    const match = TAG.exec(part.trim())
    if (!match) return null
    tags.push(match[1]!.toLowerCase())
  }
  return tags
}

/** Whether a condition holds for the current tag (undefined: there is no current representation). */
export function conditionMatches(condition: EntityTagCondition, current: string | undefined): boolean {
  if (current === undefined) return false
  return condition === '*' || condition.includes(current)
}

export function formatEntityTag(tag: string): string {
  return `"${tag}"`
}
