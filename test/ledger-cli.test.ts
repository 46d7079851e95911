import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { sql } from 'kysely'
import { migrateToLatest, openDatabase } from '../src/db/database.ts'
import { lockDataDir } from '../src/lib/data-dir.ts'
import { uuidv7 } from '../src/lib/ids.ts'
import { LedgerService } from '../src/modules/ledger/ledger.service.ts'
import { ENGINES } from './helpers.ts'
import { cli, deployment } from './processes.ts'

interface Report {
  ok: boolean
  checked: { accounts: number; transactions: number; entries: number }
  violations: { rule: string; organizationId: string; id: string; detail: string }[]
}

for (const engine of ENGINES) {
  describe(`tessera ledger check [${engine}]`, () => {
    const cleanups: (() => Promise<void>)[] = []
    after(async () => {
      for (const cleanup of cleanups) await cleanup()
    })

    test('passes on a sound ledger; names the offenders and exits 3 once a row is corrupted', async () => {
      const { env, dataDir, cleanup } = await deployment(engine, 'ledger')
      cleanups.push(cleanup)
      const database = await openDatabase({ databaseUrl: env.DATABASE_URL ?? null, databasePoolSize: 2, dataDir })
      await migrateToLatest(database)
      const organizationId = uuidv7()
      await database.db.insertInto('organizations').values({ id: organizationId, name: 'Acme', created_at: new Date() }).execute()
      const ledger = new LedgerService({ db: database.db, assets: { decimalsOf: () => 2 } })
      const alice = uuidv7()
      const bob = uuidv7()
      for (const id of [alice, bob]) await ledger.openAccount(database.db, { organizationId, id, asset: 'EUR', at: new Date() })
      const rail = await ledger.systemAccount(organizationId, { kind: 'clearing', network: 'sepa', asset: 'EUR' })
      const deposit = await ledger.transfer({ organizationId, type: 'deposit', from: rail, to: alice, amount: '100' })
      await ledger.transfer({ organizationId, type: 'transfer', from: alice, to: bob, amount: '25.5' })
      await ledger.placeHold({ organizationId, accountId: alice, amount: '10' })
      await database.close()

      const sound = await cli(['ledger', 'check'], env)
      assert.equal(sound.code, 0, sound.stderr)
      const report = JSON.parse(sound.stdout) as Report
      assert.deepEqual(report, { ok: true, checked: { accounts: 3, transactions: 2, entries: 4 }, violations: [] })

      // An entry slipped into the deposit outside the ledger: the deposit no longer balances and Bob's total
      // no longer matches his entries. Alice's available balance is then edited behind her holds' back.
      const raw = await openDatabase({ databaseUrl: env.DATABASE_URL ?? null, databasePoolSize: 1, dataDir })
      await sql`insert into ledger_entries (organization_id, id, transaction_id, account_id, asset, amount, created_at)
        values (${organizationId}, ${uuidv7()}, ${deposit.transactionId}, ${bob}, 'EUR', 5, now())`.execute(raw.db)
      await sql`update ledger_accounts set available = available - 1 where id = ${alice}`.execute(raw.db)
      await raw.close()

      const broken = await cli(['ledger', 'check'], env)
      assert.equal(broken.code, 3, broken.stderr)
      const found = (JSON.parse(broken.stdout) as Report).violations
      assert.deepEqual(found.map((v) => [v.rule, v.id]).sort(), [
        ['available-mismatch', alice],
        ['total-mismatch', bob],
        ['transaction-unbalanced', deposit.transactionId],
      ].sort())
      assert.match(broken.stderr, new RegExp(`transaction-unbalanced: transaction ${deposit.transactionId}`))
      assert.match(broken.stderr, new RegExp(`total-mismatch: account ${bob}.*entries sum to 30\\.5`))
      assert.match(broken.stderr, new RegExp(`available-mismatch: account ${alice}`))
    })

    test('usage mistakes exit 2', async () => {
      const { env, cleanup } = await deployment(engine, 'ledger')
      cleanups.push(cleanup)
      for (const args of [['ledger'], ['ledger', 'fix'], ['ledger', 'check', 'now']]) {
        const run = await cli(args, env)
        assert.equal(run.code, 2, run.stderr)
        assert.match(run.stderr, /Unknown ledger command/)
      }
    })

    if (engine === 'pglite') {
      test('refuses to open the embedded database a server holds', async () => {
        const { env, dataDir, cleanup } = await deployment(engine, 'ledger')
        cleanups.push(cleanup)
        const release = lockDataDir(dataDir, 'a test holding the directory')
        try {
          const run = await cli(['ledger', 'check'], env)
          assert.equal(run.code, 2, run.stderr)
          assert.match(run.stderr, /stop the server first/)
        } finally {
          release()
        }
      })
    }
  })
}
