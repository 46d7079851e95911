/**
 * The life of an ingestion, as the reference gives it: `queued` when created, `running` once its job starts reading
 * the provider, `finished` when every process it imports has its outcome. Each of those processes goes from
 * `processing` to `completed` or `failed`, once: an outcome is never changed by a later run.
 */

export type IngestionStatus = 'queued' | 'running' | 'finished'
export type IngestionEvent = 'start' | 'finish'
export type ProcessOutcome = 'processing' | 'completed' | 'failed'

const TRANSITIONS: Record<IngestionStatus, Partial<Record<IngestionEvent, IngestionStatus>>> = {
  queued: { start: 'running' },
  running: { finish: 'finished' },
  finished: {},
}

/** The status after `event`, or null when the event does not apply to `current`. */
export function nextIngestionStatus(current: IngestionStatus, event: IngestionEvent): IngestionStatus | null {
  return TRANSITIONS[current][event] ?? null
}

/** Whether a process's result may become `next`: only an open (`processing`) one settles, and only once. */
export function maySettle(current: ProcessOutcome | undefined, next: ProcessOutcome): boolean {
  return current === 'processing' && (next === 'completed' || next === 'failed')
}
