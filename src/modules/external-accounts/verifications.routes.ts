import { ActingRequestHeaders, described, errorResponses } from '../../http/schemas.ts'
import { principalOf, type App } from '../../http/types.ts'
import { ExternalAccountParams } from './external-accounts.schemas.ts'
import type { ExternalAccountsService } from './external-accounts.service.ts'
import { AnswerVerificationBody, ListVerificationsResponse, StartVerificationBody, VerificationParams, VerificationResponse } from './verifications.schemas.ts'

const USERS = ['user:business', 'user:individual'] as const

/**
 * The verifications of crypto external accounts. Listing them is in the specification; starting and answering a
 * level are Tessera's own (the upstream service shows no way to write them): docs/external-accounts.md#verifications.
 */
export async function verificationRoutes(app: App, externalAccounts: ExternalAccountsService): Promise<void> {
  const tags = ['External accounts']

  app.get(
    '/core/external-accounts/:externalAccountId/verifications',
    {
      schema: {
        operationId: 'core.list-external-account-verifications',
        summary: 'List external account verifications',
        description:
          'The verifications of a crypto external account of the acting user, one per level ever started (`declared` first), ' +
          'each with its request for information: what is asked, how to answer it, and the proof once answered. Only crypto ' +
          'addresses have verifications: any other external account is 404, as an unknown one is.',
        tags,
        headers: ActingRequestHeaders,
        params: ExternalAccountParams,
        response: { 200: described(ListVerificationsResponse, 'Verifications retrieved.'), ...errorResponses(400, 401, 403, 404, 429) },
      },
      config: { auth: { scopes: ['core.external-accounts:read'], subjects: USERS } },
    },
    async (request) => ({ verifications: await externalAccounts.listVerifications(principalOf(request), request.params.externalAccountId) }),
  )

  app.post(
    '/core/external-accounts/:externalAccountId/verifications',
    {
      schema: {
        operationId: 'core.start-external-account-verification',
        summary: 'Start external account verification',
        description:
          'Tessera\'s own: starts a verification level of a crypto external account of the acting user. `declared` offers a ' +
          'self-declaration (`proofOptions.selfDeclaration.schema`), `verified` a message to sign with the address\'s key ' +
          '(`proofOptions.messageSigning.message`, unique to the verification). 201 when started; a level started before is ' +
          'returned as it stands, with 200, never a second time.',
        tags,
        headers: ActingRequestHeaders,
        params: ExternalAccountParams,
        body: StartVerificationBody,
        response: {
          200: described(VerificationResponse, 'The level was started before: the verification as it stands.'),
          201: described(VerificationResponse, 'Verification started.'),
          ...errorResponses(400, 401, 403, 404, 413, 415, 429),
        },
      },
      config: { auth: { scopes: ['core.external-accounts:update'], subjects: USERS } },
    },
    async (request, reply) => {
      const { verification, started } = await externalAccounts.startVerification(principalOf(request), request.params.externalAccountId, request.body.level)
      return reply.status(started ? 201 : 200).send({ verification })
    },
  )

  app.put(
    '/core/external-accounts/:externalAccountId/verifications/:level',
    {
      schema: {
        operationId: 'core.answer-external-account-verification',
        summary: 'Answer external account verification',
        description:
          'Tessera\'s own: answers a started verification level with its proof, which completes it. `declared`: the ' +
          'self-declaration, validated against the very schema the verification serves (400 `request_invalid` otherwise). ' +
          '`verified`: the signature of the verification\'s message, verified against the address and its network (409 ' +
          '`crypto_address_signature_invalid` with `details.reason` otherwise). A refused proof changes nothing; a completed ' +
          'level is 409 `operation_not_allowed` (`verification-update-not-allowed`); a level not started is 404.',
        tags,
        headers: ActingRequestHeaders,
        params: VerificationParams,
        body: AnswerVerificationBody,
        response: { 200: described(VerificationResponse, 'Verification completed.'), ...errorResponses(400, 401, 403, 404, 409, 413, 415, 429) },
      },
      config: { auth: { scopes: ['core.external-accounts:update'], subjects: USERS } },
    },
    async (request) => ({
      verification: await externalAccounts.answerVerification(principalOf(request), request.params.externalAccountId, request.params.level, request.body.proof),
    }),
  )
}
