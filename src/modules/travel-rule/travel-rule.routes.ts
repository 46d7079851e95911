import { ActingRequestHeaders, described, errorResponses } from '../../http/schemas.ts'
import { principalOf, type App } from '../../http/types.ts'
import { TransactionParams } from '../transactions/index.ts'
import {
  ListRequestsForInformationResponse,
  RequestForInformationParams,
  RequestForInformationResponse,
  UpdateRequestForInformationBody,
} from './travel-rule.schemas.ts'
import type { RequestsForInformationService } from './travel-rule.service.ts'

const USERS = ['user:business', 'user:individual'] as const

export function travelRuleRoutes(requests: RequestsForInformationService) {
  return async function routes(app: App): Promise<void> {
    const tags = ['Transactions']

    app.get(
      '/core/transactions/:transactionId/requests-for-information',
      {
        schema: {
          operationId: 'core.list-transaction-requests-for-information',
          summary: 'List requests for information',
          description:
            'The requests for information of one of the acting user\'s transactions, oldest first: a crypto movement at or ' +
            'above the travel-rule threshold whose other party is not declared waits `on-hold` ' +
            '(`pending-requests-for-information`) until its request is answered. 404 for a transaction that is not theirs.',
          tags,
          headers: ActingRequestHeaders,
          params: TransactionParams,
          response: { 200: described(ListRequestsForInformationResponse, 'Requests for information retrieved.'), ...errorResponses(400, 401, 403, 404, 429) },
        },
        config: { auth: { scopes: ['core.transactions.requests-for-information:read'], subjects: USERS } },
      },
      async (request) => ({ requestsForInformation: await requests.list(principalOf(request), request.params.transactionId) }),
    )

    app.get(
      '/core/transactions/:transactionId/requests-for-information/:requestForInformationId',
      {
        schema: {
          operationId: 'core.get-transaction-request-for-information',
          summary: 'Get request for information',
          description: 'One request for information of one of the acting user\'s transactions; 404 (entity `transaction` or `request-for-information`) for any other.',
          tags,
          headers: ActingRequestHeaders,
          params: RequestForInformationParams,
          response: { 200: described(RequestForInformationResponse, 'Request for information retrieved.'), ...errorResponses(400, 401, 403, 404, 429) },
        },
        config: { auth: { scopes: ['core.transactions.requests-for-information:read'], subjects: USERS } },
      },
      async (request) => ({ requestForInformation: await requests.get(principalOf(request), request.params.transactionId, request.params.requestForInformationId) }),
    )

    app.put(
      '/core/transactions/:transactionId/requests-for-information/:requestForInformationId',
      {
        schema: {
          operationId: 'core.update-transaction-request-for-information',
          summary: 'Update request for information',
          description:
            'Answers a pending request for information. The answer is checked (400 `request_invalid` when it does not ' +
            'describe the other party), its proof verified (409 `operation_not_allowed`: `proof-invalid` for a signature ' +
            'that does not hold, `signature-proof-required` where a self-declaration is not enough for the value), then ' +
            'screened by the travel-rule network: the request becomes `ok` and the transaction goes on, or `failed` and ' +
            'the transaction fails (`travel-rule-verification-failed`). 409 (`request-for-information-update-not-allowed`) ' +
            'for a request that is no longer pending; 503 while the travel-rule network cannot be reached.',
          tags,
          headers: ActingRequestHeaders,
          params: RequestForInformationParams,
          body: UpdateRequestForInformationBody,
          response: { 200: described(RequestForInformationResponse, 'Request for information updated.'), ...errorResponses(400, 401, 403, 404, 409, 413, 415, 429, 503) },
        },
        config: { auth: { scopes: ['core.transactions.requests-for-information:update'], subjects: USERS } },
      },
      async (request) => ({
        requestForInformation: await requests.answer(principalOf(request), request.params.transactionId, request.params.requestForInformationId, request.body.data as Record<string, unknown>),
      }),
    )
  }
}
