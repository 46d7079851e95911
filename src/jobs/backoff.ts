/** How a failed job is retried: exponentially later each time, up to a ceiling, a limited number of times. */
export interface RetryPolicy {
  /** Attempts in all, the first included; after the last failure the job is marked failed. */
  maxAttempts: number
  /** Delay before the second attempt. */
  baseDelayMs: number
  /** No retry waits longer than this. */
  maxDelayMs: number
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { maxAttempts: 10, baseDelayMs: 1_000, maxDelayMs: 15 * 60_000 }

/**
 * The delay before the next attempt after `attempts` failed ones (1 after the first failure): base × 2^(attempts−1),
 * capped, then spread by up to a quarter downwards so that jobs failing together do not all come back together.
 * `random` is in [0, 1).
 */
export function retryDelayMs(attempts: number, policy: Pick<RetryPolicy, 'baseDelayMs' | 'maxDelayMs'>, random: number = Math.random()): number {
  if (!Number.isInteger(attempts) || attempts < 1) throw new RangeError('attempts must be a positive integer')
  const exponential = policy.baseDelayMs * 2 ** Math.min(attempts - 1, 52)
  const capped = Math.min(exponential, policy.maxDelayMs)
  return Math.round(capped * (1 - 0.25 * Math.min(Math.max(random, 0), 1)))
}

/** What happens after a failed attempt: retry at a time, or give up. */
export function afterFailure(attempts: number, policy: RetryPolicy, now: Date, random?: number): { retryAt: Date } | { giveUp: true } {
  if (attempts >= policy.maxAttempts) return { giveUp: true }
  return { retryAt: new Date(now.getTime() + retryDelayMs(attempts, policy, random)) }
}
