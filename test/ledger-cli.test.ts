import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, describe, test } from 'node:test'
import { sql } from 'kysely'
import pg from 'pg'
import { migrateToLatest, openDatabase } from '../src/db/database.ts'
import { lockDataDir } from '../src/lib/data-dir.ts'
import { uuidv7 } from '../src/lib/ids.ts'
import { LedgerService } from '../src/modules/ledger/ledger.service.ts'
import { ENGINES, TEST_DATABASE_URL } from './helpers.ts'

const ROOT = path.resolve(import.meta.dirname, '..')
const MAIN = path.join(ROOT, 'src', 'main.ts')

interface Report {
  ok: boolean
  checked: { accounts: number; transactions: number; entries: number }
  violations: { rule: string; organizationId: string; id: string; detail: string }[]
}

function cli(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [MAIN, ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env } })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    child.on('exit', (code) => resolve({ code, stdout, stderr }))
  })
}

/** A deployment of its own: a data directory and, on PostgreSQL, a database. */
async function deployment(engine: string): Promise<{ env: Record<string, string>; dataDir: string; cleanup: () => Promise<void> }> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-ledger-'))
  const env: Record<string, string> = { DATA_DIR: dataDir, LOG_LEVEL: 'warn' }
  let drop = async () => {}
  if (engine === 'postgres') {
    const name = `ledger_${randomBytes(5).toString('hex')}`
    const admin = new pg.Client({ connectionString: TEST_DATABASE_URL })
    await admin.connect()
    await admin.query(`create database ${name}`)
    await admin.end()
    const url = new URL(TEST_DATABASE_URL!)
    url.pathname = `/${name}`
    env.DATABASE_URL = url.href
    drop = async () => {
      const client = new pg.Client({ connectionString: TEST_DATABASE_URL })
      await client.connect()
      await client.query(`drop database if exists ${name} with (force)`)
      await client.end()
    }
  }
  return { env, dataDir, cleanup: async () => { await drop(); fs.rmSync(dataDir, { recursive: true, force: true }) } }
}

for (const engine of ENGINES) {
  describe(`tessera ledger check [${engine}]`, () => {
    const cleanups: (() => Promise<void>)[] = []
    after(async () => {
      for (const cleanup of cleanups) await cleanup()
    })

    test('passes on a sound ledger; names the offenders and exits 3 once a row is corrupted', async () => {
      const { env, dataDir, cleanup } = await deployment(engine)
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
      const { env, cleanup } = await deployment(engine)
      cleanups.push(cleanup)
      for (const args of [['ledger'], ['ledger', 'fix'], ['ledger', 'check', 'now']]) {
        const run = await cli(args, env)
        assert.equal(run.code, 2, run.stderr)
        assert.match(run.stderr, /Unknown ledger command/)
      }
    })

    if (engine === 'pglite') {
      test('refuses to open the embedded database a server holds', async () => {
        const { env, dataDir, cleanup } = await deployment(engine)
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
