import { sql } from 'kysely'
import type { Db } from '../../db/schema.ts'
import { countByRingKey, SealingError, type SealedValueSet, type Sealer } from '../../lib/sealing.ts'

/** What a card number is sealed for: its external account. */
export function cardNumberContext(organizationId: string, id: string): readonly string[] {
  return ['external-account', organizationId, id, 'number']
}

/** The cards' sealed numbers (table `external_accounts`), for the key ring's re-seal and retire. */
export function cardNumbers(db: Db, sealer: Sealer): SealedValueSet {
  return {
    name: 'card numbers',
    async census() {
      const { rows } = await sql<{ key_id: string; n: number }>`
        select split_part(sealed_number, '.', 2) as key_id, count(*)::int as n
        from external_accounts where sealed_number is not null group by 1`.execute(db)
      return countByRingKey(sealer, rows)
    },
    resealBatch: (cursor, limit) =>
      db.transaction().execute(async (tx) => {
        const after = cursor === null ? null : (JSON.parse(cursor) as [string, string])
        const rows = await tx
          .selectFrom('external_accounts')
          .select(['organization_id', 'id', 'sealed_number'])
          .where(sql<boolean>`split_part(sealed_number, '.', 2) <> ${sealer.keyId}`)
          .$if(after !== null, (query) => query.where(sql<boolean>`(organization_id, id) > (${after![0]}::uuid, ${after![1]}::uuid)`))
          .orderBy('organization_id')
          .orderBy('id')
          .limit(limit)
          .forUpdate()
          .execute()
        let moved = 0
        const unopenable: string[] = []
        for (const row of rows) {
          let resealed: string
          try {
            resealed = sealer.reseal(row.sealed_number!, cardNumberContext(row.organization_id, row.id))
          } catch (error) {
            if (!(error instanceof SealingError)) throw error
            unopenable.push(`external account ${row.id} (organization ${row.organization_id}), card number`)
            continue
          }
          if (resealed === row.sealed_number) continue
          await tx.updateTable('external_accounts').set({ sealed_number: resealed }).where('organization_id', '=', row.organization_id).where('id', '=', row.id).execute()
          moved++
        }
        const last = rows.at(-1)
        return { moved, unopenable, cursor: rows.length < limit || !last ? null : JSON.stringify([last.organization_id, last.id]) }
      }),
  }
}
