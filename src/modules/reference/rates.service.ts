import type { Db } from '../../db/schema.ts'
import type { Schedules } from '../../jobs/schedules.ts'
import { DomainError, notFound, requestInvalid } from '../../lib/errors.ts'
import type { PriceFeed, UsdQuote } from '../../providers/prices/price-feed.ts'
import { withoutAudit } from '../audit/index.ts'
import type { AssetCatalogue } from './assets.service.ts'
import * as repository from './rates.repository.ts'
import { convertAmount, crossRate, historyBuckets, INTERVAL_STEPS, type HistoryInterval, type Rate, type RoundingMode } from './rates.ts'

const USD: UsdQuote = { mid: '1', bid: '1', ask: '1' }
const DAY = 86_400_000
/** Days of daily points the back-fill records, so that a year of history exists from the first start. */
const BACKFILL_DAYS = 366
export const PRICES_RECORD_SCHEDULE = 'prices.record'
export const PRICES_BACKFILL_SCHEDULE = 'prices.backfill'

/** Where a code came from in the request, for errors that name it. */
type Origin = { context: 'path' } | { context: 'query'; property: 'denomination' }

export interface HistoricalPoint {
  timestamp: string
  rate?: { mid: string }
}

export interface RatesServiceDeps {
  catalogue: AssetCatalogue
  feed: PriceFeed
  db: Db
  now?: () => Date
}

/**
 * Prices and conversions between any two listed assets, through US dollar quotes from the price feed.
 * History is read through `price_points`: a point is taken from the feed the first time anyone needs it and
 * written once (insert … on conflict do nothing), so every process serves the same history, and a feed that
 * cannot look back (a live-only production feed) still has what was recorded.
 */
export class RatesService {
  private readonly catalogue: AssetCatalogue
  private readonly feed: PriceFeed
  private readonly db: Db
  private readonly now: () => Date

  constructor(deps: RatesServiceDeps) {
    this.catalogue = deps.catalogue
    this.feed = deps.feed
    this.db = deps.db
    this.now = deps.now ?? (() => new Date())
  }

  /** The US dollar quote of a listed asset, or null where there is none (delisted, or unknown to the feed). */
  async usdQuote(code: string, at: Date = this.now()): Promise<UsdQuote | null> {
    const asset = this.catalogue.find(code)
    if (!asset || asset.delisted) return null
    if (code === 'USD') return USD
    return this.feed.usdQuote(code, at)
  }

  async marketCapUsd(code: string, at: Date = this.now()): Promise<string | null> {
    return this.catalogue.find(code)?.delisted === false ? this.feed.marketCapUsd(code, at) : null
  }

  private async supportedQuote(code: string, origin: Origin, at: Date): Promise<UsdQuote> {
    if (!this.catalogue.find(code)) throw notFound('asset', { ...origin })
    const quote = await this.usdQuote(code, at)
    if (quote === null) {
      throw new DomainError('asset_not_supported', 'The asset is not supported', {
        details: { ...(origin.context === 'path' ? { context: 'path', property: 'asset' } : origin), asset: code },
      })
    }
    return quote
  }

  /** The price of one unit of `base` in `quote`: 404 for an unknown asset, 409 `asset_not_supported` where there is no price. */
  async rate(base: string, quote: string, at: Date = this.now()): Promise<Rate> {
    const [b, q] = await Promise.all([
      this.supportedQuote(base, { context: 'path' }, at),
      this.supportedQuote(quote, { context: 'query', property: 'denomination' }, at),
    ])
    return base === quote ? { bid: '1', ask: '1', mid: '1' } : crossRate(b, q)
  }

  /**
   * `amount` of `from` in `to`, rounded to `to`'s decimals. `side` picks the price: `mid` to value a holding,
   * `bid` for what selling `from` yields, `ask` for what buying it costs.
   */
  async convert(
    amount: string,
    from: string,
    to: string,
    options: { at?: Date; side?: keyof Rate; rounding?: RoundingMode } = {},
  ): Promise<string> {
    const rate = await this.rate(from, to, options.at)
    return convertAmount(amount, rate[options.side ?? 'mid'], this.catalogue.find(to)!.decimals, options.rounding)
  }

  /** Rates of `asset` in each denomination (by default the major fiat currencies and every listed crypto asset). */
  async rates(asset: string, denominations?: readonly string[]): Promise<Record<string, Rate>> {
    if (denominations && denominations.length > 100) {
      throw requestInvalid('query', [{ property: 'denomination', rule: 'maxItems', ruleParams: { limit: 100 } }])
    }
    const at = this.now()
    const base = await this.supportedQuote(asset, { context: 'path' }, at)
    const wanted = denominations ? [...new Set(denominations)] : this.catalogue.defaultDenominations().filter((code) => code !== asset)
    const quotes = await Promise.all(
      wanted.map((code) => (denominations ? this.supportedQuote(code, { context: 'query', property: 'denomination' }, at) : this.usdQuote(code, at))),
    )
    const rates: Record<string, Rate> = {}
    wanted.forEach((code, i) => {
      const quote = quotes[i]
      if (quote) rates[code] = code === asset ? { bid: '1', ask: '1', mid: '1' } : crossRate(base, quote)
    })
    return rates
  }

  /**
   * The US dollar quote of a denomination named in a query: 404 (entity `asset`) when the catalogue does not know
   * it, 409 `asset_not_supported` when it has no price.
   */
  denominationQuote(code: string, at: Date = this.now()): Promise<UsdQuote> {
    return this.supportedQuote(code, { context: 'query', property: 'denomination' }, at)
  }

  /**
   * The recorded US dollar mids of an asset at instants aligned to a resolution of `INTERVAL_STEPS` (`minute`,
   * `day`, …), recording from the feed those not recorded yet; instants without a price are left out.
   */
  usdMids(asset: string, resolution: string, instants: readonly Date[]): Promise<Map<number, string>> {
    return instants.length === 0 ? Promise.resolve(new Map()) : this.recorded(asset, resolution, instants)
  }

  /** The mid of `asset` in `denomination` at each point of the interval, oldest first. */
  async historicalRates(asset: string, denomination: string, interval: HistoryInterval): Promise<Record<string, HistoricalPoint[]>> {
    const now = this.now()
    await this.supportedQuote(asset, { context: 'path' }, now)
    await this.supportedQuote(denomination, { context: 'query', property: 'denomination' }, now)
    const buckets = historyBuckets(interval, now)
    const { resolution } = INTERVAL_STEPS[interval]
    const [base, quote] = await Promise.all([this.recorded(asset, resolution, buckets), this.recorded(denomination, resolution, buckets)])
    const points = buckets.map((bucket) => {
      const key = bucket.getTime()
      const b = base.get(key)
      const q = quote.get(key)
      const timestamp = bucket.toISOString()
      if (asset === denomination && b !== undefined) return { rate: { mid: '1' }, timestamp }
      return b === undefined || q === undefined ? { timestamp } : { rate: { mid: crossRate({ mid: b, bid: b, ask: b }, { mid: q, bid: q, ask: q }).mid }, timestamp }
    })
    return { [asset]: points }
  }

  /**
   * The recorded US dollar mids of an asset at the buckets, recording from the feed those not yet recorded.
   * The first writer wins, so a feed that answers differently from one process to another still yields one history.
   */
  private async recorded(asset: string, resolution: string, buckets: readonly Date[]): Promise<Map<number, string>> {
    if (asset === 'USD') return new Map(buckets.map((bucket) => [bucket.getTime(), '1']))
    const read = async () => {
      const rows = await repository.findPricePoints(this.db, asset, resolution, buckets[0]!, buckets[buckets.length - 1]!)
      return new Map(rows.map((row) => [row.bucket_at.getTime(), String(row.usd_mid)]))
    }
    const found = await read()
    const missing = buckets.filter((bucket) => !found.has(bucket.getTime()))
    if (missing.length === 0) return found
    const recordedAt = this.now()
    const quotes = await Promise.all(missing.map((bucket) => this.feed.usdQuote(asset, bucket)))
    const rows = missing.flatMap((bucket, i) => {
      const quote = quotes[i]
      return quote ? [{ asset, resolution, bucket_at: bucket, usd_mid: quote.mid, recorded_at: recordedAt }] : []
    })
    // A cache of the feed, whichever request reads it first: no client's write (the audit trail).
    for (let start = 0; start < rows.length; start += 500) {
      await withoutAudit(() => repository.insertPricePoints(this.db, rows.slice(start, start + 500)))
    }
    return rows.length === 0 ? found : read()
  }

  /** Assets whose prices are recorded ahead of need: the listed assets something can be done with. */
  private tracked(): string[] {
    return this.catalogue.all().filter((asset) => !asset.delisted && asset.features.length > 0 && asset.code !== 'USD').map((asset) => asset.code)
  }

  /** Records the minute of every tracked asset that holds `at` (now by default). */
  async sample(at: Date = this.now()): Promise<void> {
    const minute = new Date(Math.floor(at.getTime() / 60_000) * 60_000)
    for (const code of this.tracked()) await this.recorded(code, 'minute', [minute])
  }

  /** Records a year of daily points of every tracked asset up to the day of `at` (what is already recorded is kept). */
  async backfill(at: Date = this.now()): Promise<void> {
    const today = Math.floor(at.getTime() / DAY) * DAY
    const days = Array.from({ length: BACKFILL_DAYS }, (_, i) => new Date(today - (BACKFILL_DAYS - 1 - i) * DAY))
    for (const code of this.tracked()) await this.recorded(code, 'day', days)
  }

  /**
   * Prices are recorded ahead of need, so that history has points even from a feed that cannot look back: every
   * minute the current one (`prices.record`), and every day the year of daily points (`prices.backfill`, which a
   * new deployment's first worker runs at once). Both write each point once, whichever worker runs them.
   */
  registerSchedules(schedules: Schedules): void {
    schedules.register({ name: PRICES_RECORD_SCHEDULE, periodMs: 60_000, run: ({ periodStart }) => this.sample(periodStart) })
    schedules.register({ name: PRICES_BACKFILL_SCHEDULE, periodMs: DAY, run: ({ periodStart }) => this.backfill(periodStart) })
  }
}
