import Type from 'typebox'
import { REPLAYED_RESPONSE_HEADER } from '../../http/idempotency.ts'
import { paginationLinks } from '../../http/pagination.ts'
import { ActingRequestHeaders, described, errorResponses } from '../../http/schemas.ts'
import { principalOf, type App } from '../../http/types.ts'
import {
  AccountParams,
  AccountResponse,
  CreateAccountBody,
  CreateAccountHeaders,
  CreateAccountResponse,
  DefaultAccountsQuery,
  DefaultAccountsResponse,
  ListAccountsQuery,
  ListAccountsResponse,
  UpdateAccountBody,
} from './accounts.schemas.ts'
import type { AccountsService } from './accounts.service.ts'

const USERS = ['user:business', 'user:individual'] as const

const assetsOf = (filter: string | undefined) => (filter === undefined ? undefined : [...new Set(filter.split(','))])

export function accountsRoutes(accounts: AccountsService, publicUrl: string) {
  return async function routes(app: App): Promise<void> {
    const tags = ['Accounts']

    app.get(
      '/core/accounts',
      {
        schema: {
          operationId: 'core.list-accounts',
          summary: 'List accounts',
          description: 'The acting user\'s accounts that are not archived, newest first.',
          tags,
          headers: ActingRequestHeaders,
          querystring: ListAccountsQuery,
          response: { 200: described(ListAccountsResponse, 'Accounts retrieved.'), ...errorResponses(400, 401, 403, 404, 429) },
        },
        config: { auth: { scopes: ['core.accounts:read'], subjects: USERS } },
      },
      async (request) => {
        const page = await accounts.list(principalOf(request), { ...request.query, assets: assetsOf(request.query.asset) })
        return {
          accounts: page.accounts,
          pagination: paginationLinks({ baseUrl: publicUrl, requestUrl: request.url, window: page.window, anchor: page.anchor, hasNext: page.hasNext }),
        }
      },
    )

    app.post(
      '/core/accounts',
      {
        schema: {
          operationId: 'core.create-account',
          summary: 'Create account',
          description:
            'Opens an account of the acting user in an asset, with a zero balance. 404 for an unknown asset; 409 ' +
            '`asset_not_supported` for an asset the user may not hold (delisted, or no feature available to them).',
          tags,
          headers: CreateAccountHeaders,
          body: CreateAccountBody,
          response: {
            201: described(CreateAccountResponse, 'Account created (or, for an Idempotency-Key retry, the first response replayed).', REPLAYED_RESPONSE_HEADER),
            ...errorResponses(400, 401, 403, 404, 409, 413, 415, 422, 429),
          },
        },
        config: { auth: { scopes: ['core.accounts:create'], subjects: USERS }, idempotent: true },
      },
      async (request, reply) => reply.status(201).send(await accounts.create(principalOf(request), request.body)),
    )

    app.get(
      '/core/accounts/defaults',
      {
        schema: {
          operationId: 'core.list-default-accounts',
          summary: 'List default accounts',
          description: 'The acting user\'s default account of each asset they hold: the oldest account of the asset that is not archived.',
          tags,
          headers: ActingRequestHeaders,
          querystring: DefaultAccountsQuery,
          response: { 200: described(DefaultAccountsResponse, 'Default accounts retrieved.'), ...errorResponses(400, 401, 403, 404, 429) },
        },
        config: { auth: { scopes: ['core.accounts:read'], subjects: USERS } },
      },
      async (request) => ({ accounts: await accounts.defaults(principalOf(request), assetsOf(request.query.asset)) }),
    )

    app.get(
      '/core/accounts/:accountId',
      {
        schema: {
          operationId: 'core.get-account',
          summary: 'Get account',
          description: 'An account of the acting user, with its balance.',
          tags,
          headers: ActingRequestHeaders,
          params: AccountParams,
          response: { 200: described(AccountResponse, 'Account retrieved.'), ...errorResponses(400, 401, 403, 404, 429) },
        },
        config: { auth: { scopes: ['core.accounts:read'], subjects: USERS } },
      },
      async (request) => ({ account: await accounts.get(principalOf(request), request.params.accountId) }),
    )

    app.patch(
      '/core/accounts/:accountId',
      {
        schema: {
          operationId: 'core.update-account',
          summary: 'Update account',
          description: 'Renames an account of the acting user.',
          tags,
          headers: ActingRequestHeaders,
          params: AccountParams,
          body: UpdateAccountBody,
          response: { 200: described(AccountResponse, 'Account updated.'), ...errorResponses(400, 401, 403, 404, 413, 415, 429) },
        },
        config: { auth: { scopes: ['core.accounts:update'], subjects: USERS } },
      },
      async (request) => ({ account: await accounts.update(principalOf(request), request.params.accountId, request.body) }),
    )

    app.delete(
      '/core/accounts/:accountId',
      {
        schema: {
          operationId: 'core.archive-account',
          summary: 'Archive account',
          description:
            'Archives an account of the acting user. Only an empty account with no movement in flight can be archived ' +
            '(409 `account_has_balance`, `account_has_pending_transactions`); once archived it is no longer listed or found.',
          tags,
          headers: ActingRequestHeaders,
          params: AccountParams,
          response: { 204: Type.Null({ description: 'Account archived.' }), ...errorResponses(400, 401, 403, 404, 409, 429) },
        },
        config: { auth: { scopes: ['core.accounts:archive'], subjects: USERS } },
      },
      async (request, reply) => {
        await accounts.archive(principalOf(request), request.params.accountId)
        return reply.status(204).send(null)
      },
    )
  }
}
