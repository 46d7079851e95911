import { sql, type Kysely } from 'kysely'

export async function up(db: Kysely<unknown>): Promise<void> {
  // The deployment's key rings (src/modules/keys): the data keys that seal secrets at rest, the keys that sign access
  // tokens, and the one root that stable purpose keys derive from. Each key's material is sealed under the root key
  // from the environment (SEALING_KEY), so nothing here is usable without it. The newest key whose `activates_at` has
  // passed seals and signs; every key not retired opens and verifies. A retired key keeps its row, for the record,
  // and loses its material. The ring is created, from the keys of the environment, by the first process that starts.
  await db.schema
    .createTable('key_ring')
    .addColumn('purpose', 'text', (c) => c.notNull().check(sql`purpose in ('sealing', 'signing', 'derivation')`))
    // Derived from the key, never the key: the sealed values' key id (sealing), the JWK thumbprint (signing).
    .addColumn('id', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('active', 'retired')`))
    .addColumn('material', 'text')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull())
    // A new key is published (JWKS) and opens at once, and seals or signs only from here: by then every process
    // has read it (twice its refresh interval), so none meets a value or token under a key it does not know.
    .addColumn('activates_at', 'timestamptz', (c) => c.notNull())
    .addColumn('retired_at', 'timestamptz')
    .addPrimaryKeyConstraint('key_ring_pkey', ['purpose', 'id'])
    .addCheckConstraint('key_ring_material', sql`(status = 'retired') = (material is null) and (status = 'retired') = (retired_at is not null)`)
    .execute()
}
