import Type, { type Static } from 'typebox'
import { Pagination } from '../../http/pagination.ts'
import { component, Timestamp } from '../../http/schemas.ts'
import { Transaction } from '../transactions/index.ts'

export const PERFORMANCE_INTERVALS = ['one-hour', 'one-day', 'all-time'] as const
export type PerformanceInterval = (typeof PERFORMANCE_INTERVALS)[number]
export const BALANCE_INTERVALS = ['one-hour', 'one-day', 'one-week', 'one-month', 'one-year'] as const
export type BalanceInterval = (typeof BALANCE_INTERVALS)[number]

const Decimal = (description: string) => Type.String({ pattern: '^-?\\d+(\\.\\d+)?$', description })

const denomination = Type.Optional(Type.String({
  minLength: 1,
  default: 'USD',
  description: 'The asset values are given in. Everything is computed in US dollars and converted at the current rate, so small differences from rounding can appear.',
}))
const includeBase = Type.Optional(Type.Boolean({ default: false, description: 'Also give the amounts in the asset itself (`baseTotal`, `baseAvailable`).' }))

export const PerformanceQuery = Type.Object({
  denomination,
  interval: Type.Optional(Type.Enum([...PERFORMANCE_INTERVALS], {
    default: 'one-day',
    description: 'The window: the past hour, the past day, or all history. Over a window, what was held at its start counts as bought at that moment\'s price.',
  })),
})
export type PerformanceQuery = Static<typeof PerformanceQuery>

const balanceInterval = Type.Optional(Type.Enum([...BALANCE_INTERVALS], {
  default: 'one-day',
  description: 'How far back: an hour (a point a minute), a day (every 15 minutes), a week (hourly), a month (every 6 hours), a year (daily); the last point is now.',
}))
export const HistoricalBalanceQuery = Type.Object({ denomination, interval: balanceInterval, includeBase })
export type HistoricalBalanceQuery = Static<typeof HistoricalBalanceQuery>
/** The whole portfolio's series mixes assets: it has no amounts in an asset of its own. */
export const OverallHistoricalBalanceQuery = Type.Object({ denomination, interval: balanceInterval })

export const OverviewQuery = Type.Object({ denomination, includeBase })
export type OverviewQuery = Static<typeof OverviewQuery>

export const PortfolioPerformance = component(
  'portfolio-performance',
  Type.Object({
    averagePricePaid: Decimal('What one unit cost on average, fees included.'),
    totalInvested: Decimal('What is held cost, fees included.'),
    unrealizedGains: Decimal('What is held is worth now less what it cost; negative for a loss.'),
  }, { description: 'Performance by the average-cost method (docs/portfolio.md), in the denomination.' }),
)

export const PortfolioPerformanceOverview = component(
  'portfolio-performance-overview',
  Type.Object({
    totalInvested: Decimal('What the crypto assets held cost, fees included.'),
    unrealizedGains: Decimal('What they are worth now less what they cost; negative for a loss.'),
  }, { description: 'Performance of every crypto asset the user holds, together, in the denomination.' }),
)

export const PerformanceResponse = component('get-portfolio-performance-response', Type.Object({ performance: PortfolioPerformance }))
export const PerformanceOverviewResponse = component('get-portfolio-performance-overview-response', Type.Object({ performance: PortfolioPerformanceOverview }))
export const ManyPerformanceResponse = component(
  'get-portfolio-many-performance-response',
  Type.Object({ performance: Type.Record(Type.String(), PortfolioPerformance, { description: 'Performance by the id or code asked for; those that name nothing of the user\'s are left out.' }) }),
)

export const ManyAccountsBody = Type.Object({
  ids: Type.Array(Type.String({ format: 'uuid' }), { minItems: 1, maxItems: 100, description: 'The account ids, 1 to 100.' }),
}, { additionalProperties: false })
export const ManyAssetsBody = Type.Object({
  codes: Type.Array(Type.String({ minLength: 1 }), { minItems: 1, maxItems: 100, description: 'The asset codes, 1 to 100.' }),
}, { additionalProperties: false })

export const PortfolioHolding = component(
  'portfolio-holding',
  Type.Object({
    asset: Type.String({ description: 'The asset code.' }),
    total: Decimal('What the user holds of the asset, in the denomination.'),
    available: Decimal('What of it can be used now (the total less what movements under way set aside), in the denomination.'),
    baseTotal: Type.Optional(Decimal('The total in the asset itself.')),
    baseAvailable: Type.Optional(Decimal('The available amount in the asset itself.')),
  }),
)

export const PortfolioOverview = component(
  'portfolio-overview',
  Type.Object({
    summary: Type.Object({
      total: Decimal('What everything held is worth, in the denomination.'),
      available: Decimal('What everything available is worth, in the denomination.'),
    }),
    holdings: Type.Array(PortfolioHolding, { description: 'One per asset held, by asset code.' }),
  }),
)

const pointTotals = {
  total: Decimal('The total balance then, in the denomination.'),
  available: Decimal('The available balance then, in the denomination.'),
}

export const PortfolioHistoricalBalance = component(
  'portfolio-historical-balance',
  Type.Object({
    timestamp: Timestamp,
    balance: Type.Object({
      ...pointTotals,
      baseTotal: Type.Optional(Decimal('The total in the asset itself.')),
      baseAvailable: Type.Optional(Decimal('The available amount in the asset itself.')),
    }),
  }),
)
export const PortfolioHistoricalBalanceOverview = component(
  'portfolio-historical-balance-overview',
  Type.Object({ timestamp: Timestamp, balance: Type.Object(pointTotals) }),
)
export const HistoricalBalanceResponse = component(
  'get-portfolio-historical-balance-response',
  Type.Object({ historicalBalance: Type.Array(PortfolioHistoricalBalance, { minItems: 1, description: 'Oldest first.' }) }),
)
export const HistoricalBalanceOverviewResponse = component(
  'get-portfolio-historical-balance-overview-response',
  Type.Object({ historicalBalance: Type.Array(PortfolioHistoricalBalanceOverview, { minItems: 1, description: 'Oldest first.' }) }),
)

export const AssetPathParams = Type.Object({ asset: Type.String({ minLength: 1, description: 'The asset code.' }) })

// Statements.

export const StatementQuery = Type.Object({
  period: Type.Enum(['one-month'], { description: 'The length of the period: a calendar month (UTC).' }),
  year: Type.Integer({ minimum: 2010, maximum: 2100 }),
  month: Type.Integer({ minimum: 1, maximum: 12 }),
  denomination,
})
export type StatementQuery = Static<typeof StatementQuery>

export const TransactionsStatementQuery = Type.Object({
  ...StatementQuery.properties,
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1, description: 'Page number, from 1.' })),
  perPage: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 10, description: 'Transactions per page.' })),
})
export type TransactionsStatementQuery = Static<typeof TransactionsStatementQuery>

export const StatementPeriod = component(
  'statement-period',
  Type.Object({
    from: Type.String({ format: 'date-time', description: 'The first instant of the period.' }),
    to: Type.String({ format: 'date-time', description: 'The last millisecond of the period.' }),
  }),
)

const Rates = Type.Record(Type.String(), Type.String(), { description: 'Prices keyed by `ASSET-DENOMINATION` (one unit of the asset in the denomination).' })

export const PortfolioStatement = component(
  'portfolio-statement',
  Type.Object({
    period: StatementPeriod,
    rates: Rates,
    holdings: Type.Array(component('portfolio-statement-holding', Type.Object({
      asset: Type.String({ description: 'The asset code.' }),
      total: Decimal('What the user held of the asset at the end of the period, in the asset.'),
    })), { description: 'One per asset held at the end of the period, by asset code.' }),
  }),
)

export const TransactionsStatement = component(
  'transactions-statement',
  Type.Object({
    period: StatementPeriod,
    transactions: Type.Array(component('transactions-statement-entry', Type.Object({
      rates: Rates,
      transaction: Transaction,
    })), { description: 'The transactions completed in the period, in the order they completed.' }),
  }),
)

export const PortfolioStatementResponse = component('get-portfolio-statement-response', Type.Object({ statement: PortfolioStatement }))
export const TransactionsStatementResponse = component('get-transactions-statement-response', Type.Object({ statement: TransactionsStatement, pagination: Pagination }))
