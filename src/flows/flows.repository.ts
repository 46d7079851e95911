import { sql } from 'kysely'
import type { Executor, FlowRow, Tx } from '../db/schema.ts'

export async function insertFlow(tx: Tx, row: { organizationId: string; id: string; type: string; step: number; status: FlowRow['status']; data: Record<string, unknown>; at: Date }): Promise<void> {
  await tx
    .insertInto('flows')
    .values({
      organization_id: row.organizationId,
      id: row.id,
      type: row.type,
      status: row.status,
      step: row.step,
      data: JSON.stringify(row.data),
      error: null,
      created_at: row.at,
      updated_at: row.at,
    })
    .execute()
}

export function findRunning(db: Executor, organizationId: string, ids: readonly string[]): Promise<FlowRow[]> {
  if (ids.length === 0) return Promise.resolve([])
  return db.selectFrom('flows').selectAll().where('organization_id', '=', organizationId).where('id', 'in', ids).where('status', '=', 'running').execute()
}

export function find(db: Executor, organizationId: string, id: string): Promise<FlowRow | undefined> {
  return db.selectFrom('flows').selectAll().where('organization_id', '=', organizationId).where('id', '=', id).executeTakeFirst()
}

/**
 * Locks the flows still running at `step`, in id order; those that moved on (another run of their steps got there
 * first) or ended are left out, so their step is not run twice.
 */
export function lockAtStep(tx: Tx, organizationId: string, ids: readonly string[], step: number): Promise<FlowRow[]> {
  if (ids.length === 0) return Promise.resolve([])
  return tx
    .selectFrom('flows')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('id', 'in', ids)
    .where('status', '=', 'running')
    .where('step', '=', step)
    .orderBy('id')
    .forUpdate()
    .execute()
}

/** Moves flows to `next.step`, merging what their steps recorded into their data: one statement for all of them. */
export async function advance(tx: Tx, organizationId: string, flows: readonly { id: string; patch: Record<string, unknown> }[], next: { step: number; completed: boolean; at: Date }): Promise<void> {
  if (flows.length === 0) return
  await sql`update flows as f
    set step = ${next.step}, status = ${next.completed ? 'completed' : 'running'}, updated_at = ${next.at}, data = f.data || v.patch
    from jsonb_to_recordset(${JSON.stringify(flows)}::jsonb) as v(id uuid, patch jsonb)
    where f.organization_id = ${organizationId} and f.id = v.id`.execute(tx)
}

export async function markFailed(tx: Tx, organizationId: string, id: string, error: string, at: Date): Promise<void> {
  await tx.updateTable('flows').set({ status: 'failed', error, updated_at: at }).where('organization_id', '=', organizationId).where('id', '=', id).execute()
}

export async function recordSteps(
  tx: Tx,
  rows: readonly { organizationId: string; flowId: string; step: string; action: 'run' | 'compensate' | 'fail'; position: number; error?: string; at: Date }[],
): Promise<void> {
  if (rows.length === 0) return
  await tx
    .insertInto('flow_steps')
    .values(rows.map((row) => ({ organization_id: row.organizationId, flow_id: row.flowId, step: row.step, action: row.action, position: row.position, error: row.error ?? null, at: row.at })))
    .execute()
}

export function stepsOf(db: Executor, organizationId: string, flowId: string): Promise<{ step: string; action: string; error: string | null; at: Date }[]> {
  return db
    .selectFrom('flow_steps')
    .select(['step', 'action', 'error', 'at'])
    .where('organization_id', '=', organizationId)
    .where('flow_id', '=', flowId)
    .orderBy('position')
    .execute()
}
