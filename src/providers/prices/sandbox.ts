import { createHash } from 'node:crypto'
import BigNumber from 'bignumber.js'
import type { PriceFeed, UsdQuote } from './price-feed.ts'

/** Enough places that rounding inside the simulation never shows in the 12 significant digits served. */
const Decimal = BigNumber.clone({ DECIMAL_PLACES: 40, ROUNDING_MODE: BigNumber.ROUND_HALF_EVEN })

export interface SimulatedLevel {
  /** Price of one unit in US dollars around which the walk moves. */
  usd: string
  /** Typical relative move over one day (0.03 = 3 %). */
  dailyVolatility: string
  /** Half the bid/ask spread, relative to mid. */
  halfSpread: string
  /** Units in circulation, for market capitalisation. */
  supply?: string
}

/** The seed of every sandbox deployment: the same history everywhere, so examples and tests can rely on it. */
export const SANDBOX_PRICE_SEED = 'tessera-sandbox-prices-v1'

const CRYPTO_SPREAD = '0.0025'
const FIAT_SPREAD = '0.0005'
const FIAT_VOLATILITY = '0.004'

/** Realistic USD levels (mid-2024) of the assets the sandbox trades. */
export const SANDBOX_LEVELS: Readonly<Record<string, SimulatedLevel>> = {
  USD: { usd: '1', dailyVolatility: '0', halfSpread: '0' },
  BTC: { usd: '65000', dailyVolatility: '0.03', halfSpread: CRYPTO_SPREAD, supply: '19700000' },
  ETH: { usd: '3400', dailyVolatility: '0.035', halfSpread: CRYPTO_SPREAD, supply: '120200000' },
  XRP: { usd: '0.52', dailyVolatility: '0.04', halfSpread: CRYPTO_SPREAD, supply: '55600000000' },
  SOL: { usd: '150', dailyVolatility: '0.05', halfSpread: CRYPTO_SPREAD, supply: '463000000' },
  LTC: { usd: '75', dailyVolatility: '0.04', halfSpread: CRYPTO_SPREAD, supply: '74800000' },
  USDC: { usd: '1', dailyVolatility: '0.0002', halfSpread: '0.0001', supply: '33000000000' },
  USDT: { usd: '1', dailyVolatility: '0.0002', halfSpread: '0.0001', supply: '112000000000' },
  EUR: { usd: '1.08', dailyVolatility: FIAT_VOLATILITY, halfSpread: FIAT_SPREAD },
  GBP: { usd: '1.27', dailyVolatility: FIAT_VOLATILITY, halfSpread: FIAT_SPREAD },
  CHF: { usd: '1.12', dailyVolatility: FIAT_VOLATILITY, halfSpread: FIAT_SPREAD },
  JPY: { usd: '0.0065', dailyVolatility: FIAT_VOLATILITY, halfSpread: FIAT_SPREAD },
  CAD: { usd: '0.73', dailyVolatility: FIAT_VOLATILITY, halfSpread: FIAT_SPREAD },
  AUD: { usd: '0.66', dailyVolatility: FIAT_VOLATILITY, halfSpread: FIAT_SPREAD },
  NZD: { usd: '0.61', dailyVolatility: FIAT_VOLATILITY, halfSpread: FIAT_SPREAD },
  CNY: { usd: '0.138', dailyVolatility: FIAT_VOLATILITY, halfSpread: FIAT_SPREAD },
  HKD: { usd: '0.128', dailyVolatility: FIAT_VOLATILITY, halfSpread: FIAT_SPREAD },
  SGD: { usd: '0.74', dailyVolatility: FIAT_VOLATILITY, halfSpread: FIAT_SPREAD },
  INR: { usd: '0.012', dailyVolatility: FIAT_VOLATILITY, halfSpread: FIAT_SPREAD },
  BRL: { usd: '0.19', dailyVolatility: FIAT_VOLATILITY, halfSpread: FIAT_SPREAD },
  MXN: { usd: '0.055', dailyVolatility: FIAT_VOLATILITY, halfSpread: FIAT_SPREAD },
  ZAR: { usd: '0.054', dailyVolatility: FIAT_VOLATILITY, halfSpread: FIAT_SPREAD },
  SEK: { usd: '0.095', dailyVolatility: FIAT_VOLATILITY, halfSpread: FIAT_SPREAD },
  NOK: { usd: '0.094', dailyVolatility: FIAT_VOLATILITY, halfSpread: FIAT_SPREAD },
  DKK: { usd: '0.145', dailyVolatility: FIAT_VOLATILITY, halfSpread: FIAT_SPREAD },
  PLN: { usd: '0.25', dailyVolatility: FIAT_VOLATILITY, halfSpread: FIAT_SPREAD },
  CZK: { usd: '0.043', dailyVolatility: FIAT_VOLATILITY, halfSpread: FIAT_SPREAD },
  HUF: { usd: '0.0027', dailyVolatility: FIAT_VOLATILITY, halfSpread: FIAT_SPREAD },
  TRY: { usd: '0.031', dailyVolatility: FIAT_VOLATILITY, halfSpread: FIAT_SPREAD },
  KRW: { usd: '0.00072', dailyVolatility: FIAT_VOLATILITY, halfSpread: FIAT_SPREAD },
  AED: { usd: '0.2723', dailyVolatility: '0.0005', halfSpread: FIAT_SPREAD },
  SAR: { usd: '0.2667', dailyVolatility: '0.0005', halfSpread: FIAT_SPREAD },
  ILS: { usd: '0.27', dailyVolatility: FIAT_VOLATILITY, halfSpread: FIAT_SPREAD },
  NGN: { usd: '0.00067', dailyVolatility: FIAT_VOLATILITY, halfSpread: FIAT_SPREAD },
  ARS: { usd: '0.0011', dailyVolatility: FIAT_VOLATILITY, halfSpread: FIAT_SPREAD },
}

function hash(...parts: (string | number)[]): Buffer {
  return createHash('sha256').update(parts.join(':')).digest()
}

/**
 * A stable stand-in level for a currency the table does not know: from 0.0001 to 9.99 dollars, chosen by
 * the code alone, so that every deployment and every process shows the same made-up rate.
 */
export function pseudoLevel(code: string): SimulatedLevel {
  const digest = hash('tessera-pseudo-level', code)
  const mantissa = new Decimal(100 + (digest.readUInt16BE(0) % 900)).div(100)
  const exponent = digest[2]! % 5
  return { usd: mantissa.shiftedBy(-exponent).toFixed(), dailyVolatility: FIAT_VOLATILITY, halfSpread: FIAT_SPREAD }
}

/**
 * Octaves of the walk: a value chosen by hash at every multiple of the period, joined by straight lines.
 * Their sum moves like a random walk at every scale from a minute to a year (amplitudes grow as the square
 * root of the period), yet the value at any instant costs a few hashes and needs no state.
 */
const OCTAVES: readonly { periodMs: number; weight: string }[] = [
  { periodMs: 60_000, weight: '0.0264' }, // √(1 min / 1 day)
  { periodMs: 900_000, weight: '0.1021' },
  { periodMs: 3_600_000, weight: '0.2041' },
  { periodMs: 21_600_000, weight: '0.5' },
  { periodMs: 86_400_000, weight: '1' },
  { periodMs: 604_800_000, weight: '2.6458' },
  { periodMs: 2_592_000_000, weight: '5.4772' },
  { periodMs: 31_536_000_000, weight: '19.105' },
]
/** Damps the sum so that prices stay around their level (within about half to twice of it). */
const DAMPING = '0.35'

/** A value in [-1, 1] for one grid point of one octave. */
function gridValue(seed: string, asset: string, octave: number, index: number): BigNumber {
  const word = hash(seed, asset, octave, index).readUInt32BE(0)
  return new Decimal(word).div(2 ** 31).minus(1)
}

/** The relative deviation of the walk at a whole second, in the form `factor = 1 + d` (d ≥ 0) or `1 / (1 - d)`. */
export function walkFactor(seed: string, asset: string, volatility: string, atMs: number): BigNumber {
  const t = Math.floor(atMs / 1000) * 1000
  let sum = new Decimal(0)
  OCTAVES.forEach(({ periodMs, weight }, octave) => {
    const index = Math.floor(t / periodMs)
    const into = new Decimal(t - index * periodMs).div(periodMs)
    const from = gridValue(seed, asset, octave, index)
    const to = gridValue(seed, asset, octave, index + 1)
    sum = sum.plus(from.plus(to.minus(from).times(into)).times(weight))
  })
  const deviation = sum.times(volatility).times(DAMPING)
  // Multiplying up and dividing down keeps the price positive and the walk symmetric in log terms.
  return deviation.gte(0) ? deviation.plus(1) : new Decimal(1).div(new Decimal(1).minus(deviation))
}

/** The sandbox price feed: a seeded, deterministic random walk per asset around realistic USD levels. */
export class SandboxPriceFeed implements PriceFeed {
  private readonly seed: string
  private readonly levels: ReadonlyMap<string, SimulatedLevel>
  /** The last quote of each asset with its second: the walk only moves once a second, and quotes ask for now. */
  private readonly latest = new Map<string, { second: number; quote: UsdQuote }>()

  /** `fiat` are the currencies to price; those missing from the table get a pseudo level. */
  constructor(seed: string, fiat: readonly string[], levels: Readonly<Record<string, SimulatedLevel>> = SANDBOX_LEVELS) {
    this.seed = seed
    const all = new Map<string, SimulatedLevel>(Object.entries(levels))
    for (const code of fiat) if (!all.has(code)) all.set(code, pseudoLevel(code))
    this.levels = all
  }

  async usdQuote(asset: string, at: Date): Promise<UsdQuote | null> {
    return this.quoteAt(asset, at.getTime())
  }

  async marketCapUsd(asset: string, at: Date): Promise<string | null> {
    const supply = this.levels.get(asset)?.supply
    const quote = this.quoteAt(asset, at.getTime())
    return supply === undefined || quote === null ? null : new Decimal(quote.mid).times(supply).decimalPlaces(2).toFixed()
  }

  quoteAt(asset: string, atMs: number): UsdQuote | null {
    const level = this.levels.get(asset)
    if (!level) return null
    const second = Math.floor(atMs / 1000)
    const latest = this.latest.get(asset)
    if (latest?.second === second) return latest.quote
    const mid = new Decimal(level.usd).times(walkFactor(this.seed, asset, level.dailyVolatility, atMs)).precision(24)
    const quote = {
      mid: mid.toFixed(),
      bid: mid.times(new Decimal(1).minus(level.halfSpread)).precision(24, BigNumber.ROUND_DOWN).toFixed(),
      ask: mid.times(new Decimal(1).plus(level.halfSpread)).precision(24, BigNumber.ROUND_UP).toFixed(),
    }
    // Only the newest second is kept: history is recorded in price_points, and now is what is asked again.
    if (latest === undefined || second > latest.second) this.latest.set(asset, { second, quote })
    return quote
  }
}
