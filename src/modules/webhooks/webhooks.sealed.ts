import { sql } from 'kysely'
import type { Db } from '../../db/schema.ts'
import { countByRingKey, SealingError, type SealedValueSet, type Sealer } from '../../lib/sealing.ts'

/** What an endpoint's signing secret is sealed for: that endpoint, as its current or its previous secret. */
export function webhookSecretContext(organizationId: string, endpointId: string, which: 'current' | 'previous'): string[] {
  return ['webhook-endpoint', organizationId, endpointId, which]
}

/** The endpoints' sealed signing secrets (table `webhook_endpoints`), for the key ring's re-seal and retire. */
export function webhookSecrets(db: Db, sealer: Sealer): SealedValueSet {
  return {
    name: 'webhook endpoint secrets',
    async census() {
      const { rows } = await sql<{ key_id: string; n: number }>`
        select split_part(value, '.', 2) as key_id, count(*)::int as n
        from (select secret_sealed as value from webhook_endpoints
              union all select previous_secret_sealed from webhook_endpoints where previous_secret_sealed is not null) as sealed
        group by 1`.execute(db)
      return countByRingKey(sealer, rows)
    },
    resealBatch: (cursor, limit) =>
      db.transaction().execute(async (tx) => {
        const current = sealer.keyId
        const after = cursor === null ? null : (JSON.parse(cursor) as [string, string])
        const rows = await tx
          .selectFrom('webhook_endpoints')
          .select(['organization_id', 'id', 'secret_sealed', 'previous_secret_sealed'])
          .where(sql<boolean>`(split_part(secret_sealed, '.', 2) <> ${current} or split_part(previous_secret_sealed, '.', 2) <> ${current})`)
          .$if(after !== null, (query) => query.where(sql<boolean>`(organization_id, id) > (${after![0]}::uuid, ${after![1]}::uuid)`))
          .orderBy('organization_id')
          .orderBy('id')
          .limit(limit)
          .forUpdate()
          .execute()
        let moved = 0
        const unopenable: string[] = []
        for (const row of rows) {
          const reseal = (sealed: string, which: 'current' | 'previous'): string => {
            try {
              const resealed = sealer.reseal(sealed, webhookSecretContext(row.organization_id, row.id, which))
              if (resealed !== sealed) moved++
              return resealed
            } catch (error) {
              if (!(error instanceof SealingError)) throw error
              unopenable.push(`webhook endpoint ${row.id} (organization ${row.organization_id}), ${which} secret`)
              return sealed
            }
          }
          const secret = reseal(row.secret_sealed, 'current')
          const previous = row.previous_secret_sealed === null ? null : reseal(row.previous_secret_sealed, 'previous')
          if (secret === row.secret_sealed && previous === row.previous_secret_sealed) continue
          await tx
            .updateTable('webhook_endpoints')
            .set({ secret_sealed: secret, previous_secret_sealed: previous })
            .where('organization_id', '=', row.organization_id)
            .where('id', '=', row.id)
            .execute()
        }
        const last = rows.at(-1)
        return { moved, unopenable, cursor: rows.length < limit || !last ? null : JSON.stringify([last.organization_id, last.id]) }
      }),
  }
}
