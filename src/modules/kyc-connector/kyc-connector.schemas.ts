import Type, { type Static } from 'typebox'
import { component, OnBehalfOfHeader, Timestamp } from '../../http/schemas.ts'

export const KYC_PROCESSES = ['profile', 'address', 'identity', 'proof-of-address'] as const
export type KycProcess = (typeof KYC_PROCESSES)[number]

/** Limits of our own (the reference sets none): enough for any provider's credentials, small enough to seal cheaply. */
export const MAX_INTEGRATIONS = 20
export const INTEGRATION_NAME_MAX_LENGTH = 100
export const SECRET_MIN_LENGTH = 8
export const SECRET_MAX_LENGTH = 512

// No surrounding whitespace (as the reference), and no control characters: a name is stored and shown in clear.
const NAME_PATTERN = '^[^\\s\\u0000-\\u001f\\u007f](?:[^\\u0000-\\u001f\\u007f]*[^\\s\\u0000-\\u001f\\u007f])?$'

const Processes = Type.Array(Type.Enum([...KYC_PROCESSES]), {
  minItems: 1,
  maxItems: KYC_PROCESSES.length,
  uniqueItems: true,
  description: 'The KYC processes this integration performs.',
})

const secret = (what: string) =>
  Type.String({
    minLength: SECRET_MIN_LENGTH,
    maxLength: SECRET_MAX_LENGTH,
    pattern: '^\\S+$',
    description:
      `The ${what} of the integration, ${SECRET_MIN_LENGTH} to ${SECRET_MAX_LENGTH} characters without whitespace. ` +
      'Stored encrypted; never returned in full. Omit it to keep the current one of the integration of the same name; ' +
      'required for an integration the configuration does not have yet.',
  })

export const IntegrationInput = component(
  'kyc-connector-integration-input',
  Type.Object(
    {
      name: Type.String({
        pattern: NAME_PATTERN,
        maxLength: INTEGRATION_NAME_MAX_LENGTH,
        description: `The name of the integration, unique within the configuration (at most ${INTEGRATION_NAME_MAX_LENGTH} characters).`,
      }),
      apiKey: Type.Optional(secret('API key')),
      sharedSecretKey: Type.Optional(secret('shared secret key')),
      processes: Processes,
    },
    { additionalProperties: false, description: 'An integration of the provider: its credentials and the KYC processes it performs.' },
  ),
)
export type IntegrationInput = Static<typeof IntegrationInput>

export const SetProviderConfigBody = component(
  'kyc-connector-config-input',
  Type.Object(
    {
      integrations: Type.Array(IntegrationInput, {
        minItems: 1,
        maxItems: MAX_INTEGRATIONS,
        description: `The integrations of the provider (1 to ${MAX_INTEGRATIONS}); they replace the current ones.`,
      }),
    },
    {
      additionalProperties: false,
      examples: [
        {
          integrations: [
            {
              name: 'integration-abc123',
              apiKey: 'a1b2c3d4-e5f6-7890-abcd-ef1234567890',
              sharedSecretKey: 'f0e1d2c3-b4a5-6789-0fed-cba987654321',
              processes: ['profile', 'address', 'identity', 'proof-of-address'],
            },
          ],
        },
      ],
    },
  ),
)
export type SetProviderConfigBody = Static<typeof SetProviderConfigBody>

const masked = (what: string) =>
  Type.String({ pattern: '^.{0,4}\\*{4}$', description: `The ${what}, hidden: its first four characters followed by \`****\`.` })

export const Integration = component(
  'kyc-connector-integration',
  Type.Object(
    {
      name: Type.String({ description: 'The name of the integration.' }),
      apiKey: masked('API key'),
      sharedSecretKey: masked('shared secret key'),
      processes: Type.Array(Type.Enum([...KYC_PROCESSES]), { description: 'The KYC processes this integration performs.' }),
    },
    { description: 'An integration of the provider, its secrets hidden.' },
  ),
)

export const ProviderConfig = component(
  'kyc-connector-config',
  Type.Object(
    {
      integrations: Type.Array(Integration, { description: 'The integrations of the provider.' }),
      createdAt: Timestamp,
      updatedAt: Timestamp,
    },
    { description: "An organization's configuration of an identity-verification provider." },
  ),
)

export const ProviderConfigResponse = component(
  'kyc-connector-config-response',
  Type.Object(
    { config: ProviderConfig },
    {
      examples: [
        {
          config: {
            integrations: [{ name: 'integration-abc123', apiKey: 'a1b2****', sharedSecretKey: 'f0e1****', processes: ['profile', 'identity'] }],
            createdAt: '2026-01-15T14:23:01.819Z',
            updatedAt: '2026-01-15T14:25:00.000Z',
          },
        },
      ],
    },
  ),
)

export const ProviderConfigHeaders = Type.Object({ ...OnBehalfOfHeader })
