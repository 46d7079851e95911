/**
 * When a message that failed is tried again: the delays after each failed attempt, in order. The default follows
 * Standard Webhooks practice: at once, then after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h — eight attempts over
 * about 27.6 hours, long enough for a receiver to come back after a day's outage.
 */
export const DEFAULT_RETRY_DELAYS_MS: readonly number[] = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]

export type AfterFailure = { retryAt: Date } | { exhausted: true }

/**
 * What follows the failure of attempt number `attempt` (from 1): a retry after the schedule's delay for it, or
 * nothing more when every attempt was made (the first attempt is not in the schedule: it is made at once).
 */
export function afterFailedAttempt(attempt: number, delaysMs: readonly number[], at: Date): AfterFailure {
  if (!Number.isInteger(attempt) || attempt < 1) throw new RangeError('attempt must be a positive integer')
  const delay = delaysMs[attempt - 1]
  return delay === undefined ? { exhausted: true } : { retryAt: new Date(at.getTime() + delay) }
}

/** How many attempts the schedule makes in all. */
export const attemptsOf = (delaysMs: readonly number[]): number => delaysMs.length + 1
