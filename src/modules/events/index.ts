/**
 * The outbox: events recorded in the transaction that makes the change (table `outbox_events`).
 * The module's public entry: the rest of src/ imports it from here only (docs/architecture.md).
 */
export { dispatchedEventsSince, eventsByIds, eventsToDeliver, hasEventAt, markDispatched, recordEvent, recordEvents, undispatchedEvents, type EventToDeliver, type RecordedEvent } from './outbox.ts'
