import { sql, type Kysely } from 'kysely'

export async function up(db: Kysely<unknown>): Promise<void> {
  // The delivery stream: the dispatcher numbers, in order, the committed events that webhook endpoints subscribe to
  // (one number an event, however many endpoints receive it); each endpoint reads the stream from its position. Only
  // numbered events are in the index.
  await sql`create sequence outbox_delivery_seq`.execute(db)
  await db.schema.alterTable('outbox_events').addColumn('delivery_seq', 'bigint').execute()
  await db.schema
    .createIndex('outbox_events_delivery')
    .on('outbox_events')
    .columns(['organization_id', 'delivery_seq'])
    .where(sql.ref('delivery_seq'), 'is not', null)
    .execute()

  // Where an organization wants its events delivered (src/modules/webhooks). The signing secret is sealed at rest;
  // after a rotation the previous one keeps signing beside it until `previous_secret_expires_at`.
  await db.schema
    .createTable('webhook_endpoints')
    .addColumn('organization_id', 'uuid', (c) => c.notNull().references('organizations.id'))
    .addColumn('id', 'uuid', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('description', 'text', (c) => c.notNull())
    // The event types it receives; empty for every type of the catalogue.
    .addColumn('event_types', 'jsonb', (c) => c.notNull())
    .addColumn('disabled_at', 'timestamptz')
    .addColumn('disabled_reason', 'text')
    .addColumn('secret_sealed', 'text', (c) => c.notNull())
    .addColumn('previous_secret_sealed', 'text')
    .addColumn('previous_secret_expires_at', 'timestamptz')
    .addColumn('secret_rotated_at', 'timestamptz')
    // Where it stands in the delivery stream (the last event done: delivered, or failed for good), and the failed
    // attempts of the event after it, with when it is tried again.
    .addColumn('stream_seq', 'bigint', (c) => c.notNull())
    .addColumn('stream_attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('stream_retry_at', 'timestamptz')
    // Where its queue of other messages (resends, replays, tests) stands: every one up to this `seq` is done.
    .addColumn('delivered_seq', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull())
    .addPrimaryKeyConstraint('webhook_endpoints_pk', ['organization_id', 'id'])
    .execute()

  // Messages outside the stream: an event queued for one endpoint again (resend, replay) or a test event, in `seq`
  // order (every one is inserted while the dispatcher's row lock is held, so a later `seq` is never committed before
  // an earlier one), pending while past the endpoint's `delivered_seq`; and the stream's events that failed for good
  // (their id is the event's). The rows of an endpoint go with it (deleted together by the service).
  await db.schema
    .createTable('webhook_messages')
    .addColumn('organization_id', 'uuid', (c) => c.notNull())
    .addColumn('id', 'uuid', (c) => c.notNull())
    .addColumn('seq', 'bigint', (c) => c.notNull().generatedAlwaysAsIdentity())
    .addColumn('endpoint_id', 'uuid', (c) => c.notNull())
    .addColumn('event_id', 'uuid', (c) => c.notNull())
    .addColumn('event_type', 'text', (c) => c.notNull())
    // Why it was queued: dispatched from the outbox, resent, replayed, or a test event.
    .addColumn('origin', 'text', (c) => c.notNull())
    // Failed attempts so far, and when the next is due.
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('next_attempt_at', 'timestamptz', (c) => c.notNull())
    // Set when its last attempt failed: it gave up.
    .addColumn('failed_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addPrimaryKeyConstraint('webhook_messages_pk', ['organization_id', 'endpoint_id', 'id'])
    .execute()
  // An endpoint's queue in order: its head (past `delivered_seq`) and its history.
  await db.schema.createIndex('webhook_messages_endpoint').on('webhook_messages').columns(['organization_id', 'endpoint_id', 'seq']).execute()

  // Every attempt to deliver a message, as it went: answer status, time taken, the start of the answer. A stream
  // message's id is its event's; a successful attempt is the record of a delivered message.
  await db.schema
    .createTable('webhook_attempts')
    .addColumn('organization_id', 'uuid', (c) => c.notNull())
    .addColumn('id', 'uuid', (c) => c.notNull())
    .addColumn('endpoint_id', 'uuid', (c) => c.notNull())
    .addColumn('message_id', 'uuid', (c) => c.notNull())
    .addColumn('event_id', 'uuid', (c) => c.notNull())
    .addColumn('event_type', 'text', (c) => c.notNull())
    // The message's origin: `event` (the stream), `resend`, `replay` or `test`.
    .addColumn('origin', 'text', (c) => c.notNull())
    .addColumn('attempt', 'integer', (c) => c.notNull())
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('succeeded', 'boolean', (c) => c.notNull())
    .addColumn('response_status', 'integer')
    .addColumn('duration_ms', 'integer', (c) => c.notNull())
    .addColumn('response_excerpt', 'text', (c) => c.notNull())
    .addColumn('error', 'text')
    .addColumn('error_message', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    // An endpoint's attempts, newest first, by their key: one index fewer to write at every attempt.
    .addPrimaryKeyConstraint('webhook_attempts_pk', ['organization_id', 'endpoint_id', 'id'])
    .execute()
  await db.schema.createIndex('webhook_attempts_event').on('webhook_attempts').columns(['organization_id', 'event_id']).execute()

  // The one row whose lock every insertion of messages takes: dispatching from the outbox, resends, replays and test
  // events queue one at a time, so the order of `seq` is the order of commits.
  await db.schema.createTable('webhook_dispatcher').addColumn('id', 'integer', (c) => c.primaryKey()).addColumn('dispatched_at', 'timestamptz').execute()
  await sql`insert into webhook_dispatcher (id, dispatched_at) values (1, null)`.execute(db)

  // A replay from the portal reads an organization's events from a moment on.
  await db.schema.createIndex('outbox_events_occurred').on('outbox_events').columns(['organization_id', 'occurred_at']).execute()

  // The dispatcher's job: it lives for ever, waking itself to look at the outbox (src/modules/webhooks). Workers
  // started on this schema find it there; `serve` recreates it should it ever be missing.
  await sql`insert into jobs (id, organization_id, type, payload, status, attempts, max_attempts, run_at, created_at, updated_at)
    values (gen_random_uuid(), null, 'webhooks.dispatch', '{"role":"dispatcher"}'::jsonb, 'pending', 0, 25, now(), now(), now())`.execute(db)

  // Management links (POST /core/webhooks/management-link): each opens the portal once, until it expires.
  await db.schema
    .createTable('webhook_portal_links')
    .addColumn('organization_id', 'uuid', (c) => c.notNull().references('organizations.id'))
    .addColumn('id', 'uuid', (c) => c.notNull())
    .addColumn('client_id', 'uuid', (c) => c.notNull())
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('opened_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    .addPrimaryKeyConstraint('webhook_portal_links_pk', ['organization_id', 'id'])
    .execute()
}
