import Type, { type Static } from 'typebox'
import { ActingRequestHeaders, component, Timestamp } from '../../http/schemas.ts'

export const TERMS_OF_SERVICE_CODES = [
  'general-us-hq',
  'general-gb-fca',
  'general-pt-bop',
  'general-lt-fcs',
  'general-bs-scb',
  'unique-account-number-viban',
] as const
export const TERMS_OF_SERVICE_TYPES = ['general', 'unique-account-number'] as const
export const USER_TYPES = ['individual', 'business'] as const

export const TermsOfServiceCode = component(
  'terms-of-service-code',
  Type.Enum([...TERMS_OF_SERVICE_CODES], { description: 'The code of the terms of service.' }),
)
export const TermsOfServiceType = component(
  'terms-of-service-type',
  Type.Enum([...TERMS_OF_SERVICE_TYPES], {
    description: '`general`: the terms a user agrees to when created; `unique-account-number`: the terms of an optional feature, accepted later.',
  }),
)
const UserType = Type.Enum([...USER_TYPES])
const CountryCode = Type.String({ pattern: '^[A-Z]{2}$' })

/** One entry of reference-data/terms-of-service.json. */
export const TermsOfServiceDefinition = Type.Object(
  {
    code: TermsOfServiceCode,
    type: TermsOfServiceType,
    countries: Type.Optional(Type.Array(CountryCode, { minItems: 1, uniqueItems: true })),
    userTypes: Type.Optional(Type.Array(UserType, { minItems: 1, uniqueItems: true })),
    // Patterns, not formats: the reference-data loader checks shapes only; checkCatalogue checks the values.
    modifiedAt: Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d{1,3})?Z$' }),
    url: Type.Optional(Type.String({ pattern: '^https?://\\S+$' })),
  },
  { additionalProperties: false },
)
export type TermsOfServiceDefinition = Static<typeof TermsOfServiceDefinition>
export const TermsOfServiceFile = Type.Object({ termsOfService: Type.Array(TermsOfServiceDefinition) })
export type TermsOfServiceFile = Static<typeof TermsOfServiceFile>

export const TermsOfService = component(
  'terms-of-service',
  Type.Object({
    code: TermsOfServiceCode,
    type: TermsOfServiceType,
    countries: Type.Optional(Type.Array(Type.String(), { description: 'Countries of residence the terms apply to; omitted: every country.' })),
    userTypes: Type.Optional(Type.Array(UserType, { description: 'User types the terms apply to; omitted: every type.' })),
    modifiedAt: { ...Timestamp, description: 'When the terms were last changed: their version.' },
    url: Type.Optional(Type.String({ format: 'uri', description: 'Where the text of the terms is published.' })),
    acceptedAt: Type.Optional({ ...Timestamp, description: 'When the user the request acts for accepted the terms; omitted when not accepted or not acting for a user.' }),
  }),
)
export type TermsOfService = Static<typeof TermsOfService>

export const ListTermsOfServiceQuery = Type.Object({
  type: Type.Optional(TermsOfServiceType),
  country: Type.Optional(Type.String({ pattern: '^[A-Z]{2}$', description: 'Only terms that apply to residents of this country (ISO 3166-1 alpha-2).' })),
  userType: Type.Optional(Type.Enum([...USER_TYPES], { description: 'Only terms that apply to users of this type.' })),
})
export type ListTermsOfServiceQuery = Static<typeof ListTermsOfServiceQuery>

export const ListTermsOfServiceResponse = component('list-terms-of-service-response', Type.Object({ termsOfService: Type.Array(TermsOfService) }))
export const GetTermsOfServiceResponse = component('get-terms-of-service-response', Type.Object({ termsOfService: TermsOfService }))
export const AcceptTermsOfServiceResponse = component('accept-terms-of-service-response', Type.Object({ termsOfService: TermsOfService }))

export const TermsOfServiceParams = Type.Object({
  termsOfService: Type.String({ minLength: 1, maxLength: 64, description: 'The code of the terms of service.' }),
})

export const AcceptTermsOfServiceParams = Type.Object({
  termsOfService: component(
    'terms-of-service-code-excluding-general',
    Type.Enum(TERMS_OF_SERVICE_CODES.filter((code) => !code.startsWith('general-')), {
      description: 'Terms that are accepted on their own; general terms are accepted when the user is created.',
    }),
  ),
})

export const TermsOfServiceHeaders = ActingRequestHeaders
