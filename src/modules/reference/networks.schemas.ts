import Type, { type Static } from 'typebox'
import { component } from '../../http/schemas.ts'

export const NETWORK_TYPES = ['crypto', 'card', 'bank', 'apm'] as const
export const ADDRESS_FAMILIES = ['bitcoin', 'litecoin', 'ethereum', 'xrp-ledger', 'solana'] as const

const Explorer = Type.Object(
  {
    addressUrl: Type.String({ description: 'Page of an address; `<hash>` stands for the address.' }),
    txUrl: Type.String({ description: 'Page of a transaction; `<hash>` stands for its hash.' }),
  },
  { description: 'Where to look the chain up.' },
)

/** One entry of reference-data/networks.json. */
export const NetworkDefinition = Type.Object({
  code: Type.String({ pattern: '^[a-z0-9][a-z0-9-]*$' }),
  name: Type.String({ minLength: 1 }),
  type: Type.Enum([...NETWORK_TYPES]),
  logo: Type.Optional(Type.String({ minLength: 1 })),
  addressFamily: Type.Optional(Type.Enum([...ADDRESS_FAMILIES])),
  reference: Type.Optional(Type.Object({ type: Type.Enum(['destination-tag', 'memo', 'payment-reference']) })),
  chains: Type.Optional(
    Type.Object({
      main: Type.Object({ exampleAddress: Type.String(), explorer: Type.Optional(Explorer) }),
      test: Type.Object({ exampleAddress: Type.String(), explorer: Type.Optional(Explorer) }),
    }),
  ),
})
export type NetworkDefinition = Static<typeof NetworkDefinition>
export const NetworksFile = Type.Object({ networks: Type.Array(NetworkDefinition, { minItems: 1 }) })
export type NetworksFile = Static<typeof NetworksFile>

const base = {
  code: Type.String({ description: 'Network code.' }),
  name: Type.String(),
  logo: Type.Optional(Type.String({ format: 'uri' })),
}

export const CryptoNetwork = component(
  'network-crypto',
  Type.Object({
    ...base,
    type: Type.Literal('crypto'),
    exampleAddress: Type.Optional(Type.String({ description: 'An address of the chain this deployment uses (a test chain in sandbox).' })),
    reference: Type.Optional(Type.Object({ type: Type.Enum(['destination-tag', 'memo']) }, { description: 'The reference addresses may carry.' })),
    explorer: Type.Optional(Explorer),
  }),
)
export const CardNetwork = component('network-card', Type.Object({ ...base, type: Type.Literal('card') }))
export const BankNetwork = component(
  'network-bank',
  Type.Object({ ...base, type: Type.Literal('bank'), reference: Type.Optional(Type.Object({ type: Type.Enum(['payment-reference']) })) }),
)
export const ApmNetwork = component('network-apm', Type.Object({ ...base, type: Type.Literal('apm') }))
export const Network = component('network', Type.Union([CryptoNetwork, CardNetwork, BankNetwork, ApmNetwork]))
export type Network = Static<typeof Network>

export const ListNetworksResponse = component('list-networks-response', Type.Object({ networks: Type.Array(Network) }))
export const GetNetworkResponse = component('get-network-response', Type.Object({ network: Network }))

export const ListNetworksQuery = Type.Object({
  type: Type.Optional(
    Type.String({
      pattern: '^(crypto|card|bank|apm)(,(crypto|card|bank|apm))*$',
      description: 'Only networks of these types, comma-separated (e.g. `crypto,bank`).',
    }),
  ),
})

export const NetworkParams = Type.Object({ network: Type.String({ minLength: 1, maxLength: 64, description: 'The network code.' }) })

const NoEdgeSpaces = '^\\S.*\\S$|^\\S$'
export const ValidateAddressBody = component(
  'validate-network-address-request',
  Type.Object({
    address: Type.String({ pattern: NoEdgeSpaces, maxLength: 256, description: 'The address to check.' }),
    reference: Type.Optional(Type.String({ pattern: NoEdgeSpaces, maxLength: 64, description: 'Destination tag or memo, where the network takes one.' })),
  }),
)

export const ValidateAddressResponse = component(
  'validate-network-address-response',
  Type.Object({
    isValid: Type.Boolean({ description: 'Whether the address (and reference) can receive on this network.' }),
    error: Type.Optional(
      Type.Object({
        code: Type.Enum(['address_invalid', 'reference_invalid', 'reference_missing']),
        message: Type.String(),
        details: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
      }),
    ),
  }),
)

