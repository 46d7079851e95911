import type { Executor, QuoteRow, Tx } from '../../db/schema.ts'

export type NewQuote = Omit<QuoteRow, 'used_at'>

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
