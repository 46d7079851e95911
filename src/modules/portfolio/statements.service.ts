import BigNumber from 'bignumber.js'
import { pageWindow, type PageWindow } from '../../http/pagination.ts'
import type { Principal } from '../../http/principal.ts'
import { conflict } from '../../lib/errors.ts'
import { RATE_SIGNIFICANT_DIGITS, type RatesService } from '../reference/index.ts'
import type { Transaction } from '../transactions/index.ts'
import type { PortfolioService } from './portfolio.service.ts'
import type { StatementQuery } from './portfolio.schemas.ts'

const Decimal = BigNumber.clone({ DECIMAL_PLACES: 40, ROUNDING_MODE: BigNumber.ROUND_HALF_EVEN })
const MINUTE = 60_000
/** Transactions read per query when a whole period is written out (a download). */
const DOWNLOAD_PAGE = 100

export interface StatementsDeps {
  portfolio: PortfolioService
  rates: RatesService
  transactions: {
    completedBetween(principal: Principal, from: Date, to: Date, window: PageWindow): Promise<{ transactions: Transaction[]; hasNext: boolean }>
  }
  users: { createdAt(principal: Principal): Promise<Date> }
  assets: { decimalsOf(code: string): number | undefined }
  now?: () => Date
}

/** A calendar month in UTC: its first instant, and the first instant after it. */
export interface Period {
  from: Date
  end: Date
}

export interface PortfolioStatement {
  period: { from: string; to: string }
  rates: Record<string, string>
  holdings: { asset: string; total: string }[]
}

export interface TransactionsStatementEntry {
  rates: Record<string, string>
  transaction: Transaction
}

function presentPeriod(period: Period): { from: string; to: string } {
  return { from: period.from.toISOString(), to: new Date(period.end.getTime() - 1).toISOString() }
}

/**
 * Statements of a past calendar month: what the user held at its end (portfolio) and what completed during it
 * (transactions), each with the prices that value them in the denomination — at the end of the month for
 * holdings, at the minute each transaction completed for transactions. A month not over yet, or over before the
 * user existed, cannot be stated (409 `date_invalid`).
 */
export class StatementsService {
  private readonly portfolio: PortfolioService
  private readonly rates: RatesService
  private readonly transactions: StatementsDeps['transactions']
  private readonly users: StatementsDeps['users']
  private readonly assets: StatementsDeps['assets']
  private readonly now: () => Date

  constructor(deps: StatementsDeps) {
    this.portfolio = deps.portfolio
    this.rates = deps.rates
    this.transactions = deps.transactions
    this.users = deps.users
    this.assets = deps.assets
    this.now = deps.now ?? (() => new Date())
  }

  /** The period asked for, once it is known to be statable; the denomination is checked first (404, 409). */
  private async period(principal: Principal, query: StatementQuery): Promise<{ period: Period; denomination: string; denominationUsd: string }> {
    const denomination = query.denomination ?? 'USD'
    const quote = await this.rates.denominationQuote(denomination)
    const from = new Date(Date.UTC(query.year, query.month - 1, 1))
    const end = new Date(Date.UTC(query.year, query.month, 1))
    if (end.getTime() > this.now().getTime()) throw conflict('date_invalid', 'The statement period is not yet complete', { context: 'query' })
    if (end.getTime() <= (await this.users.createdAt(principal)).getTime()) {
      throw conflict('date_invalid', 'The statement period predates the user creation date', { context: 'query' })
    }
    return { period: { from, end }, denomination, denominationUsd: quote.mid }
  }

  /**
   * `ASSET-DENOMINATION` prices of the assets at an instant aligned to the resolution. `mids` remembers the US dollar
   * mids already read for this statement, so that transactions of the same minute share their lookups.
   */
  private async ratesAt(assets: Iterable<string>, denomination: string, resolution: 'day' | 'minute', at: Date, mids = new Map<string, Promise<string | undefined>>()): Promise<Record<string, string>> {
    const wanted = [...new Set(assets)].sort()
    const mid = (asset: string) => {
      const key = `${asset}@${at.getTime()}`
      let found = mids.get(key)
      if (found === undefined) {
        found = this.rates.usdMids(asset, resolution, [at]).then((recorded) => recorded.get(at.getTime()))
        mids.set(key, found)
      }
      return found
    }
    const [denominationUsd, ...assetUsd] = await Promise.all([mid(denomination), ...wanted.map(mid)])
    const rates: Record<string, string> = {}
    wanted.forEach((asset, i) => {
      const usd = assetUsd[i]
      if (asset === denomination) rates[`${asset}-${denomination}`] = '1'
      else if (usd !== undefined && denominationUsd !== undefined) rates[`${asset}-${denomination}`] = new Decimal(usd).div(denominationUsd).precision(RATE_SIGNIFICANT_DIGITS).toFixed()
    })
    return rates
  }

  async portfolioStatement(principal: Principal, query: StatementQuery): Promise<PortfolioStatement> {
    const { period, denomination } = await this.period(principal, query)
    const holdings = await this.portfolio.holdingsAt(principal, period.end)
    return {
      period: presentPeriod(period),
      rates: await this.ratesAt(holdings.keys(), denomination, 'day', period.end),
      holdings: [...holdings].map(([asset, total]) => ({ asset, total })),
    }
  }

  private async entries(transactions: readonly Transaction[], denomination: string, mids = new Map<string, Promise<string | undefined>>()): Promise<TransactionsStatementEntry[]> {
    return Promise.all(transactions.map(async (transaction) => {
      const completed = new Date(transaction.completedAt ?? transaction.updatedAt)
      const minute = new Date(Math.floor(completed.getTime() / MINUTE) * MINUTE)
      const assets = [transaction.origin.asset, transaction.destination.asset, ...transaction.fees.map((fee) => fee.asset)]
      return { rates: await this.ratesAt(assets, denomination, 'minute', minute, mids), transaction }
    }))
  }

  async transactionsStatement(principal: Principal, query: StatementQuery & { page?: number; perPage?: number }): Promise<{ statement: { period: { from: string; to: string }; transactions: TransactionsStatementEntry[] }; window: PageWindow; hasNext: boolean }> {
    const { period, denomination } = await this.period(principal, query)
    const window = pageWindow({ page: query.page, perPage: query.perPage })
    const page = await this.transactions.completedBetween(principal, period.from, period.end, window)
    return { statement: { period: presentPeriod(period), transactions: await this.entries(page.transactions, denomination) }, window, hasNext: page.hasNext }
  }

  /** The whole period's transactions statement, read a page at a time: for downloads. */
  async wholeTransactionsStatement(principal: Principal, query: StatementQuery): Promise<{ period: { from: string; to: string }; transactions: TransactionsStatementEntry[] }> {
    const { period, denomination } = await this.period(principal, query)
    const transactions: TransactionsStatementEntry[] = []
    const mids = new Map<string, Promise<string | undefined>>()
    for (let page = 1; ; page++) {
      const read = await this.transactions.completedBetween(principal, period.from, period.end, pageWindow({ page, perPage: DOWNLOAD_PAGE }))
      transactions.push(...await this.entries(read.transactions, denomination, mids))
      if (!read.hasNext) return { period: presentPeriod(period), transactions }
    }
  }

  /** Decimals of an asset of the catalogue (2 for one it does not know: downloads name only checked denominations). */
  decimalsOf(code: string): number {
    return this.assets.decimalsOf(code) ?? 2
  }

}
