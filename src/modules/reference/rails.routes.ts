import { ActingRequestHeaders, described, errorResponses } from '../../http/schemas.ts'
import { REFERENCE_DATA_AUTH } from './reference-data.ts'
import type { App } from '../../http/types.ts'
import { ListRailsQuery, ListRailsResponse } from './rails.schemas.ts'
import type { RailsService } from './rails.service.ts'

const split = (value: string | undefined) => value?.split(',')

export function railsRoutes(rails: RailsService) {
  return async function routes(app: App): Promise<void> {
    app.get(
      '/core/rails',
      {
        schema: {
          operationId: 'core.list-rails',
          summary: 'List rails',
          description: 'How each asset can be deposited and withdrawn over each network, on the chains this deployment uses.',
          tags: ['Assets'],
          querystring: ListRailsQuery,
          headers: ActingRequestHeaders,
          response: { 200: described(ListRailsResponse, 'Rails.'), ...errorResponses(400, 401, 403, 404, 429) },
        },
        config: { auth: REFERENCE_DATA_AUTH },
      },
      async (request) => {
        const { type, network, method, asset } = request.query
        return { rails: rails.list({ type: split(type), network: split(network), method: split(method), asset: split(asset?.toUpperCase()) }) }
      },
    )
  }
}
