import { randomBytes } from 'node:crypto'

/**
 * UUID version 7 (RFC 9562): a millisecond timestamp followed by random bits, so ids sort by creation
 * time and new rows land at the end of B-tree indexes.
 */
export function uuidv7(now: number = Date.now()): string {
  const bytes = randomBytes(16)
  const ms = BigInt(now)
  for (let i = 0; i < 6; i++) bytes[i] = Number((ms >> BigInt(8 * (5 - i))) & 0xffn)
  bytes[6] = (bytes[6]! & 0x0f) | 0x70
  bytes[8] = (bytes[8]! & 0x3f) | 0x80
  const hex = bytes.toString('hex')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}

export const UUID_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'
const UUID_REGEX = new RegExp(UUID_PATTERN)

export function isUuid(value: string): boolean {
  return UUID_REGEX.test(value)
}
