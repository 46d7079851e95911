import Type, { type Static } from 'typebox'
import { component } from '../../http/schemas.ts'
import { NETWORK_TYPES } from './networks.schemas.ts'

export const RAIL_METHODS = ['crypto-transaction', 'credit-card', 'debit-card', 'bank-transfer', 'apple-pay', 'paypal', 'venmo'] as const
const Features = Type.Array(Type.Enum(['deposit', 'withdraw']), { description: 'What the rail can be used for.' })
const Constraint = Type.Object(
  { rule: Type.String({ description: 'The rule, e.g. `allowed-deposit-accounts`.' }), allowed: Type.Optional(Type.String()) },
  { additionalProperties: true },
)

/** One entry of reference-data/rails.json. */
export const RailDefinition = Type.Object({
  type: Type.Enum([...NETWORK_TYPES]),
  network: Type.String({ minLength: 1 }),
  method: Type.Enum([...RAIL_METHODS]),
  asset: Type.String({ minLength: 1 }),
  decimals: Type.Integer({ minimum: 0, maximum: 36 }),
  features: Features,
  constraints: Type.Optional(Type.Array(Constraint)),
  chains: Type.Optional(
    Type.Object({
      main: Type.Optional(Type.Object({ contractAddress: Type.String({ minLength: 1 }) })),
      test: Type.Optional(Type.Object({ contractAddress: Type.String({ minLength: 1 }) })),
    }),
  ),
})
export type RailDefinition = Static<typeof RailDefinition>
export const RailsFile = Type.Object({ rails: Type.Array(RailDefinition) })
export type RailsFile = Static<typeof RailsFile>

const base = {
  network: Type.String({ description: 'Network code.' }),
  asset: Type.String({ description: 'Asset code.' }),
  decimals: Type.Integer({ minimum: 0, description: 'Decimal places of the asset on this network.' }),
  features: Features,
}
export const CryptoRail = component(
  'rail-crypto',
  Type.Object({
    ...base,
    type: Type.Literal('crypto'),
    method: Type.Literal('crypto-transaction'),
    contractAddress: Type.Optional(Type.String({ description: 'The token contract on the chain this deployment uses.' })),
  }),
)
export const CardRail = component('rail-card', Type.Object({ ...base, type: Type.Literal('card'), method: Type.Enum(['credit-card', 'debit-card']) }))
export const BankRail = component(
  'rail-bank',
  Type.Object({ ...base, type: Type.Literal('bank'), method: Type.Literal('bank-transfer'), constraints: Type.Optional(Type.Array(Constraint)) }),
)
export const ApmRail = component('rail-apm', Type.Object({ ...base, type: Type.Literal('apm'), method: Type.Enum(['apple-pay', 'paypal', 'venmo']) }))
export const Rail = component('rail', Type.Union([CryptoRail, CardRail, BankRail, ApmRail]))
export type Rail = Static<typeof Rail>
export const ListRailsResponse = component('list-rails-response', Type.Object({ rails: Type.Array(Rail) }))

const list = (items: string, description: string) => Type.Optional(Type.String({ pattern: `^${items}(,${items})*$`, maxLength: 2000, description }))
export const ListRailsQuery = Type.Object({
  type: list('(crypto|card|bank|apm)', 'Only rails of these types, comma-separated.'),
  network: list('[a-z0-9-]+', 'Only rails over these networks, comma-separated.'),
  method: list(`(${RAIL_METHODS.join('|')})`, 'Only rails of these methods, comma-separated.'),
  asset: list('[A-Za-z0-9]+', 'Only rails of these assets, comma-separated.'),
})
