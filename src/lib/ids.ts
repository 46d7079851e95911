import { randomBytes } from 'node:crypto'

const RANDOM_BITS = 74n
let lastMs = -1
let lastRandom = 0n

/**
 * UUID version 7 (RFC 9562): a millisecond timestamp followed by random bits, so ids sort by creation
 * time and new rows land at the end of B-tree indexes. Within one process ids are strictly increasing
 * (§6.2, method 2): in the same millisecond, or if the clock steps back, the random part is incremented.
 */
export function uuidv7(now: number = Date.now()): string {
  let ms = now
  let random = BigInt(`0x${randomBytes(10).toString('hex')}`) & ((1n << RANDOM_BITS) - 1n)
  if (ms <= lastMs) {
    ms = lastMs
    random = lastRandom + 1n + (random & 0xffffn)
    if (random >> RANDOM_BITS) {
      ms = lastMs + 1
      random &= (1n << RANDOM_BITS) - 1n
    }
  }
  lastMs = ms
  lastRandom = random
  const value = (BigInt(ms) << 80n) | (0x7n << 76n) | ((random >> 62n) << 64n) | (0x2n << 62n) | (random & ((1n << 62n) - 1n))
  const hex = value.toString(16).padStart(32, '0')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}

export const UUID_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'
const UUID_REGEX = new RegExp(UUID_PATTERN)

export function isUuid(value: string): boolean {
  return UUID_REGEX.test(value)
}
