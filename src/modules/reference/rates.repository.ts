import type { Insertable } from 'kysely'
import type { Executor, PricePointsTable } from '../../db/schema.ts'

/** The recorded US dollar mids of an asset at a resolution, from `from` to `to` included. */
export function findPricePoints(db: Executor, asset: string, resolution: string, from: Date, to: Date): Promise<{ bucket_at: Date; usd_mid: string }[]> {
  return db
    .selectFrom('price_points')
    .select(['bucket_at', 'usd_mid'])
    .where('asset', '=', asset)
    .where('resolution', '=', resolution)
    .where('bucket_at', '>=', from)
    .where('bucket_at', '<=', to)
    .execute()
}

/** Records points that are not recorded yet: the first writer of a bucket wins. */
export async function insertPricePoints(db: Executor, rows: readonly Insertable<PricePointsTable>[]): Promise<void> {
  await db.insertInto('price_points').values(rows).onConflict((conflict) => conflict.doNothing()).execute()
}
