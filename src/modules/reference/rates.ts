import BigNumber from 'bignumber.js'
import type { UsdQuote } from '../../providers/prices/price-feed.ts'

/** Division keeps this many places before the result is rounded to what is served. */
const Decimal = BigNumber.clone({ DECIMAL_PLACES: 40, ROUNDING_MODE: BigNumber.ROUND_HALF_EVEN })

/**
 * Rates are served with 12 significant digits whatever their magnitude: enough for a satoshi-sized price
 * and for a price in a currency worth a ten-thousandth of a dollar alike.
 */
export const RATE_SIGNIFICANT_DIGITS = 12

export interface Rate {
  bid: string
  ask: string
  mid: string
}

/**
 * The rate of one unit of `base` in `quote`, through their US dollar quotes. The bid is what selling the
 * base for the quote yields (base bid over quote ask), the ask what buying it costs; rounding goes outward
 * (bid down, ask up) so that the spread is never understated.
 */
export function crossRate(base: UsdQuote, quote: UsdQuote): Rate {
  const mid = new Decimal(base.mid).div(quote.mid)
  const bid = new Decimal(base.bid).div(quote.ask)
  const ask = new Decimal(base.ask).div(quote.bid)
  return {
    bid: bid.precision(RATE_SIGNIFICANT_DIGITS, BigNumber.ROUND_DOWN).toFixed(),
    ask: ask.precision(RATE_SIGNIFICANT_DIGITS, BigNumber.ROUND_UP).toFixed(),
    mid: mid.precision(RATE_SIGNIFICANT_DIGITS, BigNumber.ROUND_HALF_EVEN).toFixed(),
  }
}

export type RoundingMode = 'half-even' | 'down' | 'up'
const ROUNDING: Record<RoundingMode, BigNumber.RoundingMode> = {
  'half-even': BigNumber.ROUND_HALF_EVEN,
  down: BigNumber.ROUND_DOWN,
  up: BigNumber.ROUND_UP,
}

/** `amount` of an asset at `price` (one unit in the target), rounded to the target's decimals. */
export function convertAmount(amount: string, price: string, decimals: number, rounding: RoundingMode = 'half-even'): string {
  return new Decimal(amount).times(price).decimalPlaces(decimals, ROUNDING[rounding]).toFixed()
}

export const HISTORY_INTERVALS = ['one-hour', 'one-day', 'one-week', 'one-month', 'one-year', 'five-years'] as const
export type HistoryInterval = (typeof HISTORY_INTERVALS)[number]

const MINUTE = 60_000
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR

/** How far back each interval looks, and the spacing of its points (the resolution they are recorded at). */
export const INTERVAL_STEPS: Readonly<Record<HistoryInterval, { windowMs: number; stepMs: number; resolution: string }>> = {
  'one-hour': { windowMs: HOUR, stepMs: MINUTE, resolution: 'minute' },
  'one-day': { windowMs: DAY, stepMs: 15 * MINUTE, resolution: 'quarter-hour' },
  'one-week': { windowMs: 7 * DAY, stepMs: HOUR, resolution: 'hour' },
  'one-month': { windowMs: 30 * DAY, stepMs: 6 * HOUR, resolution: 'six-hours' },
  'one-year': { windowMs: 365 * DAY, stepMs: DAY, resolution: 'day' },
  'five-years': { windowMs: 5 * 365 * DAY, stepMs: 7 * DAY, resolution: 'week' },
}

/**
 * The points of an interval, oldest first: bucket starts aligned to the step (from the Unix epoch), the last
 * one being the bucket that contains `now`. A point's price is the price at its bucket's start.
 */
export function historyBuckets(interval: HistoryInterval, now: Date): Date[] {
  const { windowMs, stepMs } = INTERVAL_STEPS[interval]
  const last = Math.floor(now.getTime() / stepMs) * stepMs
  const count = Math.floor(windowMs / stepMs)
  return Array.from({ length: count }, (_, i) => new Date(last - (count - 1 - i) * stepMs))
}

/** The relative change from `then` to `now` (0.05 = +5 %), for sorting by price delta. */
export function relativeChange(then: string, now: string): BigNumber {
  return new Decimal(now).minus(then).div(then)
}
