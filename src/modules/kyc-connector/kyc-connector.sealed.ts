import { sql } from 'kysely'
import type { Db, StoredIntegration } from '../../db/schema.ts'
import { countByRingKey, SealingError, type SealedValueSet, type Sealer } from '../../lib/sealing.ts'

export type SecretField = 'apiKey' | 'sharedSecretKey'

const FIELDS: readonly SecretField[] = ['apiKey', 'sharedSecretKey']

/** What binds a sealed secret to its place: sealed for one integration, it opens nowhere else. */
export function connectorSecretContext(organizationId: string, provider: string, name: string, field: SecretField): string[] {
  return ['kyc-connector', organizationId, provider, name, field]
}

/** The integrations' sealed credentials (table `kyc_connector_configs`), for the key ring's re-seal and retire. */
export function connectorSecrets(db: Db, sealer: Sealer): SealedValueSet {
  return {
    name: 'identity-verification connector secrets',
    async census() {
      const { rows } = await sql<{ key_id: string; n: number }>`
        select split_part(field.value, '.', 2) as key_id, count(*)::int as n
        from kyc_connector_configs, jsonb_array_elements(integrations) as integration,
             lateral (values (integration->>'apiKey'), (integration->>'sharedSecretKey')) as field(value)
        group by 1`.execute(db)
      return countByRingKey(sealer, rows)
    },
    resealBatch: (cursor, limit) =>
      db.transaction().execute(async (tx) => {
        const current = sealer.keyId
        const after = cursor === null ? null : (JSON.parse(cursor) as [string, string])
        const rows = await tx
          .selectFrom('kyc_connector_configs')
          .select(['organization_id', 'provider', 'integrations'])
          .where(sql<boolean>`exists (select 1 from jsonb_array_elements(integrations) as integration
            where split_part(integration->>'apiKey', '.', 2) <> ${current} or split_part(integration->>'sharedSecretKey', '.', 2) <> ${current})`)
          .$if(after !== null, (query) => query.where(sql<boolean>`(organization_id, provider) > (${after![0]}::uuid, ${after![1]})`))
          .orderBy('organization_id')
          .orderBy('provider')
          .limit(limit)
          .forUpdate()
          .execute()
        let moved = 0
        const unopenable: string[] = []
        for (const row of rows) {
          let changed = false
          const integrations = row.integrations.map((integration): StoredIntegration => {
            const resealed = { ...integration }
            for (const field of FIELDS) {
              try {
                resealed[field] = sealer.reseal(integration[field], connectorSecretContext(row.organization_id, row.provider, integration.name, field))
              } catch (error) {
                if (!(error instanceof SealingError)) throw error
                unopenable.push(`${row.provider} integration ${integration.name} (organization ${row.organization_id}), ${field}`)
              }
              if (resealed[field] !== integration[field]) {
                changed = true
                moved++
              }
            }
            return resealed
          })
          if (!changed) continue
          // The configuration did not change, only how its secrets are sealed: updated_at stays.
          await tx
            .updateTable('kyc_connector_configs')
            .set({ integrations: JSON.stringify(integrations) })
            .where('organization_id', '=', row.organization_id)
            .where('provider', '=', row.provider)
            .execute()
        }
        const last = rows.at(-1)
        return { moved, unopenable, cursor: rows.length < limit || !last ? null : JSON.stringify([last.organization_id, last.provider]) }
      }),
  }
}
