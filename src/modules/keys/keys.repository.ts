import type { Executor, KeyRingRow } from '../../db/schema.ts'

export type KeyPurpose = KeyRingRow['purpose']

/** Every key of the rings, oldest first (by when it activates, then when it was made). */
export function listKeys(db: Executor): Promise<KeyRingRow[]> {
  return db.selectFrom('key_ring').selectAll().orderBy('activates_at').orderBy('created_at').orderBy('id').execute()
}

/** Adds a key; false when a key of that purpose and id is already there (another process added it first). */
export async function insertKey(db: Executor, row: { purpose: KeyPurpose; id: string; material: string; createdAt: Date; activatesAt: Date }): Promise<boolean> {
  const inserted = await db
    .insertInto('key_ring')
    .values({ purpose: row.purpose, id: row.id, status: 'active', material: row.material, created_at: row.createdAt, activates_at: row.activatesAt, retired_at: null })
    .onConflict((oc) => oc.columns(['purpose', 'id']).doNothing())
    .returning('id')
    .executeTakeFirst()
  return inserted !== undefined
}

/** The keys of the rings, locked until the transaction ends: changes to the rings take turns. */
export function lockKeys(db: Executor): Promise<KeyRingRow[]> {
  return db.selectFrom('key_ring').selectAll().orderBy('activates_at').orderBy('created_at').orderBy('id').forUpdate().execute()
}

export async function retireKey(db: Executor, purpose: KeyPurpose, id: string, at: Date): Promise<void> {
  await db.updateTable('key_ring').set({ status: 'retired', material: null, retired_at: at }).where('purpose', '=', purpose).where('id', '=', id).execute()
}

export async function replaceMaterial(db: Executor, purpose: KeyPurpose, id: string, material: string): Promise<void> {
  await db.updateTable('key_ring').set({ material }).where('purpose', '=', purpose).where('id', '=', id).execute()
}
