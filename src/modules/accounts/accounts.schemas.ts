import Type, { type Static } from 'typebox'
import { IdempotencyKeyHeader } from '../../http/idempotency.ts'
import { Pagination, PaginationQuery } from '../../http/pagination.ts'
import { component, OnBehalfOfHeader, Timestamp, UserContextHeaders, Uuid } from '../../http/schemas.ts'
import { CreationErrors, InitialMetadata } from '../metadata/index.ts'

const NoEdgeSpaces = '^\\S.*\\S$|^\\S$'

const Label = Type.String({ pattern: NoEdgeSpaces, maxLength: 140, description: 'A name for the account, chosen by the user.' })

const Amount = (description: string) => Type.String({ pattern: '^-?(0|[1-9][0-9]*)(\\.[0-9]+)?$', description })

export const Balance = component(
  'account-balance',
  Type.Object(
    {
      total: Amount('Everything the account holds, as a decimal string in the account\'s asset.'),
      available: Amount('What can be spent now: the total less the money set aside for movements in flight.'),
    },
    { description: 'The balance of the account.' },
  ),
)

export const Account = component(
  'account',
  Type.Object(
    {
      id: Uuid,
      ownerId: { ...Uuid, description: 'The user that owns the account.' },
      label: Type.String({ description: 'The account\'s name.' }),
      asset: Type.String({ description: 'The code of the asset the account holds.' }),
      balance: Balance,
      createdAt: Timestamp,
      updatedAt: Timestamp,
    },
    { description: 'An account of a user, holding one asset.' },
  ),
)
export type Account = Static<typeof Account>

export const CreateAccountBody = component(
  'create-account-request',
  Type.Object({
    label: Label,
    asset: Type.String({ minLength: 1, maxLength: 32, description: 'The code of the asset the account will hold (e.g. `BTC`).' }),
    metadata: Type.Optional(InitialMetadata('account')),
  }),
)
export type CreateAccountBody = Static<typeof CreateAccountBody>

export const CreateAccountResponse = component(
  'create-account-response',
  Type.Object({
    account: Account,
    errors: CreationErrors,
  }),
)

export const UpdateAccountBody = component(
  'update-account-request',
  Type.Object({ label: Type.Optional(Label) }, { additionalProperties: false, minProperties: 1 }),
)
export type UpdateAccountBody = Static<typeof UpdateAccountBody>

export const AccountResponse = component('account-response', Type.Object({ account: Account }))

const AssetFilter = Type.String({
  pattern: '^[^,]+(,[^,]+){0,99}$',
  description: 'Only accounts of these assets: up to 100 asset codes, comma-separated (e.g. `BTC,ETH`).',
})

export const ListAccountsQuery = Type.Object({ asset: Type.Optional(AssetFilter), ...PaginationQuery })
export const DefaultAccountsQuery = Type.Object({ asset: Type.Optional(AssetFilter) })

export const ListAccountsResponse = component('list-accounts-response', Type.Object({ accounts: Type.Array(Account), pagination: Pagination }))
export const DefaultAccountsResponse = component('list-default-accounts-response', Type.Object({ accounts: Type.Array(Account) }))

export const AccountParams = Type.Object({ accountId: Type.String({ format: 'uuid', description: 'The id of the account.' }) })

export const CreateAccountHeaders = Type.Object({ ...OnBehalfOfHeader, ...IdempotencyKeyHeader, ...UserContextHeaders })
