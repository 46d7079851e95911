import type { ClientRow, Executor } from '../../db/schema.ts'

export async function insertOrganization(db: Executor, organization: { id: string; name: string; createdAt: Date }): Promise<void> {
  await db.insertInto('organizations').values({ id: organization.id, name: organization.name, created_at: organization.createdAt }).execute()
}

export async function organizationExists(db: Executor, id: string): Promise<boolean> {
  return (await db.selectFrom('organizations').select('id').where('id', '=', id).executeTakeFirst()) !== undefined
}

export async function insertClient(
  db: Executor,
  client: { id: string; organizationId: string; name: string; secretHash: string; scopes: string; createdAt: Date },
): Promise<void> {
  await db
    .insertInto('clients')
    .values({
      id: client.id,
      organization_id: client.organizationId,
      name: client.name,
      secret_hash: client.secretHash,
      scopes: client.scopes,
      created_at: client.createdAt,
    })
    .execute()
}

export async function findClient(db: Executor, id: string): Promise<ClientRow | undefined> {
  return db.selectFrom('clients').selectAll().where('id', '=', id).executeTakeFirst()
}

export async function listClients(db: Executor): Promise<ClientRow[]> {
  return db.selectFrom('clients').selectAll().orderBy('created_at').orderBy('id').execute()
}

export async function countClients(db: Executor): Promise<number> {
  const row = await db.selectFrom('clients').select((eb) => eb.fn.countAll<string | number>().as('count')).executeTakeFirstOrThrow()
  return Number(row.count)
}

/** Marks the client revoked (announce the change in the same transaction); returns false when it does not exist or was already revoked. */
export async function revokeClient(db: Executor, id: string, at: Date): Promise<boolean> {
  const result = await db.updateTable('clients').set({ revoked_at: at }).where('id', '=', id).where('revoked_at', 'is', null).executeTakeFirst()
  return Number(result.numUpdatedRows) > 0
}
