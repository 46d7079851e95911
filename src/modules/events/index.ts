/**
 * The outbox: events recorded in the transaction that makes the change (table `outbox_events`).
 * The module's public entry: the rest of src/ imports it from here only (docs/architecture.md).
 */
export {
  dispatchedEventsSince,
  eventsByIds,
  eventsToDeliver,
  hasEventAt,
  lastDeliverySeq,
  markDispatched,
  recordEvent,
  recordEvents,
  streamAfter,
  streamBacklog,
  undispatchedEvents,
  type EventToDeliver,
  type RecordedEvent,
  type StreamedEvent,
} from './outbox.ts'
