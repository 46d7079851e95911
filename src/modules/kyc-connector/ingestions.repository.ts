import type { Executor, KycIngestionRow } from '../../db/schema.ts'
import { fetchPage } from '../../db/paging.ts'
import type { PageWindow } from '../../http/pagination.ts'

export interface NewIngestion {
  organizationId: string
  id: string
  userId: string
  provider: string
  processes: string[]
  parameters: Record<string, unknown>
  state: Record<string, unknown>
  at: Date
}

export async function insertIngestion(db: Executor, ingestion: NewIngestion): Promise<KycIngestionRow> {
  return db
    .insertInto('kyc_ingestions')
    .values({
      organization_id: ingestion.organizationId,
      id: ingestion.id,
      user_id: ingestion.userId,
      provider: ingestion.provider,
      status: 'queued',
      processes: JSON.stringify(ingestion.processes),
      parameters: JSON.stringify(ingestion.parameters),
      state: JSON.stringify(ingestion.state),
      result: null,
      created_at: ingestion.at,
      updated_at: ingestion.at,
    })
    .returningAll()
    .executeTakeFirstOrThrow()
}

/** The user's ingestion of the provider; undefined for another user's, another provider's or an unknown one. */
export function findUserIngestion(db: Executor, key: { organizationId: string; userId: string; provider: string }, id: string): Promise<KycIngestionRow | undefined> {
  return db
    .selectFrom('kyc_ingestions')
    .selectAll()
    .where('organization_id', '=', key.organizationId)
    .where('id', '=', id)
    .where('user_id', '=', key.userId)
    .where('provider', '=', key.provider)
    .executeTakeFirst()
}

/** The ingestion, locked until the transaction ends when `lock` is set. */
export function findIngestion(db: Executor, organizationId: string, id: string, options: { lock?: boolean } = {}): Promise<KycIngestionRow | undefined> {
  const query = db.selectFrom('kyc_ingestions').selectAll().where('organization_id', '=', organizationId).where('id', '=', id)
  return (options.lock ? query.forUpdate() : query).executeTakeFirst()
}

export function listUserIngestions(db: Executor, key: { organizationId: string; userId: string; provider: string }, window: PageWindow) {
  const query = db
    .selectFrom('kyc_ingestions')
    .selectAll()
    .where('organization_id', '=', key.organizationId)
    .where('user_id', '=', key.userId)
    .where('provider', '=', key.provider)
  return fetchPage(query, 'id', window)
}

export interface IngestionChange {
  /** A status change, made only from `from` (the machine's transition): another run's change is never overwritten. */
  status?: { from: KycIngestionRow['status']; to: KycIngestionRow['status'] }
  result?: Record<string, unknown>
  state?: Record<string, unknown>
  startedAt?: Date
  finishedAt?: Date
  at: Date
}

/** The ingestion changed; undefined when a status change found it no longer in its `from` status. */
export async function updateIngestion(db: Executor, organizationId: string, id: string, change: IngestionChange): Promise<KycIngestionRow | undefined> {
  let query = db
    .updateTable('kyc_ingestions')
    .set({
      ...(change.status !== undefined ? { status: change.status.to } : {}),
      ...(change.result !== undefined ? { result: JSON.stringify(change.result) } : {}),
      ...(change.state !== undefined ? { state: JSON.stringify(change.state) } : {}),
      ...(change.startedAt !== undefined ? { started_at: change.startedAt } : {}),
      ...(change.finishedAt !== undefined ? { finished_at: change.finishedAt } : {}),
      updated_at: change.at,
    })
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
  if (change.status !== undefined) query = query.where('status', '=', change.status.from)
  return query.returningAll().executeTakeFirst()
}

/** Records that the ingestion waits on what a callback names (sessions, an applicant). */
export async function addReferences(db: Executor, organizationId: string, provider: string, ingestionId: string, references: readonly string[]): Promise<void> {
  if (references.length === 0) return
  await db
    .insertInto('kyc_ingestion_references')
    .values(references.map((reference) => ({ organization_id: organizationId, provider, reference, ingestion_id: ingestionId })))
    .onConflict((oc) => oc.doNothing())
    .execute()
}

export async function removeReferences(db: Executor, organizationId: string, ingestionId: string): Promise<void> {
  await db.deleteFrom('kyc_ingestion_references').where('organization_id', '=', organizationId).where('ingestion_id', '=', ingestionId).execute()
}

/** The unfinished ingestions, of any organization, waiting on what a callback names. */
export function ingestionsWaitingOn(db: Executor, provider: string, reference: string): Promise<KycIngestionRow[]> {
  return db
    .selectFrom('kyc_ingestion_references as r')
    .innerJoin('kyc_ingestions as i', (join) => join.onRef('i.organization_id', '=', 'r.organization_id').onRef('i.id', '=', 'r.ingestion_id'))
    .selectAll('i')
    .where('r.provider', '=', provider)
    .where('r.reference', '=', reference)
    .where('i.status', '!=', 'finished')
    .execute()
}
