import Type, { type Static } from 'typebox'
import { Pagination, PaginationQuery } from '../../http/pagination.ts'
import { IdempotencyKeyHeader } from '../../http/idempotency.ts'
import { component, OnBehalfOfHeader, Timestamp, UserContextHeaders, Uuid } from '../../http/schemas.ts'
import { CreationErrors, InitialMetadata } from '../metadata/index.ts'

export const TRANSACTION_STATUSES = ['processing', 'on-hold', 'completed', 'failed'] as const
export type TransactionStatus = (typeof TRANSACTION_STATUSES)[number]

/** Why a transaction failed; consumers must treat values they do not know as `unspecified-error`. */
export const TRANSACTION_STATUS_REASONS = [
  'apm-account-holder-data-mismatch',
  'apm-authorization-failed',
  'apm-missing-account-holder-data',
  'apm-payment-method-declined',
  'bank-account-holder-name-mismatch',
  'beneficiary-country-restricted',
  'card-declined-by-bank',
  'card-expired',
  'card-permanently-declined-by-bank',
  'card-unauthorized',
  'card-unsupported',
  'card-withdrawals-unsupported',
  // Spec §7: the amount is outside the boundaries of the payment provider.
  'amount-limit-exceed',
  'insufficient-funds',
  'pending-requests-for-information',
  'provider-maximum-limit-exceeded',
  'screening-verification-failed',
  'travel-rule-verification-failed',
  'unspecified-error',
  'velocity',
] as const
export type TransactionStatusReason = (typeof TRANSACTION_STATUS_REASONS)[number]

const Amount = (description: string) => Type.String({ pattern: '^(0|[1-9][0-9]*)(\\.[0-9]+)?$', description })

const AccountNode = component(
  'transaction-node-account',
  Type.Object(
    { type: Type.Literal('account'), id: { ...Uuid, description: 'The account.' }, ownerId: { ...Uuid, description: 'The user that owns the account.' } },
    { description: 'A user\'s account.' },
  ),
)
const BankAddressNode = component(
  'transaction-node-bank-address',
  Type.Object({ type: Type.Literal('bank-address'), network: Type.String({ description: 'The bank network (rail) of the transfer.' }) }, { description: 'A bank transfer.' }),
)
const CryptoAddressNode = component(
  'transaction-node-crypto-address',
  Type.Object(
    {
      type: Type.Literal('crypto-address'),
      network: Type.String({ description: 'The network the address is on.' }),
      address: Type.Optional(Type.String({ description: 'The address (not always known for deposits).' })),
      reference: Type.Optional(Type.String({ description: 'The destination tag, memo or message, when the network uses one.' })),
      execution: Type.Optional(
        Type.Object(
          {
            mode: Type.Union([Type.Literal('onchain'), Type.Literal('offchain'), Type.Literal('simulated')], { description: 'On the chain, between accounts of the deployment, or simulated (sandbox).' }),
            transactionHash: Type.Optional(Type.String({ description: 'The chain transaction (made up when simulated).' })),
          },
          { description: 'How a crypto withdrawal was carried out, once it was.' },
        ),
      ),
    },
    { description: 'A crypto address.' },
  ),
)
const ExternalAccountNode = component(
  'transaction-node-external-account',
  Type.Object(
    {
      type: Type.Literal('external-account'),
      id: { ...Uuid, description: 'The external account.' },
      ownerId: { ...Uuid, description: 'The user that owns the external account.' },
      network: Type.Optional(Type.String({ description: 'The network used with the external account.' })),
      confirmationUrl: Type.Optional(
        Type.String({ format: 'uri', description: 'Where the payer confirms the payment with their bank (the card issuer\'s 3-D Secure challenge), when the issuer asks for it. It stays on the transaction; the page is open only while the transaction is processing.' }),
      ),
    },
    { description: 'A user\'s external account (card, bank account, wallet).' },
  ),
)

const ApmNode = component(
  'transaction-node-apm',
  Type.Object(
    { type: Type.Literal('apm'), method: Type.Union([Type.Literal('apple-pay'), Type.Literal('paypal'), Type.Literal('venmo')], { description: 'The payment method.' }) },
    { description: 'An alternative payment method (wallet).' },
  ),
)

export const TransactionNode = Type.Union([AccountNode, BankAddressNode, CryptoAddressNode, ExternalAccountNode, ApmNode], { description: 'Where the money comes from or goes to.' })
export type TransactionNode = Static<typeof TransactionNode>

export const Endpoint = (name: string, description: string) =>
  component(
    name,
    Type.Object(
      {
        asset: Type.String({ description: 'The asset at this end.' }),
        amount: Amount('The amount at this end, as a decimal string.'),
        rate: Type.String({ description: 'The rate of this end against the other one.' }),
        node: TransactionNode,
      },
      { description },
    ),
  )

export const Denomination = component(
  'transaction-denomination',
  Type.Object(
    {
      asset: Type.String({ description: 'The asset the amount is given in.' }),
      amount: Amount('The amount the movement was asked for, in that asset.'),
      rate: Type.String({ description: 'Units of the target end\'s asset per unit of the denomination asset.' }),
      target: Type.Union([Type.Literal('origin'), Type.Literal('destination')], { description: 'Whether the origin pays or the destination receives exactly this amount.' }),
    },
    { description: 'The amount the movement was asked for.' },
  ),
)

export const Fees = component(
  'transaction-fees',
  Type.Array(
    Type.Object({
      type: Type.Union([Type.Literal('deposit'), Type.Literal('exchange'), Type.Literal('network'), Type.Literal('withdrawal')], { description: 'What the fee is for.' }),
      code: Type.String({ description: 'Which fee of the schedule it is.' }),
      asset: Type.String({ description: 'The asset the fee is charged in.' }),
      amount: Amount('The amount of the fee.'),
      percentage: Type.Optional(Type.String({ description: 'The percentage of the amount the fee was computed from, when it is one (`0.5` is 0.5 %).' })),
    }),
    { description: 'The fees charged for the movement, paid by the origin on top of what is exchanged.' },
  ),
)

export const Transaction = component(
  'transaction',
  Type.Object(
    {
      id: Uuid,
      type: Type.String({
        description: 'What the transaction is: `deposit` (money in: arrived on a rail, or pulled from a linked bank account), `trade` (between accounts of two assets), `transfer` (between accounts of one asset), `withdrawal` (money out, to an external account or a crypto address).',
      }),
      origin: Endpoint('transaction-origin-endpoint', 'Where the money comes from.'),
      destination: Endpoint('transaction-destination-endpoint', 'Where the money goes.'),
      denomination: Denomination,
      fees: Fees,
      status: Type.Union(
        [Type.Literal('processing'), Type.Literal('on-hold'), Type.Literal('completed'), Type.Literal('failed')],
        { description: '`processing` until it settles, then `completed` or `failed`; `on-hold` while it waits for a review.' },
      ),
      statusDetails: Type.Optional(
        Type.Object(
          { reason: Type.Optional(component('transaction-status-reason', Type.Unsafe<TransactionStatusReason>(Type.String({ enum: [...TRANSACTION_STATUS_REASONS], description: 'Why the transaction failed.' })))) },
          { description: 'Details of the status: why it failed.' },
        ),
      ),
      quotedAt: Timestamp,
      createdAt: Timestamp,
      updatedAt: Timestamp,
      completedAt: Type.Optional(Timestamp),
    },
    { description: 'A movement of money of a user, as it progresses.' },
  ),
)
export type Transaction = Static<typeof Transaction>

const StatusFilter = Type.String({
  pattern: `^(${TRANSACTION_STATUSES.join('|')})(,(${TRANSACTION_STATUSES.join('|')}))*$`,
  description: 'Only transactions in these statuses (comma-separated).',
})

const TypeFilter = Type.String({ pattern: '^(deposit|trade|transfer|withdrawal)(,(deposit|trade|transfer|withdrawal))*$', description: 'Only transactions of these types (comma-separated).' })

export const ListTransactionsQuery = Type.Object({ status: Type.Optional(StatusFilter), type: Type.Optional(TypeFilter), ...PaginationQuery })
export const ListTransactionsResponse = component('list-transactions-response', Type.Object({ transactions: Type.Array(Transaction), pagination: Pagination }))
export const TransactionResponse = component('transaction-response', Type.Object({ transaction: Transaction }))
export const TransactionParams = Type.Object({ transactionId: Type.String({ format: 'uuid', description: 'The id of the transaction.' }) })
export const AccountTransactionsParams = Type.Object({ accountId: Type.String({ format: 'uuid', description: 'The id of the account.' }) })

const ReturnUrl = Type.String({ format: 'uri', pattern: '^[a-zA-Z][a-zA-Z0-9+\\-.]*:\\/\\/[^\\s]+$', maxLength: 2048 })

export const CreateTransactionBody = Type.Object(
  {
    quoteId: Type.String({ format: 'uuid', description: 'The quote to execute; a quote is used once, and an expired one cannot be.' }),
    params: Type.Optional(
      Type.Object(
        {
          travelRule: Type.Optional(Type.Object({}, { additionalProperties: true, description: 'Travel-rule information about the other party (crypto movements).' })),
          requirements: Type.Optional(
            Type.Array(
              Type.Object(
                { name: Type.String({ description: 'The requirement met, e.g. `authorize:3ds`.' }), returnUrl: Type.Optional(ReturnUrl) },
                { additionalProperties: true },
              ),
              { maxItems: 10, description: 'How the quote\'s requirements are met.' },
            ),
          ),
          returnUrl: Type.Optional({ ...ReturnUrl, deprecated: true }),
        },
        { description: 'What the movement needs besides the quote.' },
      ),
    ),
    metadata: Type.Optional(InitialMetadata('transaction')),
  },
  { description: 'Executes a quote.' },
)
export type CreateTransactionBody = Static<typeof CreateTransactionBody>

export const CreateTransactionResponse = component(
  'create-transaction-response',
  Type.Object({
    transaction: Transaction,
    errors: CreationErrors,
  }),
)

export const CreateTransactionHeaders = Type.Object({ ...OnBehalfOfHeader, ...IdempotencyKeyHeader, ...UserContextHeaders })
