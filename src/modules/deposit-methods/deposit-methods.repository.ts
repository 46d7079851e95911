import type { DepositMethodRow, Executor } from '../../db/schema.ts'

export function findForAccount(db: Executor, organizationId: string, accountId: string, network: string): Promise<DepositMethodRow | undefined> {
  return db
    .selectFrom('deposit_methods')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('account_id', '=', accountId)
    .where('network', '=', network)
    .executeTakeFirst()
}

/** Which of these destinations (or bank references) of a network are already given to some deposit method. */
export async function takenDestinations(db: Executor, network: string, destinations: readonly string[]): Promise<boolean> {
  const row = await db
    .selectFrom('deposit_destinations')
    .select('destination')
    .where('network', '=', network)
    .where('destination', 'in', destinations)
    .executeTakeFirst()
  return row !== undefined
}

export async function referenceTaken(db: Executor, network: string, reference: string): Promise<boolean> {
  const row = await db
    .selectFrom('deposit_methods')
    .select('id')
    .where('type', '=', 'bank')
    .where('network', '=', network)
    .where('reference', '=', reference)
    .executeTakeFirst()
  return row !== undefined
}

export async function insert(db: Executor, row: DepositMethodRow, destinations: readonly string[]): Promise<void> {
  await db
    .insertInto('deposit_methods')
    .values({ ...row, details: JSON.stringify(row.details) })
    .execute()
  await db
    .insertInto('deposit_destinations')
    .values(destinations.map((destination) => ({ network: row.network, destination, organization_id: row.organization_id, deposit_method_id: row.id })))
    .execute()
}

export function markProvisioned(db: Executor, organizationId: string, id: string, at: Date): Promise<DepositMethodRow | undefined> {
  return db
    .updateTable('deposit_methods')
    .set({ status: 'ok', updated_at: at })
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .where('status', '=', 'processing')
    .returningAll()
    .executeTakeFirst()
}

/** The deposit method that a destination of a network names within an organization. */
export function findByDestination(db: Executor, organizationId: string, network: string, destination: string) {
  return db
    .selectFrom('deposit_destinations as d')
    .innerJoin('deposit_methods as m', (join) => join.onRef('m.organization_id', '=', 'd.organization_id').onRef('m.id', '=', 'd.deposit_method_id'))
    .select(['m.id as depositMethodId', 'm.account_id as accountId', 'm.owner_id as ownerId', 'm.asset as asset', 'm.status as status', 'm.details as details', 'm.reference as reference'])
    .where('d.organization_id', '=', organizationId)
    .where('d.network', '=', network)
    .where('d.destination', '=', destination)
    .executeTakeFirst()
}
