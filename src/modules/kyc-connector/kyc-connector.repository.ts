import type { Executor, KycConnectorConfigRow, StoredIntegration } from '../../db/schema.ts'

export interface ConfigKey {
  organizationId: string
  provider: string
}

const byKey = (key: ConfigKey) => ({ organization_id: key.organizationId, provider: key.provider })

/** The configuration; with `lock`, locked until the transaction ends so that concurrent writers take turns. */
export function findConfig(db: Executor, key: ConfigKey, options: { lock?: boolean } = {}): Promise<KycConnectorConfigRow | undefined> {
  const query = db.selectFrom('kyc_connector_configs').selectAll().where((eb) => eb.and(byKey(key)))
  return (options.lock ? query.forUpdate() : query).executeTakeFirst()
}

/** Creates or replaces the integrations; the creation time stays that of the first write. */
export function upsertConfig(db: Executor, key: ConfigKey, integrations: StoredIntegration[], at: Date): Promise<KycConnectorConfigRow> {
  const text = JSON.stringify(integrations)
  return db
    .insertInto('kyc_connector_configs')
    .values({ ...byKey(key), integrations: text, created_at: at, updated_at: at })
    .onConflict((oc) => oc.columns(['organization_id', 'provider']).doUpdateSet({ integrations: text, updated_at: at }))
    .returningAll()
    .executeTakeFirstOrThrow()
}
