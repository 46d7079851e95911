import type { AuditTrailRow, Executor } from '../../db/schema.ts'
import type { AuditEntry, AuditObject } from './audit-scope.ts'
import type { AuditFilter } from './audit.service.ts'

const COLUMNS = 'id, organization_id, actor, client_id, user_id, operation, method, route, object_type, object_id, request_id, at'
const TYPES = ['uuid', 'uuid', 'text', 'text', 'uuid', 'text', 'text', 'text', 'text', 'text', 'text', 'timestamptz']

function entryParameters(id: string, entry: AuditEntry, object: AuditObject | null, at: Date): unknown[] {
  return [id, entry.organizationId, entry.actor, entry.clientId, entry.userId, entry.operation, entry.method, entry.route, object?.type ?? null, object?.id ?? null, entry.requestId, at.toISOString()]
}

/**
 * The row as the statement of a commit hook (db/commit-hooks.ts `CommitHook`): inserted only when `condition` holds,
 * its parameters numbered after `offset` others, typed since no VALUES list types them. A request has one row: when
 * two of its writes carried it at once, the second to commit finds the first's row and inserts nothing.
 */
export function entryStatement(offset: number, condition: string, id: string, entry: AuditEntry, object: AuditObject | null, at: Date): { sql: string; parameters: unknown[] } {
  const values = TYPES.map((type, index) => `$${offset + index + 1}::${type}`).join(', ')
  return { sql: `insert into audit_trail (${COLUMNS}) select ${values} where ${condition} on conflict (request_id) do nothing`, parameters: entryParameters(id, entry, object, at) }
}

/** Oldest first, so that following pages with `after` reads the trail in order. */
export function listEntries(db: Executor, filter: AuditFilter): Promise<AuditTrailRow[]> {
  let query = db.selectFrom('audit_trail').selectAll()
  if (filter.organizationId !== undefined) query = query.where('organization_id', '=', filter.organizationId)
  if (filter.clientId !== undefined) query = query.where('client_id', '=', filter.clientId)
  if (filter.userId !== undefined) query = query.where('user_id', '=', filter.userId)
  if (filter.operation !== undefined) query = query.where('operation', '=', filter.operation)
  if (filter.objectId !== undefined) query = query.where('object_id', '=', filter.objectId)
  if (filter.requestId !== undefined) query = query.where('request_id', '=', filter.requestId)
  if (filter.since !== undefined) query = query.where('at', '>=', filter.since)
  if (filter.until !== undefined) query = query.where('at', '<', filter.until)
  if (filter.after !== undefined) query = query.where('id', '>', filter.after)
  return query.orderBy('id').limit(filter.limit).execute()
}
