import { ActingRequestHeaders, described, errorResponses } from '../../http/schemas.ts'
import { principalOf, type App } from '../../http/types.ts'
import { CreateKycWidgetSessionBody, CreateKycWidgetSessionResponse, CurrentKycWidgetSessionResponse } from './kyc-sessions.schemas.ts'
import type { KycWidgetSessionsService } from './kyc-sessions.service.ts'

const INDIVIDUALS = ['user:individual'] as const

export function kycWidgetSessionsRoutes(sessions: KycWidgetSessionsService) {
  return async function routes(app: App): Promise<void> {
    app.post(
      '/widgets/kyc/sessions',
      {
        schema: {
          operationId: 'widgets.create-kyc-widget-session',
          summary: 'Create KYC widget session',
          description:
            'Opens a KYC widget session for the acting individual user: the hosted widget walks them through `processes` ' +
            '(profile, then identity, then proof of address; by default those they still have to submit) and submits them. Hand ' +
            '`session` to the widget SDK as it is. The session\'s token acts for this user and these processes only, for ' +
            '`WIDGET_SESSION_TTL_SECONDS`. 409 `operation_not_allowed`: `permission-denied` where the deployment has no KYC ' +
            'provider; `service-verified-identity-required` (or `-proof-of-address-`) for a document the client already ' +
            'verified itself; `incomplete-profile` when a document is to be submitted while the profile is incomplete and not ' +
            'part of the session. See docs/kyc-widget.md.',
          tags: ['Widgets'],
          headers: ActingRequestHeaders,
          body: CreateKycWidgetSessionBody,
          response: { 201: described(CreateKycWidgetSessionResponse, 'Session created.'), ...errorResponses(400, 401, 403, 404, 409, 413, 415, 429) },
        },
        config: { auth: { scopes: ['widgets.kyc.sessions:create'], subjects: INDIVIDUALS } },
      },
      async (request, reply) => {
        reply.status(201)
        return { session: await sessions.createSession(principalOf(request), request.body) }
      },
    )

    app.get(
      '/widgets/kyc/sessions/current',
      {
        schema: {
          operationId: 'widgets.get-current-kyc-widget-session',
          summary: 'Get the current KYC widget session',
          description:
            'For the hosted KYC widget page: the session its token was issued for (processes, expiry), those processes as ' +
            'they are now, and the files their documents take. Only a KYC widget session\'s token reaches it; any other ' +
            'token gets 404.',
          tags: ['Widgets'],
          response: { 200: described(CurrentKycWidgetSessionResponse, 'The session.'), ...errorResponses(400, 401, 403, 404, 429) },
        },
        config: { auth: { scopes: ['core.kyc:read'], subjects: INDIVIDUALS, widgetSessions: true } },
      },
      async (request) => sessions.currentSession(principalOf(request)),
    )
  }
}
