import { ActingRequestHeaders, described, errorResponses } from '../../http/schemas.ts'
import { principalOf, type App } from '../../http/types.ts'
import { SimulateBankDepositBody, SimulateBankDepositResponse, SimulateCryptoDepositBody, SimulateCryptoDepositResponse } from './deposit-methods.schemas.ts'
import type { DepositTestHelpersService } from './deposit-test-helpers.service.ts'

/** Sandbox only: app.ts registers these routes in sandbox, so in production they answer 404 `route_not_found`. */
export function depositTestHelpersRoutes(helpers: DepositTestHelpersService) {
  return async function routes(app: App): Promise<void> {
    const tags = ['Accounts']
    const auth = { scopes: ['core.accounts:use-test-helpers'], subjects: ['user:business', 'user:individual'] as const }

    app.post(
      '/core/accounts/test-helpers/bank-deposits',
      {
        schema: {
          operationId: 'core.simulate-bank-deposit',
          summary: 'Simulate bank deposit',
          description:
            'Sandbox only: a bank transfer arriving at a deposit method of the organization (IBAN, sort code and account number, or ' +
            'US account number). Accepted with 202; the deposit is recorded pending and settles into the account shortly after.',
          tags,
          headers: ActingRequestHeaders,
          body: SimulateBankDepositBody,
          response: { 202: described(SimulateBankDepositResponse, 'Deposit accepted.'), ...errorResponses(400, 401, 403, 404, 409, 413, 415, 429) },
        },
        config: { auth },
      },
      async (request, reply) => reply.status(202).send(await helpers.simulateBank(principalOf(request), request.body)),
    )

    app.post(
      '/core/accounts/test-helpers/crypto-deposits',
      {
        schema: {
          operationId: 'core.simulate-crypto-deposit',
          summary: 'Simulate crypto deposit',
          description:
            'Sandbox only: a crypto transaction arriving at a deposit address of the organization (any of its forms; with the ' +
            'destination tag on the XRP Ledger). Accepted with 202; the deposit is recorded pending and settles into the account shortly after.',
          tags,
          headers: ActingRequestHeaders,
          body: SimulateCryptoDepositBody,
          response: { 202: described(SimulateCryptoDepositResponse, 'Deposit accepted.'), ...errorResponses(400, 401, 403, 404, 409, 413, 415, 429) },
        },
        config: { auth },
      },
      async (request, reply) => reply.status(202).send(await helpers.simulateCrypto(principalOf(request), request.body)),
    )
  }
}
