import { ActingRequestHeaders, described, errorResponses } from '../../http/schemas.ts'
import { principalOf, type App } from '../../http/types.ts'
import { CreateQuoteBody, CreateQuoteResponse } from './quotes.schemas.ts'
import type { QuotesService } from './quotes.service.ts'

const USERS = ['user:business', 'user:individual'] as const

export function quotesRoutes(quotes: QuotesService) {
  return async function routes(app: App): Promise<void> {
    // The reference's path, and the specification's (§4.14): the same operation.
    for (const [url, operationId] of [['/core/transactions/quote', 'core.create-quote'], ['/transactions/quote', 'create-quote']] as const) {
      app.post(
        url,
        {
          schema: {
            operationId,
            summary: 'Create quote',
            description:
              'Prices a movement between two of the acting user\'s accounts: a trade (two assets, at the market mid less the ' +
              'deployment\'s spread) or a transfer (one asset). The quote can be executed once with `POST /core/transactions` ' +
              'until `expiresAt`. 404 for an account that is not the user\'s or an unknown denomination asset; 409 for an asset ' +
              'without price or feature, the user\'s capabilities, the amount limits, a `ttl` out of bounds, an origin that ' +
              'cannot fund it (`insufficient_balance`), or a node type not supported yet. See docs/transactions.md.',
            tags: ['Transactions'],
            headers: ActingRequestHeaders,
            body: CreateQuoteBody,
            response: { 201: described(CreateQuoteResponse, 'Quote created.'), ...errorResponses(400, 401, 403, 404, 409, 413, 415, 429) },
          },
          config: { auth: { scopes: ['core.transactions:create'], subjects: USERS } },
        },
        async (request, reply) => {
          reply.status(201)
          return { quote: await quotes.create(principalOf(request), request.body) }
        },
      )
    }
  }
}
