import { AsyncLocalStorage } from 'node:async_hooks'

/** Who wrote, through which operation, in which request: the audit row of one API request. */
export interface AuditEntry {
  organizationId: string
  actor: 'client' | 'widget-session' | 'webhook-portal'
  clientId: string | null
  userId: string | null
  operation: string
  method: string
  route: string
  requestId: string
}

export interface AuditObject {
  type: string
  id: string
}

/**
 * A request's audit row while the request runs: still to write until a write carrying it committed (`recorded`) or the
 * request ended (`ended`: work it left running does not speak for it, even while an earlier carrier is in flight).
 */
interface AuditScope {
  entry: AuditEntry
  object: AuditObject | null
  recorded: boolean
  ended: boolean
}

const storage = new AsyncLocalStorage<AuditScope>()

/** Runs a request's handler with its audit row waiting for the first write; the scope closes when it ends. */
export async function runAudited<T>(entry: AuditEntry, object: AuditObject | null, work: () => Promise<T>): Promise<T> {
  const scope: AuditScope = { entry, object, recorded: false, ended: false }
  try {
    return await storage.run(scope, work)
  } finally {
    scope.ended = true
  }
}

/**
 * Names the object a request's write is about, when its path does not (a creation: the new object's id). Call it
 * before the transaction that writes commits; outside a request it does nothing.
 */
export function auditObject(type: string, id: string): void {
  const scope = storage.getStore()
  if (scope !== undefined && stillToRecord(scope)) scope.object = { type, id }
}

/** Runs `work` as no client's write: bookkeeping of the request itself (an idempotency key's stored refusal). */
export function withoutAudit<T>(work: () => T): T {
  return storage.exit(work)
}

/**
 * The row the current request still has to write with its next committing write, if any: while no write carrying it
 * has committed. Two writes of one request in flight at once both carry it; the row's unique request id keeps one
 * (the statement inserts it `on conflict do nothing`), so that neither can commit without it when the other turns out
 * to change nothing or fails.
 */
export function pendingAudit(): { entry: AuditEntry; object: AuditObject | null; settle(recorded: boolean): void } | undefined {
  const scope = storage.getStore()
  if (scope === undefined || !stillToRecord(scope)) return undefined
  return {
    entry: scope.entry,
    object: scope.object,
    // Settles one carrier: once one committed the row, no later write carries it. One that changed nothing or failed
    // leaves it to the request's next write (or to another carrier still in flight).
    settle: (recorded) => {
      if (recorded) scope.recorded = true
    },
  }
}

function stillToRecord(scope: AuditScope): boolean {
  return !scope.recorded && !scope.ended
}

/** Whether the current asynchronous context has an audit row still to write. */
export function auditPending(): boolean {
  const scope = storage.getStore()
  return scope !== undefined && stillToRecord(scope)
}
