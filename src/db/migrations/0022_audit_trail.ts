import { sql, type Kysely } from 'kysely'

export async function up(db: Kysely<unknown>): Promise<void> {
  // Every write a client made through the API (src/modules/audit): who, which operation, which object, which
  // request, when. Written by the transaction of the write itself, so a row exists exactly when the write
  // committed. Never bodies: a body may hold a secret.
  await db.schema
    .createTable('audit_trail')
    .addColumn('id', 'uuid', (c) => c.primaryKey())
    .addColumn('organization_id', 'uuid', (c) => c.notNull())
    // Who: the OAuth client (or the webhook portal's session of the organization), the user it acted for, and
    // whether a widget session's token made the call.
    .addColumn('actor', 'text', (c) => c.notNull())
    .addColumn('client_id', 'text')
    .addColumn('user_id', 'uuid')
    .addColumn('operation', 'text', (c) => c.notNull())
    .addColumn('method', 'text', (c) => c.notNull())
    .addColumn('route', 'text', (c) => c.notNull())
    .addColumn('object_type', 'text')
    .addColumn('object_id', 'text')
    .addColumn('request_id', 'text', (c) => c.notNull())
    .addColumn('at', 'timestamptz', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('audit_trail_organization_at').on('audit_trail').columns(['organization_id', 'at']).execute()
  await db.schema.createIndex('audit_trail_object').on('audit_trail').columns(['object_id']).execute()

  // Append-only: a row is never changed or removed by the application (an operator who must purge old rows
  // drops the trigger knowingly, in a maintenance window).
  await sql`
    create function audit_trail_append_only() returns trigger language plpgsql as $$
    begin
      raise exception 'audit_trail is append-only (% refused)', tg_op using errcode = 'insufficient_privilege';
    end
    $$`.execute(db)
  await sql`
    create trigger audit_trail_append_only before update or delete on audit_trail
    for each row execute function audit_trail_append_only()`.execute(db)
  await sql`
    create trigger audit_trail_no_truncate before truncate on audit_trail
    for each statement execute function audit_trail_append_only()`.execute(db)
}
