import type { Insertable, Updateable } from 'kysely'
import type { Db, Executor, SandboxCardPaymentRow, SandboxCardPaymentsTable, Tx } from '../../db/schema.ts'

/** Records a payment under its key, unless the key already has one; answers the payment the key holds. */
export async function recordPayment(db: Db, row: Insertable<SandboxCardPaymentsTable>): Promise<SandboxCardPaymentRow> {
  await db.insertInto('sandbox_card_payments').values(row).onConflict((conflict) => conflict.columns(['organization_id', 'key']).doNothing()).execute()
  return db.selectFrom('sandbox_card_payments').selectAll().where('organization_id', '=', row.organization_id).where('key', '=', row.key).executeTakeFirstOrThrow()
}

export function findMany(db: Executor, organizationId: string, ids: readonly string[]): Promise<SandboxCardPaymentRow[]> {
  if (ids.length === 0) return Promise.resolve([])
  return db.selectFrom('sandbox_card_payments').selectAll().where('organization_id', '=', organizationId).where('id', 'in', ids).execute()
}

/** The payment behind a challenge page: its id is the page's secret, so no organization is known yet. */
export function findById(db: Executor, id: string): Promise<SandboxCardPaymentRow | undefined> {
  return db.selectFrom('sandbox_card_payments').selectAll().where('id', '=', id).executeTakeFirst()
}

export function lock(tx: Tx, id: string, organizationId?: string): Promise<SandboxCardPaymentRow | undefined> {
  let query = tx.selectFrom('sandbox_card_payments').selectAll().where('id', '=', id)
  if (organizationId !== undefined) query = query.where('organization_id', '=', organizationId)
  return query.forUpdate().executeTakeFirst()
}

export async function update(executor: Executor, id: string, changes: Updateable<SandboxCardPaymentsTable>): Promise<SandboxCardPaymentRow> {
  return executor.updateTable('sandbox_card_payments').set(changes).where('id', '=', id).returningAll().executeTakeFirstOrThrow()
}

/** Challenges past their time that nobody answered become declines (the cardholder abandoned them). */
export function expireChallenges(db: Executor, organizationId: string, ids: readonly string[], at: Date): Promise<SandboxCardPaymentRow[]> {
  if (ids.length === 0) return Promise.resolve([])
  return db
    .updateTable('sandbox_card_payments')
    .set({ status: 'declined', reason: 'card-unauthorized', updated_at: at })
    .where('organization_id', '=', organizationId)
    .where('id', 'in', ids)
    .where('status', '=', 'challenge')
    .where('challenge_expires_at', '<=', at)
    .returningAll()
    .execute()
}

/** Every payment of an organization, oldest first (tests and operators). */
export function listPayments(db: Executor, organizationId: string): Promise<SandboxCardPaymentRow[]> {
  return db.selectFrom('sandbox_card_payments').selectAll().where('organization_id', '=', organizationId).orderBy('created_at').orderBy('id').execute()
}
