import { ActingRequestHeaders, described, errorResponses } from '../../http/schemas.ts'
import { principalOf, type App } from '../../http/types.ts'
import { CreatePaymentWidgetSessionBody, CreatePaymentWidgetSessionResponse, CurrentPaymentWidgetSessionResponse } from './widgets.schemas.ts'
import type { WidgetsService } from './widgets.service.ts'

const USERS = ['user:business', 'user:individual'] as const

export function widgetsRoutes(widgets: WidgetsService) {
  return async function routes(app: App): Promise<void> {
    app.post(
      '/widgets/payment/sessions',
      {
        schema: {
          operationId: 'widgets.create-payment-widget-session',
          summary: 'Create payment widget session',
          description:
            'Opens a payment widget session for the acting user: `authorize` (execute a card deposit quote, with the card ' +
            'issuer\'s 3-D Secure), `select-for-deposit` or `select-for-withdrawal` (pick or add a card). Hand `session` to ' +
            'the widget SDK as it is. The session\'s token acts for this user and flow (and quote) only, for ' +
            '`WIDGET_SESSION_TTL_SECONDS`. 404 for a quote that is not the user\'s, was executed or expired; 409 ' +
            '`operation_not_allowed` (`permission-denied`) where the deployment takes no card payments, or for Apple Pay ' +
            'and Google Pay, not supported yet. See docs/payment-widget.md.',
          tags: ['Widgets'],
          headers: ActingRequestHeaders,
          body: CreatePaymentWidgetSessionBody,
          response: { 201: described(CreatePaymentWidgetSessionResponse, 'Session created.'), ...errorResponses(400, 401, 403, 404, 409, 413, 415, 429) },
        },
        config: { auth: { scopes: ['widgets.payment.sessions:create'], subjects: USERS } },
      },
      async (request, reply) => {
        reply.status(201)
        return { session: await widgets.createPaymentSession(principalOf(request), request.body) }
      },
    )

    app.get(
      '/widgets/payment/sessions/current',
      {
        schema: {
          operationId: 'widgets.get-current-payment-widget-session',
          summary: 'Get the current payment widget session',
          description:
            'For the hosted payment widget page: the session its token was issued for (flow, quote, expiry) and how the ' +
            'widget behaves. Only a payment widget session\'s token reaches it; any other token gets 404.',
          tags: ['Widgets'],
          response: { 200: described(CurrentPaymentWidgetSessionResponse, 'The session.'), ...errorResponses(400, 401, 403, 404, 429) },
        },
        config: { auth: { scopes: [], subjects: USERS, widgetSessions: true } },
      },
      async (request) => widgets.currentPaymentSession(principalOf(request)),
    )
  }
}
