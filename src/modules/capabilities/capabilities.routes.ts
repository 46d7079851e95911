import { ActingRequestHeaders, described, errorResponses } from '../../http/schemas.ts'
import { principalOf, type App } from '../../http/types.ts'
import type { RouteAuth } from '../../http/principal.ts'
import { CapabilityParams, GetCapabilityResponse, ListCapabilitiesResponse } from './capabilities.schemas.ts'
import type { CapabilitiesService } from './capabilities.service.ts'

const AUTH: RouteAuth = { scopes: ['core.capabilities:read'], subjects: ['user:individual', 'user:business'] }

export function capabilitiesRoutes(capabilities: CapabilitiesService) {
  return async function routes(app: App): Promise<void> {
    const tags = ['Capabilities']

    app.get(
      '/core/capabilities',
      {
        schema: {
          operationId: 'core.list-capabilities',
          summary: 'List capabilities',
          description:
            'What the user may do: each capability with what the user still has to submit (requirements) and what ' +
            'prevents it (restrictions), from their KYC, residence, phone country and accepted terms of service.',
          tags,
          headers: ActingRequestHeaders,
          response: { 200: described(ListCapabilitiesResponse, 'Capabilities.'), ...errorResponses(400, 401, 403, 404, 429) },
        },
        config: { auth: AUTH },
      },
      async (request) => ({ capabilities: await capabilities.list(principalOf(request)) }),
    )

    app.get(
      '/core/capabilities/:capability',
      {
        schema: {
          operationId: 'core.get-capability',
          summary: 'Get capability',
          tags,
          params: CapabilityParams,
          headers: ActingRequestHeaders,
          response: { 200: described(GetCapabilityResponse, 'Capability.'), ...errorResponses(400, 401, 403, 404, 429) },
        },
        config: { auth: AUTH },
      },
      async (request) => ({ capability: await capabilities.get(principalOf(request), request.params.capability) }),
    )
  }
}
