import type { FastifyReply, FastifyRequest } from 'fastify'
import type { TSchema } from 'typebox'
import { notForWidgetSessions } from '../../http/principal.ts'
import { described, errorResponses } from '../../http/schemas.ts'
import { principalOf, type App } from '../../http/types.ts'
import { operationNotAllowed } from '../../lib/errors.ts'
import { KYC_WIDGET_PROCESSES } from './kyc.machine.ts'
import {
  KycFormRequestHeaders,
  KycOverview,
  KycOverviewQuery,
  KycRequestHeaders,
  ProcessResponses,
  UpdateAddressBody,
  UpdateCryptoRiskAssessmentBody,
  UpdateCustomerDueDiligenceBody,
  UpdateEmailBody,
  UpdateEnhancedDueDiligenceBody,
  UpdateIdentityBody,
  UpdatePhoneBody,
  UpdateProfileBody,
  UpdateProofOfAddressBody,
  UpdateSelfCategorizationBody,
  UpdateTaxDetailsBody,
} from './kyc.schemas.ts'
import type { KycService } from './kyc.service.ts'

const SUBJECTS = ['user:individual'] as const

function acceptLanguage(request: FastifyRequest): string | undefined {
  const value = request.headers['accept-language']
  return Array.isArray(value) ? value.join(',') : value
}

function withLanguage<T>(reply: FastifyReply, result: { body: T; language: string }): T {
  reply.header('content-language', result.language)
  return result.body
}

/**
 * `detailed` is a comma-separated list (`detailed=identity,phone`); repeated parameters and the bracketed form
 * (`detailed[]=identity&detailed[]=phone`) mean the same.
 */
function normalizeDetailed(query: Record<string, unknown>): void {
  const values = [query.detailed, query['detailed[]']].flat().filter((v): v is string => typeof v === 'string')
  delete query['detailed[]']
  if (values.length === 0) return
  query.detailed = values.flatMap((v) => v.split(',')).map((v) => v.trim()).filter((v) => v !== '')
}

/** The processes the hosted KYC widget submits: a KYC widget session's token may update these. */
const WIDGET_PROCESSES: readonly string[] = KYC_WIDGET_PROCESSES

/**
 * A widget session's token updates only the processes of its own KYC session, and only as the hosted widget does:
 * documents for the service to check, never a verification the client alone may attest (`output`).
 */
function checkWidgetSession(request: FastifyRequest, process: string): void {
  const { widget, scopes } = principalOf(request)
  if (!widget) return
  if (widget.kind !== 'kyc' || !widget.processes?.includes(process)) throw notForWidgetSessions([`core.kyc.${process}:update`], scopes)
  const body = request.body as { type?: unknown; output?: unknown } | undefined
  if (process !== 'profile' && (body?.type !== 'document-submission' || body.output !== undefined)) {
    throw operationNotAllowed('A KYC widget session submits documents for the service to check; it cannot attest a verification', ['permission-denied'])
  }
}

const CONTENT_LANGUAGE = { 'content-language': { schema: { type: 'string' }, description: 'Language of the form texts.' } }

export function kycRoutes(kyc: KycService) {
  return async function routes(app: App): Promise<void> {
    app.get(
      '/core/kyc',
      {
        schema: {
          operationId: 'core.get-kyc-overview',
          summary: 'Get KYC overview',
          description:
            'The overall KYC status of the user the request acts for and each of its processes. Processes named in `detailed` ' +
            'carry their `hint` (the questions that remain), in the language `Accept-Language` selects.',
          tags: ['KYC'],
          headers: KycFormRequestHeaders,
          querystring: KycOverviewQuery,
          response: { 200: described(KycOverview, 'KYC overview retrieved.', CONTENT_LANGUAGE), ...errorResponses(400, 401, 403, 404, 409, 429) },
        },
        config: { auth: { scopes: ['core.kyc:read'], subjects: SUBJECTS } },
        preValidation: async (request) => normalizeDetailed(request.query as Record<string, unknown>),
      },
      async (request, reply) => withLanguage(reply, await kyc.overview(principalOf(request), request.query.detailed ?? [], acceptLanguage(request))),
    )

    const patch = <B extends TSchema>(
      process: keyof typeof ProcessResponses,
      summary: string,
      description: string,
      body: B,
      handler: (request: FastifyRequest<{ Body: unknown }>, reply: FastifyReply) => Promise<unknown>,
      form = false,
    ) => {
      const widget = WIDGET_PROCESSES.includes(process)
      return app.patch(
        `/core/kyc/processes/${process}`,
        {
          schema: {
            operationId: `core.update-kyc-${process}`,
            summary,
            description,
            tags: ['KYC'],
            headers: form ? KycFormRequestHeaders : KycRequestHeaders,
            body,
            response: {
              200: described(ProcessResponses[process], 'Process updated.', form ? CONTENT_LANGUAGE : undefined),
              ...errorResponses(400, 401, 403, 404, 409, 413, 415, 429, 503),
            },
          },
          config: { auth: { scopes: [`core.kyc.${process}:update`], subjects: SUBJECTS, ...(widget ? { widgetSessions: true } : {}) } },
          ...(widget ? { preHandler: async (request: FastifyRequest) => checkWidgetSession(request, process) } : {}),
        },
        handler as never,
      )
    }

    patch(
      'profile',
      'Update profile',
      'Changes what the user declares about themselves; the address country cannot change. Fields `verification.rules` does not let an update ' +
        'change are ignored, each with a warning in `warnings.input`. `input.details` (deprecated) answers the profile\'s form (`hint`, served while ' +
        'the profile is pending and `details` is used, in the language `Accept-Language` selects).',
      UpdateProfileBody,
      async (request, reply) => {
        const result = await kyc.updateProfile(principalOf(request), request.body as UpdateProfileBody, acceptLanguage(request))
        if (result.language !== null) reply.header('content-language', result.language)
        return result.body
      },
      true,
    )
    patch('address', 'Update address', 'Changes the address of residence (kept in step with the profile).', UpdateAddressBody, async (request) =>
      kyc.updateAddress(principalOf(request), request.body as UpdateAddressBody),
    )
    patch(
      'email',
      'Update email',
      'Registers an email (`pending`), with `output.verifiedAt` when the client verified it (`ok`); `output` alone verifies the registered email.',
      UpdateEmailBody,
      async (request) => kyc.updateEmail(principalOf(request), request.body as UpdateEmailBody),
    )
    patch(
      'phone',
      'Update phone',
      'Registers a phone number (`pending`), with `output.verifiedAt` when the client verified it (`ok`); `output` alone verifies the registered number. ' +
        'Numbers must be valid for `country` and are stored in E.164.',
      UpdatePhoneBody,
      async (request) => kyc.updatePhone(principalOf(request), request.body as UpdatePhoneBody),
    )
    patch(
      'identity',
      'Update identity',
      'Submits identity evidence: with `output` the client attests its own verification; without it the service checks it.',
      UpdateIdentityBody,
      async (request) => kyc.updateIdentity(principalOf(request), request.body as UpdateIdentityBody),
    )
    patch(
      'proof-of-address',
      'Update proof of address',
      'Submits proof of address: with `output` the client attests its own verification; without it the service checks it.',
      UpdateProofOfAddressBody,
      async (request) => kyc.updateProofOfAddress(principalOf(request), request.body as UpdateProofOfAddressBody),
    )
    patch(
      'customer-due-diligence',
      'Update customer due diligence',
      'Answers one category of the customer due diligence form.',
      UpdateCustomerDueDiligenceBody,
      async (request, reply) => withLanguage(reply, await kyc.updateCustomerDueDiligence(principalOf(request), request.body as UpdateCustomerDueDiligenceBody, acceptLanguage(request))),
      true,
    )
    patch(
      'enhanced-due-diligence',
      'Update enhanced due diligence',
      'Attaches proof of source of funds, with `output.verifiedAt` once the client verified it. Only for users whose due diligence scored high.',
      UpdateEnhancedDueDiligenceBody,
      async (request) => kyc.updateEnhancedDueDiligence(principalOf(request), request.body as UpdateEnhancedDueDiligenceBody),
    )
    patch(
      'crypto-risk-assessment',
      'Update crypto risk assessment',
      'Answers one category of the crypto risk assessment form.',
      UpdateCryptoRiskAssessmentBody,
      async (request, reply) => withLanguage(reply, await kyc.updateCryptoRiskAssessment(principalOf(request), request.body as UpdateCryptoRiskAssessmentBody, acceptLanguage(request))),
      true,
    )
    patch(
      'self-categorization-statement',
      'Update self-categorization statement',
      'Answers one category of the self-categorization statement (residents of GB). The response carries `hint` while questions remain.',
      UpdateSelfCategorizationBody,
      async (request, reply) => withLanguage(reply, await kyc.updateSelfCategorization(principalOf(request), request.body as UpdateSelfCategorizationBody, acceptLanguage(request))),
      true,
    )
    patch(
      'tax-details',
      'Update tax details',
      'Answers one category of the tax details form.',
      UpdateTaxDetailsBody,
      async (request, reply) => withLanguage(reply, await kyc.updateTaxDetails(principalOf(request), request.body as UpdateTaxDetailsBody, acceptLanguage(request))),
      true,
    )
  }
}
