import type { Executor, RequestForInformationRow } from '../../db/schema.ts'
import type { RequestForInformationStatus } from './rfi.machine.ts'

export interface NewRequestForInformation {
  organizationId: string
  id: string
  ownerId: string
  transactionId: string | null
  quoteId: string | null
  context: Record<string, unknown>
  expiresAt: Date
  at: Date
}

export async function insert(db: Executor, input: NewRequestForInformation): Promise<RequestForInformationRow> {
  return db
    .insertInto('requests_for_information')
    .values({
      organization_id: input.organizationId,
      id: input.id,
      owner_id: input.ownerId,
      type: 'travel-rule',
      status: 'pending',
      transaction_id: input.transactionId,
      quote_id: input.quoteId,
      context: JSON.stringify(input.context),
      data: null,
      reason: null,
      expires_at: input.expiresAt,
      created_at: input.at,
      updated_at: input.at,
    })
    .returningAll()
    .executeTakeFirstOrThrow()
}

export function listForTransactions(db: Executor, organizationId: string, transactionIds: readonly string[]): Promise<RequestForInformationRow[]> {
  if (transactionIds.length === 0) return Promise.resolve([])
  return db
    .selectFrom('requests_for_information')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('transaction_id', 'in', transactionIds)
    .orderBy('created_at')
    .orderBy('id')
    .execute()
}

export function find(db: Executor, organizationId: string, id: string): Promise<RequestForInformationRow | undefined> {
  return db.selectFrom('requests_for_information').selectAll().where('organization_id', '=', organizationId).where('id', '=', id).executeTakeFirst()
}

export function findForQuote(db: Executor, organizationId: string, quoteId: string): Promise<RequestForInformationRow | undefined> {
  return db.selectFrom('requests_for_information').selectAll().where('organization_id', '=', organizationId).where('quote_id', '=', quoteId).forUpdate().executeTakeFirst()
}

/** Binds a quote's request to the transaction that executes the quote. */
export async function bindTransaction(db: Executor, organizationId: string, id: string, transactionId: string, at: Date): Promise<RequestForInformationRow> {
  return db
    .updateTable('requests_for_information')
    .set({ transaction_id: transactionId, updated_at: at })
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow()
}

/**
 * Moves a request from `from` to `to`, with what came with the move; only if it still is in `from` (and, for an
 * answer, not past its expiry): answers the row moved, or undefined when another writer moved it first.
 */
export function move(
  db: Executor,
  organizationId: string,
  id: string,
  from: RequestForInformationStatus,
  to: { status: RequestForInformationStatus; data?: Record<string, unknown>; reason?: string; at: Date; notExpiredAt?: Date; expiredAt?: Date },
): Promise<RequestForInformationRow | undefined> {
  let query = db
    .updateTable('requests_for_information')
    .set({
      status: to.status,
      updated_at: to.at,
      ...(to.data !== undefined ? { data: JSON.stringify(to.data) } : {}),
      ...(to.reason !== undefined ? { reason: to.reason } : {}),
    })
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .where('status', '=', from)
  if (to.notExpiredAt !== undefined) query = query.where('expires_at', '>', to.notExpiredAt)
  if (to.expiredAt !== undefined) query = query.where('expires_at', '<=', to.expiredAt)
  return query.returningAll().executeTakeFirst()
}
