import type { FastifyReply, FastifyRequest } from 'fastify'
import Type from 'typebox'
import { sendHtml } from '../../http/html.ts'
import { preferredMediaType } from '../../http/negotiation.ts'
import { paginationLinks } from '../../http/pagination.ts'
import { ActingRequestHeaders, errorResponses } from '../../http/schemas.ts'
import { principalOf, type App } from '../../http/types.ts'
import { PortfolioStatementResponse, StatementQuery, TransactionsStatementQuery, TransactionsStatementResponse } from './portfolio.schemas.ts'
import {
  portfolioStatementCsv,
  portfolioStatementHtml,
  STATEMENT_PAGE_CSP,
  transactionsStatementCsv,
  transactionsStatementHtml,
  type StatementHeading,
} from './statement-documents.ts'
import type { StatementsService } from './statements.service.ts'

const USERS = ['user:business', 'user:individual'] as const
const FORMATS = ['application/json', 'text/csv', 'text/html'] as const

/** The JSON answer and the two downloads, as the document lists them. */
function statementContent<T extends object>(schema: T, description: string) {
  return {
    description,
    content: {
      'application/json': { schema },
      'text/csv': { schema: Type.String({ description: 'The statement as CSV (RFC 4180, a header row, every figure a plain decimal); the whole period, unpaginated.' }) },
      'text/html': { schema: Type.String({ description: 'The statement as a printable page (A4); the whole period, unpaginated.' }) },
    },
  }
}

function sendDownload(reply: FastifyReply, format: 'text/csv' | 'text/html', name: string, body: string): FastifyReply {
  if (format === 'text/html') return sendHtml(reply, 200, body, STATEMENT_PAGE_CSP).header('vary', 'accept')
  return reply
    .status(200)
    .header('content-type', 'text/csv; charset=utf-8')
    .header('content-disposition', `attachment; filename="${name}.csv"`)
    .header('cache-control', 'no-store')
    .header('x-content-type-options', 'nosniff')
    .header('vary', 'accept')
    .send(body)
}

export function statementsRoutes(statements: StatementsService, publicUrl: string) {
  return async function routes(app: App): Promise<void> {
    const tags = ['Statements']
    const negotiation = 'JSON by default; `Accept: text/csv` downloads it as CSV and `Accept: text/html` as a printable page. ' +
      '409 `date_invalid` for a month not over yet or over before the user was created; 404 (entity `asset`) and 409 `asset_not_supported` for the denomination.'
    const heading = (request: FastifyRequest, denomination: string | undefined): StatementHeading => {
      const code = denomination ?? 'USD'
      return { userId: principalOf(request).userId ?? '', denomination: code, decimals: statements.decimalsOf(code), generatedAt: new Date() }
    }

    app.get(
      '/core/statements/portfolio',
      {
        schema: {
          operationId: 'core.get-portfolio-statement',
          summary: 'Get portfolio statement',
          description: `What the acting user held of each asset at the end of a calendar month, with each asset's price then. ${negotiation}`,
          tags,
          headers: ActingRequestHeaders,
          querystring: StatementQuery,
          response: { 200: statementContent(PortfolioStatementResponse, 'Portfolio statement.'), ...errorResponses(400, 401, 403, 404, 409, 429) },
        },
        config: { auth: { scopes: ['core.statements:read'], subjects: USERS } },
      },
      async (request, reply) => {
        const format = preferredMediaType(request.headers.accept, FORMATS)
        const statement = await statements.portfolioStatement(principalOf(request), request.query)
        if (format === 'application/json') return reply.header('vary', 'accept').send({ statement })
        const head = heading(request, request.query.denomination)
        const name = `portfolio-statement-${request.query.year}-${String(request.query.month).padStart(2, '0')}`
        return sendDownload(reply, format, name, format === 'text/csv' ? portfolioStatementCsv(statement, head) : portfolioStatementHtml(statement, head))
      },
    )

    app.get(
      '/core/statements/transactions',
      {
        schema: {
          operationId: 'core.get-transactions-statement',
          summary: 'Get transactions statement',
          description: `The acting user's transactions completed in a calendar month, in the order they completed, each with the prices of its assets when it completed. ${negotiation}`,
          tags,
          headers: ActingRequestHeaders,
          querystring: TransactionsStatementQuery,
          response: { 200: statementContent(TransactionsStatementResponse, 'Transactions statement.'), ...errorResponses(400, 401, 403, 404, 409, 429) },
        },
        config: { auth: { scopes: ['core.statements:read'], subjects: USERS } },
      },
      async (request, reply) => {
        const principal = principalOf(request)
        const format = preferredMediaType(request.headers.accept, FORMATS)
        if (format === 'application/json') {
          const result = await statements.transactionsStatement(principal, request.query)
          return reply.header('vary', 'accept').send({
            statement: result.statement,
            pagination: paginationLinks({ baseUrl: publicUrl, requestUrl: request.url, window: result.window, anchor: undefined, hasNext: result.hasNext }),
          })
        }
        const { period, transactions: entries } = await statements.wholeTransactionsStatement(principal, request.query)
        const head = heading(request, request.query.denomination)
        const name = `transactions-statement-${request.query.year}-${String(request.query.month).padStart(2, '0')}`
        return sendDownload(reply, format, name, format === 'text/csv' ? transactionsStatementCsv(entries, head) : transactionsStatementHtml(period, entries, head))
      },
    )
  }
}
