import type { Executor, OutboxEventRow } from '../../db/schema.ts'
import { uuidv7 } from '../../lib/ids.ts'

export interface OutboxEvent {
  organizationId: string
  /** Dotted event type, e.g. `core.kyc.phone.status-changed`. */
  type: string
  subject: { type: string; id: string }
  userId?: string | null
  data: Record<string, unknown>
  occurredAt?: Date
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
