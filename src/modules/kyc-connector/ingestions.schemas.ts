import Type, { type Static, type TSchema } from 'typebox'
import { Pagination, PaginationQuery } from '../../http/pagination.ts'
import { ActingRequestHeaders, component, Timestamp } from '../../http/schemas.ts'
import { UUID_PATTERN } from '../../lib/ids.ts'
import { INGESTION_PROCESSES } from '../../providers/kyc-connector/connector.ts'

export const INGESTION_PROVIDERS = ['sumsub', 'veriff'] as const
export type IngestionProvider = (typeof INGESTION_PROVIDERS)[number]

export const INGESTION_STATUSES = ['queued', 'running', 'finished'] as const
export type IngestionStatus = (typeof INGESTION_STATUSES)[number]

/** Where a process failed: reading the provider's data, downloading its files, or updating the KYC process. */
export const INGESTION_STEPS = ['fetch-provider-data', 'download-provider-files', 'update-kyc-process'] as const
export type IngestionStep = (typeof INGESTION_STEPS)[number]

const COMMON_ERROR_CODES = [
  'unknown_error',
  'workflow_error',
  'provider_data_readiness_timeout_exceeded',
  'provider_data_not_available',
  'provider_data_invalid',
  'provider_file_download_failed',
  'dependent_process_failed',
  'operation_not_allowed',
] as const
export const SUMSUB_ERROR_CODES = [...COMMON_ERROR_CODES, 'sumsub_client_error', 'sumsub_applicant_review_state_invalid'] as const
export const VERIFF_ERROR_CODES = [...COMMON_ERROR_CODES, 'provider_data_recheck_failed', 'veriff_client_error', 'veriff_session_not_approved'] as const
export type IngestionErrorCode = (typeof SUMSUB_ERROR_CODES)[number] | (typeof VERIFF_ERROR_CODES)[number]

/** Limits of our own (the reference sets none). */
export const SHARE_TOKEN_MAX_LENGTH = 1024
export const MAX_SESSIONS = 10
export const INTEGRATION_NAME_MAX_LENGTH = 100

const NO_EDGE_SPACES = '^\\S.*\\S$|^\\S$'

const Process = Type.Enum([...INGESTION_PROCESSES], { description: 'A KYC process: `profile`, `address`, `identity` or `proof-of-address`.' })
const Processes = (description: string) => Type.Array(Process, { minItems: 1, maxItems: INGESTION_PROCESSES.length, uniqueItems: true, description })

const RequestedProcesses = Processes('The KYC processes to import; all four (Sumsub) or those the sessions cover (Veriff) when omitted.')

export const CreateSumsubIngestionBody = component(
  'kyc-connector-create-sumsub-ingestion-input',
  Type.Object(
    {
      processes: Type.Optional(RequestedProcesses),
      shareToken: Type.String({
        pattern: NO_EDGE_SPACES,
        maxLength: SHARE_TOKEN_MAX_LENGTH,
        description: `The share token the user's Sumsub applicant was shared with (at most ${SHARE_TOKEN_MAX_LENGTH} characters). A token imports once.`,
      }),
    },
    {
      additionalProperties: false,
      examples: [{ processes: ['identity', 'proof-of-address'], shareToken: '_act-sbx-jwt-eyJhbGciOiJub25lIn0.eyJqdGkiOiJ0ZXN0In0.' }],
    },
  ),
)
export type CreateSumsubIngestionBody = Static<typeof CreateSumsubIngestionBody>

const SessionForRequest = Type.Object(
  {
    processes: Type.Optional(Processes('The processes this session provides; the integration\'s (among those requested) when omitted.')),
    sessionId: Type.String({ pattern: UUID_PATTERN, description: 'The Veriff session id.' }),
    integrationName: Type.String({
      pattern: NO_EDGE_SPACES,
      maxLength: INTEGRATION_NAME_MAX_LENGTH,
      description: 'The integration of the organization\'s Veriff configuration the session was made with.',
    }),
  },
  { additionalProperties: false, description: 'A Veriff session to import from.' },
)

export const CreateVeriffIngestionBody = component(
  'kyc-connector-create-veriff-ingestion-input',
  Type.Object(
    {
      processes: Type.Optional(RequestedProcesses),
      sessions: Type.Array(SessionForRequest, { minItems: 1, maxItems: MAX_SESSIONS, description: `The Veriff sessions to import from (1 to ${MAX_SESSIONS}).` }),
    },
    {
      additionalProperties: false,
      examples: [{ processes: ['identity'], sessions: [{ processes: ['identity'], sessionId: '550e8400-e29b-41d4-a716-446655440000', integrationName: 'integration-abc123' }] }],
    },
  ),
)
export type CreateVeriffIngestionBody = Static<typeof CreateVeriffIngestionBody>

const Address = Type.Object(
  {
    country: Type.Optional(Type.String()),
    subdivision: Type.Optional(Type.String()),
    city: Type.Optional(Type.String()),
    line1: Type.Optional(Type.String()),
    line2: Type.Optional(Type.String()),
    postalCode: Type.Optional(Type.String()),
  },
  { description: 'An address as the provider holds it.' },
)

const ProfileData = Type.Object(
  {
    fullName: Type.Optional(Type.String()),
    birthdate: Type.Optional(Type.String({ format: 'date' })),
    birthplace: Type.Optional(Type.Object({ town: Type.Optional(Type.String()), country: Type.Optional(Type.String()) })),
    primaryCitizenship: Type.Optional(Type.String()),
  },
  { description: 'The profile the provider verified.' },
)

const IdentityData = Type.Object(
  {
    document: Type.Optional(
      Type.Object({
        type: Type.Enum(['driving-license', 'id-card', 'passport', 'residence-permit', 'unsupported']),
        number: Type.Optional(Type.String()),
        country: Type.Optional(Type.String()),
        expiresAt: Type.Optional(Type.String({ format: 'date' })),
      }),
    ),
    person: Type.Optional(
      Type.Object({
        givenName: Type.Optional(Type.String()),
        familyName: Type.Optional(Type.String()),
        address: Type.Optional(Address),
        birthdate: Type.Optional(Type.String({ format: 'date' })),
        gender: Type.Optional(Type.Enum(['female', 'male'])),
      }),
    ),
    verifiedAt: Type.Optional(Timestamp),
  },
  { description: 'The identity document and person the provider verified.' },
)

const ProofOfAddressData = Type.Object(
  {
    person: Type.Optional(Type.Object({ givenName: Type.Optional(Type.String()), familyName: Type.Optional(Type.String()), address: Type.Optional(Address) })),
    verifiedAt: Type.Optional(Timestamp),
  },
  { description: 'The person and address the provider\'s proof of address shows.' },
)

const Files = Type.Array(
  Type.Object({
    id: Type.String({ description: 'The file, now one of the user\'s files (`GET /core/files/{fileId}`).' }),
    category: Type.Enum(['document', 'image', 'video']),
    context: Type.String({ description: 'Its role in the KYC process, e.g. `photo-document-front`.' }),
    contentType: Type.String(),
    size: Type.Integer({ minimum: 0 }),
    providerDetails: Type.Record(Type.String(), Type.String(), { description: 'How the provider names the file (`mediaId`, `fileId`).' }),
  }),
  { description: 'The files downloaded for the process.' },
)

const processError = (codes: readonly string[]) =>
  Type.Object(
    {
      code: Type.Enum([...codes]),
      message: Type.String(),
      hint: Type.Optional(Type.String()),
      step: Type.Optional(Type.Enum([...INGESTION_STEPS])),
      details: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    },
    { description: 'Why the process failed.' },
  )

const processResult = (data: TSchema, errorCodes: readonly string[], withFiles: boolean) =>
  Type.Object({
    status: Type.Enum(['processing', 'completed', 'failed'], { description: 'Where the process stands.' }),
    data: Type.Optional(data),
    ...(withFiles ? { files: Type.Optional(Files) } : {}),
    error: Type.Optional(processError(errorCodes)),
  })

const result = (errorCodes: readonly string[]) =>
  Type.Object(
    {
      profile: Type.Optional(processResult(ProfileData, errorCodes, false)),
      address: Type.Optional(processResult(Address, errorCodes, false)),
      identity: Type.Optional(processResult(IdentityData, errorCodes, true)),
      proofOfAddress: Type.Optional(processResult(ProofOfAddressData, errorCodes, true)),
    },
    { description: 'Each requested process\'s outcome, once the ingestion runs.' },
  )

const ingestion = (provider: IngestionProvider, parameters: TSchema, errorCodes: readonly string[]) =>
  Type.Object(
    {
      id: Type.String({ format: 'uuid', description: 'The ingestion id.' }),
      userId: Type.String({ format: 'uuid', description: 'The user whose verification is imported.' }),
      status: Type.Enum([...INGESTION_STATUSES], { description: '`queued`, then `running` while the workers import it, then `finished`.' }),
      processes: Type.Array(Process, { description: 'The processes imported.' }),
      provider: Type.Literal(provider),
      parameters,
      result: Type.Optional(result(errorCodes)),
      createdAt: Timestamp,
      updatedAt: Timestamp,
      startedAt: Type.Optional(Timestamp),
      finishedAt: Type.Optional(Timestamp),
    },
    { description: `An import of a user's verification from ${provider === 'sumsub' ? 'Sumsub' : 'Veriff'} into their KYC processes.` },
  )

export const SumsubIngestion = component(
  'kyc-connector-sumsub-ingestion',
  ingestion('sumsub', Type.Object({ shareToken: Type.String({ description: 'The Sumsub share token.' }) }), SUMSUB_ERROR_CODES),
)
export const VeriffIngestion = component(
  'kyc-connector-veriff-ingestion',
  ingestion(
    'veriff',
    Type.Object({
      sessions: Type.Array(
        Type.Object({
          processes: Type.Array(Process, { description: 'The processes the session provides.' }),
          sessionId: Type.String({ format: 'uuid' }),
          integrationName: Type.String(),
        }),
      ),
    }),
    VERIFF_ERROR_CODES,
  ),
)

export const SumsubIngestionResponse = component('kyc-connector-sumsub-ingestion-response', Type.Object({ ingestion: SumsubIngestion }))
export const VeriffIngestionResponse = component('kyc-connector-veriff-ingestion-response', Type.Object({ ingestion: VeriffIngestion }))
export const SumsubIngestionsResponse = component('kyc-connector-sumsub-ingestions-response', Type.Object({ ingestions: Type.Array(SumsubIngestion), pagination: Pagination }))
export const VeriffIngestionsResponse = component('kyc-connector-veriff-ingestions-response', Type.Object({ ingestions: Type.Array(VeriffIngestion), pagination: Pagination }))

export const IngestionParams = Type.Object({ ingestionId: Type.String({ pattern: UUID_PATTERN, description: 'The ingestion id.' }) })
export const ListIngestionsQuery = Type.Object({ ...PaginationQuery })
export type ListIngestionsQuery = Static<typeof ListIngestionsQuery>
export const IngestionHeaders = ActingRequestHeaders

/** The view of an ingestion: the reference's shape, for either provider. */
export interface IngestionView {
  id: string
  userId: string
  status: IngestionStatus
  processes: string[]
  provider: IngestionProvider
  parameters: Record<string, unknown>
  result?: Record<string, unknown>
  createdAt: string
  updatedAt: string
  startedAt?: string
  finishedAt?: string
}
