import Type, { type Static } from 'typebox'
import { component, Timestamp } from '../../http/schemas.ts'

export const RequestForInformation = component(
  'request-for-information',
  Type.Object(
    {
      id: Type.String({ format: 'uuid', description: 'The id of the request.' }),
      transactionId: Type.Optional(Type.String({ format: 'uuid', description: 'The transaction it holds; absent while it answers a withdrawal quote not executed yet.' })),
      type: Type.Literal('travel-rule', { description: 'What is asked: the other party of a crypto movement (the travel rule).' }),
      status: Type.Union([Type.Literal('pending'), Type.Literal('ok'), Type.Literal('expired'), Type.Literal('failed')], {
        description: '`pending` until answered; `ok` once an answer was accepted (the transaction goes on); `failed` when the travel-rule network refused it, `expired` when nobody answered in time (the transaction fails).',
      }),
      data: Type.Optional(Type.Object({}, { additionalProperties: true, description: 'The answer, as it was accepted.' })),
      context: Type.Object(
        {
          direction: Type.Union([Type.Literal('deposit'), Type.Literal('withdrawal')]),
          party: Type.Union([Type.Literal('originator'), Type.Literal('beneficiary')], { description: 'Who must be described: a deposit\'s originator, a withdrawal\'s beneficiary.' }),
          network: Type.String(),
          asset: Type.String(),
          amount: Type.String({ description: 'What moves, in the asset.' }),
          addresses: Type.Array(Type.String(), { description: 'The other end\'s addresses (a deposit\'s senders, a withdrawal\'s destination).' }),
        },
        { description: 'What the request asks about.' },
      ),
      statusDetails: Type.Optional(Type.Object({ reason: Type.String({ description: 'Why it failed or expired.' }) })),
      expiresAt: { ...Timestamp, description: 'Until when it can be answered.' },
      createdAt: Timestamp,
      updatedAt: Timestamp,
    },
    { description: 'A request for information about a transaction.' },
  ),
)
export type RequestForInformation = Static<typeof RequestForInformation>

export const ListRequestsForInformationResponse = component(
  'list-transaction-requests-for-information-response',
  Type.Object({ requestsForInformation: Type.Array(RequestForInformation) }),
)
export const RequestForInformationResponse = component('request-for-information-response', Type.Object({ requestForInformation: RequestForInformation }))

export const RequestForInformationParams = Type.Object({
  transactionId: Type.String({ format: 'uuid', description: 'The id of the transaction.' }),
  requestForInformationId: Type.String({ format: 'uuid', description: 'The id of the request for information.' }),
})

export const UpdateRequestForInformationBody = component(
  'update-transaction-request-for-information-request',
  Type.Object(
    {
      data: Type.Object({}, {
        additionalProperties: true,
        minProperties: 1,
        description:
          'The answer, in the travel-rule network\'s shape: `ivms101` describing the other party (a deposit\'s ' +
          '`originator.originatorPersons`, a withdrawal\'s `beneficiary.beneficiaryPersons`), or, when it is the user ' +
          'themself (`originatorEqualsBeneficiary: true`), a `proof` that they control the address: a confirmed ' +
          'self-declaration, or a message signed with its key. See docs/travel-rule.md.',
      }),
    },
    { description: 'The travel-rule information that answers the request.' },
  ),
)
export type UpdateRequestForInformationBody = Static<typeof UpdateRequestForInformationBody>
