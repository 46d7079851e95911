import Type, { type Static } from 'typebox'
import { component, Timestamp } from '../../http/schemas.ts'
import { RequestForInformation } from '../travel-rule/index.ts'

export const TRAVEL_RULE_WIDGET_FLOWS = ['deposit-form', 'withdrawal-form'] as const
export type TravelRuleWidgetFlow = (typeof TRAVEL_RULE_WIDGET_FLOWS)[number]

const Domain = Type.String({
  pattern: '^[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$',
  description: 'The host name of the page that embeds the widget: the widget talks to no other.',
})

const Options = Type.Optional(
  Type.Object(
    { theme: Type.Optional(Type.Object({ appearance: Type.Optional(Type.Union([Type.Literal('light'), Type.Literal('dark')])) }, { additionalProperties: true })) },
    { additionalProperties: true, description: 'How the widget looks.' },
  ),
)

const DepositForm = component(
  'create-travel-rule-widget-session-deposit-form-flow',
  Type.Object(
    {
      flow: Type.Literal('deposit-form'),
      data: Type.Object(
        {
          requestForInformationId: Type.Optional(Type.String({ format: 'uuid', description: 'The deposit\'s request for information the form answers.' })),
          transactionId: Type.Optional(Type.String({ format: 'uuid', description: 'Or the held deposit, whose pending request the form answers.' })),
          domain: Type.Optional(Domain),
        },
        { additionalProperties: true, minProperties: 1 },
      ),
      options: Options,
    },
    { description: 'Describe who sent a held crypto deposit (its originator), and prove the user\'s own wallet where it is theirs.' },
  ),
)

const WithdrawalForm = component(
  'create-travel-rule-widget-session-withdrawal-form-flow',
  Type.Object(
    {
      flow: Type.Literal('withdrawal-form'),
      data: Type.Object(
        {
          quoteId: Type.String({ format: 'uuid', description: 'The crypto withdrawal quote (with the `travel-rule` requirement) whose beneficiary the form describes, before it is executed.' }),
          domain: Type.Optional(Domain),
        },
        { additionalProperties: true },
      ),
      options: Options,
    },
    { description: 'Describe who receives a crypto withdrawal (its beneficiary) before the quote is executed: the withdrawal is then not held.' },
  ),
)

export const CreateTravelRuleWidgetSessionBody = Type.Union([DepositForm, WithdrawalForm], { description: 'What the widget session is for.' })
export type CreateTravelRuleWidgetSessionBody = Static<typeof CreateTravelRuleWidgetSessionBody>

const Flow = Type.Union([Type.Literal('deposit-form'), Type.Literal('withdrawal-form')], { description: 'The flow the session is for.' })

export const TravelRuleSessionParameters = Type.Object(
  {
    init: Type.Object(
      {
        authToken: Type.String({ description: 'The user\'s token at the travel-rule node (short-lived).' }),
        nodeUrl: Type.String({ format: 'uri', description: 'Where the widget reaches the travel-rule node.' }),
      },
      { description: 'How the widget reaches the travel-rule network.' },
    ),
    options: Type.Object(
      {
        proofs: Type.Object({
          fallbacks: Type.Array(Type.String(), { description: 'Proofs accepted where the wallet cannot sign: `self-declaration`.' }),
          reuseProof: Type.Boolean({ description: 'Whether an address the user already proved (a verified external account) needs no new proof.' }),
          deminimis: Type.Object({
            currency: Type.String(),
            proofTypes: Type.Array(Type.String(), { description: 'Proofs enough below the threshold.' }),
            threshold: Type.Number({ description: 'Below this value (in `currency`) these proofs are enough; at or above it a signed message is needed.' }),
          }),
        }),
        theme: Type.Optional(Type.Object({}, { additionalProperties: true })),
      },
      { additionalProperties: true, description: 'How the widget asks.' },
    ),
    transaction: Type.Object(
      {
        amountDecimal: Type.Number({ description: 'What moves, in `asset`.' }),
        asset: Type.String(),
        network: Type.String(),
        customer: Type.Object({ name: Type.String(), type: Type.Union([Type.Literal('natural'), Type.Literal('legal')]) }, { description: 'The user.' }),
        assetPrice: Type.Optional(Type.Object({ price: Type.Number(), currency: Type.String() }, { description: 'The asset\'s price now (at the mid), to weigh the movement against `options.proofs.deminimis`.' })),
        source: Type.Optional(Type.Array(Type.String(), { description: 'A deposit\'s sending addresses.' })),
        destination: Type.Optional(Type.String({ description: 'A withdrawal\'s destination address.' })),
        requestForInformation: Type.Object({ id: Type.String({ format: 'uuid' }) }),
      },
      { additionalProperties: true, description: 'The movement the form is about.' },
    ),
  },
  { description: 'What the widget needs to run.' },
)

const SessionData = Type.Object(
  {
    provider: Type.String({ description: 'The travel-rule network the deployment uses.' }),
    parameters: TravelRuleSessionParameters,
  },
  { description: 'The travel-rule network\'s parameters.' },
)

export const TravelRuleWidgetSession = component(
  'travel-rule-widget-session',
  Type.Object(
    {
      flow: Flow,
      url: Type.String({ format: 'uri', description: 'The page to load in the widget\'s frame (the widget SDK does).' }),
      token: Type.String({ description: 'The session\'s credential, handed to the widget only: it acts for this user and this request for information alone, for a short time.' }),
      data: SessionData,
    },
    { description: 'A travel-rule widget session, handed to the widget SDK as it is.' },
  ),
)

export const CreateTravelRuleWidgetSessionResponse = component('create-travel-rule-widget-session-response', Type.Object({ session: TravelRuleWidgetSession }))

export const CurrentTravelRuleWidgetSessionResponse = component(
  'current-travel-rule-widget-session-response',
  Type.Object(
    {
      session: Type.Object({ flow: Flow, data: SessionData, expiresAt: Timestamp, domain: Type.Optional(Domain) }),
      requestForInformation: RequestForInformation,
      messageToSign: Type.String({ description: 'What the user signs with the address\'s key to prove it is theirs.' }),
    },
    { description: 'The session a travel-rule widget runs, as its token shows it: for the hosted page.' },
  ),
)

export const AnswerTravelRuleWidgetBody = component(
  'answer-travel-rule-widget-request',
  Type.Object(
    { data: Type.Object({}, { additionalProperties: true, minProperties: 1, description: 'The answer, as the request for information takes it (docs/travel-rule.md).' }) },
    { description: 'The travel-rule information the widget collected.' },
  ),
)
