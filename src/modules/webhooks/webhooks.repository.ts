import { sql } from 'kysely'
import type { Executor, WebhookAttemptRow, WebhookEndpointRow, WebhookMessageRow } from '../../db/schema.ts'

export type EndpointRow = WebhookEndpointRow
export type MessageRow = Omit<WebhookMessageRow, 'seq'>
export type AttemptRow = WebhookAttemptRow

const MESSAGE_COLUMNS = ['organization_id', 'id', 'endpoint_id', 'event_id', 'event_type', 'origin', 'status', 'attempts', 'next_attempt_at', 'created_at', 'finished_at'] as const

export async function insertEndpoint(db: Executor, row: EndpointRow): Promise<void> {
  await db.insertInto('webhook_endpoints').values({ ...row, event_types: JSON.stringify(row.event_types) }).execute()
}

export function findEndpoint(db: Executor, organizationId: string, id: string, options: { lock?: boolean } = {}): Promise<EndpointRow | undefined> {
  let query = db.selectFrom('webhook_endpoints').selectAll().where('organization_id', '=', organizationId).where('id', '=', id)
  if (options.lock) query = query.forUpdate()
  return query.executeTakeFirst()
}

export function listEndpoints(db: Executor, organizationId: string): Promise<EndpointRow[]> {
  return db.selectFrom('webhook_endpoints').selectAll().where('organization_id', '=', organizationId).orderBy('id').execute()
}

export async function countEndpoints(db: Executor, organizationId: string): Promise<number> {
  const row = await db.selectFrom('webhook_endpoints').select((eb) => eb.fn.countAll<string>().as('n')).where('organization_id', '=', organizationId).executeTakeFirstOrThrow()
  return Number(row.n)
}

export async function updateEndpoint(db: Executor, organizationId: string, id: string, changes: Partial<Omit<EndpointRow, 'organization_id' | 'id' | 'event_types'>> & { event_types?: string[] }): Promise<EndpointRow | undefined> {
  const { event_types: eventTypes, ...rest } = changes
  return db
    .updateTable('webhook_endpoints')
    .set({ ...rest, ...(eventTypes === undefined ? {} : { event_types: JSON.stringify(eventTypes) }) })
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst()
}

/** Deletes an endpoint with its messages and attempts; answers whether it existed. */
export async function deleteEndpoint(db: Executor, organizationId: string, id: string): Promise<boolean> {
  const result = await db.deleteFrom('webhook_endpoints').where('organization_id', '=', organizationId).where('id', '=', id).executeTakeFirst()
  return Number(result.numDeletedRows) > 0
}

/** The enabled endpoints of these organizations, for the dispatcher to fan events out to. */
export function enabledEndpointsOf(db: Executor, organizationIds: readonly string[]): Promise<Pick<EndpointRow, 'organization_id' | 'id' | 'event_types'>[]> {
  if (organizationIds.length === 0) return Promise.resolve([])
  return db
    .selectFrom('webhook_endpoints')
    .select(['organization_id', 'id', 'event_types'])
    .where('organization_id', 'in', organizationIds)
    .where('disabled_at', 'is', null)
    .orderBy('organization_id')
    .orderBy('id')
    .execute()
}

/**
 * Takes the lock every insertion of messages holds until its transaction ends (see migration 0017), so that
 * messages are committed in the order of their `seq`. `wait: false` answers false at once when another holds it.
 */
export async function lockDispatcher(db: Executor, wait: boolean): Promise<boolean> {
  const query = db.selectFrom('webhook_dispatcher').select('id').where('id', '=', 1).forUpdate()
  const row = await (wait ? query : query.skipLocked()).executeTakeFirst()
  return row !== undefined
}

export async function insertMessages(db: Executor, rows: readonly MessageRow[]): Promise<void> {
  // One statement per thousand rows keeps the number of parameters well under PostgreSQL's limit.
  for (let start = 0; start < rows.length; start += 1000) {
    await db.insertInto('webhook_messages').values(rows.slice(start, start + 1000)).execute()
  }
}

/** The first pending messages of an endpoint, in delivery order. */
export function pendingHead(db: Executor, organizationId: string, endpointId: string, limit: number): Promise<MessageRow[]> {
  return db
    .selectFrom('webhook_messages')
    .select(MESSAGE_COLUMNS)
    .where('organization_id', '=', organizationId)
    .where('endpoint_id', '=', endpointId)
    .where('status', '=', 'pending')
    .orderBy('seq')
    .limit(limit)
    .execute()
}

export function findMessage(db: Executor, organizationId: string, endpointId: string, id: string): Promise<MessageRow | undefined> {
  return db
    .selectFrom('webhook_messages')
    .select(MESSAGE_COLUMNS)
    .where('organization_id', '=', organizationId)
    .where('endpoint_id', '=', endpointId)
    .where('id', '=', id)
    .executeTakeFirst()
}

/** An endpoint's messages, newest first, optionally of one status. */
export function listMessages(db: Executor, organizationId: string, endpointId: string, filter: { status?: string; limit: number }): Promise<MessageRow[]> {
  let query = db
    .selectFrom('webhook_messages')
    .select(MESSAGE_COLUMNS)
    .where('organization_id', '=', organizationId)
    .where('endpoint_id', '=', endpointId)
  if (filter.status !== undefined) query = query.where('status', '=', filter.status)
  return query.orderBy('seq', 'desc').limit(filter.limit).execute()
}

/**
 * Messages across the organizations (the CLI's view), newest first: of an endpoint, an event or a status when given.
 */
export function findMessages(db: Executor, filter: { organizationId?: string; endpointId?: string; eventId?: string; status?: string; limit: number }): Promise<MessageRow[]> {
  let query = db.selectFrom('webhook_messages').select(MESSAGE_COLUMNS)
  if (filter.organizationId !== undefined) query = query.where('organization_id', '=', filter.organizationId)
  if (filter.endpointId !== undefined) query = query.where('endpoint_id', '=', filter.endpointId)
  if (filter.eventId !== undefined) query = query.where('event_id', '=', filter.eventId)
  if (filter.status !== undefined) query = query.where('status', '=', filter.status)
  return query.orderBy('seq', 'desc').limit(filter.limit).execute()
}

export async function insertAttempts(db: Executor, rows: readonly AttemptRow[]): Promise<void> {
  if (rows.length > 0) await db.insertInto('webhook_attempts').values([...rows]).execute()
}

/** Marks pending messages delivered, each with the attempt count it was delivered at. */
export async function markDelivered(db: Executor, organizationId: string, delivered: readonly { id: string; attempts: number }[], at: Date): Promise<void> {
  if (delivered.length === 0) return
  const values = sql.join(delivered.map((d) => sql`(${d.id}::uuid, ${d.attempts}::integer)`))
  await sql`
    update webhook_messages m set status = 'delivered', attempts = v.attempts, finished_at = ${at}::timestamptz
    from (values ${values}) as v(id, attempts)
    where m.organization_id = ${organizationId} and m.id = v.id and m.status = 'pending'`.execute(db)
}

/** Records a failed attempt on a pending message: another try at `retryAt`, or none (`failed`). */
export async function markFailedAttempt(db: Executor, organizationId: string, id: string, attempts: number, next: { retryAt: Date } | { failedAt: Date }): Promise<void> {
  await db
    .updateTable('webhook_messages')
    .set('retryAt' in next ? { attempts, next_attempt_at: next.retryAt } : { attempts, status: 'failed', finished_at: next.failedAt })
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .where('status', '=', 'pending')
    .execute()
}

export function listAttempts(db: Executor, organizationId: string, filter: { endpointId?: string; eventId?: string; messageId?: string; limit: number }): Promise<AttemptRow[]> {
  let query = db.selectFrom('webhook_attempts').selectAll().where('organization_id', '=', organizationId)
  if (filter.endpointId !== undefined) query = query.where('endpoint_id', '=', filter.endpointId)
  if (filter.eventId !== undefined) query = query.where('event_id', '=', filter.eventId)
  if (filter.messageId !== undefined) query = query.where('message_id', '=', filter.messageId)
  return query.orderBy('id', 'desc').limit(filter.limit).execute()
}

/** Pending messages in all queues, and when the oldest was queued (for the metrics). */
export async function queueDepth(db: Executor): Promise<{ pending: number; oldest: Date | null }> {
  const row = await db
    .selectFrom('webhook_messages')
    .select((eb) => [eb.fn.countAll<string>().as('pending'), eb.fn.min('created_at').as('oldest')])
    .where('status', '=', 'pending')
    .executeTakeFirstOrThrow()
  return { pending: Number(row.pending), oldest: row.oldest === null ? null : new Date(row.oldest as unknown as string | Date) }
}

export async function insertPortalLink(db: Executor, row: { organization_id: string; id: string; client_id: string; expires_at: Date; created_at: Date }): Promise<void> {
  await db.insertInto('webhook_portal_links').values({ ...row, opened_at: null }).execute()
}

/** Marks a link opened; answers false when it does not exist or was opened before. */
export async function openPortalLink(db: Executor, organizationId: string, id: string, at: Date): Promise<boolean> {
  const result = await db
    .updateTable('webhook_portal_links')
    .set({ opened_at: at })
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .where('opened_at', 'is', null)
    .executeTakeFirst()
  return Number(result.numUpdatedRows) > 0
}

/** The organization an endpoint belongs to, for operators who know only its id (the CLI). */
export async function organizationOfEndpoint(db: Executor, id: string): Promise<string | undefined> {
  return (await db.selectFrom('webhook_endpoints').select('organization_id').where('id', '=', id).executeTakeFirst())?.organization_id
}
