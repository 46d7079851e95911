import { ActingRequestHeaders, described, errorResponses } from '../../http/schemas.ts'
import { principalOf, type App } from '../../http/types.ts'
import { AccountParams } from '../accounts/index.ts'
import { DepositMethodQuery, DepositMethodResponse } from './deposit-methods.schemas.ts'
import type { DepositMethodsService } from './deposit-methods.service.ts'

const USERS = ['user:business', 'user:individual'] as const

export function depositMethodsRoutes(depositMethods: DepositMethodsService) {
  return async function routes(app: App): Promise<void> {
    const tags = ['Accounts']
    const auth = { scopes: ['core.accounts:deposit-method'], subjects: USERS }

    app.get(
      '/core/accounts/:accountId/deposit-method',
      {
        schema: {
          operationId: 'core.get-account-deposit-method',
          summary: 'Get account deposit method',
          description:
            'The address or bank account through which an account of the acting user receives the asset over a network. ' +
            '404 `entity_not_found` (`depositMethod`) until it has been set up with PUT.',
          tags,
          headers: ActingRequestHeaders,
          params: AccountParams,
          querystring: DepositMethodQuery,
          response: { 200: described(DepositMethodResponse, 'Deposit method retrieved.'), ...errorResponses(400, 401, 403, 404, 409, 429) },
        },
        config: { auth },
      },
      async (request) => ({ depositMethod: await depositMethods.get(principalOf(request), request.params.accountId, request.query) }),
    )

    app.put(
      '/core/accounts/:accountId/deposit-method',
      {
        schema: {
          operationId: 'core.setup-account-deposit-method',
          summary: 'Set up account deposit method',
          description:
            'Issues the account\'s deposit method for the network (201, `processing`), or returns the one it already has (200). ' +
            'The same address or bank numbers are returned every time and are never given to another account.',
          tags,
          headers: ActingRequestHeaders,
          params: AccountParams,
          querystring: DepositMethodQuery,
          response: {
            200: described(DepositMethodResponse, 'Deposit method already set up.'),
            201: described(DepositMethodResponse, 'Deposit method set up.'),
            ...errorResponses(400, 401, 403, 404, 409, 429),
          },
        },
        config: { auth },
      },
      async (request, reply) => {
        const { created, depositMethod } = await depositMethods.setup(principalOf(request), request.params.accountId, request.query)
        return reply.status(created ? 201 : 200).send({ depositMethod })
      },
    )
  }
}
