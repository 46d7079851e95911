import type { Kysely } from 'kysely'

export async function up(db: Kysely<unknown>): Promise<void> {
  // A request has one audit row (src/modules/audit). When two of its writes run at once, both carry the row and the
  // second to commit inserts nothing (`on conflict (request_id) do nothing`): neither can commit without the row when
  // the other changes nothing or fails. Request ids are random UUIDs that Tessera generates, never a client's value.
  await db.schema.createIndex('audit_trail_request').on('audit_trail').column('request_id').unique().execute()
}
