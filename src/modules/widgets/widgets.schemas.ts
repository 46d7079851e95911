import Type, { type Static } from 'typebox'
import { component, Timestamp } from '../../http/schemas.ts'
import { Quote } from '../quotes/index.ts'

export const PAYMENT_WIDGET_FLOWS = ['authorize', 'select-for-deposit', 'select-for-withdrawal'] as const
export type PaymentWidgetFlow = (typeof PAYMENT_WIDGET_FLOWS)[number]

const Flow = (description: string) => Type.Union([Type.Literal('authorize'), Type.Literal('select-for-deposit'), Type.Literal('select-for-withdrawal')], { description })

const Domain = Type.String({
  pattern: '^[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$',
  description: 'The host name of the page that embeds the widget (`window.location.hostname`): the widget talks to no other.',
})

const AuthorizeFlow = component(
  'create-payment-widget-session-authorize-flow',
  Type.Object(
    {
      flow: Type.Literal('authorize'),
      data: Type.Object(
        {
          quoteId: Type.String({ format: 'uuid', description: 'The quote the widget executes: a card deposit the cardholder authorizes.' }),
          domain: Type.Optional(Domain),
          requirements: Type.Optional(Type.Array(Type.String({ maxLength: 64 }), { maxItems: 10, description: 'The quote\'s requirements, as the quote gave them.' })),
        },
        { additionalProperties: true },
      ),
    },
    { description: 'Authorize a quote: the widget executes it and walks the user through the card issuer\'s 3-D Secure.' },
  ),
)

const selectFlow = (flow: 'select-for-deposit' | 'select-for-withdrawal', description: string) =>
  component(
    `create-payment-widget-session-${flow}-flow`,
    Type.Object(
      {
        flow: Type.Literal(flow),
        data: Type.Optional(Type.Object({ domain: Type.Optional(Domain) }, { additionalProperties: true })),
      },
      { description },
    ),
  )

export const CreatePaymentWidgetSessionBody = Type.Union(
  [
    AuthorizeFlow,
    selectFlow('select-for-deposit', 'Pick or add a card to deposit from: the card number goes from the widget to Tessera only.'),
    selectFlow('select-for-withdrawal', 'Pick or add a card to withdraw to.'),
  ],
  { description: 'What the widget session is for.' },
)
export type CreatePaymentWidgetSessionBody = Static<typeof CreatePaymentWidgetSessionBody>

export const PaymentWidgetSession = component(
  'payment-widget-session',
  Type.Object(
    {
      flow: Flow('The flow the session is for.'),
      url: Type.String({ format: 'uri', description: 'The page to load in the widget\'s frame (the widget SDK does).' }),
      token: Type.String({ description: 'The session\'s credential, handed to the widget only: it acts for this user and flow (and quote) alone, for a short time.' }),
      data: Type.Optional(Type.Object({}, { additionalProperties: true, description: 'What the session was opened with.' })),
    },
    { description: 'A payment widget session, handed to the widget SDK as it is.' },
  ),
)

export const CreatePaymentWidgetSessionResponse = component('create-payment-widget-session-response', Type.Object({ session: PaymentWidgetSession }))

export const CurrentPaymentWidgetSessionResponse = component(
  'current-payment-widget-session-response',
  Type.Object(
    {
      session: Type.Object({
        flow: Flow('The flow the session is for.'),
        data: Type.Object({}, { additionalProperties: true }),
        expiresAt: Timestamp,
      }),
      quote: Type.Optional(Quote),
      settings: Type.Object(
        {
          pollIntervalMs: Type.Integer({ description: 'How often the widget asks for the transaction\'s status.' }),
          maxPollAttempts: Type.Integer({ description: 'How many times at most, before it reports `max-retries-reached`.' }),
          returnUrl: Type.String({ format: 'uri', description: 'Where the card issuer sends the cardholder back to after 3-D Secure.' }),
        },
        { description: 'How the widget behaves.' },
      ),
    },
    { description: 'The session a widget runs, as its token shows it: for the hosted widget page.' },
  ),
)
