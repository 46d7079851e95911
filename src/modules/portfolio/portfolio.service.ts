import BigNumber from 'bignumber.js'
import type { Db, Executor, PortfolioPositionRow, Tx } from '../../db/schema.ts'
import type { Principal } from '../../http/principal.ts'
import { notFound } from '../../lib/errors.ts'
import { isUuid } from '../../lib/ids.ts'
import type { AccountBalance, LedgerService, Movement } from '../ledger/index.ts'
import { historyBuckets, INTERVAL_STEPS, RATE_SIGNIFICANT_DIGITS, type RatesService } from '../reference/index.ts'
import type { TransactionTerms } from '../transactions/index.ts'
import { acquisitionCostUsd, applyChange, EMPTY_POSITION, performanceOf, windowBasisUsd, type PositionState } from './cost-basis.ts'
import * as repository from './portfolio.repository.ts'
import type { HistoricalBalanceQuery, OverviewQuery, PerformanceInterval, PerformanceQuery } from './portfolio.schemas.ts'

const Decimal = BigNumber.clone({ DECIMAL_PLACES: 40, ROUNDING_MODE: BigNumber.ROUND_HALF_EVEN })
const MINUTE = 60_000
const PERFORMANCE_WINDOWS: Record<Exclude<PerformanceInterval, 'all-time'>, number> = { 'one-hour': 60 * MINUTE, 'one-day': 24 * 60 * MINUTE }

export interface PortfolioDeps {
  db: Db
  ledger: LedgerService
  rates: RatesService
  assets: {
    decimalsOf(code: string): number | undefined
    isFiat(code: string): boolean
  }
  accounts: {
    owners(executor: Executor, organizationId: string, accountIds: readonly string[]): Promise<Map<string, { ownerId: string }>>
    /** The acting user's open accounts among the ids. */
    open(principal: Principal, accountIds: readonly string[]): Promise<{ id: string; asset: string }[]>
    /** An account of the acting user, archived or not. */
    owned(principal: Principal, accountId: string): Promise<{ asset: string } | undefined>
  }
  transactions: {
    terms(executor: Executor, organizationId: string, ids: readonly string[]): Promise<Map<string, TransactionTerms>>
  }
  now?: () => Date
}

export interface PerformanceFigures {
  averagePricePaid: string
  totalInvested: string
  unrealizedGains: string
}

export interface Holding {
  asset: string
  total: string
  available: string
}

function stateOf(row: Pick<PortfolioPositionRow, 'total' | 'invested_usd' | 'retained' | 'retained_scale' | 'epoch'>): PositionState {
  return { quantity: new BigNumber(row.total), investedUsd: new BigNumber(row.invested_usd), retained: new BigNumber(row.retained), retainedScale: row.retained_scale, epoch: row.epoch }
}

function actingUser(principal: Principal): string {
  if (principal.userId === null) throw notFound('user')
  return principal.userId
}

/** A quantity of an asset that may sum several accounts. */
interface Lot {
  quantity: BigNumber
  available: BigNumber
}

/**
 * The users' portfolios: each account's position (what it holds and what that cost, by the average-cost method of
 * cost-basis.ts) kept in the database transaction of every ledger movement, and a minute-by-minute history of it.
 * Every read here costs the same whatever the length of the history: current positions come from one row per
 * account, past ones from one index lookup per account and instant.
 */
export class PortfolioService {
  private readonly db: Db
  private readonly rates: RatesService
  private readonly assets: PortfolioDeps['assets']
  private readonly accounts: PortfolioDeps['accounts']
  private readonly transactions: PortfolioDeps['transactions']
  private readonly now: () => Date

  constructor(deps: PortfolioDeps) {
    this.db = deps.db
    this.rates = deps.rates
    this.assets = deps.assets
    this.accounts = deps.accounts
    this.transactions = deps.transactions
    this.now = deps.now ?? (() => new Date())
    deps.ledger.onBalanceChanged((tx, changed, movements, at) => this.record(tx, changed, movements, at))
  }

  /**
   * Brings the positions of the changed accounts up to date, in the movement's own database transaction. The
   * movements of one transaction (a trade's capture and delivery) are valued together: disposals first, so that
   * what moves between the user's own accounts in one asset keeps its cost.
   */
  private async record(tx: Tx, changed: readonly AccountBalance[], movements: readonly Movement[], at: Date): Promise<void> {
    const organizationId = changed[0]!.organizationId
    const ids = changed.map((balance) => balance.id)
    const stored = new Map((await repository.findPositions(tx, organizationId, ids)).map((row) => [row.account_id, row]))
    const unknown = ids.filter((id) => !stored.has(id))
    const owners = unknown.length > 0 ? await this.accounts.owners(tx, organizationId, unknown) : new Map<string, { ownerId: string }>()
    const positions = new Map<string, { ownerId: string; state: PositionState }>()
    for (const balance of changed) {
      const row = stored.get(balance.id)
      const ownerId = row?.owner_id ?? owners.get(balance.id)?.ownerId
      // A ledger account that no user account stands for (the ledger used on its own) is nobody's portfolio.
      if (ownerId !== undefined) positions.set(balance.id, { ownerId, state: row ? stateOf(row) : EMPTY_POSITION })
    }
    if (positions.size === 0) return

    if (movements.length > 0) {
      const groups = new Map<string, Movement['changes'][number][]>()
      for (const movement of movements) {
        const key = typeof movement.data.transactionId === 'string' ? movement.data.transactionId : `ledger:${movement.transactionId}`
        const group = groups.get(key)
        if (group) group.push(...movement.changes)
        else groups.set(key, [...movement.changes])
      }
      // Only what arrives in an asset other than dollars needs its transaction's terms to be valued.
      const valued = [...groups].filter(([key, changes]) => isUuid(key) && changes.some((change) => !change.amount.startsWith('-') && change.asset !== 'USD'))
      const terms = valued.length > 0 ? await this.transactions.terms(tx, organizationId, valued.map(([key]) => key)) : new Map<string, TransactionTerms>()
      for (const [key, changes] of groups) {
        // Valued at the transaction's moment: a deposit held for information is worth what it was when it arrived.
        const moment = terms.get(key)?.createdAt ?? at
        const assets = [...changes.map((change) => change.asset), ...(terms.has(key) ? [terms.get(key)!.originAsset] : [])]
        const prices = changes.some((change) => !change.amount.startsWith('-') && change.asset !== 'USD') ? await this.usdPrices(assets, moment) : new Map<string, BigNumber>()
        const removed = new Map<string, BigNumber>()
        const held = changes.filter((c) => positions.has(c.accountId))
        for (const change of held.filter((c) => c.amount.startsWith('-'))) {
          const position = positions.get(change.accountId)!
          const result = applyChange(position.state, change.amount, () => new BigNumber(0))
          position.state = result.state
          removed.set(change.asset, (removed.get(change.asset) ?? new BigNumber(0)).plus(result.removedUsd))
        }
        const credits = held.filter((c) => !c.amount.startsWith('-'))
        for (const change of credits) {
          const position = positions.get(change.accountId)!
          const carried = removed.get(change.asset)
          const arriving = credits.filter((c) => c.asset === change.asset).reduce((sum, c) => sum.plus(c.amount), new BigNumber(0))
          position.state = applyChange(position.state, change.amount, () => acquisitionCostUsd({
            asset: change.asset,
            amount: change.amount,
            terms: terms.get(key),
            carriedUsd: carried === undefined ? undefined : new Decimal(carried).times(change.amount).div(arriving),
            usdPrice: (asset) => prices.get(asset) ?? new BigNumber(0),
          })).state
        }
      }
    }

    await repository.savePositions(tx, changed.filter((balance) => positions.has(balance.id)).map((balance) => {
      const { ownerId, state } = positions.get(balance.id)!
      return {
        organization_id: organizationId,
        account_id: balance.id,
        owner_id: ownerId,
        asset: balance.asset,
        // Worked out from the movements (a property test checks it always equals the ledger's balance).
        total: state.quantity.toFixed(),
        available: balance.available,
        invested_usd: state.investedUsd.toFixed(),
        retained: state.retained.toFixed(),
        retained_scale: state.retainedScale,
        epoch: state.epoch,
      }
    }), at)
  }

  /**
   * US dollar mids of the assets (now, or at `at`); those without a price are left out and count as worth nothing.
   * A feed that fails counts as having no price: a movement never fails for want of a valuation.
   */
  private async usdPrices(assets: readonly string[], at?: Date): Promise<Map<string, BigNumber>> {
    const unique = [...new Set(assets)]
    const quotes = await Promise.all(unique.map((asset) => this.rates.usdQuote(asset, at).catch(() => null)))
    const prices = new Map<string, BigNumber>()
    unique.forEach((asset, i) => {
      const quote = quotes[i]
      if (quote) prices.set(asset, new BigNumber(quote.mid))
    })
    return prices
  }

  // Reads.

  /** Converts US dollars into the denomination, rounded to its decimals. */
  private denominated(denomination: { code: string; usdMid: string }) {
    const decimals = this.assets.decimalsOf(denomination.code) ?? 2
    return {
      money: (usd: BigNumber.Value) => new Decimal(usd).div(denomination.usdMid).decimalPlaces(decimals).toFixed(),
      price: (usd: BigNumber.Value) => {
        const value = new Decimal(usd).div(denomination.usdMid)
        return value.isZero() ? '0' : value.precision(RATE_SIGNIFICANT_DIGITS).toFixed()
      },
    }
  }

  private async denomination(code: string | undefined): Promise<{ code: string; usdMid: string }> {
    const denomination = code ?? 'USD'
    const quote = await this.rates.denominationQuote(denomination)
    return { code: denomination, usdMid: quote.mid }
  }

  /**
   * Each position's performance over the interval, in US dollars: its quantity, its cost basis (what was held at
   * the window's start counting as bought at that moment's price) and what it is worth now.
   */
  private async performanceUsd(organizationId: string, rows: readonly PortfolioPositionRow[], interval: PerformanceInterval): Promise<Map<string, Totals>> {
    const result = new Map<string, Totals>()
    if (rows.length === 0) return result
    const [prices, starts] = await Promise.all([this.usdPrices(rows.map((row) => row.asset)), this.windowStarts(organizationId, rows, interval)])
    for (const row of rows) {
      const now = stateOf(row)
      const start = starts.get(row.account_id)
      result.set(row.account_id, {
        quantity: now.quantity,
        basis: start ? windowBasisUsd(now, start.state, start.priceUsd) : now.investedUsd,
        value: now.quantity.times(prices.get(row.asset) ?? 0),
      })
    }
    return result
  }

  /** Where each position stood at the start of the window, and the price of its asset then; none for `all-time`. */
  private async windowStarts(organizationId: string, rows: readonly PortfolioPositionRow[], interval: PerformanceInterval): Promise<Map<string, { state: PositionState; priceUsd: BigNumber }>> {
    if (interval === 'all-time') return new Map()
    const start = new Date(Math.floor((this.now().getTime() - PERFORMANCE_WINDOWS[interval]) / MINUTE) * MINUTE)
    const assetOf = new Map(rows.map((row) => [row.account_id, row.asset]))
    const assets = [...new Set(assetOf.values())]
    const [states, mids] = await Promise.all([
      repository.statesAt(this.db, organizationId, rows.map((row) => row.account_id), [start]),
      Promise.all(assets.map((asset) => this.rates.usdMids(asset, 'minute', [start]))),
    ])
    const startPrices = new Map(assets.map((asset, i) => [asset, mids[i]!.get(start.getTime())]))
    // Without a price at the start, a position keeps its all-time basis rather than count as bought for nothing.
    return new Map(states.flatMap((state) => {
      const price = startPrices.get(assetOf.get(state.account_id)!)
      return price === undefined ? [] : [[state.account_id, { state: stateOf(state), priceUsd: new BigNumber(price) }] as const]
    }))
  }

  private figures(totals: Totals, denomination: Denomination): PerformanceFigures {
    const performance = performanceOf(totals.quantity, totals.basis, totals.value)
    const { money, price } = this.denominated(denomination)
    return {
      averagePricePaid: price(performance.averagePricePaid),
      totalInvested: money(performance.totalInvested),
      unrealizedGains: money(performance.unrealizedGains),
    }
  }

  /** Performance of each of the acting user's open accounts among `ids`; the others are left out. */
  async accountsPerformance(principal: Principal, ids: readonly string[], query: PerformanceQuery): Promise<Record<string, PerformanceFigures>> {
    const denomination = await this.denomination(query.denomination)
    const wanted = [...new Set(ids.filter((id) => isUuid(id)).map((id) => id.toLowerCase()))]
    const accounts = await this.accounts.open(principal, wanted)
    const rows = await repository.findPositions(this.db, principal.organizationId, accounts.map((account) => account.id))
    const totals = await this.performanceUsd(principal.organizationId, rows, query.interval ?? 'one-day')
    return Object.fromEntries(accounts.map((account) => [account.id, this.figures(totals.get(account.id) ?? NOTHING, denomination)]))
  }

  async accountPerformance(principal: Principal, id: string, query: PerformanceQuery): Promise<PerformanceFigures> {
    const performance = await this.accountsPerformance(principal, [id], query)
    const figures = Object.values(performance)[0]
    if (figures === undefined) throw notFound('account')
    return figures
  }

  /** Performance of each asset among `codes` over all the acting user's accounts of it; unknown codes are left out. */
  async assetsPerformance(principal: Principal, codes: readonly string[], query: PerformanceQuery): Promise<Record<string, PerformanceFigures>> {
    const denomination = await this.denomination(query.denomination)
    const known = [...new Set(codes)].filter((code) => this.assets.decimalsOf(code) !== undefined)
    const rows = await repository.positionsOf(this.db, principal.organizationId, actingUser(principal), known)
    const totals = await this.performanceUsd(principal.organizationId, rows, query.interval ?? 'one-day')
    return Object.fromEntries(known.map((code) => [code, this.figures(sum(rows.filter((row) => row.asset === code).map((row) => totals.get(row.account_id)!)), denomination)]))
  }

  async assetPerformance(principal: Principal, code: string, query: PerformanceQuery): Promise<PerformanceFigures> {
    if (this.assets.decimalsOf(code) === undefined) throw notFound('asset')
    return (await this.assetsPerformance(principal, [code], query))[code]!
  }

  /** Performance of everything the acting user holds in crypto assets, together. */
  async overallPerformance(principal: Principal, query: PerformanceQuery): Promise<{ totalInvested: string; unrealizedGains: string }> {
    const denomination = await this.denomination(query.denomination)
    const rows = (await repository.positionsOf(this.db, principal.organizationId, actingUser(principal))).filter((row) => !this.assets.isFiat(row.asset))
    const totals = sum([...(await this.performanceUsd(principal.organizationId, rows, query.interval ?? 'one-day')).values()])
    const { totalInvested, unrealizedGains } = this.figures(totals, denomination)
    return { totalInvested, unrealizedGains }
  }

  /** What the acting user holds now, by asset, valued in the denomination. */
  async overview(principal: Principal, query: OverviewQuery): Promise<{ summary: { total: string; available: string }; holdings: (Holding & { baseTotal?: string; baseAvailable?: string })[] }> {
    const denomination = await this.denomination(query.denomination)
    const { money } = this.denominated(denomination)
    const lots = lotsByAsset(await repository.positionsOf(this.db, principal.organizationId, actingUser(principal)))
    const prices = await this.usdPrices([...lots.keys()])
    let total = new BigNumber(0)
    let available = new BigNumber(0)
    const holdings = [...lots].filter(([, lot]) => !lot.quantity.isZero() || !lot.available.isZero()).map(([asset, lot]) => {
      const price = prices.get(asset) ?? new BigNumber(0)
      total = total.plus(lot.quantity.times(price))
      available = available.plus(lot.available.times(price))
      return {
        asset,
        total: money(lot.quantity.times(price)),
        available: money(lot.available.times(price)),
        ...(query.includeBase ? { baseTotal: lot.quantity.toFixed(), baseAvailable: lot.available.toFixed() } : {}),
      }
    })
    return { summary: { total: money(total), available: money(available) }, holdings }
  }

  /**
   * The value of some of the acting user's accounts at each point of the interval (and now, as the last point), in
   * the denomination: the balances recorded then times the prices recorded then. `base` adds the amounts in the
   * asset itself (one asset's accounts only).
   */
  async historicalBalance(
    principal: Principal,
    target: { kind: 'all' } | { kind: 'asset'; asset: string } | { kind: 'account'; accountId: string },
    query: HistoricalBalanceQuery,
  ): Promise<{ timestamp: string; balance: { total: string; available: string; baseTotal?: string; baseAvailable?: string } }[]> {
    const ownerId = actingUser(principal)
    let rows: PortfolioPositionRow[]
    if (target.kind === 'account') {
      const account = await this.accounts.owned(principal, target.accountId)
      if (!account) throw notFound('account')
      rows = await repository.findPositions(this.db, principal.organizationId, [target.accountId])
    } else if (target.kind === 'asset') {
      if (this.assets.decimalsOf(target.asset) === undefined) throw notFound('asset')
      rows = await repository.positionsOf(this.db, principal.organizationId, ownerId, [target.asset])
    } else {
      rows = await repository.positionsOf(this.db, principal.organizationId, ownerId)
    }
    const denomination = await this.denomination(query.denomination)
    const interval = query.interval ?? 'one-day'
    const now = this.now()
    const buckets = historyBuckets(interval, now)
    const resolution = INTERVAL_STEPS[interval].resolution
    const assets = [...new Set(rows.map((row) => row.asset))]
    const [held, assetMids, denominationMids, current] = await Promise.all([
      repository.balancesAt(this.db, principal.organizationId, rows.map((row) => ({ accountId: row.account_id, asset: row.asset })), buckets),
      Promise.all(assets.map((asset) => this.rates.usdMids(asset, resolution, buckets))),
      this.rates.usdMids(denomination.code, resolution, buckets),
      this.usdPrices(assets, now),
    ])
    const midsOf = new Map(assets.map((asset, i) => [asset, carriedForward(buckets, assetMids[i]!)]))
    const denominationAt = carriedForward(buckets, denominationMids)
    const byPoint = new Map<number, { asset: string; total: BigNumber; available: BigNumber }[]>()
    for (const lot of held) {
      const lots = byPoint.get(lot.point) ?? []
      lots.push({ asset: lot.asset, total: new BigNumber(lot.total), available: new BigNumber(lot.available) })
      byPoint.set(lot.point, lots)
    }
    const base = query.includeBase === true && target.kind !== 'all'
    const point = (timestamp: Date, held: readonly { asset: string; total: BigNumber; available: BigNumber }[], usdMid: (asset: string) => BigNumber | undefined, denominationUsd: BigNumber | undefined) => {
      let total = new BigNumber(0)
      let available = new BigNumber(0)
      let baseTotal = new BigNumber(0)
      let baseAvailable = new BigNumber(0)
      for (const lot of held) {
        const price = usdMid(lot.asset) ?? new BigNumber(0)
        total = total.plus(lot.total.times(price))
        available = available.plus(lot.available.times(price))
        baseTotal = baseTotal.plus(lot.total)
        baseAvailable = baseAvailable.plus(lot.available)
      }
      const convert = denominationUsd === undefined || denominationUsd.isZero() ? () => '0' : (usd: BigNumber) => this.denominated({ code: denomination.code, usdMid: denominationUsd.toFixed() }).money(usd)
      return {
        timestamp: timestamp.toISOString(),
        balance: { total: convert(total), available: convert(available), ...(base ? { baseTotal: baseTotal.toFixed(), baseAvailable: baseAvailable.toFixed() } : {}) },
      }
    }
    const points = buckets.map((bucket, index) => {
      const key = bucket.getTime()
      const denominationMid = denominationAt.get(key)
      return point(bucket, byPoint.get(index) ?? [], (asset) => {
        const mid = midsOf.get(asset)!.get(key)
        return mid === undefined ? undefined : new BigNumber(mid)
      }, denominationMid === undefined ? undefined : new BigNumber(denominationMid))
    })
    points.push(point(now, rows.map((row) => ({ asset: row.asset, total: new BigNumber(row.total), available: new BigNumber(row.available) })), (asset) => current.get(asset), new BigNumber(denomination.usdMid)))
    return points
  }

  /**
   * What the acting user held of each asset just before `instant` (minute-aligned), from the recorded history;
   * assets held in no amount are left out.
   */
  async holdingsAt(principal: Principal, instant: Date): Promise<Map<string, string>> {
    const rows = await repository.positionsOf(this.db, principal.organizationId, actingUser(principal))
    const held = await repository.balancesAt(this.db, principal.organizationId, rows.map((row) => ({ accountId: row.account_id, asset: row.asset })), [instant])
    return new Map(held.map((lot) => [lot.asset, new BigNumber(lot.total)] as const)
      .filter(([, total]) => !total.isZero())
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([asset, total]) => [asset, total.toFixed()]))
  }
}

interface Totals {
  quantity: BigNumber
  basis: BigNumber
  value: BigNumber
}

interface Denomination {
  code: string
  usdMid: string
}

const NOTHING: Totals = { quantity: new BigNumber(0), basis: new BigNumber(0), value: new BigNumber(0) }

function sum(totals: readonly Totals[]): Totals {
  return totals.reduce((acc, t) => ({ quantity: acc.quantity.plus(t.quantity), basis: acc.basis.plus(t.basis), value: acc.value.plus(t.value) }), NOTHING)
}

/** Prices at every bucket, a bucket without a recorded price taking the last one before it. */
function carriedForward(buckets: readonly Date[], mids: ReadonlyMap<number, string>): Map<number, string> {
  const carried = new Map<number, string>()
  let last: string | undefined
  for (const bucket of buckets) {
    last = mids.get(bucket.getTime()) ?? last
    if (last !== undefined) carried.set(bucket.getTime(), last)
  }
  return carried
}

function lotsByAsset(rows: readonly PortfolioPositionRow[]): Map<string, Lot> {
  const lots = new Map<string, Lot>()
  for (const row of rows) {
    const lot = lots.get(row.asset) ?? { quantity: new BigNumber(0), available: new BigNumber(0) }
    lots.set(row.asset, { quantity: lot.quantity.plus(row.total), available: lot.available.plus(row.available) })
  }
  return lots
}
