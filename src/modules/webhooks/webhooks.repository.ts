import { sql } from 'kysely'
import type { Executor, WebhookAttemptRow, WebhookEndpointRow, WebhookMessageRow } from '../../db/schema.ts'

export type EndpointRow = WebhookEndpointRow
/** A message as stored, with its `seq` (bigint, as text). */
export type MessageRow = Omit<WebhookMessageRow, 'seq'> & { seq: string }
/** A message and where it stands, as lists show it. */
export type MessageState = MessageRow & { status: 'pending' | 'delivered' | 'failed' }
export type AttemptRow = WebhookAttemptRow
export type NewMessage = Pick<MessageRow, 'organization_id' | 'id' | 'endpoint_id' | 'event_id' | 'event_type'>

const MESSAGE_COLUMNS = ['m.organization_id', 'm.id', 'm.endpoint_id', 'm.event_id', 'm.event_type', 'm.origin', 'm.attempts', 'm.next_attempt_at', 'm.failed_at', 'm.created_at'] as const

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

export async function updateEndpoint(
  db: Executor,
  organizationId: string,
  id: string,
  changes: Partial<Omit<EndpointRow, 'organization_id' | 'id' | 'event_types' | 'delivered_seq' | 'stream_seq' | 'stream_attempts' | 'stream_retry_at'>> & { event_types?: string[] },
): Promise<EndpointRow | undefined> {
  const { event_types: eventTypes, ...rest } = changes
  return db
    .updateTable('webhook_endpoints')
    .set({ ...rest, ...(eventTypes === undefined ? {} : { event_types: JSON.stringify(eventTypes) }) })
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst()
}

/** Deletes an endpoint with its messages and attempts (call it in one transaction); answers whether it existed. */
export async function deleteEndpoint(db: Executor, organizationId: string, id: string): Promise<boolean> {
  await db.deleteFrom('webhook_attempts').where('organization_id', '=', organizationId).where('endpoint_id', '=', id).execute()
  await db.deleteFrom('webhook_messages').where('organization_id', '=', organizationId).where('endpoint_id', '=', id).execute()
  const result = await db.deleteFrom('webhook_endpoints').where('organization_id', '=', organizationId).where('id', '=', id).executeTakeFirst()
  return Number(result.numDeletedRows) > 0
}

/**
 * The endpoints of these organizations, for the dispatcher to know which events are streamed (a disabled endpoint
 * keeps its place in the stream: what happens meanwhile waits for it).
 */
export function endpointsOf(db: Executor, organizationIds: readonly string[]): Promise<Pick<EndpointRow, 'organization_id' | 'id' | 'event_types' | 'disabled_at'>[]> {
  if (organizationIds.length === 0) return Promise.resolve([])
  return db
    .selectFrom('webhook_endpoints')
    .select(['organization_id', 'id', 'event_types', 'disabled_at'])
    .where('organization_id', 'in', organizationIds)
    .orderBy('organization_id')
    .orderBy('id')
    .execute()
}

/** Where every enabled endpoint stands in the stream (for the metrics' backlog). */
export function streamPositions(db: Executor): Promise<Pick<EndpointRow, 'organization_id' | 'stream_seq' | 'event_types'>[]> {
  return db.selectFrom('webhook_endpoints').select(['organization_id', 'stream_seq', 'event_types']).where('disabled_at', 'is', null).execute()
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

/** Queues messages, in the order given, due now: one statement (arrays), whatever their number. */
export async function insertMessages(db: Executor, rows: readonly NewMessage[], origin: string, at: Date): Promise<void> {
  if (rows.length === 0) return
  await sql`
    insert into webhook_messages (organization_id, id, endpoint_id, event_id, event_type, origin, attempts, next_attempt_at, created_at)
    select organization_id, id, endpoint_id, event_id, event_type, ${origin}, 0, ${at}::timestamptz, ${at}::timestamptz
    from unnest(${rows.map((r) => r.organization_id)}::uuid[], ${rows.map((r) => r.id)}::uuid[], ${rows.map((r) => r.endpoint_id)}::uuid[],
      ${rows.map((r) => r.event_id)}::uuid[], ${rows.map((r) => r.event_type)}::text[]) with ordinality
      as m(organization_id, id, endpoint_id, event_id, event_type, n)
    order by n`.execute(db)
}

/** The first pending messages of an endpoint (past `deliveredSeq`), in delivery order. */
export async function pendingHead(db: Executor, organizationId: string, endpointId: string, deliveredSeq: string, limit: number): Promise<MessageRow[]> {
  return db
    .selectFrom('webhook_messages as m')
    .select([...MESSAGE_COLUMNS, sql<string>`m.seq::text`.as('seq')])
    .where('m.organization_id', '=', organizationId)
    .where('m.endpoint_id', '=', endpointId)
    .where(sql<boolean>`m.seq > ${deliveredSeq}::bigint`)
    .where('m.failed_at', 'is', null)
    .orderBy('m.seq')
    .limit(limit)
    .execute()
}

/** Where a message stands, from its endpoint's mark. */
const STATUS = sql<'pending' | 'delivered' | 'failed'>`case when m.failed_at is not null then 'failed' when m.seq <= e.delivered_seq then 'delivered' else 'pending' end`

function messagesWithStatus(db: Executor) {
  return db
    .selectFrom('webhook_messages as m')
    .innerJoin('webhook_endpoints as e', (join) => join.onRef('e.organization_id', '=', 'm.organization_id').onRef('e.id', '=', 'm.endpoint_id'))
    .select([...MESSAGE_COLUMNS, sql<string>`m.seq::text`.as('seq'), STATUS.as('status')])
}

export function findMessage(db: Executor, organizationId: string, endpointId: string, id: string): Promise<MessageState | undefined> {
  return messagesWithStatus(db).where('m.organization_id', '=', organizationId).where('m.endpoint_id', '=', endpointId).where('m.id', '=', id).executeTakeFirst()
}

/**
 * An endpoint's queued messages that are pending or failed (a delivered one is recorded by its successful attempt),
 * newest first.
 */
export function listQueued(db: Executor, organizationId: string, endpointId: string, status: 'pending' | 'failed' | undefined, limit: number): Promise<MessageState[]> {
  let query = messagesWithStatus(db).where('m.organization_id', '=', organizationId).where('m.endpoint_id', '=', endpointId).where(STATUS, '<>', 'delivered')
  if (status !== undefined) query = query.where(STATUS, '=', status)
  return query.orderBy('m.seq', 'desc').limit(limit).execute()
}

/** An endpoint's successful attempts, newest first: its delivered messages. */
export function listDelivered(db: Executor, organizationId: string, endpointId: string, limit: number): Promise<AttemptRow[]> {
  return db
    .selectFrom('webhook_attempts')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('endpoint_id', '=', endpointId)
    .where('succeeded', '=', true)
    .orderBy('id', 'desc')
    .limit(limit)
    .execute()
}

function insertAttemptsSql(attempts: readonly AttemptRow[]) {
  const column = <K extends keyof AttemptRow>(key: K) => attempts.map((attempt) => attempt[key])
  return sql`
    insert into webhook_attempts (organization_id, id, endpoint_id, message_id, event_id, event_type, origin, attempt, url, succeeded, response_status, duration_ms, response_excerpt, error, error_message, created_at)
    select organization_id, id, endpoint_id, message_id, event_id, event_type, origin, attempt, url, true, response_status, duration_ms, response_excerpt, null, null, created_at
    from unnest(${column('organization_id')}::uuid[], ${column('id')}::uuid[], ${column('endpoint_id')}::uuid[], ${column('message_id')}::uuid[], ${column('event_id')}::uuid[],
      ${column('event_type')}::text[], ${column('origin')}::text[], ${column('attempt')}::integer[], ${column('url')}::text[], ${column('response_status')}::integer[],
      ${column('duration_ms')}::integer[], ${column('response_excerpt')}::text[], ${column('created_at').map((at) => at.toISOString())}::timestamptz[])
      as a(organization_id, id, endpoint_id, message_id, event_id, event_type, origin, attempt, url, response_status, duration_ms, response_excerpt, created_at)`
}

/**
 * Records delivered messages of an endpoint's queue in one statement: their (successful) attempts, and its mark moved
 * to the last of them (they are the next ones of its queue, in order).
 */
export async function recordDelivered(db: Executor, organizationId: string, endpointId: string, throughSeq: string, attempts: readonly AttemptRow[]): Promise<void> {
  await sql`
    with recorded as (${insertAttemptsSql(attempts)})
    update webhook_endpoints set delivered_seq = greatest(delivered_seq, ${throughSeq}::bigint)
    where organization_id = ${organizationId} and id = ${endpointId}`.execute(db)
}

/** The same for events of the stream: their attempts, and the endpoint's position moved to the last of them. */
export async function recordStreamDelivered(db: Executor, organizationId: string, endpointId: string, throughSeq: string, attempts: readonly AttemptRow[]): Promise<void> {
  await sql`
    with recorded as (${insertAttemptsSql(attempts)})
    update webhook_endpoints set stream_seq = greatest(stream_seq, ${throughSeq}::bigint), stream_attempts = 0, stream_retry_at = null
    where organization_id = ${organizationId} and id = ${endpointId}`.execute(db)
}

/** A failed attempt of the stream's next event: tried again at `retryAt`. */
export async function recordStreamRetry(db: Executor, organizationId: string, endpointId: string, attempts: number, retryAt: Date): Promise<void> {
  await db.updateTable('webhook_endpoints').set({ stream_attempts: attempts, stream_retry_at: retryAt }).where('organization_id', '=', organizationId).where('id', '=', endpointId).execute()
}

/** The stream's next event failed for good: it is kept as a failed message, and the position moves past it. */
export async function recordStreamFailed(db: Executor, message: NewMessage & { attempts: number; failed_at: Date }, seq: string): Promise<void> {
  await db
    .insertInto('webhook_messages')
    .values({ ...message, origin: 'event', next_attempt_at: message.failed_at, created_at: message.failed_at })
    .execute()
  await sql`update webhook_endpoints set stream_seq = greatest(stream_seq, ${seq}::bigint), stream_attempts = 0, stream_retry_at = null
    where organization_id = ${message.organization_id} and id = ${message.endpoint_id}`.execute(db)
}

/** Records a failed attempt on a message: another try at `retryAt`, or none (it failed; the endpoint's mark moves past it). */
export async function recordFailedAttempt(db: Executor, message: MessageRow, attempts: number, next: { retryAt: Date } | { failedAt: Date }): Promise<void> {
  await db
    .updateTable('webhook_messages')
    .set('retryAt' in next ? { attempts, next_attempt_at: next.retryAt } : { attempts, failed_at: next.failedAt })
    .where('organization_id', '=', message.organization_id)
    .where('id', '=', message.id)
    .execute()
  if ('failedAt' in next) {
    await sql`update webhook_endpoints set delivered_seq = greatest(delivered_seq, ${message.seq}::bigint)
      where organization_id = ${message.organization_id} and id = ${message.endpoint_id}`.execute(db)
  }
}

export async function insertAttempts(db: Executor, rows: readonly AttemptRow[]): Promise<void> {
  if (rows.length > 0) await db.insertInto('webhook_attempts').values([...rows]).execute()
}

export function listAttempts(db: Executor, organizationId: string, filter: { endpointId?: string; eventId?: string; messageId?: string; limit: number }): Promise<AttemptRow[]> {
  let query = db.selectFrom('webhook_attempts').selectAll().where('organization_id', '=', organizationId)
  if (filter.endpointId !== undefined) query = query.where('endpoint_id', '=', filter.endpointId)
  if (filter.eventId !== undefined) query = query.where('event_id', '=', filter.eventId)
  if (filter.messageId !== undefined) query = query.where('message_id', '=', filter.messageId)
  return query.orderBy('id', 'desc').limit(filter.limit).execute()
}

/** Pending messages in the queues (resends, replays, tests) of enabled endpoints, and when the oldest was queued. */
export async function queuedDepth(db: Executor): Promise<{ pending: number; oldest: Date | null }> {
  const { rows } = await sql<{ pending: string; oldest: Date | string | null }>`
    select count(*) as pending, min(m.created_at) as oldest
    from webhook_endpoints e join webhook_messages m on m.organization_id = e.organization_id and m.endpoint_id = e.id and m.seq > e.delivered_seq and m.failed_at is null
    where e.disabled_at is null`.execute(db)
  const row = rows[0]!
  return { pending: Number(row.pending), oldest: row.oldest === null ? null : new Date(row.oldest) }
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
