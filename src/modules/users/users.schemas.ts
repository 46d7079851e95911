import Type, { type Static } from 'typebox'
import { IdempotencyKeyHeader } from '../../http/idempotency.ts'
import { component, Timestamp, UserContextHeaders, Uuid } from '../../http/schemas.ts'
import { CreationErrors, InitialMetadata } from '../metadata/index.ts'

const NoEdgeSpaces = '^\\S.*\\S$|^\\S$'
const CountryCode = component('country-code', Type.String({ pattern: '^[A-Z]{2}$', description: 'ISO 3166-1 alpha-2 country code.' }))
const SubdivisionCode = component(
  'subdivision-code',
  Type.String({ pattern: '^[A-Z]{2}-[A-Z0-9]{1,3}$', description: 'ISO 3166-2 subdivision code.' }),
)

export const TermsOfServiceCode = component(
  'terms-of-service-code-general',
  Type.Enum(['general-us-hq', 'general-gb-fca', 'general-pt-bop', 'general-lt-fcs', 'general-bs-scb'],
    { description: 'General terms of service the user agreed to.' },
  ),
)

const LegalEntityType = Type.Enum(['government-entity', 'non-profit', 'partnership', 'private-limited-company', 'public-company', 'sole-proprietor'],
  { description: 'Legal form of the business.' },
)

const Metadata = InitialMetadata('user')

const Phone = Type.Object(
  {
    number: Type.String({ pattern: '^\\+[0-9]{1,15}$', description: 'E.164 phone number.' }),
    country: CountryCode,
  },
  { description: 'Phone number of the user.' },
)

const AddressForRequest = Type.Object(
  {
    country: CountryCode,
    subdivision: Type.Optional(SubdivisionCode),
    city: Type.Optional(Type.String({ pattern: NoEdgeSpaces, maxLength: 100 })),
    line1: Type.Optional(Type.String({ pattern: NoEdgeSpaces, maxLength: 150 })),
    line2: Type.Optional(Type.String({ pattern: NoEdgeSpaces, maxLength: 100 })),
    postalCode: Type.Optional(Type.String({ pattern: NoEdgeSpaces, maxLength: 20 })),
  },
  { additionalProperties: false, description: 'Address of residency.' },
)

const Email = (maxLength: number) => Type.String({ format: 'email', maxLength, description: 'Email address; unique among the organization\'s users.' })

const PartnerOnboardedAt = Type.Optional(
  Type.String({ format: 'date-time', deprecated: true, description: 'When the client onboarded the user; in the past.' }),
)

const IndividualIdentity = { type: Type.Literal('individual'), email: Email(254), termsOfService: TermsOfServiceCode }

export const CreateIndividualUser = Type.Object(
  {
    ...IndividualIdentity,
    phone: Type.Optional(Phone),
    fullName: Type.Optional(Type.String({ pattern: '^\\S+\\s+\\S+(\\s+\\S+)*$', maxLength: 200, description: 'Full legal name (at least two words).' })),
    birthdate: Type.Optional(Type.String({ format: 'date', description: 'Date of birth; the user must be 18 to 100 years old.' })),
    primaryCitizenship: CountryCode,
    address: AddressForRequest,
    metadata: Type.Optional(Metadata),
  },
  { additionalProperties: false, title: 'Individual' },
)

export const CreateLegacyIndividualUser = Type.Object(
  {
    ...IndividualIdentity,
    citizenshipCountry: { ...CountryCode, deprecated: true },
    country: { ...CountryCode, deprecated: true },
    subdivision: Type.Optional({ ...SubdivisionCode, deprecated: true }),
    partnerOnboardedAt: PartnerOnboardedAt,
    metadata: Type.Optional(Metadata),
  },
  { additionalProperties: false, title: 'Individual (legacy)' },
)

export const CreateBusinessUser = Type.Object(
  {
    type: Type.Literal('business'),
    email: Email(255),
    country: CountryCode,
    subdivision: Type.Optional(SubdivisionCode),
    legalEntityType: LegalEntityType,
    termsOfService: TermsOfServiceCode,
    partnerOnboardedAt: PartnerOnboardedAt,
    metadata: Type.Optional(Metadata),
  },
  { title: 'Business' },
)

export const CreateUserBody = component(
  'create-user-request',
  Type.Union([CreateIndividualUser, CreateLegacyIndividualUser, CreateBusinessUser], {
    description: 'An individual (current or legacy shape) or a business user. `type` defaults to `individual`.',
    examples: [
      {
        type: 'individual',
        email: 'john.doe@example.com',
        termsOfService: 'general-gb-fca',
        fullName: 'John Doe',
        birthdate: '1987-01-01',
        primaryCitizenship: 'GB',
        address: { country: 'GB', subdivision: 'GB-MAN', city: 'Manchester', line1: '1 High Street', postalCode: 'M4 1AA' },
        metadata: { externalId: 'crm-123' },
      },
    ],
  }),
)
export type CreateUserBody = Static<typeof CreateUserBody>

export const Address = component(
  'address',
  Type.Object({
    country: Type.String(),
    subdivision: Type.Optional(Type.String()),
    city: Type.Optional(Type.String()),
    line1: Type.Optional(Type.String()),
    line2: Type.Optional(Type.String()),
    postalCode: Type.Optional(Type.String()),
  }),
)

export const IndividualUser = component(
  'user-type-individual',
  Type.Object({
    id: Uuid,
    type: Type.Literal('individual'),
    email: Type.String({ format: 'email' }),
    fullName: Type.Optional(Type.String()),
    birthdate: Type.Optional(Type.String()),
    primaryCitizenship: Type.String(),
    citizenshipCountry: Type.Optional(Type.String({ deprecated: true, description: 'Same as `primaryCitizenship`.' })),
    address: Address,
    phone: Type.Optional(Type.Object({ number: Type.String(), country: Type.String() })),
    partnerOnboardedAt: Type.Optional(Type.String({ format: 'date-time', deprecated: true })),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  }),
)

export const BusinessUser = component(
  'user-type-business',
  Type.Object({
    id: Uuid,
    type: Type.Literal('business'),
    name: Type.Optional(Type.String({ description: 'Legal name of the business.' })),
    email: Type.String({ format: 'email' }),
    address: Type.Optional(Address),
    partnerOnboardedAt: Type.Optional(Type.String({ format: 'date-time', deprecated: true })),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  }),
)

export const User = component('user', Type.Union([IndividualUser, BusinessUser]))
export type User = Static<typeof User>

export const CreateUserResponse = component(
  'create-user-response',
  Type.Object({
    user: User,
    errors: CreationErrors,
  }),
)

export const GetUserResponse = component('get-user-response', Type.Object({ user: User }))

export const DeleteUserBody = component(
  'delete-user-review',
  Type.Object({
    review: Type.Object({
      reason: Type.Enum(['business-decision', 'closure-per-user-request', 'compliance-violation', 'fraud-violation', 'other'],
        { description: 'Why the user is deleted.' },
      ),
      note: Type.Optional(Type.String({ pattern: NoEdgeSpaces, maxLength: 1000, description: 'Free-text note about the deletion.' })),
    }),
  }),
)
export type DeleteUserBody = Static<typeof DeleteUserBody>

export const UserRequestHeaders = Type.Object({ ...IdempotencyKeyHeader, ...UserContextHeaders })
