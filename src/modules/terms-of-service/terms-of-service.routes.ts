import { described, errorResponses } from '../../http/schemas.ts'
import { principalOf, type App } from '../../http/types.ts'
import {
  AcceptTermsOfServiceParams,
  AcceptTermsOfServiceResponse,
  GetTermsOfServiceResponse,
  ListTermsOfServiceQuery,
  ListTermsOfServiceResponse,
  TermsOfServiceHeaders,
  TermsOfServiceParams,
} from './terms-of-service.schemas.ts'
import type { TermsOfServiceService } from './terms-of-service.service.ts'
import { userContextOf } from '../../http/user-context.ts'

const tags = ['Terms of service']
const READ = { scopes: ['core.terms-of-service:read'], subjects: ['client', 'user:business', 'user:individual'] } as const


export function termsOfServiceRoutes(terms: TermsOfServiceService) {
  return async function routes(app: App): Promise<void> {
    app.get(
      '/core/terms-of-service',
      {
        schema: {
          operationId: 'core.list-terms-of-service',
          summary: 'List terms of service',
          description: 'The terms of service of the platform, optionally filtered; acting for a user, each accepted one has `acceptedAt`.',
          tags,
          querystring: ListTermsOfServiceQuery,
          headers: TermsOfServiceHeaders,
          response: { 200: described(ListTermsOfServiceResponse, 'Terms of service.'), ...errorResponses(400, 401, 403, 404, 429) },
        },
        config: { auth: READ },
      },
      async (request) => ({ termsOfService: await terms.list(principalOf(request), request.query) }),
    )

    app.get(
      '/core/terms-of-service/:termsOfService',
      {
        schema: {
          operationId: 'core.get-terms-of-service',
          summary: 'Get terms of service',
          description: 'One terms of service by code; acting for a user who accepted them, with `acceptedAt`.',
          tags,
          params: TermsOfServiceParams,
          headers: TermsOfServiceHeaders,
          response: { 200: described(GetTermsOfServiceResponse, 'Terms of service.'), ...errorResponses(400, 401, 403, 404, 429) },
        },
        config: { auth: READ },
      },
      async (request) => ({ termsOfService: await terms.get(principalOf(request), request.params.termsOfService) }),
    )

    app.post(
      '/core/terms-of-service/:termsOfService/accept',
      {
        schema: {
          operationId: 'core.accept-terms-of-service',
          summary: 'Accept terms of service',
          description:
            'The user the request acts for accepts terms of service that apply to their type and country of residence. ' +
            'Requires the end user\'s IP in `X-Service-User-Ip`. General terms are accepted when the user is created.',
          tags,
          params: AcceptTermsOfServiceParams,
          headers: TermsOfServiceHeaders,
          response: { 201: described(AcceptTermsOfServiceResponse, 'Terms of service accepted.'), ...errorResponses(400, 401, 403, 404, 409, 413, 415, 429) },
        },
        config: { auth: { scopes: ['core.terms-of-service:accept'], subjects: ['user:business', 'user:individual'] } },
      },
      async (request, reply) => {
        const accepted = await terms.accept(principalOf(request), request.params.termsOfService, userContextOf(request.headers))
        return reply.status(201).send({ termsOfService: accepted })
      },
    )
  }
}
