import type { Executor } from '../../db/schema.ts'

export interface Acceptance {
  organizationId: string
  userId: string
  code: string
  acceptedAt: Date
  context: Record<string, string>
}

/** Records the acceptance; returns false when the user had already accepted these terms. */
export async function insertAcceptance(db: Executor, acceptance: Acceptance): Promise<boolean> {
  const inserted = await db
    .insertInto('terms_of_service_acceptances')
    .values({
      organization_id: acceptance.organizationId,
      user_id: acceptance.userId,
      code: acceptance.code,
      accepted_at: acceptance.acceptedAt,
      context: JSON.stringify(acceptance.context),
    })
    .onConflict((oc) => oc.columns(['organization_id', 'user_id', 'code']).doNothing())
    .returning('code')
    .executeTakeFirst()
  return inserted !== undefined
}

/** When the user accepted each terms of service they accepted. */
export async function acceptancesOf(db: Executor, organizationId: string, userId: string): Promise<Map<string, Date>> {
  const rows = await db
    .selectFrom('terms_of_service_acceptances')
    .select(['code', 'accepted_at'])
    .where('organization_id', '=', organizationId)
    .where('user_id', '=', userId)
    .execute()
  return new Map(rows.map((row) => [row.code, row.accepted_at]))
}
