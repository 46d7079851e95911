import BigNumber from 'bignumber.js'

/**
 * The average-cost method, in US dollars (docs/portfolio.md). A position is what an account holds and what was paid
 * for it: an acquisition adds its cost, a disposal (a sale, a withdrawal, a fee) removes its share of the cost at
 * the average price, so the average price paid never changes on a disposal.
 *
 * `retained` multiplies, since `epoch` began, the fraction of the position each disposal left. Because every
 * disposal scales the cost by its fraction and every acquisition adds to it, the cost is an affine function of the
 * cost at any earlier moment: cost(now) = cost(then) × retained(now) / retained(then) + what was added since,
 * scaled by the disposals after each addition. That is what lets performance over a window (where what was held
 * at the window's start counts as bought at that moment's price) be computed from the two ends alone. An epoch
 * ends when the position is emptied: nothing held before it affects what comes after. `retained` keeps 40
 * significant digits and its power of ten apart (`retainedScale`), so it neither grows nor underflows.
 */
export interface PositionState {
  quantity: BigNumber
  investedUsd: BigNumber
  /** With `retainedScale`: retained × 10^retainedScale is the product of the fractions disposals left. */
  retained: BigNumber
  /** A power of ten kept apart, so that `retained` stays a short number after any number of disposals. */
  retainedScale: number
  epoch: number
}

/** Division keeps this many places: far beyond any asset's decimals, so sums of costs stay exact to the cent. */
const Decimal = BigNumber.clone({ DECIMAL_PLACES: 40, ROUNDING_MODE: BigNumber.ROUND_HALF_EVEN })

/** Significant digits kept of `retained`, a product that would otherwise grow a digit per disposal. */
const RETAINED_DIGITS = 40

export const EMPTY_POSITION: PositionState = Object.freeze({ quantity: new BigNumber(0), investedUsd: new BigNumber(0), retained: new BigNumber(1), retainedScale: 0, epoch: 0 })

/** `retained` times `factor`, its power of ten moved into the scale (an exact shift): it stays in [0.1, 1]. */
function scaled(state: PositionState, factor: BigNumber): { retained: BigNumber; retainedScale: number } {
  const product = state.retained.times(factor).precision(RETAINED_DIGITS)
  const shift = -(product.e! + 1)
  return shift === 0 ? { retained: product, retainedScale: state.retainedScale } : { retained: product.shiftedBy(shift), retainedScale: state.retainedScale - shift }
}

export function acquire(state: PositionState, quantity: BigNumber.Value, costUsd: BigNumber.Value): PositionState {
  const added = new Decimal(quantity)
  if (!added.isGreaterThan(0)) throw new RangeError('An acquisition adds a positive quantity')
  return { ...state, quantity: state.quantity.plus(added), investedUsd: state.investedUsd.plus(costUsd) }
}

/** Removes `quantity` at the average cost; returns the new state and the cost that left with it. */
export function dispose(state: PositionState, quantity: BigNumber.Value): { state: PositionState; removedUsd: BigNumber } {
  const removed = new Decimal(quantity)
  if (!removed.isGreaterThan(0)) throw new RangeError('A disposal removes a positive quantity')
  if (removed.isGreaterThanOrEqualTo(state.quantity)) {
    // Emptied (a ledger never lets a user's account go below zero, so "more than held" cannot happen in practice).
    return { state: { quantity: state.quantity.minus(removed), investedUsd: new BigNumber(0), retained: new BigNumber(1), retainedScale: 0, epoch: state.epoch + 1 }, removedUsd: state.investedUsd }
  }
  // The cost removed is the invested share of what left (exact whenever that quotient is a finite decimal).
  const removedUsd = new Decimal(state.investedUsd).times(removed).div(state.quantity)
  const left = new Decimal(state.quantity).minus(removed).div(state.quantity)
  return { state: { quantity: state.quantity.minus(removed), investedUsd: state.investedUsd.minus(removedUsd), ...scaled(state, left), epoch: state.epoch }, removedUsd }
}

/** Applies a signed change of quantity: a credit is an acquisition at `costUsd`, a debit a disposal. */
export function applyChange(state: PositionState, amount: BigNumber.Value, costUsd: () => BigNumber): { state: PositionState; removedUsd: BigNumber } {
  const change = new BigNumber(amount)
  if (change.isZero()) return { state, removedUsd: new BigNumber(0) }
  if (change.isNegative()) return dispose(state, change.negated())
  return { state: acquire(state, change, costUsd()), removedUsd: new BigNumber(0) }
}

/**
 * The cost basis now when what was held at a window's start counts as bought then at `startPriceUsd`: the
 * all-time basis, corrected by how much the start's position changes it, scaled by the disposals since.
 * `start` is null when the account held nothing at the window's start.
 */
export function windowBasisUsd(now: PositionState, start: PositionState | null, startPriceUsd: BigNumber.Value): BigNumber {
  if (start === null || start.epoch !== now.epoch || start.quantity.isZero()) return now.investedUsd
  const carried = new Decimal(now.retained).div(start.retained).shiftedBy(now.retainedScale - start.retainedScale)
  const startValue = start.quantity.times(startPriceUsd)
  return now.investedUsd.plus(carried.times(startValue.minus(start.investedUsd)))
}

export interface Performance {
  averagePricePaid: BigNumber
  totalInvested: BigNumber
  unrealizedGains: BigNumber
}

/** Average price paid, total invested and unrealized gains of `quantity` that cost `basisUsd` and is worth `valueUsd` now. */
export function performanceOf(quantity: BigNumber.Value, basisUsd: BigNumber.Value, valueUsd: BigNumber.Value): Performance {
  const held = new Decimal(quantity)
  const basis = new Decimal(basisUsd)
  return {
    averagePricePaid: held.isGreaterThan(0) ? basis.div(held) : new Decimal(0),
    totalInvested: basis,
    unrealizedGains: new Decimal(valueUsd).minus(basis),
  }
}

/** What a movement is, for valuing what it brought: its two ends as the transaction recorded them. */
export interface MovementTerms {
  originAsset: string
  originAmount: string
  destinationAsset: string
  destinationAmount: string
}

/**
 * The cost in US dollars of `amount` of `asset` that arrived in a user's account:
 * - a dollar costs a dollar;
 * - what moved between the user's own accounts (`carriedUsd`: the cost the origin gave up) keeps its cost;
 * - what was bought with dollars costs the dollars paid, fees included, in proportion when it arrived in parts;
 * - anything else costs what the origin was worth at the movement (`usdPrice`), fees included: a deposit of crypto
 *   from outside is valued at the market when it arrives, a trade from another asset at the market value given.
 */
export function acquisitionCostUsd(input: {
  asset: string
  amount: BigNumber.Value
  terms: MovementTerms | undefined
  carriedUsd: BigNumber | undefined
  usdPrice: (asset: string) => BigNumber
}): BigNumber {
  const amount = new Decimal(input.amount)
  if (input.asset === 'USD') return amount
  if (input.carriedUsd !== undefined) return input.carriedUsd
  const terms = input.terms
  if (terms === undefined || terms.destinationAsset !== input.asset || new BigNumber(terms.destinationAmount).isZero()) {
    return amount.times(input.usdPrice(input.asset))
  }
  const share = amount.div(terms.destinationAmount)
  const paid = new Decimal(terms.originAmount).times(share)
  return terms.originAsset === 'USD' ? paid : paid.times(input.usdPrice(terms.originAsset))
}
