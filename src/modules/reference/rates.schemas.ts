import Type from 'typebox'
import { component, Timestamp, UserContextHeaders } from '../../http/schemas.ts'
import { HISTORY_INTERVALS } from './rates.ts'

export const AssetRate = component(
  'asset-rate',
  Type.Object(
    {
      bid: Type.Optional(Type.String({ description: 'What selling one unit of the asset yields, in the denomination.' })),
      ask: Type.Optional(Type.String({ description: 'What buying one unit of the asset costs, in the denomination.' })),
      mid: Type.String({ description: 'The mid price between bid and ask.' }),
    },
    { description: 'The price of one unit of the asset in another asset, as decimal strings.' },
  ),
)

export const GetAssetRatesQuery = Type.Object({
  denomination: Type.Optional(
    Type.String({
      pattern: '^[^,]+(,[^,]+)*$',
      description:
        'Assets to price the asset in, comma-separated (at most 100). Without it: US dollar, euro, pound sterling and every listed crypto asset.',
    }),
  ),
})

export const GetAssetRatesResponse = component(
  'get-asset-rates-response',
  Type.Object({ rates: Type.Record(Type.String(), AssetRate, { description: 'Rates by denomination asset code.' }) }),
)

export const AssetHistoricalRate = component(
  'asset-historical-rate',
  Type.Object({
    rate: Type.Optional(Type.Object({ mid: Type.String() }, { description: 'The rate at the timestamp; absent where no price was known then.' })),
    timestamp: Timestamp,
  }),
)

export const GetAssetHistoricalRatesQuery = Type.Object({
  denomination: Type.String({ minLength: 1, maxLength: 32, default: 'USD', description: 'The asset to price the asset in.' }),
  interval: Type.Enum([...HISTORY_INTERVALS], {
    default: 'one-day',
    description:
      'How far back: an hour (a point a minute), a day (every 15 minutes), a week (hourly), a month (every 6 hours), ' +
      'a year (daily) or five years (weekly).',
  }),
})

export const GetAssetHistoricalRatesResponse = component(
  'get-asset-historical-rates-response',
  Type.Object({
    historicalRates: Type.Record(Type.String(), Type.Array(AssetHistoricalRate), { description: 'Points by asset code, oldest first.' }),
  }),
)

export const RatesRequestHeaders = Type.Object({ ...UserContextHeaders })
