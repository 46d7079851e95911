import { randomFillSync } from 'node:crypto'

// Random bytes are drawn in bulk (one call for 512 ids): an id is made in about a microsecond, not five.
const POOL = Buffer.allocUnsafe(10 * 512)
let pooled = POOL.length
let lastMs = -1
// The 74 random bits of the last id, as numbers (no BigInt on this path): 12 (rand_a), then 30 and 32 (rand_b).
let lastA = 0
let lastHigh = 0
let lastLow = 0

const hex = (value: number, digits: number): string => value.toString(16).padStart(digits, '0')

/**
 * UUID version 7 (RFC 9562): a millisecond timestamp followed by random bits, so ids sort by creation
 * time and new rows land at the end of B-tree indexes. Within one process ids are strictly increasing
 * (§6.2, method 2): in the same millisecond, or if the clock steps back, the random part is incremented.
 */
export function uuidv7(now: number = Date.now()): string {
  if (pooled + 10 > POOL.length) {
    randomFillSync(POOL)
    pooled = 0
  }
  let ms = now
  let a = POOL.readUInt16BE(pooled) & 0xfff
  let high = POOL.readUInt32BE(pooled + 2) & 0x3fffffff
  let low = POOL.readUInt32BE(pooled + 6)
  if (ms <= lastMs) {
    // The last id's random part plus 1 to 65536, carried up through its three parts (and into the next
    // millisecond, should all 74 bits overflow).
    ms = lastMs
    a = lastA
    high = lastHigh
    low = lastLow + 1 + (low & 0xffff)
    if (low > 0xffffffff) {
      low -= 0x100000000
      high += 1
      if (high > 0x3fffffff) {
        high = 0
        a += 1
        if (a > 0xfff) {
          a = 0
          ms += 1
        }
      }
    }
  }
  lastMs = ms
  lastA = a
  lastHigh = high
  lastLow = low
  const time = hex(ms, 12)
  const variantHigh = hex((0x80000000 | high) >>> 0, 8)
  return `${time.slice(0, 8)}-${time.slice(8)}-7${hex(a, 3)}-${variantHigh.slice(0, 4)}-${variantHigh.slice(4)}${hex(low, 8)}`
}

export const UUID_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'
const UUID_REGEX = new RegExp(UUID_PATTERN)

export function isUuid(value: string): boolean {
  return UUID_REGEX.test(value)
}
