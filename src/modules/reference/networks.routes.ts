import { ActingRequestHeaders, described, errorResponses } from '../../http/schemas.ts'
import { REFERENCE_DATA_AUTH } from './reference-data.ts'
import type { App } from '../../http/types.ts'
import {
  GetNetworkResponse,
  ListNetworksQuery,
  ListNetworksResponse,
  NetworkParams,
  ValidateAddressBody,
  ValidateAddressResponse,
} from './networks.schemas.ts'
import type { NetworksService } from './networks.service.ts'


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
          headers: ActingRequestHeaders,
          response: { 200: described(ListNetworksResponse, 'Networks.'), ...errorResponses(400, 401, 403, 404, 429) },
        },
        config: { auth: REFERENCE_DATA_AUTH },
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
          headers: ActingRequestHeaders,
          response: { 200: described(GetNetworkResponse, 'Network.'), ...errorResponses(400, 401, 403, 404, 429) },
        },
        config: { auth: REFERENCE_DATA_AUTH },
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
          headers: ActingRequestHeaders,
          body: ValidateAddressBody,
          response: { 200: described(ValidateAddressResponse, 'Validation result.'), ...errorResponses(400, 401, 403, 404, 409, 413, 415, 429) },
        },
        config: { auth: REFERENCE_DATA_AUTH },
      },
      async (request) => networks.validateAddress(request.params.network, request.body.address, request.body.reference),
    )
  }
}
