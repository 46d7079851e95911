import { paginationLinks } from '../../http/pagination.ts'
import { ActingRequestHeaders, described, errorResponses } from '../../http/schemas.ts'
import { principalOf, type App } from '../../http/types.ts'
import type { Db } from '../../db/schema.ts'
import { atomicIdempotency, REPLAYED_RESPONSE_HEADER } from '../../http/idempotency.ts'
import {
  AccountTransactionsParams,
  CreateTransactionBody,
  CreateTransactionHeaders,
  CreateTransactionResponse,
  ListTransactionsQuery,
  ListTransactionsResponse,
  TransactionParams,
  TransactionResponse,
} from './transactions.schemas.ts'
import type { TransactionsService } from './transactions.service.ts'

const USERS = ['user:business', 'user:individual'] as const

export function transactionsRoutes(transactions: TransactionsService, publicUrl: string, db: Db) {
  return async function routes(app: App): Promise<void> {
    const tags = ['Transactions']

    app.get(
      '/core/transactions',
      {
        schema: {
          operationId: 'core.list-transactions',
          summary: 'List transactions',
          description: 'The acting user\'s transactions, newest first, optionally only those in some statuses.',
          tags,
          headers: ActingRequestHeaders,
          querystring: ListTransactionsQuery,
          response: { 200: described(ListTransactionsResponse, 'Transactions retrieved.'), ...errorResponses(400, 401, 403, 404, 429) },
        },
        config: { auth: { scopes: ['core.transactions:read'], subjects: USERS } },
      },
      async (request) => {
        const page = await transactions.list(principalOf(request), request.query)
        return {
          transactions: page.transactions,
          pagination: paginationLinks({ baseUrl: publicUrl, requestUrl: request.url, window: page.window, anchor: page.anchor, hasNext: page.hasNext }),
        }
      },
    )

    app.post(
      '/core/transactions',
      {
        schema: {
          operationId: 'core.create-transaction',
          summary: 'Create transaction',
          description:
            'Executes a quote of the acting user: the transaction is created `processing` with the origin\'s money held, and ' +
            'completes (or fails with a reason) in the background; follow it with `GET /core/transactions/{id}` or the ' +
            '`core.transaction.status-changed` event. A quote is used once: a second execution, or one after it expired, is 404 ' +
            '`entity_not_found`. 409 `insufficient_balance` when the origin cannot fund it any more. With `Idempotency-Key`, ' +
            'the key is recorded in the same database transaction as the movement: a retry gets the first answer and never ' +
            'moves money twice.',
          tags,
          headers: CreateTransactionHeaders,
          body: CreateTransactionBody,
          response: {
            201: described(CreateTransactionResponse, 'Transaction created.', REPLAYED_RESPONSE_HEADER),
            ...errorResponses(400, 401, 403, 404, 409, 413, 415, 422, 429),
          },
        },
        config: { auth: { scopes: ['core.transactions:create'], subjects: USERS, widgetSessions: true }, idempotent: 'atomic' },
      },
      async (request, reply) => {
        await atomicIdempotency(db, request, reply, 201, (guard) => transactions.create(principalOf(request), request.body, guard))
        return reply
      },
    )

    app.get(
      '/core/transactions/:transactionId',
      {
        schema: {
          operationId: 'core.get-transaction',
          summary: 'Get transaction',
          description: 'One of the acting user\'s transactions; 404 for any other.',
          tags,
          headers: ActingRequestHeaders,
          params: TransactionParams,
          response: { 200: described(TransactionResponse, 'Transaction retrieved.'), ...errorResponses(400, 401, 403, 404, 429) },
        },
        config: { auth: { scopes: ['core.transactions:read'], subjects: USERS, widgetSessions: true } },
      },
      async (request) => ({ transaction: await transactions.get(principalOf(request), request.params.transactionId) }),
    )

    app.get(
      '/core/accounts/:accountId/transactions',
      {
        schema: {
          operationId: 'core.list-account-transactions',
          summary: 'List account transactions',
          description: 'The transactions of one of the acting user\'s accounts, newest first; 404 for an account that is not theirs or archived.',
          tags,
          headers: ActingRequestHeaders,
          params: AccountTransactionsParams,
          querystring: ListTransactionsQuery,
          response: { 200: described(ListTransactionsResponse, 'Transactions retrieved.'), ...errorResponses(400, 401, 403, 404, 429) },
        },
        config: { auth: { scopes: ['core.accounts:read', 'core.transactions:read'], subjects: USERS } },
      },
      async (request) => {
        const page = await transactions.listForAccount(principalOf(request), request.params.accountId, request.query)
        return {
          transactions: page.transactions,
          pagination: paginationLinks({ baseUrl: publicUrl, requestUrl: request.url, window: page.window, anchor: page.anchor, hasNext: page.hasNext }),
        }
      },
    )
  }
}
