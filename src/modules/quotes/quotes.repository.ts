import type { Executor, QuoteRow, StoredDenomination, StoredFee, Tx } from '../../db/schema.ts'

export interface NewQuote {
  organization_id: string
  id: string
  owner_id: string
  kind: string
  origin: Record<string, unknown>
  destination: Record<string, unknown>
  origin_account_id: string | null
  destination_account_id: string | null
  origin_asset: string
  origin_amount: string
  origin_rate: string
  destination_asset: string
  destination_amount: string
  destination_rate: string
  denomination: StoredDenomination
  fees: StoredFee[]
  requirements: string[]
  created_at: Date
  expires_at: Date
}

export async function insert(db: Executor, row: NewQuote): Promise<void> {
  await db
    .insertInto('quotes')
    .values({
      ...row,
      origin: JSON.stringify(row.origin),
      destination: JSON.stringify(row.destination),
      denomination: JSON.stringify(row.denomination),
      fees: JSON.stringify(row.fees),
      requirements: JSON.stringify(row.requirements),
      used_at: null,
    })
    .execute()
}

/**
 * Marks the user's quote used, if it is still unused and unexpired: one conditional statement, so that of two
 * commits of the same quote exactly one gets it (the other waits on the row, then finds it used).
 */
export function use(tx: Tx, organizationId: string, ownerId: string, id: string, at: Date): Promise<QuoteRow | undefined> {
  return tx
    .updateTable('quotes')
    .set({ used_at: at })
    .where('organization_id', '=', organizationId)
    .where('owner_id', '=', ownerId)
    .where('id', '=', id)
    .where('used_at', 'is', null)
    .where('expires_at', '>', at)
    .returningAll()
    .executeTakeFirst()
}

export function findOwned(db: Executor, organizationId: string, ownerId: string, id: string): Promise<QuoteRow | undefined> {
  return db.selectFrom('quotes').selectAll().where('organization_id', '=', organizationId).where('owner_id', '=', ownerId).where('id', '=', id).executeTakeFirst()
}
