const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 }

/**
 * Parses delays written with units and separated by commas (`5s,5m,30m,2h`) into milliseconds; null for anything
 * else, or for fewer than one or more than `max` delays.
 */
export function parseDurationList(text: string, max = 50): number[] | null {
  const delays: number[] = []
  for (const part of text.split(',')) {
    const match = /^\s*(\d{1,9})(ms|s|m|h)\s*$/.exec(part)
    if (!match) return null
    delays.push(Number(match[1]) * UNITS[match[2]!]!)
  }
  return delays.length > 0 && delays.length <= max ? delays : null
}
