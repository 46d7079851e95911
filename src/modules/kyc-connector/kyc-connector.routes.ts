import type { Subject } from '../../http/principal.ts'
import { described, errorResponses } from '../../http/schemas.ts'
import { principalOf, type App } from '../../http/types.ts'
import { kycConnectorConfigScopes } from '../auth/index.ts'
import { ProviderConfigHeaders, ProviderConfigResponse, SetProviderConfigBody } from './kyc-connector.schemas.ts'
import type { KycConnectorService } from './kyc-connector.service.ts'

const SUBJECTS: Subject[] = ['client']

/**
 * One pair of operations per configured provider, at its own path and with its own scopes, as the reference
 * names them (`kyc-connector.set-veriff-config`, `kyc-connector.veriff.config:write`). A provider that is not
 * configured has no route: its path answers 404 `route_not_found` like any other unknown path.
 */
export function kycConnectorRoutes(service: KycConnectorService) {
  return async function routes(app: App): Promise<void> {
    for (const provider of service.providers) {
      const url = `/kyc-connector/${provider}/config`
      const scopes = kycConnectorConfigScopes(provider)
      const tags = ['KYC connector']
      const title = `${provider[0]!.toUpperCase()}${provider.slice(1)}`

      app.put(
        url,
        {
          schema: {
            operationId: `kyc-connector.set-${provider}-config`,
            summary: `Set ${title} config`,
            description:
              `Creates or replaces the organization's ${title} configuration: its integrations, each with its credentials ` +
              'and the KYC processes it performs. Secrets are stored encrypted and returned only as their first four characters ' +
              'followed by `****`; an integration that omits a secret keeps its current one.',
            tags,
            headers: ProviderConfigHeaders,
            body: SetProviderConfigBody,
            response: { 200: described(ProviderConfigResponse, 'Configuration created or replaced.'), ...errorResponses(400, 401, 403, 413, 415, 429) },
          },
          config: { auth: { scopes: [scopes.write], subjects: SUBJECTS } },
        },
        async (request) => ({ config: await service.setConfig(principalOf(request), provider, request.body) }),
      )

      app.get(
        url,
        {
          schema: {
            operationId: `kyc-connector.get-${provider}-config`,
            summary: `Get ${title} config`,
            description: `Returns the organization's ${title} configuration, secrets hidden; 404 \`entity_not_found\` until it is set.`,
            tags,
            headers: ProviderConfigHeaders,
            response: { 200: described(ProviderConfigResponse, 'Configuration retrieved.'), ...errorResponses(400, 401, 403, 404, 429) },
          },
          config: { auth: { scopes: [scopes.read], subjects: SUBJECTS } },
        },
        async (request) => ({ config: await service.getConfig(principalOf(request), provider) }),
      )
    }
  }
}
