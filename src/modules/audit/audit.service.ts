import type { CommitHooks } from '../../db/commit-hooks.ts'
import type { AuditTrailRow, Db } from '../../db/schema.ts'
import { uuidv7 } from '../../lib/ids.ts'
import { auditPending, pendingAudit } from './audit-scope.ts'
import * as repository from './audit.repository.ts'

/** Which rows to list: every condition given must hold. */
export interface AuditFilter {
  organizationId?: string
  clientId?: string
  userId?: string
  operation?: string
  objectId?: string
  requestId?: string
  since?: Date
  until?: Date
  /** Rows after this id (uuidv7, so in time order): the next page. */
  after?: string
  limit: number
}

/** An audit row as the CLI prints it. */
export interface AuditEntryView {
  id: string
  at: string
  organizationId: string
  actor: string
  clientId: string | null
  userId: string | null
  operation: string
  method: string
  route: string
  object: { type: string; id: string | null } | null
  requestId: string
}

function view(row: AuditTrailRow): AuditEntryView {
  return {
    id: row.id,
    at: row.at.toISOString(),
    organizationId: row.organization_id,
    actor: row.actor,
    clientId: row.client_id,
    userId: row.user_id,
    operation: row.operation,
    method: row.method,
    route: row.route,
    object: row.object_type === null ? null : { type: row.object_type, id: row.object_id },
    requestId: row.request_id,
  }
}

/**
 * The audit trail: one row for every write a client makes through the API, written by the write's own transaction
 * (a commit hook of the database), so that it exists exactly when the write committed. Requests that wrote nothing,
 * or whose transactions rolled back, leave none.
 */
export class AuditTrailService {
  private readonly db: Db

  constructor(deps: { db: Db; commitHooks?: CommitHooks }) {
    this.db = deps.db
    deps.commitHooks?.add(auditPending, (offset, condition) => {
      const pending = pendingAudit()
      if (!pending) return undefined
      return { ...repository.entryStatement(offset, condition, uuidv7(), pending.entry, pending.object, new Date()), after: pending.settle }
    })
  }

  async list(filter: AuditFilter): Promise<AuditEntryView[]> {
    return (await repository.listEntries(this.db, filter)).map(view)
  }
}
