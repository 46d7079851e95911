import Type, { type Static } from 'typebox'
import { component, Timestamp } from '../../http/schemas.ts'
import { ASSET_FEATURES } from './asset-rules.ts'

export const ASSET_TYPES = ['fiat', 'crypto'] as const
export const ASSET_SORTS = [
  'code:asc',
  'code:desc',
  'name:asc',
  'name:desc',
  'price:asc',
  'price:desc',
  ...(['asc', 'desc'] as const).flatMap((order) =>
    (['one-hour', 'one-day', 'one-week', 'one-month', 'one-year', 'five-years'] as const).map((window) => `price-delta:${order}:${window}` as const),
  ),
  'market-cap:asc',
  'market-cap:desc',
] as const
export type AssetSort = (typeof ASSET_SORTS)[number]

const Code = Type.String({ pattern: '^[A-Z0-9]{2,12}$' })
const Feature = Type.Enum([...ASSET_FEATURES])
const Regions = Type.Array(Type.String({ pattern: '^[A-Z]{2}(-[A-Z0-9]{1,3})?$' }), { minItems: 1 })
const Types = Type.Optional(Type.Array(Type.Enum([...ASSET_TYPES]), { minItems: 1 }))
const Codes = Type.Optional(Type.Array(Code, { minItems: 1 }))

/** One entry of reference-data/assets.json. */
export const AssetDefinition = Type.Object({
  code: Code,
  name: Type.String({ minLength: 1 }),
  type: Type.Enum([...ASSET_TYPES]),
  symbol: Type.Optional(Type.String({ minLength: 1 })),
  decimals: Type.Integer({ minimum: 0, maximum: 18 }),
  delisted: Type.Boolean(),
  features: Type.Array(Feature, { uniqueItems: true }),
})
export type AssetDefinition = Static<typeof AssetDefinition>

export const AssetsFile = Type.Object({
  assets: Type.Array(AssetDefinition, { minItems: 1 }),
  restrictions: Type.Array(
    Type.Object({ description: Type.String(), regions: Regions, assetTypes: Types, assets: Codes, features: Type.Array(Feature, { minItems: 1 }) }),
  ),
  cooldowns: Type.Array(
    Type.Object({
      rule: Type.Literal('financial-promotions'),
      description: Type.String(),
      regions: Regions,
      assetTypes: Types,
      assets: Codes,
      features: Type.Array(Feature, { minItems: 1 }),
      hours: Type.Integer({ minimum: 1 }),
    }),
  ),
})
export type AssetsFile = Static<typeof AssetsFile>

export const AssetType = component('asset-type', Type.Enum([...ASSET_TYPES], { description: 'Fiat currency or crypto asset.' }))
export const AssetFeatureSchema = component(
  'asset-features',
  Type.Enum([...ASSET_FEATURES], { description: 'Something that can be done with an asset.' }),
)

export const AssetCooldown = component(
  'asset-cooldown',
  Type.Object(
    {
      rule: Type.Enum(['financial-promotions'], { description: 'The rule that imposes the cooldown.' }),
      features: Type.Array(AssetFeatureSchema, { description: 'The features unavailable until the cooldown ends.' }),
      endsAt: Timestamp,
    },
    { description: 'A period during which some features of the asset are unavailable to the user.' },
  ),
)

export const Asset = component(
  'asset',
  Type.Object({
    code: Type.String({ description: 'Asset code: ISO 4217 for fiat currencies, the ticker for crypto assets.' }),
    name: Type.String(),
    type: AssetType,
    symbol: Type.Optional(Type.String()),
    decimals: Type.Integer({ minimum: 0, description: 'Decimal places amounts of this asset have at most.' }),
    delisted: Type.Boolean({ description: 'Whether the asset is no longer offered; balances may still be held and withdrawn.' }),
    logo: Type.String({ format: 'uri', description: 'An SVG logo, served by this deployment.' }),
    features: Type.Array(AssetFeatureSchema, {
      description: 'What can be done with the asset; acting for a user, only what that user may do now.',
    }),
    cooldowns: Type.Array(AssetCooldown, { description: 'Cooldowns running for the user the request acts for.' }),
  }),
)
export type Asset = Static<typeof Asset>

export const ListAssetsQuery = Type.Object({
  type: Type.Optional(
    Type.String({ pattern: '^(fiat|crypto)(,(fiat|crypto))*$', description: 'Only assets of these types, comma-separated (e.g. `crypto`).' }),
  ),
  sort: Type.Enum([...ASSET_SORTS], {
    default: 'code:asc',
    description: 'Order of the list. Price sorts use the US dollar mid; assets without a price come last.',
  }),
})

export const ListAssetsResponse = component('list-assets-response', Type.Object({ assets: Type.Array(Asset) }))

export const GetManyAssetsBody = component(
  'get-many-assets-request',
  Type.Object({
    codes: Type.Array(Type.String({ minLength: 1, maxLength: 32 }), { minItems: 1, maxItems: 100, description: 'The asset codes to retrieve.' }),
  }),
)
export const GetManyAssetsResponse = component(
  'get-many-assets-response',
  Type.Object({
    assets: Type.Record(Type.String(), Asset, { description: 'The assets found, by code; unknown codes are left out.' }),
  }),
)

export const GetAssetResponse = component('get-asset-response', Type.Object({ asset: Asset }))

export const AssetParams = Type.Object({ asset: Type.String({ minLength: 1, maxLength: 32, description: 'The asset code.' }) })

