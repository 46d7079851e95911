import Type, { type Static, type TSchema } from 'typebox'
import { ActingRequestHeaders, component, ErrorBody, Timestamp, Uuid } from '../../http/schemas.ts'
import { Address } from '../users/index.ts'
import { KYC_PROCESSES, KYC_STATUSES } from './kyc.machine.ts'

const NoEdgeSpaces = '^\\S.*\\S$|^\\S$'
const CountryCode = Type.String({ pattern: '^[A-Z]{2}$', description: 'ISO 3166-1 alpha-2 country code.' })
const SubdivisionCode = Type.String({ pattern: '^[A-Z]{2}-[A-Z0-9]{1,3}$', description: 'ISO 3166-2 subdivision code.' })
const Text = (maxLength: number, description?: string) => Type.String({ pattern: NoEdgeSpaces, maxLength, ...(description ? { description } : {}) })
const DateOnly = Type.String({ format: 'date' })

export const KycStatus = component(
  'kyc-process-status',
  Type.Enum([...KYC_STATUSES], {
    description:
      '`pending`: waiting for the user or the client; `running`: being checked; `ok`: done; `failed`: rejected (some processes may be ' +
      'submitted again); `exempt`: does not apply to this user.',
  }),
)

const PROCESS_DEPENDENCIES = [
  'profile',
  'email',
  'phone',
  'identity',
  'proof-of-address',
  'customer-due-diligence',
  'enhanced-due-diligence',
  'crypto-risk-assessment',
  'self-categorization-statement',
  'tax-details',
] as const

const VerificationProperties = {
  model: Type.Enum(['none', 'partner-verified', 'service-verified'], {
    description: '`partner-verified`: the client attests the outcome (`output.verifiedAt`); `service-verified`: this service checks it; `none`: declared only.',
  }),
  method: Type.Enum(['automatic', 'manual'], { description: '`automatic`: the service runs it when what it depends on (`triggers`) is done.' }),
  triggers: Type.Optional(Type.Array(Type.Enum(['profile', 'identity']), { description: 'Processes whose completion starts this one.' })),
  dependencies: Type.Array(Type.Enum([...PROCESS_DEPENDENCIES]), { description: 'Processes this one builds on.' }),
}

export const KycVerification = component('kyc-process-verification', Type.Object(VerificationProperties, { description: 'How the process is verified.' }))

/** Identity and proof of address also say whether evidence may be submitted now. */
export const KycSubmittableVerification = component(
  'kyc-process-verification-submittable',
  Type.Object(
    { ...VerificationProperties, submittable: Type.Boolean({ description: 'Whether evidence may be submitted now (the process is `pending` or `failed`).' }) },
    { description: 'How the process is verified, and whether it takes a submission now.' },
  ),
)

export const KycHintForm = component(
  'kyc-process-hint-form',
  Type.Object(
    {
      type: Type.Literal('form'),
      formId: Type.Optional(Uuid),
      schema: Type.Record(Type.String(), Type.Unknown(), { description: 'JSON Schema of the answers still expected.' }),
      uiSchema: Type.Record(Type.String(), Type.Unknown(), { description: 'JSON Forms layout (Categorization of Categories and Controls, with rules).' }),
    },
    { description: 'The questions that remain, while the form is not complete.' },
  ),
)


const AddressUpdate = Type.Object(
  {
    subdivision: Type.Optional(SubdivisionCode),
    city: Type.Optional(Text(100)),
    line1: Type.Optional(Text(150)),
    line2: Type.Optional(Type.Union([Text(100), Type.Null()], { description: '`null` removes the second line.' })),
    postalCode: Type.Optional(Text(20)),
  },
  { additionalProperties: false, minProperties: 1, description: 'Fields of the address of residence to change; the country cannot change.' },
)

const VerifiedOutput = Type.Object({ verifiedAt: Timestamp })
const Result = Type.Enum(['approved', 'rejected'])
const Attempts = Type.Object({ used: Type.Integer(), maximum: Type.Integer() })
const AttemptsWithRetry = Type.Object({
  used: Type.Integer(),
  maximum: Type.Integer(),
  retryAt: Type.Optional({ ...Timestamp, description: 'After a rejected attempt, when the next one may start.' }),
})
const Offboard = Type.Object(
  {
    endsAt: { ...Timestamp, description: 'When the period in which the user\'s relationship is wound down ends.' },
    completedAt: Type.Optional({ ...Timestamp, description: 'When the offboarding was completed; present once it is over.' }),
  },
  { description: 'Set when the last attempt is rejected: the user cannot pass this process any more and is offboarded.' },
)

const FormInput = component(
  'kyc-process-input-form',
  Type.Object({ formId: Type.Optional(Type.String()), answers: Type.Record(Type.String(), Type.Unknown()) }, { description: 'Answers given so far.' }),
)

const envelope = <P extends Record<string, TSchema>>(properties: P) =>
  Type.Object({ code: Type.String(), status: KycStatus, verification: Type.Optional(KycVerification), ...properties })

const Rule = Type.Object({ presence: Type.Enum(['required', 'optional', 'disallowed']), editable: Type.Boolean() })
const NestedRule = <P extends Record<string, TSchema>>(rules: P) => Type.Object({ ...Rule.properties, rules: Type.Object(rules) })

export const KycProfileVerification = component(
  'kyc-profile-verification',
  Type.Object(
    {
      ...KycVerification.properties,
      rules: Type.Object(
        {
          fullName: Rule,
          birthdate: Rule,
          birthplace: NestedRule({ country: Rule, town: Rule }),
          citizenshipCountry: Type.Optional({ ...Rule, deprecated: true, description: 'The rule of `primaryCitizenship`, under its former name.' }),
          primaryCitizenship: Rule,
          otherCitizenships: Rule,
          address: NestedRule({ subdivision: Rule, city: Rule, line1: Rule, line2: Rule, postalCode: Rule }),
        },
        { description: 'Which profile fields the profile needs (`presence`) and whether an update may change them (`editable`).' },
      ),
    },
    { description: 'How the profile is verified, and the rules of its fields.' },
  ),
)

export const KycProfile = component(
  'kyc-profile',
  Type.Object({
    code: Type.String(),
    status: KycStatus,
    verification: Type.Optional(KycProfileVerification),
    input: Type.Optional(
      Type.Object({
        fullName: Type.Optional(Type.String()),
        birthdate: Type.Optional(Type.String()),
        birthplace: Type.Optional(Type.Object({ country: Type.String(), town: Type.String() })),
        primaryCitizenship: Type.Optional(Type.String()),
        otherCitizenships: Type.Optional(Type.Array(Type.String())),
        address: Type.Optional(Address),
      }),
    ),
    hint: Type.Optional({
      ...KycHintForm,
      deprecated: true,
      description: 'While the profile is pending: its fields as a form, answered with `input.details`. Deprecated in favour of `verification.rules` and the flat fields.',
    }),
  }),
)

export const KycWarnings = component(
  'kyc-process-warnings',
  Type.Record(Type.String(), Type.Array(ErrorBody), {
    description:
      'What the update ignored, by part of the request (`input`): e.g. `verification_rule_violated` for a field whose rule (`details.rule`: ' +
      '`editable` or `presence`) does not let the update change it (`details.property`).',
  }),
)

export const KycAddress = component('kyc-address', envelope({ input: Type.Optional(Type.Object({ address: Address })) }))

export const KycEmail = component(
  'kyc-email',
  envelope({ input: Type.Optional(Type.Object({ email: Type.String({ format: 'email' }) })), output: Type.Optional(VerifiedOutput) }),
)

export const KycPhone = component(
  'kyc-phone',
  envelope({ input: Type.Optional(Type.Object({ phone: Type.String(), country: Type.String() })), output: Type.Optional(VerifiedOutput) }),
)

const IDENTITY_MEDIA_CONTEXTS = ['photo-document-front', 'photo-document-back', 'photo-selfie', 'photo-selfie-and-document-front', 'video'] as const
const Media = (contexts: readonly string[]) => Type.Object({ context: Type.String({ enum: [...contexts] }), fileId: Uuid })
const ProviderDetails = Type.Optional(Type.Object({ reasons: Type.Optional(Type.Array(Type.String())) }))
const Person = Type.Object({
  givenName: Type.String(),
  familyName: Type.Optional(Type.String()),
  birthdate: Type.Optional(Type.String()),
  gender: Type.Optional(Type.Enum(['female', 'male'])),
  address: Type.Optional(Address),
})

const IdentityNone = Type.Object({ code: Type.String(), status: KycStatus, type: Type.Literal('none'), verification: Type.Optional(KycSubmittableVerification) }, { title: 'None' })
const IdentityDocumentSubmission = Type.Object(
  {
    code: Type.String(),
    status: KycStatus,
    type: Type.Literal('document-submission'),
    verification: Type.Optional(KycSubmittableVerification),
    input: Type.Optional(Type.Object({ media: Type.Array(Media(IDENTITY_MEDIA_CONTEXTS)) })),
    output: Type.Optional(
      Type.Object({
        provider: Type.String(),
        providerDetails: ProviderDetails,
        reason: Type.Optional(Type.Enum(['data-mismatch', 'duplicate', 'underage', 'provider-verification-rejected'])),
        document: Type.Optional(
          Type.Object({ type: Type.Enum(['driving-license', 'id-card', 'passport', 'residence-permit', 'unsupported']), number: Type.String(), country: Type.String(), expiresAt: Type.Optional(Type.String()) }),
        ),
        person: Type.Optional(Person),
        verifiedAt: Timestamp,
      }),
    ),
  },
  { title: 'Document submission' },
)
const IdentityElectronicVerification = Type.Object(
  {
    code: Type.String(),
    status: KycStatus,
    type: Type.Literal('electronic-verification'),
    verification: Type.Optional(KycSubmittableVerification),
    input: Type.Optional(
      Type.Object({
        data: Type.Object({
          givenName: Type.String(),
          familyName: Type.Optional(Type.String()),
          birthdate: Type.String(),
          citizenshipCountry: Type.String(),
          gender: Type.Optional(Type.Enum(['female', 'male'])),
          address: Type.Optional(Address),
        }),
      }),
    ),
    output: Type.Optional(
      Type.Object({
        provider: Type.String(),
        reason: Type.Optional(Type.Enum(['data-mismatch', 'duplicate', 'missing-declared-information', 'underage'])),
        verifiedAt: Timestamp,
      }),
    ),
  },
  { title: 'Electronic verification' },
)
export const KycIdentity = component('kyc-identity', Type.Union([IdentityNone, IdentityDocumentSubmission, IdentityElectronicVerification]))

const PoaNone = Type.Object({ code: Type.String(), status: KycStatus, type: Type.Literal('none'), verification: Type.Optional(KycSubmittableVerification) }, { title: 'None' })
const PoaDocumentSubmission = Type.Object(
  {
    code: Type.String(),
    status: KycStatus,
    type: Type.Literal('document-submission'),
    verification: Type.Optional(KycSubmittableVerification),
    input: Type.Optional(Type.Object({ media: Type.Array(Media(['address-proof'])) })),
    output: Type.Optional(
      Type.Object({
        provider: Type.String(),
        providerDetails: ProviderDetails,
        reason: Type.Optional(Type.Enum(['address-mismatch', 'name-mismatch', 'provider-verification-rejected'])),
        person: Type.Optional(Type.Object({ givenName: Type.Optional(Type.String()), familyName: Type.Optional(Type.String()), address: Type.Optional(Address) })),
        verifiedAt: Timestamp,
      }),
    ),
  },
  { title: 'Document submission' },
)
const PoaElectronicVerification = Type.Object(
  {
    code: Type.String(),
    status: KycStatus,
    type: Type.Literal('electronic-verification'),
    verification: Type.Optional(KycSubmittableVerification),
    input: Type.Optional(Type.Object({ data: Type.Object({ givenName: Type.String(), familyName: Type.Optional(Type.String()), address: Address }) })),
    output: Type.Optional(
      Type.Object({ provider: Type.String(), reason: Type.Optional(Type.Enum(['address-mismatch', 'name-mismatch'])), verifiedAt: Timestamp }),
    ),
  },
  { title: 'Electronic verification' },
)
const PoaFromIdentity = Type.Object(
  {
    code: Type.String(),
    status: KycStatus,
    type: Type.Literal('from-identity'),
    verification: Type.Optional(KycSubmittableVerification),
    output: Type.Optional(
      Type.Object({
        provider: Type.String({ description: 'Who verified the identity document.' }),
        reason: Type.Optional(Type.Enum(['address-mismatch', 'name-mismatch'])),
        person: Type.Optional(Type.Object({ givenName: Type.Optional(Type.String()), familyName: Type.Optional(Type.String()), address: Type.Optional(Address) })),
        verifiedAt: Timestamp,
      }),
    ),
  },
  { title: 'From identity', description: 'Proved by the identity document, which shows the declared address of residence.' },
)
export const KycProofOfAddress = component('kyc-proof-of-address', Type.Union([PoaNone, PoaDocumentSubmission, PoaElectronicVerification, PoaFromIdentity]))

export const KycCustomerDueDiligence = component(
  'kyc-customer-due-diligence',
  envelope({
    input: Type.Optional(FormInput),
    output: Type.Optional(Type.Object({ score: Type.Optional(Type.Enum(['low', 'medium', 'high'])), expiresAt: Type.Optional(Timestamp), verifiedAt: Type.Optional(Timestamp) })),
    hint: Type.Optional(KycHintForm),
  }),
)

export const KycEnhancedDueDiligence = component(
  'kyc-enhanced-due-diligence',
  envelope({ input: Type.Optional(Type.Object({ media: Type.Array(Media(['source-of-funds-proof'])) })), output: Type.Optional(VerifiedOutput) }),
)

export const KycCryptoRiskAssessment = component(
  'kyc-crypto-risk-assessment',
  envelope({
    input: Type.Optional(FormInput),
    output: Type.Optional(Type.Object({ result: Result, attempts: AttemptsWithRetry, offboard: Type.Optional(Offboard), verifiedAt: Type.Optional(Timestamp) })),
    hint: Type.Optional(KycHintForm),
  }),
)

export const KycSelfCategorizationStatement = component(
  'kyc-self-categorization-statement',
  envelope({
    input: Type.Optional(FormInput),
    output: Type.Optional(
      Type.Object({ result: Result, attempts: Type.Optional(Attempts), offboard: Type.Optional(Offboard), expiresAt: Type.Optional(Timestamp), verifiedAt: Type.Optional(Timestamp) }),
    ),
    hint: Type.Optional(KycHintForm),
  }),
)

export const KycTaxDetails = component(
  'kyc-tax-details',
  envelope({
    input: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    output: Type.Optional(Type.Object({ result: Result, verifiedAt: Timestamp })),
    hint: Type.Optional(KycHintForm),
  }),
)

export const KycScreening = component('kyc-screening', envelope({ output: Type.Optional(Type.Object({ result: Result })) }))
export const KycRisk = component('kyc-risk', envelope({ output: Type.Optional(Type.Object({ result: Result })) }))

export const KycSummary = Type.Object({
  status: Type.Enum(['blocked', 'ok', 'pending', 'restricted'], { description: 'The overall KYC status.' }),
  reason: Type.String({ description: 'Why, when not `none` (e.g. `screening-rejected`, `residence-country-restricted`).' }),
})

export const KycOverview = component(
  'kyc-overview',
  Type.Object({
    summary: KycSummary,
    processes: Type.Object({
      profile: KycProfile,
      address: KycAddress,
      email: KycEmail,
      phone: KycPhone,
      identity: KycIdentity,
      proofOfAddress: KycProofOfAddress,
      customerDueDiligence: KycCustomerDueDiligence,
      enhancedDueDiligence: KycEnhancedDueDiligence,
      cryptoRiskAssessment: KycCryptoRiskAssessment,
      selfCategorizationStatement: KycSelfCategorizationStatement,
      taxDetails: KycTaxDetails,
      screening: KycScreening,
      risk: KycRisk,
    }),
  }),
)

export type KycOverview = Static<typeof KycOverview>

export const KycOverviewQuery = Type.Object({
  detailed: Type.Optional(
    Type.Array(Type.Enum(Object.values(KYC_PROCESSES)), {
      maxItems: 20,
      uniqueItems: true,
      description: 'Processes to return with their `hint` (comma-separated, e.g. `selfCategorizationStatement,taxDetails`).',
    }),
  ),
})

export const KycRequestHeaders = ActingRequestHeaders
export const KycFormRequestHeaders = Type.Object({
  ...ActingRequestHeaders.properties,
  'accept-language': Type.Optional(Type.String({ maxLength: 256, description: 'Preferred languages of the form texts (RFC 9110); English when none is available.' })),
})

// Requests

export const UpdateProfileBody = component(
  'update-kyc-profile-request',
  Type.Object(
    {
      input: Type.Object(
        {
          fullName: Type.Optional(Type.String({ pattern: '^\\S+\\s+\\S+(\\s+\\S+)*$', maxLength: 200, description: 'Full legal name (at least two words).' })),
          birthdate: Type.Optional(DateOnly),
          birthplace: Type.Optional(Type.Object({ country: CountryCode, town: Type.String({ pattern: NoEdgeSpaces, minLength: 1, maxLength: 100 }) }, { additionalProperties: false })),
          primaryCitizenship: Type.Optional(CountryCode),
          otherCitizenships: Type.Optional(Type.Array(CountryCode, { maxItems: 10, uniqueItems: true })),
          address: Type.Optional(AddressUpdate),
          citizenshipCountry: Type.Optional({ ...CountryCode, deprecated: true, description: 'Former name of `primaryCitizenship`; when both are given they must agree.' }),
          details: Type.Optional(
            Type.Record(Type.String(), Type.Unknown(), {
              deprecated: true,
              description:
                'The profile\'s form (its `hint`) answered, in place of the flat fields: validated against the hint\'s schema, and sent alone. ' +
                'Deprecated in favour of the flat fields.',
            }),
          ),
        },
        {
          additionalProperties: false,
          minProperties: 1,
          // `details` comes alone.
          if: { required: ['details'] },
          then: { maxProperties: 1 },
        },
      ),
    },
    { additionalProperties: false },
  ),
)
export type UpdateProfileBody = Static<typeof UpdateProfileBody>

export const UpdateAddressBody = component(
  'update-kyc-address-request',
  Type.Object({ input: Type.Object({ address: AddressUpdate }, { additionalProperties: false }) }, { additionalProperties: false }),
)
export type UpdateAddressBody = Static<typeof UpdateAddressBody>

const VerifiedAtOutput = Type.Object({ verifiedAt: Type.String({ format: 'date-time', description: 'When the client verified it; in the past.' }) }, { additionalProperties: false })

export const UpdateEmailBody = component(
  'update-kyc-email-request',
  Type.Object(
    {
      input: Type.Optional(Type.Object({ email: Type.String({ format: 'email', maxLength: 254 }) }, { additionalProperties: false })),
      output: Type.Optional(VerifiedAtOutput),
    },
    { additionalProperties: false, minProperties: 1, description: 'A new email (with `output` when the client verified it), or only `output` to verify the registered one.' },
  ),
)
export type UpdateEmailBody = Static<typeof UpdateEmailBody>

export const UpdatePhoneBody = component(
  'update-kyc-phone-request',
  Type.Object(
    {
      input: Type.Optional(
        Type.Object(
          { phone: Type.String({ pattern: '^\\+[0-9]{1,15}$', description: 'International number, `+` then digits.' }), country: CountryCode },
          { additionalProperties: false },
        ),
      ),
      output: Type.Optional(VerifiedAtOutput),
    },
    { additionalProperties: false, minProperties: 1, description: 'A new phone (with `output` when the client verified it), or only `output` to verify the registered one.' },
  ),
)
export type UpdatePhoneBody = Static<typeof UpdatePhoneBody>

const MediaForRequest = (contexts: readonly string[], maxItems: number) =>
  Type.Array(Type.Object({ context: Type.String({ enum: [...contexts] }), fileId: Type.String({ format: 'uuid' }) }, { additionalProperties: false }), { minItems: 1, maxItems })
const ProviderName = Text(100, 'Who verified it.')
const AttestedAt = Type.String({ format: 'date-time' })
const PersonAddress = Type.Object(
  {
    country: CountryCode,
    subdivision: Type.Optional(SubdivisionCode),
    city: Type.Optional(Text(100)),
    line1: Type.Optional(Text(150)),
    line2: Type.Optional(Text(100)),
    postalCode: Type.Optional(Text(20)),
  },
  { additionalProperties: false },
)

export const UpdateIdentityBody = component(
  'update-kyc-identity-request',
  Type.Union([
    Type.Object(
      {
        type: Type.Literal('document-submission'),
        input: Type.Object({ media: MediaForRequest(IDENTITY_MEDIA_CONTEXTS, 10) }, { additionalProperties: false }),
        output: Type.Optional(
          Type.Object(
            {
              provider: ProviderName,
              document: Type.Object(
                { type: Type.Enum(['driving-license', 'id-card', 'passport', 'residence-permit']), number: Text(200), country: CountryCode, expiresAt: Type.Optional(DateOnly) },
                { additionalProperties: false },
              ),
              person: Type.Object(
                { givenName: Text(200), familyName: Type.Optional(Text(200)), birthdate: DateOnly, gender: Type.Optional(Type.Enum(['female', 'male'])), address: Type.Optional(PersonAddress) },
                { additionalProperties: false },
              ),
              verifiedAt: AttestedAt,
            },
            { additionalProperties: false },
          ),
        ),
      },
      { additionalProperties: false, title: 'Document submission' },
    ),
    Type.Object(
      {
        type: Type.Literal('electronic-verification'),
        input: Type.Object(
          {
            data: Type.Object(
              {
                givenName: Text(200),
                familyName: Type.Optional(Text(200)),
                birthdate: DateOnly,
                citizenshipCountry: CountryCode,
                gender: Type.Optional(Type.Enum(['female', 'male'])),
                address: Type.Optional(PersonAddress),
              },
              { additionalProperties: false },
            ),
          },
          { additionalProperties: false },
        ),
        output: Type.Optional(Type.Object({ provider: ProviderName, verifiedAt: AttestedAt }, { additionalProperties: false })),
      },
      { additionalProperties: false, title: 'Electronic verification' },
    ),
  ]),
)
export type UpdateIdentityBody = Static<typeof UpdateIdentityBody>

export const UpdateProofOfAddressBody = component(
  'update-kyc-proof-of-address-request',
  Type.Union([
    Type.Object(
      {
        type: Type.Literal('document-submission'),
        input: Type.Object({ media: MediaForRequest(['address-proof'] as const, 5) }, { additionalProperties: false }),
        output: Type.Optional(
          Type.Object(
            {
              provider: ProviderName,
              person: Type.Object({ givenName: Text(200), familyName: Type.Optional(Text(200)), address: PersonAddress }, { additionalProperties: false }),
              verifiedAt: AttestedAt,
            },
            { additionalProperties: false },
          ),
        ),
      },
      { additionalProperties: false, title: 'Document submission' },
    ),
    Type.Object(
      {
        type: Type.Literal('electronic-verification'),
        input: Type.Object(
          { data: Type.Object({ givenName: Text(200), familyName: Type.Optional(Text(200)), address: PersonAddress }, { additionalProperties: false }) },
          { additionalProperties: false },
        ),
        output: Type.Optional(Type.Object({ provider: ProviderName, verifiedAt: AttestedAt }, { additionalProperties: false })),
      },
      { additionalProperties: false, title: 'Electronic verification' },
    ),
  ]),
)
export type UpdateProofOfAddressBody = Static<typeof UpdateProofOfAddressBody>

const FormAnswersInput = Type.Object(
  {
    formId: Type.Optional(Type.String({ format: 'uuid', description: 'The `formId` of the hint answered; answers to another version of the form are refused.' })),
    answers: Type.Record(Type.String(), Type.Unknown(), { minProperties: 1, maxProperties: 1, description: 'The answers of one category of the form.' }),
  },
  { additionalProperties: false },
)

export const UpdateCustomerDueDiligenceBody = component(
  'update-kyc-customer-due-diligence-request',
  Type.Object(
    {
      input: FormAnswersInput,
      output: Type.Optional(
        Type.Object({ score: Type.Enum(['low', 'medium', 'high']), expiresAt: Type.String({ format: 'date-time' }), verifiedAt: AttestedAt }, { additionalProperties: false }),
      ),
    },
    { additionalProperties: false },
  ),
)
export type UpdateCustomerDueDiligenceBody = Static<typeof UpdateCustomerDueDiligenceBody>

export const UpdateEnhancedDueDiligenceBody = component(
  'update-kyc-enhanced-due-diligence-request',
  Type.Object(
    {
      input: Type.Object({ media: MediaForRequest(['source-of-funds-proof'] as const, 1) }, { additionalProperties: false }),
      output: Type.Optional(VerifiedAtOutput),
    },
    { additionalProperties: false },
  ),
)
export type UpdateEnhancedDueDiligenceBody = Static<typeof UpdateEnhancedDueDiligenceBody>

const AttemptsForRequest = Type.Object({ used: Type.Integer({ minimum: 1 }), maximum: Type.Integer({ minimum: 1 }) }, { additionalProperties: false })

export const UpdateCryptoRiskAssessmentBody = component(
  'update-kyc-crypto-risk-assessment-request',
  Type.Object(
    {
      input: FormAnswersInput,
      output: Type.Optional(Type.Object({ result: Result, attempts: AttemptsForRequest, verifiedAt: AttestedAt }, { additionalProperties: false })),
    },
    { additionalProperties: false },
  ),
)
export type UpdateCryptoRiskAssessmentBody = Static<typeof UpdateCryptoRiskAssessmentBody>

export const UpdateSelfCategorizationBody = component(
  'update-kyc-self-categorization-statement-request',
  Type.Object(
    {
      input: FormAnswersInput,
      output: Type.Optional(
        Type.Object({ result: Result, attempts: AttemptsForRequest, expiresAt: Type.String({ format: 'date-time' }), verifiedAt: AttestedAt }, { additionalProperties: false }),
      ),
    },
    { additionalProperties: false },
  ),
)
export type UpdateSelfCategorizationBody = Static<typeof UpdateSelfCategorizationBody>

export const UpdateTaxDetailsBody = component(
  'update-kyc-tax-details-request',
  Type.Object(
    {
      input: Type.Record(Type.String(), Type.Unknown(), { minProperties: 1, maxProperties: 1, description: 'The answers of one category of the tax details form.' }),
      output: Type.Optional(Type.Object({ result: Result, verifiedAt: AttestedAt }, { additionalProperties: false })),
    },
    { additionalProperties: false },
  ),
)
export type UpdateTaxDetailsBody = Static<typeof UpdateTaxDetailsBody>

/** One process as answered by a PATCH: `{ <process key>: process }`. */
export const ProcessResponses = {
  profile: component('update-kyc-profile-response', Type.Object({ profile: KycProfile, warnings: Type.Optional(KycWarnings) })),
  address: component('update-kyc-address-response', Type.Object({ address: KycAddress })),
  email: component('update-kyc-email-response', Type.Object({ email: KycEmail })),
  phone: component('update-kyc-phone-response', Type.Object({ phone: KycPhone })),
  identity: component('update-kyc-identity-response', Type.Object({ identity: KycIdentity })),
  'proof-of-address': component('update-kyc-proof-of-address-response', Type.Object({ proofOfAddress: KycProofOfAddress })),
  'customer-due-diligence': component('update-kyc-customer-due-diligence-response', Type.Object({ customerDueDiligence: KycCustomerDueDiligence })),
  'enhanced-due-diligence': component('update-kyc-enhanced-due-diligence-response', Type.Object({ enhancedDueDiligence: KycEnhancedDueDiligence })),
  'crypto-risk-assessment': component('update-kyc-crypto-risk-assessment-response', Type.Object({ cryptoRiskAssessment: KycCryptoRiskAssessment })),
  'self-categorization-statement': component(
    'update-kyc-self-categorization-statement-response',
    Type.Object({ selfCategorizationStatement: KycSelfCategorizationStatement }),
  ),
  'tax-details': component('update-kyc-tax-details-response', Type.Object({ taxDetails: KycTaxDetails })),
}
