import type { Subject } from '../../http/principal.ts'
import { described, errorResponses } from '../../http/schemas.ts'
import type { App } from '../../http/types.ts'
import {
  GetNetworkResponse,
  ListNetworksQuery,
  ListNetworksResponse,
  NetworkParams,
  ReferenceRequestHeaders,
  ValidateAddressBody,
  ValidateAddressResponse,
} from './networks.schemas.ts'
import type { NetworksService } from './networks.service.ts'

/** Reference data is open to every token, whoever it acts for (the reference lists no scope). */
const auth = { scopes: [] as string[], subjects: ['client', 'user:business', 'user:individual'] as Subject[] }

export function networksRoutes(networks: NetworksService) {
  return async function routes(app: App): Promise<void> {
    const tags = ['Assets']

    app.get(
      '/core/networks',
      {
        schema: {
          operationId: 'core.list-networks',
          summary: 'List networks',
          description: 'Crypto networks, bank rails, card schemes and payment-method providers.',
          tags,
          querystring: ListNetworksQuery,
          headers: ReferenceRequestHeaders,
          response: { 200: described(ListNetworksResponse, 'Networks.'), ...errorResponses(400, 401, 403, 404, 429) },
        },
        config: { auth },
      },
      async (request) => ({ networks: networks.list(request.query.type?.split(',')) }),
    )

    app.get(
      '/core/networks/:network',
      {
        schema: {
          operationId: 'core.get-network',
          summary: 'Get network',
          tags,
          params: NetworkParams,
          headers: ReferenceRequestHeaders,
          response: { 200: described(GetNetworkResponse, 'Network.'), ...errorResponses(400, 401, 403, 404, 429) },
        },
        config: { auth },
      },
      async (request) => ({ network: networks.get(request.params.network) }),
    )

    app.post(
      '/core/networks/:network/validate-address',
      {
        schema: {
          operationId: 'core.validate-network-address',
          summary: 'Validate network address',
          description:
            'Checks that an address (and its destination tag or memo) can receive on a crypto network: checksums, ' +
            'encodings and the chain this deployment uses (test chains in sandbox, main chains in production).',
          tags,
          params: NetworkParams,
          headers: ReferenceRequestHeaders,
          body: ValidateAddressBody,
          response: { 200: described(ValidateAddressResponse, 'Validation result.'), ...errorResponses(400, 401, 403, 404, 409, 413, 415, 429) },
        },
        config: { auth },
      },
      async (request) => networks.validateAddress(request.params.network, request.body.address, request.body.reference),
    )
  }
}
