import Type, { type Static } from 'typebox'
import { IdempotencyKeyHeader } from '../../http/idempotency.ts'
import { Pagination, PaginationQuery } from '../../http/pagination.ts'
import { component, OnBehalfOfHeader, Timestamp, UserContextHeaders, Uuid } from '../../http/schemas.ts'
import { CreationErrors, InitialMetadata } from '../metadata/index.ts'

const NoEdgeSpaces = '^\\S.*\\S$|^\\S$'
const Text = (maxLength: number, description: string) => Type.String({ pattern: NoEdgeSpaces, maxLength, description })

export const EXTERNAL_ACCOUNT_TYPES = ['apm', 'bank', 'card', 'crypto'] as const
export type ExternalAccountType = (typeof EXTERNAL_ACCOUNT_TYPES)[number]

export const EXTERNAL_ACCOUNT_STATUSES = ['processing', 'ok', 'expired', 'failed', 'restricted', 'blocked'] as const

export const EXTERNAL_ACCOUNT_STATUS_REASONS = [
  'card-data-invalid',
  'card-declined-by-bank',
  'card-expired',
  'card-permanently-declined-by-bank',
  'card-unauthorized',
  'card-unsupported',
  'bank-account-holder-name-mismatch',
  'velocity',
  'under-review',
  'unspecified-error',
] as const

const Label = component('external-account-label-for-request', Text(140, 'A name for the external account, chosen by the user.'))

const ExpiryDate = Type.Object(
  {
    month: Type.Integer({ minimum: 1, maximum: 12, description: 'The month the card expires at the end of (1-12).' }),
    year: Type.Integer({ minimum: 2000, maximum: 9999, description: 'The year, four digits.' }),
  },
  { description: 'When the card expires: it is valid through the last day of the month.' },
)

const UsAddress = Type.Object(
  {
    country: Type.String({ pattern: '^[A-Z]{2}$', description: 'The country (ISO 3166-1 alpha-2): `US`.' }),
    subdivision: Type.String({ pattern: '^[A-Z]{2}-[A-Z0-9]{1,3}$', description: 'The state (ISO 3166-2, e.g. `US-CA`).' }),
    city: Text(100, 'The city.'),
    line1: Text(150, 'The first line of the street address.'),
    line2: Type.Optional(Text(100, 'The second line of the street address.')),
    postalCode: Text(20, 'The ZIP code (`94102` or `94102-1234`).'),
  },
  { description: 'The account holder\'s address, as the bank knows it.' },
)

const CreateCard = component(
  'create-external-account-card',
  Type.Object(
    {
      type: Type.Literal('card'),
      label: Label,
      number: Type.String({ pattern: '^[0-9]{12,19}$', description: 'The card number, digits only. Sealed at rest; never returned.' }),
      securityCode: Type.String({ pattern: '^[0-9]{3,3}$', description: 'The security code on the card: used once to verify the card with its issuer, then forgotten.' }),
      expiryDate: ExpiryDate,
      metadata: Type.Optional(InitialMetadata('external account')),
    },
    { description: 'A debit or credit card.' },
  ),
)

const CreateBankAch = component(
  'create-external-account-bank-ach',
  Type.Object(
    {
      type: Type.Literal('bank'),
      asset: Type.Literal('USD'),
      network: Type.Literal('ach'),
      label: Label,
      address: UsAddress,
      routingNumber: Type.String({ pattern: '^[0-9]{9}$', description: 'The bank\'s ABA routing number (its checksum is verified).' }),
      accountNumber: Type.String({ pattern: '^(?!0+$)[0-9]{4,17}$', description: 'The account number.' }),
      accountType: Type.Union([Type.Literal('checking'), Type.Literal('savings')], { description: 'The kind of account.' }),
      metadata: Type.Optional(InitialMetadata('external account')),
    },
    { description: 'A US bank account reached over ACH (and the other US rails that use its numbers).' },
  ),
)

const CreateBankFps = component(
  'create-external-account-bank-fps',
  Type.Object(
    {
      type: Type.Literal('bank'),
      asset: Type.Literal('GBP'),
      network: Type.Literal('fps'),
      label: Label,
      sortCode: Type.String({ pattern: '^[0-9]{6}$', description: 'The sort code, six digits without dashes.' }),
      accountNumber: Type.String({ pattern: '^[0-9]{8}$', description: 'The account number, eight digits (checked with the sort code against the UK modulus rules).' }),
      metadata: Type.Optional(InitialMetadata('external account')),
    },
    { description: 'A UK bank account reached over Faster Payments.' },
  ),
)

const CreateBankSepa = component(
  'create-external-account-bank-sepa',
  Type.Object(
    {
      type: Type.Literal('bank'),
      asset: Type.Literal('EUR'),
      network: Type.Literal('sepa'),
      label: Label,
      iban: Type.String({ minLength: 15, maxLength: 42, description: 'The IBAN, with or without spaces (its checksum is verified).' }),
      bic: Type.String({ pattern: '^[A-Za-z0-9]{8}([A-Za-z0-9]{3})?$', description: 'The bank\'s BIC (8 or 11 characters).' }),
      metadata: Type.Optional(InitialMetadata('external account')),
    },
    { description: 'A bank account in the SEPA area.' },
  ),
)

const CreateCrypto = component(
  'create-external-account-crypto',
  Type.Object(
    {
      type: Type.Literal('crypto'),
      asset: Type.String({ pattern: NoEdgeSpaces, maxLength: 20, description: 'The asset sent to the address (e.g. `BTC`).' }),
      network: Type.String({ pattern: NoEdgeSpaces, maxLength: 50, description: 'The network the address is on (e.g. `bitcoin`).' }),
      label: Label,
      address: Text(256, 'The address, as the network writes it.'),
      reference: Type.Optional(Text(255, 'The destination tag or memo, on networks that use one (XRP Ledger).')),
      metadata: Type.Optional(InitialMetadata('external account')),
    },
    { description: 'A crypto address.' },
  ),
)

const CreateApm = component(
  'create-external-account-apm',
  Type.Object(
    {
      type: Type.Literal('apm'),
      asset: Type.Literal('USD'),
      network: Type.Union([Type.Literal('paypal'), Type.Literal('venmo')], { description: 'The payment app.' }),
      label: Label,
      identifier: Text(254, 'The user\'s identity at the app: an email address (PayPal) or a `@username` (Venmo).'),
      metadata: Type.Optional(InitialMetadata('external account')),
    },
    { description: 'An account at a payment app.' },
  ),
)

export const CreateExternalAccountBody = Type.Union([CreateCard, CreateBankAch, CreateBankFps, CreateBankSepa, CreateCrypto, CreateApm], {
  description: 'The external account to link, by type (and network, for banks).',
})
export type CreateExternalAccountBody = Static<typeof CreateExternalAccountBody>

const CardDetails = component(
  'external-account-details-card',
  Type.Object(
    {
      type: Type.Optional(Type.Union([Type.Literal('credit'), Type.Literal('debit')], { description: 'Whether it is a debit or a credit card.' })),
      last4Digits: Type.String({ pattern: '^[0-9]{4}$', description: 'The last four digits of the card number.' }),
      expiryDate: ExpiryDate,
      octSupport: Type.Union([Type.Literal('unknown'), Type.Literal('supported'), Type.Literal('unsupported')], {
        description: 'Whether the issuer accepts push-to-card credits: withdrawals to the card need `supported`.',
      }),
    },
    { description: 'What can be shown of a card.' },
  ),
)

const AchDetails = component(
  'external-account-details-bank-ach',
  Type.Object(
    {
      address: UsAddress,
      routingNumber: Type.String(),
      accountNumber: Type.String(),
      accountType: Type.String(),
      secondaryNetworks: Type.Optional(
        Type.Object(
          { deposit: Type.Optional(Type.Array(Type.String())), withdraw: Type.Optional(Type.Array(Type.String())) },
          { description: 'Other networks the same numbers reach, by feature (e.g. `fednow` for instant withdrawals).' },
        ),
      ),
    },
    { description: 'A US bank account.' },
  ),
)

const FpsDetails = component('external-account-details-bank-fps', Type.Object({ accountNumber: Type.String(), sortCode: Type.String() }, { description: 'A UK bank account.' }))
const SepaDetails = component('external-account-details-bank-sepa', Type.Object({ bic: Type.String(), iban: Type.String() }, { description: 'A SEPA bank account.' }))
const ApmDetails = component('external-account-details-apm', Type.Object({ identifier: Type.String() }, { description: 'An account at a payment app.' }))
const CryptoDetails = component(
  'external-account-details-crypto',
  Type.Object(
    { address: Type.String(), reference: Type.Optional(Type.String({ description: 'The destination tag or memo.' })) },
    { description: 'A crypto address.' },
  ),
)

export const VerificationSummary = component(
  'external-account-verification-summary',
  Type.Object(
    {
      level: Type.Union([Type.Literal('declared'), Type.Literal('verified')]),
      status: Type.Union([Type.Literal('completed'), Type.Literal('pending')]),
      via: Type.Literal('request-for-information'),
      completedAt: Type.Optional(Timestamp),
    },
    { description: 'Where the proof that the user controls the address stands, by level.' },
  ),
)

export const ExternalAccount = component(
  'external-account',
  Type.Object(
    {
      id: Uuid,
      ownerId: { ...Uuid, description: 'The user the external account belongs to.' },
      type: Type.Unsafe<ExternalAccountType>(Type.String({ enum: [...EXTERNAL_ACCOUNT_TYPES], description: 'What it is.' })),
      status: Type.Unsafe<(typeof EXTERNAL_ACCOUNT_STATUSES)[number]>(Type.String({ enum: [...EXTERNAL_ACCOUNT_STATUSES], description: 'Whether it can be used: `ok` once linked.' })),
      statusDetails: Type.Optional(
        Type.Object(
          { reason: component('external-account-status-reason', Type.Unsafe<(typeof EXTERNAL_ACCOUNT_STATUS_REASONS)[number]>(Type.String({ enum: [...EXTERNAL_ACCOUNT_STATUS_REASONS] }))) },
          { description: 'Why it is not `ok`.' },
        ),
      ),
      label: Type.String(),
      asset: Type.String({ description: 'The asset it holds or takes.' }),
      network: Type.String({ description: 'The network that reaches it: a bank rail, a card scheme, a chain, a payment app.' }),
      features: Type.Array(Type.Union([Type.Literal('withdraw'), Type.Literal('deposit')]), {
        description: 'What the user may do with it now: the rail\'s features, narrowed by the user\'s capabilities (and, for cards, by push-to-card support).',
      }),
      details: Type.Union([CardDetails, AchDetails, FpsDetails, SepaDetails, ApmDetails, CryptoDetails], { description: 'The details of its type.' }),
      verifications: Type.Optional(Type.Array(VerificationSummary, { description: 'Crypto addresses only: the proofs of control started for the address.' })),
      createdAt: Timestamp,
      updatedAt: Timestamp,
    },
    { description: 'Where a user\'s money comes from or goes to outside Tessera.' },
  ),
)
export type ExternalAccount = Static<typeof ExternalAccount>

export const CreateExternalAccountResponse = component(
  'create-external-account-response',
  Type.Object({ externalAccount: ExternalAccount, errors: CreationErrors }),
)
export const ExternalAccountResponse = component('external-account-response', Type.Object({ externalAccount: ExternalAccount }))
export const ListExternalAccountsResponse = component(
  'list-external-accounts-response',
  Type.Object({ externalAccounts: Type.Array(ExternalAccount), pagination: Pagination }),
)

export const ListExternalAccountsQuery = Type.Object({
  type: Type.Optional(Type.Unsafe<ExternalAccountType>(Type.String({ enum: [...EXTERNAL_ACCOUNT_TYPES], description: 'Only external accounts of this type.' }))),
  ...PaginationQuery,
})

export const UpdateExternalAccountBody = component(
  'update-external-account-request',
  Type.Object({ label: Type.Optional(Label) }, { additionalProperties: false, minProperties: 1 }),
)
export type UpdateExternalAccountBody = Static<typeof UpdateExternalAccountBody>

export const ExternalAccountParams = Type.Object({ externalAccountId: Type.String({ format: 'uuid', description: 'The id of the external account.' }) })

export const CreateExternalAccountHeaders = Type.Object({ ...OnBehalfOfHeader, ...IdempotencyKeyHeader, ...UserContextHeaders })

/** reference-data/card-bins.json: the card issuer ranges Tessera knows. */
export const CardBinsFile = Type.Object({
  ranges: Type.Array(
    Type.Object({
      prefix: Type.String({ pattern: '^[0-9]{1,11}$' }),
      scheme: Type.String({ minLength: 1 }),
      type: Type.Union([Type.Literal('debit'), Type.Literal('credit')]),
      octSupport: Type.Union([Type.Literal('supported'), Type.Literal('unsupported'), Type.Literal('unknown')]),
      country: Type.Optional(Type.String({ pattern: '^[A-Z]{2}$' })),
    }),
  ),
})
export type CardBinsFile = Static<typeof CardBinsFile>
