import { CompiledQuery } from 'kysely'
import type { HookConnection } from '../../db/commit-hooks.ts'
import type { AuditTrailRow, Executor } from '../../db/schema.ts'
import type { AuditEntry, AuditObject } from './audit-scope.ts'
import type { AuditFilter } from './audit.service.ts'

/** Written on the connection of the transaction being committed (a commit hook), hence plain SQL. */
export async function insertEntry(connection: HookConnection, id: string, entry: AuditEntry, object: AuditObject | null, at: Date): Promise<void> {
  await connection.executeQuery(
    CompiledQuery.raw(
      'insert into audit_trail (id, organization_id, actor, client_id, user_id, operation, method, route, object_type, object_id, request_id, at) ' +
        'values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)',
      [id, entry.organizationId, entry.actor, entry.clientId, entry.userId, entry.operation, entry.method, entry.route, object?.type ?? null, object?.id ?? null, entry.requestId, at.toISOString()],
    ),
  )
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
