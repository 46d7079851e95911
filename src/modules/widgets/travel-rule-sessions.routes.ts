import { ActingRequestHeaders, described, errorResponses } from '../../http/schemas.ts'
import { principalOf, type App } from '../../http/types.ts'
import { RequestForInformationResponse } from '../travel-rule/index.ts'
import { AnswerTravelRuleWidgetBody, CreateTravelRuleWidgetSessionBody, CreateTravelRuleWidgetSessionResponse, CurrentTravelRuleWidgetSessionResponse } from './travel-rule-sessions.schemas.ts'
import type { TravelRuleWidgetSessionsService } from './travel-rule-sessions.service.ts'

const USERS = ['user:business', 'user:individual'] as const

export function travelRuleWidgetSessionsRoutes(sessions: TravelRuleWidgetSessionsService) {
  return async function routes(app: App): Promise<void> {
    const tags = ['Widgets']

    app.post(
      '/widgets/travel-rule/sessions',
      {
        schema: {
          operationId: 'widgets.create-travel-rule-widget-session',
          summary: 'Create travel-rule widget session',
          description:
            'Opens a travel-rule widget session for the acting user: `deposit-form` describes who sent a held crypto deposit ' +
            '(`data.requestForInformationId`, or `data.transactionId`), `withdrawal-form` who receives a crypto withdrawal ' +
            'before its quote (`data.quoteId`, with the `travel-rule` requirement) is executed. Hand `session` to the widget ' +
            'SDK as it is; its token answers that one request only, for `WIDGET_SESSION_TTL_SECONDS`. 404 for a request, ' +
            'transaction or quote that is not the user\'s (or an executed or expired quote); 409 `operation_not_allowed`: ' +
            '`quote-missing-travel-rule-requirement`, `request-for-information-update-not-allowed` (already answered), ' +
            '`permission-denied` where the deployment has no travel-rule network. See docs/travel-rule.md.',
          tags,
          headers: ActingRequestHeaders,
          body: CreateTravelRuleWidgetSessionBody,
          response: { 201: described(CreateTravelRuleWidgetSessionResponse, 'Session created.'), ...errorResponses(400, 401, 403, 404, 409, 413, 415, 429) },
        },
        config: { auth: { scopes: ['widgets.travel-rule.sessions:create'], subjects: USERS } },
      },
      async (request, reply) => {
        reply.status(201)
        return { session: await sessions.create(principalOf(request), request.body) }
      },
    )

    app.get(
      '/widgets/travel-rule/sessions/current',
      {
        schema: {
          operationId: 'widgets.get-current-travel-rule-widget-session',
          summary: 'Get the current travel-rule widget session',
          description: 'For the hosted travel-rule widget page: the session its token was issued for, its request for information and the message the user signs to prove their own wallet. Only a travel-rule session\'s token reaches it; any other gets 404.',
          tags,
          response: { 200: described(CurrentTravelRuleWidgetSessionResponse, 'The session.'), ...errorResponses(400, 401, 403, 404, 429) },
        },
        config: { auth: { scopes: [], subjects: USERS, widgetSessions: true } },
      },
      async (request) => sessions.current(principalOf(request)),
    )

    app.put(
      '/widgets/travel-rule/sessions/current/request-for-information',
      {
        schema: {
          operationId: 'widgets.answer-travel-rule-widget-session',
          summary: 'Answer the travel-rule widget session\'s request',
          description:
            'For the hosted travel-rule widget page: answers the request for information its session is bound to, as ' +
            '`PUT /core/transactions/{transactionId}/requests-for-information/{requestForInformationId}` does (same checks, same errors).',
          tags,
          body: AnswerTravelRuleWidgetBody,
          response: { 200: described(RequestForInformationResponse, 'Request for information updated.'), ...errorResponses(400, 401, 403, 404, 409, 413, 415, 429, 503) },
        },
        config: { auth: { scopes: ['core.transactions.requests-for-information:update'], subjects: USERS, widgetSessions: true } },
      },
      async (request) => sessions.answer(principalOf(request), request.body.data as Record<string, unknown>),
    )
  }
}
