import BigNumber from 'bignumber.js'

/**
 * The arithmetic of a quote: pure, exact, and rounded only in the direction that never creates money. What the
 * origin pays is rounded up, what the destination receives is rounded down, fees are rounded up; so Tessera
 * never gives more than the rate says, and the amounts always balance: origin = exchanged + fees.
 */

/** Division keeps this many places before anything is rounded to an asset's decimals. */
const Decimal = BigNumber.clone({ DECIMAL_PLACES: 40, ROUNDING_MODE: BigNumber.ROUND_HALF_EVEN })

/** Rates are shown with 12 significant digits, like the rates endpoints. */
const RATE_DIGITS = 12

export interface FeeRule {
  type: 'deposit' | 'exchange' | 'network' | 'withdrawal'
  code: string
  /** Percent of the origin amount (`0.5` is 0.5 %). */
  percentage?: string
  /** A fixed part, already in the origin asset. */
  fixed?: string
}

export interface PricingInput {
  target: 'origin' | 'destination'
  /** The exact amount the target end pays or receives, in its own asset (a converted denomination is rounded by `roundTarget` first). */
  amount: string
  /** Units of the destination asset one unit of the origin asset buys (1 between accounts of one asset). */
  rate: string
  originDecimals: number
  destinationDecimals: number
  fees: readonly FeeRule[]
}

export interface PricedFee {
  type: FeeRule['type']
  code: string
  amount: string
  percentage?: string
}

export interface Pricing {
  /** What the origin pays in all: exchanged + fees. */
  originAmount: string
  /** The part of the origin amount that is exchanged. */
  exchangedAmount: string
  destinationAmount: string
  fees: PricedFee[]
}

export class PricingError extends Error {
  readonly rule: 'amount-too-small'
  constructor(message: string) {
    super(message)
    this.name = 'PricingError'
    this.rule = 'amount-too-small'
  }
}

const up = (value: BigNumber, decimals: number) => value.decimalPlaces(decimals, BigNumber.ROUND_UP)
const down = (value: BigNumber, decimals: number) => value.decimalPlaces(decimals, BigNumber.ROUND_DOWN)

/**
 * A denomination converted to the target end's asset: the origin pays at least the denominated value (rounded
 * up), the destination receives at most it (rounded down).
 */
export function roundTarget(amount: string, price: string, target: 'origin' | 'destination', decimals: number): string {
  const value = new Decimal(amount).times(price)
  return (target === 'origin' ? up(value, decimals) : down(value, decimals)).toFixed()
}

/**
 * The amounts of a movement. `target: origin` — the origin pays exactly `amount`; the fees come out of it and
 * the rest is exchanged. `target: destination` — the destination receives exactly `amount`; the origin pays what
 * buys it, plus the fees. Throws `PricingError` when nothing would be left to exchange or to receive.
 */
export function price(input: PricingInput): Pricing {
  const rate = new Decimal(input.rate)
  if (!rate.isFinite() || !rate.isPositive() || rate.isZero()) throw new Error(`A rate must be positive (got ${input.rate})`)
  const percent = input.fees.reduce((sum, fee) => sum.plus(fee.percentage ?? 0), new Decimal(0)).div(100)
  if (percent.isGreaterThanOrEqualTo(1)) throw new Error('The percentage fees add up to 100 % or more')
  const fixed = input.fees.reduce((sum, fee) => sum.plus(fee.fixed ?? 0), new Decimal(0))
  // Each fee: its fixed part plus its percentage of `base`, rounded up.
  const feesOn = (base: BigNumber) => input.fees.map((fee) => new Decimal(fee.fixed ?? 0).plus(up(base.times(fee.percentage ?? 0).div(100), input.originDecimals)))
  const sum = (values: readonly BigNumber[]) => values.reduce((total, value) => total.plus(value), new Decimal(0))

  let parts: BigNumber[]
  let origin: BigNumber
  let exchanged: BigNumber
  let destination: BigNumber
  if (input.target === 'origin') {
    origin = new Decimal(input.amount)
    parts = feesOn(origin)
    exchanged = origin.minus(sum(parts))
    destination = down(exchanged.times(rate), input.destinationDecimals)
  } else {
    destination = new Decimal(input.amount)
    exchanged = up(destination.div(rate), input.originDecimals)
    // The smallest amount whose percentages, added to the exchanged amount and the fixed fees, it covers; each
    // fee is then at least its percentage of what the origin pays.
    parts = feesOn(up(exchanged.plus(fixed).div(new Decimal(1).minus(percent)), input.originDecimals))
    origin = exchanged.plus(sum(parts))
  }
  if (!exchanged.isGreaterThan(0) || !destination.isGreaterThan(0)) {
    throw new PricingError('The amount is too small: nothing would be left once the fees and rounding are taken')
  }
  const fees = input.fees.flatMap((rule, i) => {
    const amount = parts[i]!
    return amount.isZero() ? [] : [{ type: rule.type, code: rule.code, amount: amount.toFixed(), ...(rule.percentage !== undefined ? { percentage: rule.percentage } : {}) }]
  })
  return { originAmount: origin.toFixed(), exchangedAmount: exchanged.toFixed(), destinationAmount: destination.toFixed(), fees }
}

/** A rate for display: 12 significant digits. */
export function displayRate(value: BigNumber.Value): string {
  return new Decimal(value).precision(RATE_DIGITS, BigNumber.ROUND_HALF_EVEN).toFixed()
}

/** The inverse of a rate (origin units per destination unit), for display. */
export function inverseRate(rate: string): string {
  return displayRate(new Decimal(1).div(rate))
}

/** A rate less a spread: the spread is Tessera's margin as the counterparty of a trade (0.005 is 0.5 %). */
export function withSpread(mid: string, spread: string): string {
  return displayRate(new Decimal(mid).times(new Decimal(1).minus(spread)))
}
