import type { Executor, OutboxEventRow } from '../../db/schema.ts'
import { sql } from 'kysely'
import { uuidv7 } from '../../lib/ids.ts'

export interface OutboxEvent {
  organizationId: string
  /** Dotted event type, e.g. `core.kyc.phone.status-changed`. */
  type: string
  subject: { type: string; id: string }
  userId?: string | null
  data: Record<string, unknown>
  occurredAt?: Date
  /**
   * Set for an event that is not to be fanned out to the organization's webhook endpoints (a test event queued for
   * one endpoint by the portal): it is recorded as already dispatched.
   */
  dispatchedAt?: Date
}

/**
 * Records an event in the outbox. Call it with the transaction that makes the change it announces: the event
 * then exists if and only if the change was committed.
 */
export async function recordEvent(executor: Executor, event: OutboxEvent): Promise<string> {
  const [id] = await recordEvents(executor, [event])
  return id!
}

/** Records several events in one statement, in the given order; the same rule as `recordEvent` applies. */
export async function recordEvents(executor: Executor, events: readonly OutboxEvent[]): Promise<string[]> {
  if (events.length === 0) return []
  const rows = events.map((event) => ({
    id: uuidv7(),
    organization_id: event.organizationId,
    type: event.type,
    subject_type: event.subject.type,
    subject_id: event.subject.id,
    user_id: event.userId ?? null,
    data: JSON.stringify(event.data),
    occurred_at: event.occurredAt ?? new Date(),
    dispatched_at: event.dispatchedAt ?? null,
  }))
  await executor.insertInto('outbox_events').values(rows).execute()
  return rows.map((row) => row.id)
}

/** The events recorded about one subject, oldest first. */
export function eventsAbout(executor: Executor, organizationId: string, subject: { type: string; id: string }): Promise<OutboxEventRow[]> {
  return executor
    .selectFrom('outbox_events')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('subject_type', '=', subject.type)
    .where('subject_id', '=', subject.id)
    .orderBy('id')
    .execute()
}

/**
 * Whether an event of the type about the subject occurred at `at`. A job that announces a moment of its own (when
 * a cooldown ends) asks it, under a lock of the subject, in the transaction that would record the event: at most one.
 */
export async function hasEventAt(executor: Executor, organizationId: string, subject: { type: string; id: string }, type: string, at: Date): Promise<boolean> {
  const row = await executor
    .selectFrom('outbox_events')
    .select('id')
    .where('organization_id', '=', organizationId)
    .where('subject_type', '=', subject.type)
    .where('subject_id', '=', subject.id)
    .where('type', '=', type)
    .where('occurred_at', '=', at)
    .limit(1)
    .executeTakeFirst()
  return row !== undefined
}

/** An event as webhook delivery reads it. */
export interface RecordedEvent {
  id: string
  organizationId: string
  type: string
  subjectType: string
  data: Record<string, unknown>
  occurredAt: Date
}

const toRecorded = (row: Pick<OutboxEventRow, 'id' | 'organization_id' | 'type' | 'subject_type' | 'data' | 'occurred_at'>): RecordedEvent => ({
  id: row.id,
  organizationId: row.organization_id,
  type: row.type,
  subjectType: row.subject_type,
  data: row.data,
  occurredAt: row.occurred_at,
})

/**
 * The oldest events not dispatched yet (committed ones: a transaction still writing its events is not waited for).
 * One dispatcher at a time calls it (webhooks hold a lock for that), in the transaction that marks them dispatched.
 */
export async function undispatchedEvents(executor: Executor, limit: number): Promise<Omit<RecordedEvent, 'data'>[]> {
  // Without their data: the dispatcher needs to know what they are, not what they say.
  const rows = await executor
    .selectFrom('outbox_events')
    .select(['id', 'organization_id', 'type', 'subject_type', 'occurred_at'])
    .where('dispatched_at', 'is', null)
    .orderBy('id')
    .limit(limit)
    .execute()
  return rows.map((row) => ({ id: row.id, organizationId: row.organization_id, type: row.type, subjectType: row.subject_type, occurredAt: row.occurred_at }))
}

/**
 * Marks events dispatched, and numbers `streamed` (a subset, in order) in the webhook delivery stream: the numbers
 * follow the order given and every earlier dispatch's. Call it while holding the dispatcher's lock.
 */
export async function markDispatched(executor: Executor, ids: readonly string[], at: Date, streamed: readonly string[] = []): Promise<void> {
  if (ids.length === 0) return
  const { rows } = streamed.length === 0
    ? { rows: [] }
    : await sql<{ seq: string }>`select nextval('outbox_delivery_seq')::text as seq from generate_series(1, ${streamed.length}::integer)`.execute(executor)
  const seqs = rows.map((row) => row.seq).sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : 1))
  const numbers = new Map(streamed.map((id, i) => [id, seqs[i]!]))
  // One update a row (each makes a new version of it, with its index entries): dispatched, and numbered if streamed.
  await sql`update outbox_events o set dispatched_at = ${at}::timestamptz, delivery_seq = v.seq
    from unnest(${ids}::uuid[], ${ids.map((id) => numbers.get(id) ?? null)}::bigint[]) as v(id, seq) where o.id = v.id`.execute(executor)
}

/** The last number given in the delivery stream (0 before any): an endpoint created now starts after it. */
export async function lastDeliverySeq(executor: Executor): Promise<string> {
  const { rows } = await sql<{ seq: string }>`select case when is_called then last_value else 0 end::text as seq from outbox_delivery_seq`.execute(executor)
  return rows[0]!.seq
}

/** An event of the delivery stream: where it stands in it and what it is (its data is read apart: `eventsToDeliver`). */
export interface StreamedEvent {
  seq: string
  id: string
  type: string
  occurredAt: Date
}

/** The events of an organization's delivery stream after `afterSeq`, of the given types (all when null), in order. */
export async function streamAfter(executor: Executor, organizationId: string, afterSeq: string, types: readonly string[] | null, limit: number): Promise<StreamedEvent[]> {
  const { rows } = await sql<StreamedEvent>`
    select delivery_seq::text as seq, id, type, occurred_at as "occurredAt"
    from outbox_events
    where organization_id = ${organizationId} and delivery_seq > ${afterSeq}::bigint
      ${types === null ? sql`` : sql`and type = any(${types}::text[])`}
    order by delivery_seq
    limit ${limit}`.execute(executor)
  return rows.map((row) => ({ ...row, occurredAt: new Date(row.occurredAt) }))
}

/**
 * How many streamed events wait for the given positions (an endpoint each: its organization, position and types,
 * empty for all), and when the oldest of them occurred.
 */
export async function streamBacklog(executor: Executor, positions: readonly { organizationId: string; afterSeq: string; types: readonly string[] }[]): Promise<{ pending: number; oldest: Date | null }> {
  if (positions.length === 0) return { pending: 0, oldest: null }
  const { rows } = await sql<{ pending: string; oldest: Date | string | null }>`
    select count(*) as pending, min(o.occurred_at) as oldest
    from unnest(${positions.map((p) => p.organizationId)}::uuid[], ${positions.map((p) => p.afterSeq)}::bigint[], ${positions.map((p) => JSON.stringify(p.types))}::jsonb[]) as p(organization_id, after_seq, types)
    join outbox_events o on o.organization_id = p.organization_id and o.delivery_seq > p.after_seq
    where jsonb_array_length(p.types) = 0 or p.types ? o.type`.execute(executor)
  const row = rows[0]!
  return { pending: Number(row.pending), oldest: row.oldest === null ? null : new Date(row.oldest) }
}

/** Events of an organization by id (those that exist). */
export async function eventsByIds(executor: Executor, organizationId: string, ids: readonly string[]): Promise<RecordedEvent[]> {
  if (ids.length === 0) return []
  const rows = await executor
    .selectFrom('outbox_events')
    .select(['id', 'organization_id', 'type', 'subject_type', 'data', 'occurred_at'])
    .where('organization_id', '=', organizationId)
    .where('id', 'in', ids)
    .execute()
  return rows.map(toRecorded)
}

/**
 * The dispatched events of an organization that occurred from `since` on, of the given types, oldest first, leaving
 * out those about `excludeSubjectType`; at most `limit`.
 */
export async function dispatchedEventsSince(
  executor: Executor,
  input: { organizationId: string; since: Date; types: readonly string[]; excludeSubjectType: string; limit: number },
): Promise<{ id: string; type: string; occurredAt: Date }[]> {
  if (input.types.length === 0) return []
  return executor
    .selectFrom('outbox_events')
    .select(['id', 'type', 'occurred_at as occurredAt'])
    .where('organization_id', '=', input.organizationId)
    .where('occurred_at', '>=', input.since)
    .where('dispatched_at', 'is not', null)
    .where('type', 'in', input.types)
    .where('subject_type', '<>', input.excludeSubjectType)
    .orderBy('occurred_at')
    .orderBy('id')
    .limit(input.limit)
    .execute()
}

/** An event as a webhook carries it: its `data` as JSON text, as stored (never parsed and written again). */
export interface EventToDeliver {
  id: string
  type: string
  occurredAt: Date
  dataJson: string
}

export async function eventsToDeliver(executor: Executor, organizationId: string, ids: readonly string[]): Promise<EventToDeliver[]> {
  if (ids.length === 0) return []
  return executor
    .selectFrom('outbox_events')
    .select(['id', 'type', 'occurred_at as occurredAt', sql<string>`data::text`.as('dataJson')])
    .where('organization_id', '=', organizationId)
    .where('id', 'in', ids)
    .execute()
}
