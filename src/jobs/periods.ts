import { parseDurationList } from '../lib/durations.ts'

/**
 * The periods of recurring jobs. They are aligned to the Unix epoch, so every process computes the same periods
 * from its own clock without agreeing on a start: a 10-minute schedule's periods begin at :00, :10, :20…
 */

/** The start of the period of `periodMs` that holds `at`. */
export function periodStartOf(at: Date, periodMs: number): Date {
  checkPeriod(periodMs)
  return new Date(Math.floor(at.getTime() / periodMs) * periodMs)
}

/** The start of the period after the one that holds `at`. */
export function nextPeriodStart(at: Date, periodMs: number): Date {
  return new Date(periodStartOf(at, periodMs).getTime() + periodMs)
}

function checkPeriod(periodMs: number): void {
  if (!Number.isSafeInteger(periodMs) || periodMs < 1) throw new RangeError('a period must be a positive whole number of milliseconds')
}

/** A schedule's name: the job type it runs as (`prices.record`, `kyc.self-categorization-expiry`). */
const SCHEDULE_NAME = /^[a-z][a-z0-9-]*(\.[a-z][a-z0-9-]*)+$/

/**
 * Periods that replace schedules' own, as written in the configuration: `name=duration` pairs separated by
 * commas, each duration a whole number with a unit ms, s, m or h (`prices.record=200ms,jobs.retention=1h`).
 * Returns the periods, or what is wrong.
 */
export function parseSchedulePeriods(text: string): { periods: Map<string, number> } | { problem: string } {
  const periods = new Map<string, number>()
  for (const part of text.split(',')) {
    const [name = '', duration = '', ...rest] = part.split('=').map((piece) => piece.trim())
    if (!SCHEDULE_NAME.test(name) || rest.length > 0) return { problem: `"${part.trim()}" is not name=duration` }
    const parsed = parseDurationList(duration, 1)
    if (parsed === null || parsed[0]! < 1) return { problem: `the period of ${name} must be a whole number above zero with a unit ms, s, m or h (got "${duration}")` }
    if (periods.has(name)) return { problem: `${name} is named more than once` }
    periods.set(name, parsed[0]!)
  }
  return { periods }
}
