import { described, errorResponses } from '../../http/schemas.ts'
import { REFERENCE_DATA_AUTH } from './reference-data.ts'
import type { App } from '../../http/types.ts'
import { AssetParams } from './assets.schemas.ts'
import {
  GetAssetHistoricalRatesQuery,
  GetAssetHistoricalRatesResponse,
  GetAssetRatesQuery,
  GetAssetRatesResponse,
  RatesRequestHeaders,
} from './rates.schemas.ts'
import type { RatesService } from './rates.service.ts'


export function ratesRoutes(rates: RatesService) {
  return async function routes(app: App): Promise<void> {
    const tags = ['Assets']

    app.get(
      '/core/assets/:asset/rates',
      {
        schema: {
          operationId: 'core.get-asset-rates',
          summary: 'Get asset rates',
          description:
            'The price of one unit of the asset in other assets: bid, ask and mid, as decimal strings with 12 significant digits. ' +
            'An asset without a price (e.g. delisted) is 409 `asset_not_supported`.',
          tags,
          params: AssetParams,
          querystring: GetAssetRatesQuery,
          headers: RatesRequestHeaders,
          response: { 200: described(GetAssetRatesResponse, 'Rates by denomination.'), ...errorResponses(400, 401, 403, 404, 409, 429) },
        },
        config: { auth: REFERENCE_DATA_AUTH },
      },
      async (request) => ({ rates: await rates.rates(request.params.asset, request.query.denomination?.split(',')) }),
    )

    app.get(
      '/core/assets/:asset/historical-rates',
      {
        schema: {
          operationId: 'core.get-asset-historical-rates',
          summary: 'Get asset historical rates',
          description: 'Mid prices of the asset over an interval, oldest first; a point has no rate where no price was known then.',
          tags,
          params: AssetParams,
          querystring: GetAssetHistoricalRatesQuery,
          headers: RatesRequestHeaders,
          response: { 200: described(GetAssetHistoricalRatesResponse, 'Historical rates.'), ...errorResponses(400, 401, 403, 404, 409, 429) },
        },
        config: { auth: REFERENCE_DATA_AUTH },
      },
      async (request) => ({
        historicalRates: await rates.historicalRates(request.params.asset, request.query.denomination, request.query.interval),
      }),
    )
  }
}
