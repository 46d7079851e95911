import type { Executor } from '../../db/schema.ts'

/** When the user last skipped their asset cooldowns (a sandbox test helper), if ever. */
export async function findCooldownSkip(db: Executor, organizationId: string, userId: string): Promise<Date | undefined> {
  const row = await db.selectFrom('asset_cooldown_skips').select('skipped_at').where('organization_id', '=', organizationId).where('user_id', '=', userId).executeTakeFirst()
  return row?.skipped_at
}

export async function upsertCooldownSkip(db: Executor, organizationId: string, userId: string, at: Date): Promise<void> {
  await db
    .insertInto('asset_cooldown_skips')
    .values({ organization_id: organizationId, user_id: userId, skipped_at: at })
    .onConflict((conflict) => conflict.columns(['organization_id', 'user_id']).doUpdateSet({ skipped_at: at }))
    .execute()
}
