import { sql, type Kysely } from 'kysely'

export async function up(db: Kysely<unknown>): Promise<void> {
  // A request has one audit row (src/modules/audit). When two of its writes run at once, both carry the row and the
  // second to commit inserts nothing (`on conflict (request_id) do nothing`): neither can commit without the row when
  // the other changes nothing or fails. Request ids are random UUIDs that Tessera generates, never a client's value.
  //
  // Earlier versions could, rarely, write a request's row twice (a write that committed while its connection failed,
  // then a later write of the same request). The trail is append-only, so this refuses rather than choose a row to
  // drop; docs/audit-trail.md says what to do. A deployment with a large trail can build the index beforehand without
  // blocking writes (`create unique index concurrently audit_trail_request on audit_trail (request_id)`): then this
  // step finds it and does nothing.
  const duplicated = await sql<{ request_id: string; rows: string }>`
    select request_id, count(*) as rows from audit_trail group by request_id having count(*) > 1 limit 5`.execute(db)
  if (duplicated.rows.length > 0) {
    const requests = duplicated.rows.map((row) => `${row.request_id} (${row.rows} rows)`).join(', ')
    throw new Error(`audit_trail holds more than one row for some requests: ${requests}. See "Upgrading to one row per request" in docs/audit-trail.md.`)
  }
  await db.schema.createIndex('audit_trail_request').ifNotExists().on('audit_trail').column('request_id').unique().execute()
}
