import Type from 'typebox'
import { paginationLinks } from '../../http/pagination.ts'
import { described, errorResponses } from '../../http/schemas.ts'
import { principalOf, type App } from '../../http/types.ts'
import {
  CreateSumsubIngestionBody,
  CreateVeriffIngestionBody,
  IngestionHeaders,
  IngestionParams,
  ListIngestionsQuery,
  SumsubIngestionResponse,
  SumsubIngestionsResponse,
  VeriffIngestionResponse,
  VeriffIngestionsResponse,
  type IngestionProvider,
} from './ingestions.schemas.ts'
import type { KycIngestionsService } from './ingestions.service.ts'

const SUBJECTS = ['user:individual'] as const

const headerOf = (value: string | string[] | undefined): string | undefined => (Array.isArray(value) ? value[0] : value)

/**
 * The ingestion operations of each provider the deployment serves (`kyc-connector.create-veriff-ingestion`, …) and
 * the providers' callbacks. A callback carries no token: its provider's signature over the raw body is its proof,
 * so its body is read as bytes, never parsed before it is verified.
 */
export function kycIngestionsRoutes(service: KycIngestionsService, publicUrl: string) {
  return async function routes(app: App): Promise<void> {
    for (const provider of service.providers) {
      const title = provider === 'sumsub' ? 'Sumsub' : 'Veriff'
      const tags = [title]
      const url = `/kyc-connector/${provider}/ingestions`
      const responses = provider === 'sumsub'
        ? { one: SumsubIngestionResponse, many: SumsubIngestionsResponse }
        : { one: VeriffIngestionResponse, many: VeriffIngestionsResponse }

      app.post(
        url,
        {
          schema: {
            operationId: `kyc-connector.create-${provider}-ingestion`,
            summary: `Create ${title} ingestion`,
            description: provider === 'sumsub'
              ? 'Imports the Sumsub applicant a share token shares into the acting user\'s KYC processes. The ingestion is `queued`; ' +
                'the workers import it (`running`, then `finished`) and record each process\'s outcome in `result`. ' +
                '409 `operation_not_allowed` (`provider-not-configured`) when this deployment has no Sumsub account.'
              : 'Imports the user\'s Veriff sessions into their KYC processes, each session read with the integration of the ' +
                'organization\'s Veriff configuration it names. The ingestion is `queued`; the workers import it (`running`, then ' +
                '`finished`) and record each process\'s outcome in `result`. 409 `operation_not_allowed` with the reason: ' +
                '`provider-not-configured`, `ingestion-not-supported-by-provider-config`, `ingestion-process-not-resolvable`, `duplicate-session`.',
            tags,
            headers: IngestionHeaders,
            body: provider === 'sumsub' ? CreateSumsubIngestionBody : CreateVeriffIngestionBody,
            response: { 201: described(responses.one, `${title} ingestion created.`), ...errorResponses(400, 401, 403, 404, 409, 413, 415, 429) },
          },
          config: { auth: { scopes: [`kyc-connector.${provider}.ingestions:create`], subjects: SUBJECTS } },
        },
        async (request, reply) => {
          const principal = principalOf(request)
          const ingestion = provider === 'sumsub'
            ? await service.createSumsub(principal, request.body as CreateSumsubIngestionBody)
            : await service.createVeriff(principal, request.body as CreateVeriffIngestionBody)
          return reply.status(201).send({ ingestion } as never)
        },
      )

      app.get(
        url,
        {
          schema: {
            operationId: `kyc-connector.list-${provider}-ingestions`,
            summary: `List ${title} ingestions`,
            description: `The acting user's ${title} ingestions, newest first.`,
            tags,
            headers: IngestionHeaders,
            querystring: ListIngestionsQuery,
            response: { 200: described(responses.many, `${title} ingestions retrieved.`), ...errorResponses(400, 401, 403, 404, 429) },
          },
          config: { auth: { scopes: [`kyc-connector.${provider}.ingestions:read`], subjects: SUBJECTS } },
        },
        async (request) => {
          const page = await service.list(principalOf(request), provider, request.query)
          return {
            ingestions: page.ingestions,
            pagination: paginationLinks({ baseUrl: publicUrl, requestUrl: request.url, window: page.window, anchor: page.anchor, hasNext: page.hasNext }),
          } as never
        },
      )

      app.get(
        `${url}/:ingestionId`,
        {
          schema: {
            operationId: `kyc-connector.get-${provider}-ingestion`,
            summary: `Get ${title} ingestion`,
            description: `An ingestion of the acting user; 404 \`entity_not_found\` (\`ingestion\`) for anyone else's.`,
            tags,
            headers: IngestionHeaders,
            params: IngestionParams,
            response: { 200: described(responses.one, `${title} ingestion retrieved.`), ...errorResponses(400, 401, 403, 404, 429) },
          },
          config: { auth: { scopes: [`kyc-connector.${provider}.ingestions:read`], subjects: SUBJECTS } },
        },
        async (request) => ({ ingestion: await service.get(principalOf(request), provider, request.params.ingestionId) }) as never,
      )
    }

    await app.register(async (callbacks: App) => {
      // The exact bytes the provider signed.
      callbacks.removeAllContentTypeParsers()
      callbacks.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body))
      for (const provider of service.providers) callbackRoute(callbacks, service, provider)
    })
  }
}

function callbackRoute(app: App, service: KycIngestionsService, provider: IngestionProvider): void {
  const title = provider === 'sumsub' ? 'Sumsub' : 'Veriff'
  app.post(
    `/kyc-connector/${provider}/callbacks`,
    {
      schema: {
        operationId: `kyc-connector.receive-${provider}-callback`,
        summary: `Receive ${title} callback`,
        description: provider === 'sumsub'
          ? 'Where Sumsub sends its applicant callbacks. Accepted only with `X-Payload-Digest`, the HMAC of the raw body under ' +
            'the deployment\'s Sumsub webhook secret (`X-Payload-Digest-Alg`: `HMAC_SHA1_HEX`, `HMAC_SHA256_HEX` or `HMAC_SHA512_HEX`); ' +
            'otherwise 403 `signature_invalid`. It wakes the ingestions of the applicant, which read it from Sumsub themselves.'
          : 'Where Veriff sends its decision and event callbacks. Accepted only when `X-AUTH-CLIENT` and `X-HMAC-SIGNATURE` (the ' +
            'HMAC-SHA256 of the raw body under the shared secret) are those of the integration an ingestion in progress reads the ' +
            'session with; otherwise 403 `signature_invalid`. It wakes those ingestions, which read the decision from Veriff themselves.',
        tags: [title],
        response: {
          200: described(Type.Object({ received: Type.Boolean() }), 'Callback accepted.'),
          ...errorResponses(400, 403, 413, 429),
        },
      },
    },
    async (request) => {
      const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0)
      if (provider === 'sumsub') {
        await service.sumsubCallback(raw, { digest: headerOf(request.headers['x-payload-digest']), algorithm: headerOf(request.headers['x-payload-digest-alg']) })
      } else {
        await service.veriffCallback(raw, { apiKey: headerOf(request.headers['x-auth-client']), signature: headerOf(request.headers['x-hmac-signature']) })
      }
      return { received: true }
    },
  )
}
