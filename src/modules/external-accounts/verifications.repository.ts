import type { Executor, ExternalAccountVerificationRow } from '../../db/schema.ts'
import type { VerificationLevel, VerificationStatus } from './verification.machine.ts'

export type NewVerification = Omit<ExternalAccountVerificationRow, 'proof_options' | 'proof' | 'completed_at' | 'updated_at'> & {
  proof_options: Record<string, unknown>
}

/** Inserts a verification; undefined when the account already has one of that level (it is then read with `find`). */
export function insert(db: Executor, row: NewVerification): Promise<ExternalAccountVerificationRow | undefined> {
  return db
    .insertInto('external_account_verifications')
    .values({ ...row, proof_options: JSON.stringify(row.proof_options), proof: null, completed_at: null, updated_at: row.created_at })
    .onConflict((conflict) => conflict.columns(['organization_id', 'external_account_id', 'level']).doNothing())
    .returningAll()
    .executeTakeFirst()
}

export function find(db: Executor, organizationId: string, externalAccountId: string, level: VerificationLevel): Promise<ExternalAccountVerificationRow | undefined> {
  return db
    .selectFrom('external_account_verifications')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('external_account_id', '=', externalAccountId)
    .where('level', '=', level)
    .executeTakeFirst()
}

/** The verifications of the external accounts, all levels, read together (one query for a page of accounts). */
export function listFor(db: Executor, organizationId: string, externalAccountIds: readonly string[]): Promise<ExternalAccountVerificationRow[]> {
  if (externalAccountIds.length === 0) return Promise.resolve([])
  return db
    .selectFrom('external_account_verifications')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('external_account_id', 'in', externalAccountIds)
    .orderBy('external_account_id')
    .orderBy('level')
    .execute()
}

/**
 * Records the proof that moves a verification from `from` to `to`; undefined when it is no longer in `from` (another
 * answer got there first), so that a verification is completed once.
 */
export function complete(
  db: Executor,
  organizationId: string,
  id: string,
  move: { from: VerificationStatus; to: VerificationStatus },
  proof: Record<string, unknown>,
  at: Date,
): Promise<ExternalAccountVerificationRow | undefined> {
  return db
    .updateTable('external_account_verifications')
    .set({ status: move.to, proof: JSON.stringify(proof), completed_at: at, updated_at: at })
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .where('status', '=', move.from)
    .returningAll()
    .executeTakeFirst()
}

/**
 * Which of the canonical addresses are those of a live crypto external account of the user on the network with a
 * completed verification (any level).
 */
export async function completedAddresses(
  db: Executor,
  organizationId: string,
  ownerId: string,
  network: string,
  canonicalAddresses: readonly string[],
): Promise<Set<string>> {
  if (canonicalAddresses.length === 0) return new Set()
  const rows = await db
    .selectFrom('external_account_verifications as v')
    .innerJoin('external_accounts as a', (join) => join.onRef('a.organization_id', '=', 'v.organization_id').onRef('a.id', '=', 'v.external_account_id'))
    .select('v.canonical_address')
    .distinct()
    .where('v.organization_id', '=', organizationId)
    .where('v.owner_id', '=', ownerId)
    .where('v.network', '=', network)
    .where('v.status', '=', 'completed')
    .where('v.canonical_address', 'in', canonicalAddresses)
    .where('a.deleted_at', 'is', null)
    .execute()
  return new Set(rows.map((row) => row.canonical_address))
}
