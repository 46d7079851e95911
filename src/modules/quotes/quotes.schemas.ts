import Type, { type Static } from 'typebox'
import { component, Timestamp, Uuid } from '../../http/schemas.ts'
import { Denomination, Endpoint, Fees } from '../transactions/index.ts'

const NoEdgeSpaces = '^\\S.*\\S$|^\\S$'
const Decimal = (description: string) => Type.String({ pattern: '^(0|[1-9][0-9]*)(\\.[0-9]+)?$', description })

const AccountNodeInput = Type.Object({ type: Type.Literal('account'), id: Type.String({ format: 'uuid', description: 'One of the acting user\'s accounts.' }) })
const ExternalAccountNodeInput = Type.Object({
  // `external_account` is how the upstream widget test app's sample configuration spells it: the same node.
  type: Type.Union([Type.Literal('external-account'), Type.Literal('external_account')], { description: '`external-account` (also accepted as `external_account`).' }),
  id: Type.String({ format: 'uuid', description: 'One of the acting user\'s external accounts.' }),
  network: Type.Optional(Type.String({ pattern: NoEdgeSpaces, maxLength: 50, description: 'The network to use with it.' })),
})
const ApmNodeInput = Type.Object({ type: Type.Literal('apm'), method: Type.Union([Type.Literal('apple-pay'), Type.Literal('paypal'), Type.Literal('venmo')]) })
const CryptoAddressNodeInput = Type.Object({
  type: Type.Literal('crypto-address'),
  asset: Type.String({ pattern: NoEdgeSpaces, maxLength: 20 }),
  network: Type.String({ pattern: NoEdgeSpaces, maxLength: 50 }),
  address: Type.String({ pattern: NoEdgeSpaces, maxLength: 256 }),
  reference: Type.Optional(Type.String({ pattern: NoEdgeSpaces, maxLength: 255 })),
})

export const CreateQuoteBody = Type.Object(
  {
    origin: Type.Union([AccountNodeInput, ExternalAccountNodeInput, ApmNodeInput], {
      description: 'Where the money comes from: an account of the user, or a linked bank account or card with the `deposit` feature (a card payment is authorized by the cardholder with 3-D Secure: the quote\'s requirements say `authorize:3ds`). `apm` is not supported yet.',
    }),
    destination: Type.Union([AccountNodeInput, ExternalAccountNodeInput, ApmNodeInput, CryptoAddressNodeInput], {
      description: 'Where the money goes: an account of the user, an external account with the `withdraw` feature, or a crypto address. `apm` is not supported yet.',
    }),
    denomination: Type.Object({
      asset: Type.String({ minLength: 1, maxLength: 20, description: 'The asset the amount is given in: any listed asset with a price.' }),
      amount: Type.String({ pattern: '^(?!0+(\\.0+)?$)\\d+(\\.\\d+)?$', maxLength: 64, description: 'The amount, a positive decimal with at most the asset\'s decimals.' }),
      target: Type.Optional(Type.Union([Type.Literal('origin'), Type.Literal('destination')], { default: 'origin', description: 'Whether the origin pays (default) or the destination receives exactly this amount.' })),
    }),
    ttl: Type.Optional(Type.Integer({ minimum: 1, description: 'How long the quote may be executed, in milliseconds; bounded by the deployment (`QUOTE_MAX_TTL_MS`).' })),
  },
  { description: 'What to quote.' },
)
export type CreateQuoteBody = Static<typeof CreateQuoteBody>

export const QUOTE_REQUIREMENTS = ['travel-rule', 'authorize:3ds', 'authorize:apple-pay', 'authorize:paypal', 'authorize:venmo'] as const

export const Quote = component(
  'quote',
  Type.Object(
    {
      id: Uuid,
      origin: Endpoint('quote-origin-endpoint', 'What the origin pays, in its asset, at what rate against the destination.'),
      destination: Endpoint('quote-destination-endpoint', 'What the destination receives, in its asset, at what rate against the origin.'),
      denomination: Denomination,
      fees: Fees,
      requirements: component(
        'quote-requirements',
        Type.Array(Type.Unsafe<(typeof QUOTE_REQUIREMENTS)[number]>(Type.String({ enum: [...QUOTE_REQUIREMENTS] })), {
          description: 'What the user must provide when executing the quote (none for movements between their accounts).',
        }),
      ),
      expiresAt: { ...Timestamp, description: 'Until when the quote can be executed.' },
    },
    { description: 'A priced movement the user can execute once, until it expires.' },
  ),
)
export type Quote = Static<typeof Quote>

export const CreateQuoteResponse = component('create-quote-response', Type.Object({ quote: Quote }))

/** reference-data/transaction-rules.json: fees and limits of movements between a user's accounts. */
const FeeRuleSchema = Type.Object({
  type: Type.Union([Type.Literal('deposit'), Type.Literal('exchange'), Type.Literal('network'), Type.Literal('withdrawal')]),
  code: Type.String({ minLength: 1 }),
  percentage: Type.Optional(Decimal('Percent of what the origin pays.')),
  fixedUsd: Type.Optional(Decimal('A fixed amount in US dollars.')),
})
const LimitSchema = Type.Object({ minimumUsd: Decimal('Smallest origin amount.'), maximumUsd: Decimal('Largest origin amount.') })
export const TransactionRulesFile = Type.Object({
  fees: Type.Object({
    trade: Type.Array(FeeRuleSchema),
    transfer: Type.Array(FeeRuleSchema),
    withdrawal: Type.Optional(Type.Object({ bank: Type.Array(FeeRuleSchema), card: Type.Array(FeeRuleSchema), crypto: Type.Array(FeeRuleSchema) })),
    deposit: Type.Optional(Type.Object({ bank: Type.Optional(Type.Array(FeeRuleSchema)), card: Type.Optional(Type.Array(FeeRuleSchema)) })),
  }),
  /** What sending on a chain costs, in the chain's own asset, by network: charged to crypto withdrawals. */
  networkFees: Type.Optional(Type.Record(Type.String(), Type.Object({ asset: Type.String({ minLength: 1 }), amount: Decimal('The fee, in that asset.') }))),
  limits: Type.Object({ default: LimitSchema, assets: Type.Record(Type.String(), LimitSchema) }),
  /** The travel rule (docs/travel-rule.md): thresholds in US dollars, by default and per asset. */
  travelRule: Type.Optional(
    Type.Object({
      default: Type.Object({ thresholdUsd: Decimal('At or above this value the other party must be described.') }),
      assets: Type.Record(Type.String(), Type.Object({ thresholdUsd: Decimal('The asset\'s own threshold.') })),
      selfDeclarationMaximumUsd: Decimal('Below this value a self-declaration proves the user\'s own wallet; at or above it a signed message is needed.'),
    }),
  ),
})
export type TransactionRulesFile = Static<typeof TransactionRulesFile>
