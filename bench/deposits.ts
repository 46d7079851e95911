// Deposit settlement benchmark: settled deposits per second through the API and the job worker on
// PostgreSQL, each as a ratio to a raw SQL baseline that writes the same ledger rows and balance updates
// directly through `pg` in the same run. See bench/README.md ("Deposit settlement").
import { spawn } from 'node:child_process'
import { randomBytes, randomUUID } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { positiveInteger } from './settings.ts'
import { buildApp, type Services } from '../src/app.ts'
import { migrateToLatest, openDatabase } from '../src/db/database.ts'
import type { Db } from '../src/db/schema.ts'
import { Worker } from '../src/jobs/worker.ts'
import { uuidv7 } from '../src/lib/ids.ts'
import { loadOrCreateSecrets } from '../src/lib/data-dir.ts'
import { loadConfig } from '../src/config.ts'

const ROOT = path.resolve(import.meta.dirname, '..')

const settings = {
  deposits: positiveInteger('BENCH_DEPOSITS', 5000),
  accounts: positiveInteger('BENCH_DEPOSIT_ACCOUNTS', 200),
  concurrency: positiveInteger('BENCH_WORKER_CONCURRENCY', 8),
  databaseUrl: process.env.BENCH_DATABASE_URL?.trim() || null,
}

const log = (message: string) => process.stderr.write(`[bench:deposits] ${message}\n`)
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

function sh(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn('bash', args, { cwd: ROOT })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    child.on('exit', (code) => resolve({ code, stdout, stderr }))
  })
}

/** A server to run on: the given one, or a throwaway cluster (fsync off) in a temporary directory. */
async function server(): Promise<{ url: string; stop: () => Promise<void> }> {
  if (settings.databaseUrl) return { url: settings.databaseUrl, stop: async () => {} }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-bench-deposits-'))
  const port = String(20000 + Math.floor(Math.random() * 20000))
  const started = await sh([path.join(ROOT, 'scripts', 'pg-cluster.sh'), 'start', dir, port])
  if (started.code !== 0) throw new Error(`scripts/pg-cluster.sh start failed:\n${started.stderr}`)
  return {
    url: started.stdout.trim(),
    stop: async () => {
      await sh([path.join(ROOT, 'scripts', 'pg-cluster.sh'), 'stop', dir])
      fs.rmSync(dir, { recursive: true, force: true })
    },
  }
}

interface Fixture {
  services: Services
  db: Db
  organizationId: string
  userId: string
  accounts: string[]
  /** The bitcoin deposit address of each account, by account id. */
  addresses: Map<string, string>
  /** Where the app listens, and the headers that act for the user. */
  baseUrl: string
  headers: Record<string, string>
  close: () => Promise<void>
}

async function fixture(url: string): Promise<Fixture> {
  const config = loadConfig({ DATA_DIR: ':memory:', DATABASE_URL: url, DATABASE_POOL_SIZE: String(settings.concurrency + 4), LOG_LEVEL: 'silent', WORKER_CONCURRENCY: String(settings.concurrency), WORKER_POLL_INTERVAL_MS: '10', RATE_LIMIT_PER_MINUTE: '0' })
  const database = await openDatabase(config)
  await migrateToLatest(database)
  const { app, services } = await buildApp({ config, database, secrets: loadOrCreateSecrets(null, config) })
  const client = await services.clients.create({ name: 'Bench', scopes: '*' })
  const token = (
    await app.inject({
      method: 'POST',
      url: '/core/oauth2/token',
      headers: { authorization: `Basic ${Buffer.from(`${client.clientId}:${client.clientSecret}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'grant_type=client_credentials',
    })
  ).json<{ access_token: string }>().access_token
  const user = await app.inject({
    method: 'POST',
    url: '/core/users',
    headers: { authorization: `Bearer ${token}`, 'x-service-user-ip': '203.0.113.7' },
    payload: { type: 'individual', email: `bench-${randomUUID()}@example.com`, termsOfService: 'general-gb-fca', primaryCitizenship: 'GB', address: { country: 'GB' } },
  })
  if (user.statusCode !== 201) throw new Error(`creating the user failed: ${user.body}`)
  const userId = user.json<{ user: { id: string } }>().user.id
  const accounts: string[] = []
  for (let i = 0; i < settings.accounts; i++) {
    const response = await app.inject({ method: 'POST', url: '/core/accounts', headers: { authorization: `Bearer ${token}`, 'x-on-behalf-of': `user ${userId}` }, payload: { label: `Bench ${i}`, asset: 'BTC' } })
    if (response.statusCode !== 201) throw new Error(`creating an account failed: ${response.body}`)
    accounts.push(response.json<{ account: { id: string } }>().account.id)
  }
  const addresses = new Map<string, string>()
  for (const accountId of accounts) {
    const method = await app.inject({
      method: 'PUT',
      url: `/core/accounts/${accountId}/deposit-method?type=crypto&asset=BTC&network=bitcoin`,
      headers: { authorization: `Bearer ${token}`, 'x-on-behalf-of': `user ${userId}` },
    })
    if (method.statusCode !== 201) throw new Error(`issuing a deposit address failed: ${method.body}`)
    addresses.set(accountId, method.json<{ depositMethod: { details: { address: string } } }>().depositMethod.details.address)
  }
  const baseUrl = await app.listen({ host: '127.0.0.1', port: 0 })
  const headers = { authorization: `Bearer ${token}`, 'x-on-behalf-of': `user ${userId}`, 'content-type': 'application/json' }
  return { services, db: database.db, organizationId: client.organizationId, userId, accounts, addresses, baseUrl, headers, close: () => app.close() }
}

const API_CLIENTS = 16

/**
 * Sends every deposit through the API (the sandbox crypto-deposit endpoint: 202, recorded with its settlement job)
 * while a worker settles them, and times from the first request until none is processing.
 */
async function throughApi(f: Fixture, targets: readonly string[]): Promise<number> {
  // A worker of its own per scenario: a stopped worker does not start again.
  const worker = new Worker({ db: f.db, handlers: f.services.jobs, pollIntervalMs: 10, concurrency: settings.concurrency, leaseMs: 60_000 })
  worker.start()
  let next = 0
  const started = performance.now()
  await Promise.all(
    Array.from({ length: API_CLIENTS }, async () => {
      for (;;) {
        const n = next++
        if (n >= settings.deposits) return
        const address = f.addresses.get(targets[n % targets.length]!)!
        const response = await fetch(`${f.baseUrl}/core/accounts/test-helpers/crypto-deposits`, {
          method: 'POST',
          headers: f.headers,
          body: JSON.stringify({ network: 'bitcoin', address, asset: 'BTC', amount: '0.001' }),
        })
        if (response.status !== 202) throw new Error(`a deposit was refused: ${response.status} ${await response.text()}`)
        await response.arrayBuffer()
      }
    }),
  )
  for (;;) {
    const left = await f.db.selectFrom('transactions').select((eb) => eb.fn.countAll<string>().as('n')).where('status', '=', 'processing').executeTakeFirstOrThrow()
    if (Number(left.n) === 0) break
    await sleep(5)
  }
  const seconds = (performance.now() - started) / 1000
  await worker.stop(10_000)
  return settings.deposits / seconds
}

/**
 * The same ledger work issued directly: per deposit one database transaction that claims the posting's reference,
 * locks the clearing and the user's account in id order, updates both balances and writes the two entries.
 */
async function rawSql(url: string, f: Fixture, targets: readonly string[]): Promise<number> {
  const pool = new pg.Pool({ connectionString: url, max: settings.concurrency })
  const clearing = await f.services.ledger.systemAccount(f.organizationId, { kind: 'clearing', network: 'bitcoin', asset: 'BTC' })
  let next = 0
  const started = performance.now()
  await Promise.all(
    Array.from({ length: settings.concurrency }, async () => {
      const client = await pool.connect()
      try {
        for (;;) {
          const n = next++
          if (n >= settings.deposits) return
          const account = targets[n % targets.length]!
          const id = uuidv7()
          const now = new Date()
          await client.query('begin')
          await client.query(
            "insert into ledger_transactions (organization_id, id, type, reference, request_hash, data, created_at) values ($1, $2, 'deposit', $3, 'raw', '{}', $4)",
            [f.organizationId, id, `raw-${id}`, now],
          )
          const ordered = [clearing, account].sort()
          await client.query('select id from ledger_accounts where organization_id = $1 and id = any($2::uuid[]) order by id for update', [f.organizationId, ordered])
          await client.query('update ledger_accounts set total = total - 0.001, available = available - 0.001, updated_at = $3 where organization_id = $1 and id = $2', [f.organizationId, clearing, now])
          await client.query('update ledger_accounts set total = total + 0.001, available = available + 0.001, updated_at = $3 where organization_id = $1 and id = $2', [f.organizationId, account, now])
          await client.query(
            'insert into ledger_entries (organization_id, id, transaction_id, account_id, asset, amount, created_at) values ($1, $2, $3, $4, \'BTC\', -0.001, $6), ($1, $5, $3, $7, \'BTC\', 0.001, $6)',
            [f.organizationId, uuidv7(), id, clearing, uuidv7(), now, account],
          )
          await client.query('commit')
        }
      } finally {
        client.release()
      }
    }),
  )
  const seconds = (performance.now() - started) / 1000
  await pool.end()
  return settings.deposits / seconds
}

async function main(): Promise<void> {
  const cluster = await server()
  const name = `bench_deposits_${randomBytes(4).toString('hex')}`
  const admin = new pg.Client({ connectionString: cluster.url })
  await admin.connect()
  await admin.query(`create database ${name}`)
  await admin.end()
  const url = new URL(cluster.url)
  url.pathname = `/${name}`
  let f: Fixture | undefined
  try {
    log(`${settings.deposits} deposits per scenario, ${settings.accounts} accounts, ${settings.concurrency} jobs at a time`)
    f = await fixture(url.href)
    const rows: { scenario: string; service: number; baseline: number }[] = []
    for (const [scenario, targets] of [['many accounts', f.accounts], ['one hot account', [f.accounts[0]!]]] as const) {
      log(`${scenario}: raw SQL baseline`)
      const baseline = await rawSql(url.href, f, targets)
      log(`${scenario}: through the API and the worker`)
      const service = await throughApi(f, targets)
      rows.push({ scenario, service, baseline })
    }
    const violations = await f.services.ledger.check()
    if (violations.length > 0) throw new Error(`the ledger is broken after the run: ${JSON.stringify(violations.slice(0, 3))}`)
    process.stdout.write(`\n${'scenario'.padEnd(20)}${'settled/s'.padStart(12)}${'raw SQL/s'.padStart(12)}${'ratio'.padStart(8)}\n`)
    for (const row of rows) {
      process.stdout.write(`${row.scenario.padEnd(20)}${row.service.toFixed(0).padStart(12)}${row.baseline.toFixed(0).padStart(12)}${(row.service / row.baseline).toFixed(3).padStart(8)}\n`)
    }
    const results = path.join(ROOT, 'bench', 'results')
    fs.mkdirSync(results, { recursive: true })
    const file = path.join(results, `deposits-${new Date().toISOString().replace(/[:.]/g, '-')}.json`)
    fs.writeFileSync(file, `${JSON.stringify({ settings: { ...settings, databaseUrl: settings.databaseUrl ? '(given)' : null }, rows }, null, 2)}\n`)
    log(`results written to ${path.relative(ROOT, file)}`)
  } finally {
    await f?.close()
    const cleanup = new pg.Client({ connectionString: cluster.url })
    await cleanup.connect()
    await cleanup.query(`drop database if exists ${name} with (force)`)
    await cleanup.end()
    await cluster.stop()
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
  process.exit(1)
})
