import Type from 'typebox'
import { REPLAYED_RESPONSE_HEADER } from '../../http/idempotency.ts'
import { paginationLinks } from '../../http/pagination.ts'
import { ActingRequestHeaders, described, errorResponses } from '../../http/schemas.ts'
import { principalOf, type App } from '../../http/types.ts'
import {
  CreateExternalAccountBody,
  CreateExternalAccountHeaders,
  CreateExternalAccountResponse,
  ExternalAccountParams,
  ExternalAccountResponse,
  ListExternalAccountsQuery,
  ListExternalAccountsResponse,
  UpdateExternalAccountBody,
} from './external-accounts.schemas.ts'
import type { ExternalAccountsService } from './external-accounts.service.ts'
import { verificationRoutes } from './verifications.routes.ts'

const USERS = ['user:business', 'user:individual'] as const

export function externalAccountsRoutes(externalAccounts: ExternalAccountsService, publicUrl: string) {
  return async function routes(app: App): Promise<void> {
    const tags = ['External accounts']

    app.post(
      '/core/external-accounts',
      {
        schema: {
          operationId: 'core.create-external-account',
          summary: 'Create external account',
          description:
            'Links a bank account (ACH, FPS, SEPA), a card, a crypto address or a payment app account of the acting user. ' +
            'Details are checked for real (checksums, issuer ranges, the network\'s address rules); a card is verified with ' +
            'its issuer, its number sealed at rest and never returned, its security code used for that verification only. ' +
            '404 (entity `rail`) when no rail takes the type, asset and network; 409 `duplicate` for details the user already linked.',
          tags,
          headers: CreateExternalAccountHeaders,
          body: CreateExternalAccountBody,
          response: {
            201: described(CreateExternalAccountResponse, 'External account created (or, for an Idempotency-Key retry, the first response replayed).', REPLAYED_RESPONSE_HEADER),
            ...errorResponses(400, 401, 403, 404, 409, 413, 415, 422, 429, 503),
          },
        },
        config: { auth: { scopes: ['core.external-accounts:create'], subjects: USERS, widgetSessions: true }, idempotent: true },
      },
      async (request, reply) => reply.status(201).send(await externalAccounts.create(principalOf(request), request.body)),
    )

    app.get(
      '/core/external-accounts',
      {
        schema: {
          operationId: 'core.list-external-accounts',
          summary: 'List external accounts',
          description: 'The acting user\'s external accounts, newest first; `type` keeps one type.',
          tags,
          headers: ActingRequestHeaders,
          querystring: ListExternalAccountsQuery,
          response: { 200: described(ListExternalAccountsResponse, 'External accounts retrieved.'), ...errorResponses(400, 401, 403, 404, 429) },
        },
        config: { auth: { scopes: ['core.external-accounts:read'], subjects: USERS, widgetSessions: true } },
      },
      async (request) => {
        const page = await externalAccounts.list(principalOf(request), request.query)
        return {
          externalAccounts: page.externalAccounts,
          pagination: paginationLinks({ baseUrl: publicUrl, requestUrl: request.url, window: page.window, anchor: page.anchor, hasNext: page.hasNext }),
        }
      },
    )

    app.get(
      '/core/external-accounts/:externalAccountId',
      {
        schema: {
          operationId: 'core.get-external-account',
          summary: 'Get external account',
          description: 'An external account of the acting user.',
          tags,
          headers: ActingRequestHeaders,
          params: ExternalAccountParams,
          response: { 200: described(ExternalAccountResponse, 'External account retrieved.'), ...errorResponses(400, 401, 403, 404, 429) },
        },
        config: { auth: { scopes: ['core.external-accounts:read'], subjects: USERS } },
      },
      async (request) => ({ externalAccount: await externalAccounts.get(principalOf(request), request.params.externalAccountId) }),
    )

    app.patch(
      '/core/external-accounts/:externalAccountId',
      {
        schema: {
          operationId: 'core.update-external-account',
          summary: 'Update external account',
          description: 'Renames an external account of the acting user.',
          tags,
          headers: ActingRequestHeaders,
          params: ExternalAccountParams,
          body: UpdateExternalAccountBody,
          response: { 200: described(ExternalAccountResponse, 'External account updated.'), ...errorResponses(400, 401, 403, 404, 409, 413, 415, 429) },
        },
        config: { auth: { scopes: ['core.external-accounts:update'], subjects: USERS } },
      },
      async (request) => ({ externalAccount: await externalAccounts.update(principalOf(request), request.params.externalAccountId, request.body) }),
    )

    app.delete(
      '/core/external-accounts/:externalAccountId',
      {
        schema: {
          operationId: 'core.delete-external-account',
          summary: 'Delete external account',
          description: 'Unlinks an external account of the acting user: it is no longer listed or usable; movements already under way still complete.',
          tags,
          headers: ActingRequestHeaders,
          params: ExternalAccountParams,
          response: { 204: Type.Null({ description: 'External account deleted.' }), ...errorResponses(400, 401, 403, 404, 429) },
        },
        config: { auth: { scopes: ['core.external-accounts:delete'], subjects: USERS } },
      },
      async (request, reply) => {
        await externalAccounts.delete(principalOf(request), request.params.externalAccountId)
        return reply.status(204).send(null)
      },
    )

    await verificationRoutes(app, externalAccounts)
  }
}
