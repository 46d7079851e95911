import { ActingRequestHeaders, described, errorResponses } from '../../http/schemas.ts'
import { principalOf, type App } from '../../http/types.ts'
import { AccountParams } from '../accounts/index.ts'
import {
  AssetPathParams,
  HistoricalBalanceOverviewResponse,
  HistoricalBalanceQuery,
  HistoricalBalanceResponse,
  ManyAccountsBody,
  ManyAssetsBody,
  ManyPerformanceResponse,
  OverallHistoricalBalanceQuery,
  OverviewQuery,
  PerformanceOverviewResponse,
  PerformanceQuery,
  PerformanceResponse,
  PortfolioOverview,
} from './portfolio.schemas.ts'
import type { PortfolioService } from './portfolio.service.ts'

const USERS = ['user:business', 'user:individual'] as const
const INDIVIDUALS = ['user:individual'] as const
const READ = { scopes: ['core.portfolio:read'] }

export function portfolioRoutes(portfolio: PortfolioService) {
  return async function routes(app: App): Promise<void> {
    const tags = ['Portfolio']
    const denominationErrors = '404 (entity `asset`, property `denomination`) for an unknown denomination; 409 `asset_not_supported` for one without a price.'

    app.get(
      '/core/portfolio',
      {
        schema: {
          operationId: 'core.get-portfolio-overview',
          summary: 'Get portfolio overview',
          description: `What the acting user holds, by asset, valued in the denomination at current prices, and the totals. ${denominationErrors}`,
          tags,
          headers: ActingRequestHeaders,
          querystring: OverviewQuery,
          response: { 200: described(PortfolioOverview, 'Portfolio overview.'), ...errorResponses(400, 401, 403, 404, 409, 429) },
        },
        config: { auth: { ...READ, subjects: USERS } },
      },
      async (request) => portfolio.overview(principalOf(request), request.query),
    )

    app.get(
      '/core/portfolio/performance',
      {
        schema: {
          operationId: 'core.get-portfolio-performance',
          summary: 'Get portfolio performance',
          description: `What the acting user's crypto holdings cost and what they gained or lost, together, over the interval. ${denominationErrors}`,
          tags,
          headers: ActingRequestHeaders,
          querystring: PerformanceQuery,
          response: { 200: described(PerformanceOverviewResponse, 'Portfolio performance.'), ...errorResponses(400, 401, 403, 404, 409, 429) },
        },
        config: { auth: { ...READ, subjects: INDIVIDUALS } },
      },
      async (request) => ({ performance: await portfolio.overallPerformance(principalOf(request), request.query) }),
    )

    app.get(
      '/core/portfolio/historical-balance',
      {
        schema: {
          operationId: 'core.get-portfolio-historical-balance',
          summary: 'Get portfolio historical balance',
          description: `What everything the acting user held was worth at each point of the interval, the last point being now. ${denominationErrors}`,
          tags,
          headers: ActingRequestHeaders,
          querystring: OverallHistoricalBalanceQuery,
          response: { 200: described(HistoricalBalanceOverviewResponse, 'Historical balance.'), ...errorResponses(400, 401, 403, 404, 409, 429) },
        },
        config: { auth: { ...READ, subjects: USERS } },
      },
      async (request) => ({ historicalBalance: await portfolio.historicalBalance(principalOf(request), { kind: 'all' }, { ...request.query, includeBase: false }) }),
    )

    app.get(
      '/core/portfolio/assets/:asset/performance',
      {
        schema: {
          operationId: 'core.get-portfolio-asset-performance',
          summary: 'Get portfolio asset performance',
          description: `Performance of the acting user's accounts of one asset, together. 404 (entity \`asset\`) for an asset not in the catalogue; ${denominationErrors}`,
          tags,
          headers: ActingRequestHeaders,
          params: AssetPathParams,
          querystring: PerformanceQuery,
          response: { 200: described(PerformanceResponse, 'Asset performance.'), ...errorResponses(400, 401, 403, 404, 409, 429) },
        },
        config: { auth: { ...READ, subjects: INDIVIDUALS } },
      },
      async (request) => ({ performance: await portfolio.assetPerformance(principalOf(request), request.params.asset, request.query) }),
    )

    app.post(
      '/core/portfolio/assets/_mget/performance',
      {
        schema: {
          operationId: 'core.get-portfolio-many-assets-performance',
          summary: 'Get portfolio performance of many assets',
          description: `Performance by asset code (1 to 100); codes not in the catalogue are left out. ${denominationErrors}`,
          tags,
          headers: ActingRequestHeaders,
          querystring: PerformanceQuery,
          body: ManyAssetsBody,
          response: { 200: described(ManyPerformanceResponse, 'Performance by asset code.'), ...errorResponses(400, 401, 403, 404, 409, 413, 415, 429) },
        },
        config: { auth: { ...READ, subjects: INDIVIDUALS } },
      },
      async (request) => ({ performance: await portfolio.assetsPerformance(principalOf(request), request.body.codes, request.query) }),
    )

    app.get(
      '/core/portfolio/assets/:asset/historical-balance',
      {
        schema: {
          operationId: 'core.get-portfolio-asset-historical-balance',
          summary: 'Get portfolio asset historical balance',
          description: `What the acting user's accounts of one asset were worth at each point of the interval, the last point being now. 404 (entity \`asset\`) for an asset not in the catalogue; ${denominationErrors}`,
          tags,
          headers: ActingRequestHeaders,
          params: AssetPathParams,
          querystring: HistoricalBalanceQuery,
          response: { 200: described(HistoricalBalanceResponse, 'Historical balance.'), ...errorResponses(400, 401, 403, 404, 409, 429) },
        },
        config: { auth: { ...READ, subjects: USERS } },
      },
      async (request) => ({ historicalBalance: await portfolio.historicalBalance(principalOf(request), { kind: 'asset', asset: request.params.asset }, request.query) }),
    )

    app.get(
      '/core/portfolio/accounts/:accountId/performance',
      {
        schema: {
          operationId: 'core.get-portfolio-account-performance',
          summary: 'Get portfolio account performance',
          description: `Performance of one of the acting user's accounts. 404 (entity \`account\`) for an account that is not the user's; ${denominationErrors}`,
          tags,
          headers: ActingRequestHeaders,
          params: AccountParams,
          querystring: PerformanceQuery,
          response: { 200: described(PerformanceResponse, 'Account performance.'), ...errorResponses(400, 401, 403, 404, 409, 429) },
        },
        config: { auth: { ...READ, subjects: INDIVIDUALS } },
      },
      async (request) => ({ performance: await portfolio.accountPerformance(principalOf(request), request.params.accountId, request.query) }),
    )

    app.post(
      '/core/portfolio/accounts/_mget/performance',
      {
        schema: {
          operationId: 'core.get-portfolio-many-accounts-performance',
          summary: 'Get portfolio performance of many accounts',
          description: `Performance by account id (1 to 100); ids that are not open accounts of the acting user are left out. ${denominationErrors}`,
          tags,
          headers: ActingRequestHeaders,
          querystring: PerformanceQuery,
          body: ManyAccountsBody,
          response: { 200: described(ManyPerformanceResponse, 'Performance by account id.'), ...errorResponses(400, 401, 403, 404, 409, 413, 415, 429) },
        },
        config: { auth: { ...READ, subjects: INDIVIDUALS } },
      },
      async (request) => ({ performance: await portfolio.accountsPerformance(principalOf(request), request.body.ids, request.query) }),
    )

    app.get(
      '/core/portfolio/accounts/:accountId/historical-balance',
      {
        schema: {
          operationId: 'core.get-portfolio-account-historical-balance',
          summary: 'Get portfolio account historical balance',
          description: `What one of the acting user's accounts was worth at each point of the interval, the last point being now. 404 (entity \`account\`) for an account that is not the user's; ${denominationErrors}`,
          tags,
          headers: ActingRequestHeaders,
          params: AccountParams,
          querystring: HistoricalBalanceQuery,
          response: { 200: described(HistoricalBalanceResponse, 'Historical balance.'), ...errorResponses(400, 401, 403, 404, 409, 429) },
        },
        config: { auth: { ...READ, subjects: USERS } },
      },
      async (request) => ({ historicalBalance: await portfolio.historicalBalance(principalOf(request), { kind: 'account', accountId: request.params.accountId }, request.query) }),
    )
  }
}
