// Deposit settlement benchmark: deposits per second sent through Tessera's API and settled by its background
// worker on PostgreSQL, each as a ratio to a raw SQL baseline that writes the same ledger rows and balance
// updates directly through `pg` in the same run. See bench/README.md ("Deposit settlement").
import { randomBytes } from 'node:crypto'
import os from 'node:os'
import path from 'node:path'
import pg from 'pg'
import {
  accessToken,
  backgroundCpuLoad,
  databaseVersion,
  expectJson,
  ledgerCheck,
  load,
  log,
  newClientCredentials,
  onCleanup,
  RESULTS_DIR,
  runMain,
  setLogPrefix,
  startCluster,
  startTessera,
  stopChild,
  writeResults,
} from './harness.ts'
import { positiveInteger } from './settings.ts'
import { uuidv7 } from '../src/lib/ids.ts'

setLogPrefix('bench:deposits')

const settings = {
  deposits: positiveInteger('BENCH_DEPOSITS', 5000),
  accounts: positiveInteger('BENCH_DEPOSIT_ACCOUNTS', 200),
  concurrency: positiveInteger('BENCH_WORKER_CONCURRENCY', 8),
  clients: positiveInteger('BENCH_API_CLIENTS', 16),
  databaseUrl: process.env.BENCH_DATABASE_URL?.trim() || null,
  cpuProfile: process.env.BENCH_CPU_PROF === '1',
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** A database of its own in the server, dropped at the end. */
async function scratchDatabase(serverUrl: string): Promise<string> {
  const name = `bench_deposits_${randomBytes(4).toString('hex')}`
  const admin = new pg.Client({ connectionString: serverUrl })
  await admin.connect()
  await admin.query(`create database ${name}`)
  await admin.end()
  onCleanup(`database ${name}`, async () => {
    const client = new pg.Client({ connectionString: serverUrl })
    await client.connect()
    await client.query(`drop database if exists ${name} with (force)`)
    await client.end()
  })
  const url = new URL(serverUrl)
  url.pathname = `/${name}`
  return url.href
}

interface Fixture {
  baseUrl: string
  /** Headers that act for the user owning every account. */
  headers: Record<string, string>
  accounts: string[]
  /** The bitcoin deposit address of each account, by account id. */
  addresses: Map<string, string>
}

/** A user with `settings.accounts` BTC accounts, each with a bitcoin deposit address, made through the API. */
async function fixture(baseUrl: string, token: string): Promise<Fixture> {
  const user = await expectJson(
    await fetch(`${baseUrl}/core/users`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'x-service-user-ip': '203.0.113.7' },
      body: JSON.stringify({ type: 'individual', email: 'bench-deposits@example.com', termsOfService: 'general-gb-fca', primaryCitizenship: 'GB', address: { country: 'GB' } }),
    }),
    201,
    'POST /core/users',
  )
  const userId = String((user.user as { id: string }).id)
  const acting = { authorization: `Bearer ${token}`, 'x-on-behalf-of': `user ${userId}` }
  const headers = { ...acting, 'content-type': 'application/json' }
  const accounts: string[] = []
  const addresses = new Map<string, string>()
  for (let i = 0; i < settings.accounts; i++) {
    const account = await expectJson(
      await fetch(`${baseUrl}/core/accounts`, { method: 'POST', headers, body: JSON.stringify({ label: `Bench ${i}`, asset: 'BTC' }) }),
      201,
      'POST /core/accounts',
    )
    const accountId = (account.account as { id: string }).id
    const method = await expectJson(
      await fetch(`${baseUrl}/core/accounts/${accountId}/deposit-method?type=crypto&asset=BTC&network=bitcoin`, { method: 'PUT', headers: acting }),
      201,
      'PUT /core/accounts/{id}/deposit-method',
    )
    accounts.push(accountId)
    addresses.set(accountId, (method.depositMethod as { details: { address: string } }).details.address)
  }
  return { baseUrl, headers, accounts, addresses }
}

async function processing(pool: pg.Pool): Promise<number> {
  const { rows } = await pool.query<{ n: string }>("select count(*) as n from transactions where status = 'processing'")
  return Number(rows[0]!.n)
}

/**
 * Sends `count` deposits to the targets' addresses (round robin) through the sandbox crypto-deposit endpoint,
 * `settings.clients` connections at a time, and resolves with deposits per second from the first request until
 * none is processing any more: the API records each (202) and Tessera's worker settles them meanwhile.
 */
async function throughApi(f: Fixture, pool: pg.Pool, targets: readonly string[], count: number): Promise<number> {
  let next = 0
  let answered = 0
  // The end is when every request has its answer and no deposit is processing; not when autocannon returns,
  // which it does on its next one-second tick (that rounded the figures up to whole seconds).
  let allAnswered!: () => void
  const lastAnswer = new Promise<void>((resolve) => (allAnswered = resolve))
  const settled = lastAnswer.then(async () => {
    while ((await processing(pool)) > 0) await sleep(5)
    return performance.now()
  })
  const started = performance.now()
  const result = await load({
    url: f.baseUrl,
    connections: settings.clients,
    amount: count,
    requests: [
      {
        method: 'POST',
        path: '/core/accounts/test-helpers/crypto-deposits',
        headers: f.headers,
        setupRequest: (request) => {
          const address = f.addresses.get(targets[next++ % targets.length]!)!
          return { ...request, body: JSON.stringify({ network: 'bitcoin', address, asset: 'BTC', amount: '0.001' }) }
        },
      },
    ],
  }, () => {
    if (++answered === count) allAnswered()
  })
  const accepted = result.statusCodeStats['202']?.count ?? 0
  if (accepted !== count || result.errors > 0 || result.timeouts > 0) {
    throw new Error(`deposits were refused: ${accepted} of ${count} accepted; status codes ${JSON.stringify(result.statusCodeStats)}, ${result.errors} errors`)
  }
  return count / (((await settled) - started) / 1000)
}

/**
 * The same ledger work issued directly: per deposit one database transaction that inserts the ledger
 * transaction, locks the clearing and the user's account in id order, updates both balances and writes the two
 * entries; `settings.concurrency` connections.
 */
async function rawSql(url: string, clearing: string, organizationId: string, targets: readonly string[]): Promise<number> {
  const pool = new pg.Pool({ connectionString: url, max: settings.concurrency })
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
            [organizationId, id, `raw-${id}`, now],
          )
          const ordered = [clearing, account].sort()
          await client.query('select id from ledger_accounts where organization_id = $1 and id = any($2::uuid[]) order by id for no key update', [organizationId, ordered])
          await client.query('update ledger_accounts set total = total - 0.001, available = available - 0.001, updated_at = $3 where organization_id = $1 and id = $2', [organizationId, clearing, now])
          await client.query('update ledger_accounts set total = total + 0.001, available = available + 0.001, updated_at = $3 where organization_id = $1 and id = $2', [organizationId, account, now])
          await client.query(
            'insert into ledger_entries (organization_id, id, transaction_id, account_id, asset, amount, created_at) values ($1, $2, $3, $4, \'BTC\', -0.001, $6), ($1, $5, $3, $7, \'BTC\', 0.001, $6)',
            [organizationId, uuidv7(), id, clearing, uuidv7(), now, account],
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

async function main(): Promise<number> {
  const startedAt = new Date()
  log(`node ${process.version}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? 'unknown'})`)
  const backgroundLoad = await backgroundCpuLoad()
  if (backgroundLoad > 0.1) log(`WARNING: ${(backgroundLoad * 100).toFixed(0)}% of the CPUs were busy before the run started; other processes will skew the figures`)
  const url = await scratchDatabase(settings.databaseUrl ?? (await startCluster()))
  const postgresVersion = await databaseVersion(url)

  const credentials = newClientCredentials()
  const profileDir = settings.cpuProfile ? path.join(RESULTS_DIR, `deposits-profile-${startedAt.toISOString().replace(/[:.]/g, '-')}`) : null
  const tessera = await startTessera(url, credentials, { env: { WORKER_CONCURRENCY: String(settings.concurrency) }, profileDir })
  const token = await accessToken(tessera.baseUrl, credentials)
  log(`${settings.accounts} accounts with deposit addresses`)
  const f = await fixture(tessera.baseUrl, token)
  const pool = new pg.Pool({ connectionString: url, max: 2 })
  onCleanup('status pool', () => pool.end())

  // Warm-up (not timed): JIT, connection pools, caches; it also opens the network's clearing account.
  const warmup = Math.min(500, settings.deposits)
  log(`warm-up: ${warmup} deposits through the API`)
  await throughApi(f, pool, f.accounts, warmup)
  const clearing = await pool.query<{ id: string; organization_id: string }>("select id, organization_id from ledger_accounts where system_code = 'clearing:bitcoin' and asset = 'BTC'")
  const { id: clearingId, organization_id: organizationId } = clearing.rows[0]!

  log(`${settings.deposits} deposits per scenario, ${settings.clients} API clients, ${settings.concurrency} worker runs and baseline connections`)
  const rows: { scenario: string; settledPerSecond: number; rawSqlPerSecond: number; ratio: number }[] = []
  for (const [scenario, targets] of [['many accounts', f.accounts], ['one hot account', [f.accounts[0]!]]] as const) {
    log(`${scenario}: raw SQL baseline`)
    const rawSqlPerSecond = await rawSql(url, clearingId, organizationId, targets)
    log(`${scenario}: through the API and the worker`)
    const settledPerSecond = await throughApi(f, pool, targets, settings.deposits)
    rows.push({ scenario, settledPerSecond, rawSqlPerSecond, ratio: settledPerSecond / rawSqlPerSecond })
  }
  await stopChild(tessera.child)

  await ledgerCheck(url)

  const lines = [
    '',
    `Deposit settlement — ${startedAt.toISOString()} — node ${process.version}, PostgreSQL ${postgresVersion}, ${os.cpus().length} CPUs`,
    `${settings.deposits} deposits per scenario, ${settings.accounts} accounts, ${settings.clients} API clients, ${settings.concurrency} worker runs at a time`,
    '',
    `${'scenario'.padEnd(20)}${'settled/s'.padStart(12)}${'raw SQL/s'.padStart(12)}${'ratio'.padStart(8)}`,
    ...rows.map((row) => `${row.scenario.padEnd(20)}${row.settledPerSecond.toFixed(0).padStart(12)}${row.rawSqlPerSecond.toFixed(0).padStart(12)}${row.ratio.toFixed(3).padStart(8)}`),
    '',
    'tessera ledger check: every invariant holds',
    '',
  ]
  process.stdout.write(lines.join('\n'))
  const figures = {
    settings: { ...settings, databaseUrl: settings.databaseUrl ? '(given)' : null },
    rows,
  }
  writeResults('deposits', startedAt, { postgres: postgresVersion, backgroundCpuLoad: backgroundLoad }, figures, profileDir)
  return 0
}

await runMain(main)
