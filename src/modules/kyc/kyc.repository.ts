import { sql } from 'kysely'
import type { Executor, KycProcessRow } from '../../db/schema.ts'

export interface KycProcessValues {
  status: string
  model: string
  type: string | null
  input: Record<string, unknown> | null
  output: Record<string, unknown> | null
  state: Record<string, unknown>
  verified_key: string | null
}

export function listProcesses(db: Executor, organizationId: string, userId: string): Promise<KycProcessRow[]> {
  return db.selectFrom('kyc_processes').selectAll().where('organization_id', '=', organizationId).where('user_id', '=', userId).execute()
}

/** The process row, locked for the rest of the transaction; undefined when the process never changed. */
export function lockProcess(db: Executor, organizationId: string, userId: string, code: string): Promise<KycProcessRow | undefined> {
  return db
    .selectFrom('kyc_processes')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('user_id', '=', userId)
    .where('code', '=', code)
    .forUpdate()
    .executeTakeFirst()
}

/** Writes the first row of a process; false when a concurrent transaction wrote it first. */
export async function insertProcess(db: Executor, organizationId: string, userId: string, code: string, values: KycProcessValues, at: Date): Promise<boolean> {
  const result = await db
    .insertInto('kyc_processes')
    .values({
      organization_id: organizationId,
      user_id: userId,
      code,
      ...serialize(values),
      created_at: at,
      updated_at: at,
    })
    .onConflict((oc) => oc.columns(['organization_id', 'user_id', 'code']).doNothing())
    .executeTakeFirst()
  return Number(result.numInsertedOrUpdatedRows ?? 0) > 0
}

export async function updateProcess(db: Executor, organizationId: string, userId: string, code: string, values: KycProcessValues, at: Date): Promise<void> {
  await db
    .updateTable('kyc_processes')
    .set({ ...serialize(values), updated_at: at })
    .where('organization_id', '=', organizationId)
    .where('user_id', '=', userId)
    .where('code', '=', code)
    .execute()
}

/** Whether another user of the organization verified this value (e.g. a phone number). */
export async function verifiedByAnother(db: Executor, organizationId: string, userId: string, code: string, key: string): Promise<boolean> {
  const row = await db
    .selectFrom('kyc_processes')
    .select('user_id')
    .where('organization_id', '=', organizationId)
    .where('code', '=', code)
    .where('verified_key', '=', key)
    .where('user_id', '<>', userId)
    .executeTakeFirst()
  return row !== undefined
}

function serialize(values: KycProcessValues) {
  return {
    status: values.status,
    model: values.model,
    type: values.type,
    input: values.input === null ? null : JSON.stringify(values.input),
    output: values.output === null ? null : JSON.stringify(values.output),
    state: JSON.stringify(values.state),
    verified_key: values.verified_key,
  }
}

/**
 * Users whose approved self-categorization statement expired by `atIso` (an ISO 8601 UTC time, as the statements
 * store theirs), in key order after `after`, at most `limit`.
 */
export function findExpiredStatements(db: Executor, atIso: string, after: { organizationId: string; userId: string } | null, limit: number): Promise<{ organization_id: string; user_id: string }[]> {
  let query = db
    .selectFrom('kyc_processes')
    .select(['organization_id', 'user_id'])
    // Literals, not parameters: the planner matches them with the partial index of migration 0019.
    .where('code', '=', sql.lit('self-categorization-statement'))
    .where('status', '=', sql.lit('ok'))
    .where(sql<string>`output->>'expiresAt'`, '<=', atIso)
  if (after) query = query.where((eb) => eb(eb.refTuple('organization_id', 'user_id'), '>', eb.tuple(after.organizationId, after.userId)))
  return query.orderBy('organization_id').orderBy('user_id').limit(limit).execute()
}
