// Trade benchmark: trades per second quoted and committed through Tessera's API and completed by its background
// worker on PostgreSQL, each as a ratio to a raw SQL baseline that writes the same rows, takes the same row locks
// and uses as many database transactions per trade, directly through `pg`, in the same run. See bench/README.md
// ("Trade benchmark").
import os from 'node:os'
import path from 'node:path'
import BigNumber from 'bignumber.js'
import pg from 'pg'
import {
  accessToken,
  backgroundCpuLoad,
  databaseVersion,
  ledgerCheck,
  log,
  mapLimit,
  newClientCredentials,
  onCleanup,
  quoteAndCommit,
  RESULTS_DIR,
  runMain,
  scratchDatabase,
  setLogPrefix,
  startCluster,
  startTessera,
  stopChild,
  untilNoneProcessing,
  verifiedUser,
  writeResults,
} from './harness.ts'
import {
  balanceChanged,
  captureHolds,
  claimJobs,
  completeJobs,
  completeTransactions,
  EVENT_COLUMNS,
  FLOW_STEP_COLUMNS,
  holdOrigin,
  inTransaction,
  insertRows,
  LEDGER_ENTRY_COLUMNS,
  LEDGER_TRANSACTION_COLUMNS,
  lockAccounts,
  lockFlows,
  lockProcessing,
  QUOTE_COLUMNS,
  setBalances,
  startFlow,
  useQuote,
} from './raw-sql.ts'
import { positiveInteger } from './settings.ts'
import { uuidv7 } from '../src/lib/ids.ts'

setLogPrefix('bench:trades')

const TARGET_RATIO = 0.5
/** What every trade sells: EUR, denominated in the origin. */
const TRADE_EUR = '10'

const requested = {
  trades: positiveInteger('BENCH_TRADES', 2000),
  users: positiveInteger('BENCH_TRADE_USERS', 200),
  clients: positiveInteger('BENCH_API_CLIENTS', 16),
  concurrency: positiveInteger('BENCH_WORKER_CONCURRENCY', 8),
}
/** Tessera's own setting (passed through to it): how many due flows its worker runs together; the baseline's too. */
const batchSize = positiveInteger('WORKER_BATCH_SIZE', 100)
// Each API connection sends whole trades (a quote, then its commit): autocannon shares the requests out evenly over
// the connections, so the trades are rounded up to a multiple of the connections.
const roundToClients = (n: number) => Math.ceil(n / requested.clients) * requested.clients
const settings = {
  ...requested,
  batchSize,
  trades: roundToClients(requested.trades),
  warmup: roundToClients(Math.min(500, requested.trades)),
  databaseUrl: process.env.BENCH_DATABASE_URL?.trim() || null,
  cpuProfile: process.env.BENCH_CPU_PROF === '1',
}

// ---------------------------------------------------------------------------------------------------------------
// Fixture, through the API

interface Account {
  id: string
  label: string
  createdAt: string
}

interface Trader {
  userId: string
  eur: Account
  btc: Account
  /** Headers that act for the user, with a JSON body. */
  headers: Record<string, string>
  /** The quote request of one trade: TRADE_EUR from the EUR account to the BTC account. */
  quoteBody: string
}

/**
 * A user who may trade (as test/money.ts `verifiedUser`: a French resident with identity, proof of address and
 * due diligence), an EUR account funded with `funding` through a simulated SEPA deposit, and an empty BTC account.
 */
async function trader(baseUrl: string, token: string, index: number, funding: string): Promise<Trader> {
  const { userId, acting, headers, call } = await verifiedUser(baseUrl, token, `bench-trades-${index}@example.com`)
  const open = async (asset: string): Promise<Account> => {
    const label = `Bench ${asset} ${index}`
    const { account } = (await call('POST', '/core/accounts', headers, 201, { label, asset })) as { account: { id: string; createdAt: string } }
    return { id: account.id, label, createdAt: account.createdAt }
  }
  const eur = await open('EUR')
  const btc = await open('BTC')
  const method = await call('PUT', `/core/accounts/${eur.id}/deposit-method?type=bank&asset=EUR&network=sepa`, acting, 201)
  const { iban, reference } = (method.depositMethod as { details: { iban: string; reference: string } }).details
  await call('POST', '/core/accounts/test-helpers/bank-deposits', headers, 202, { network: 'sepa', iban, reference, asset: 'EUR', amount: funding })
  const quoteBody = JSON.stringify({ origin: { type: 'account', id: eur.id }, destination: { type: 'account', id: btc.id }, denomination: { asset: 'EUR', amount: TRADE_EUR } })
  return { userId, eur, btc, headers, quoteBody }
}

/** The tables one trade writes rows to. */
const TRADE_TABLES = ['quotes', 'transactions', 'ledger_holds', 'ledger_transactions', 'ledger_entries', 'outbox_events', 'flows', 'flow_steps', 'jobs'] as const
type RowCounts = Record<(typeof TRADE_TABLES)[number], number>

async function rowCounts(pool: pg.Pool): Promise<RowCounts> {
  // Balance events are left out: there is one per account and ledger write, so their number follows how the
  // worker's batches happened to form, in either path; every other row is one per trade (or per step).
  const count = (table: string) => (table === 'outbox_events' ? `(select count(*) from outbox_events where type <> 'core.account.balance-changed')` : `(select count(*) from ${table})`)
  const { rows } = await pool.query<Record<string, string>>(`select ${TRADE_TABLES.map((table) => `${count(table)} as ${table}`).join(', ')}`)
  return Object.fromEntries(TRADE_TABLES.map((table) => [table, Number(rows[0]![table])])) as RowCounts
}

/**
 * Runs `phase` and resolves with its outcome, the rows it added to each table, and how many database transactions
 * the worker's steps took: the flows a step runs together share one, which writes all their history rows with
 * the same time.
 */
async function counting<T>(pool: pg.Pool, phase: () => Promise<T>): Promise<{ outcome: T; added: RowCounts; workerTransactions: number }> {
  const before = await rowCounts(pool)
  const since = new Date()
  const outcome = await phase()
  const after = await rowCounts(pool)
  // A worker transaction stamps its history rows with one time: distinct times are its transactions.
  const { rows } = await pool.query<{ n: string }>("select count(distinct at) as n from flow_steps where step in ('screen', 'exchange') and at >= $1", [since])
  return { outcome, added: Object.fromEntries(TRADE_TABLES.map((table) => [table, after[table] - before[table]])) as RowCounts, workerTransactions: Number(rows[0]!.n) }
}

// ---------------------------------------------------------------------------------------------------------------
// Through the API and the worker

interface Measured {
  trades: number
  seconds: number
  perSecond: number
}

/**
 * Sends `count` trades for the traders (round robin): each of `settings.clients` connections sends a quote, then
 * the commit of the quote it got back, and again. Timed from the first request until every response is in and no
 * transaction is processing (the worker completes the trades meanwhile).
 */
async function throughApi(baseUrl: string, pool: pg.Pool, targets: readonly Trader[], count: number): Promise<Measured & { latencyMs: { p50: number; p99: number } }> {
  let next = 0
  const { seconds, latencyMs } = await quoteAndCommit(baseUrl, pool, {
    connections: settings.clients,
    count,
    type: 'trade',
    next: () => {
      const target = targets[next++ % targets.length]!
      return { headers: target.headers, body: target.quoteBody }
    },
  })
  return { trades: count, seconds, perSecond: count / seconds, latencyMs }
}

// ---------------------------------------------------------------------------------------------------------------
// Raw SQL baseline

/** The figures of one trade Tessera priced during the warm-up; every baseline quote uses them. */
interface Template {
  originAmount: string
  originRate: string
  destinationAmount: string
  destinationRate: string
  fees: { amount: string }[]
  denomination: Record<string, unknown>
}

interface SystemAccounts {
  liquidityEur: string
  feesEur: string
  liquidityBtc: string
}

/** The baseline's jobs: a type of their own, so that Tessera's worker (idle meanwhile) never takes them. */
const RAW_JOB_TYPE = 'flow:trade:raw-sql'

interface TransactionRow {
  id: string
  owner_id: string
  origin: unknown
  origin_asset: string
  origin_amount: string
  origin_rate: string
  destination: unknown
  destination_asset: string
  destination_amount: string
  destination_rate: string
  denomination: Record<string, unknown>
  fees: { amount: string }[]
  origin_account_id: string
  destination_account_id: string
  status: string
  quoted_at: Date
  created_at: Date
  updated_at: Date
  completed_at: Date | null
}

/** A transaction as the API shows it (the payload of its events), from its row. */
function presentTransaction(row: TransactionRow) {
  return {
    id: row.id,
    type: 'trade',
    origin: { asset: row.origin_asset, amount: new BigNumber(row.origin_amount).toFixed(), rate: row.origin_rate, node: row.origin },
    destination: { asset: row.destination_asset, amount: new BigNumber(row.destination_amount).toFixed(), rate: row.destination_rate, node: row.destination },
    denomination: row.denomination,
    fees: row.fees,
    status: row.status,
    quotedAt: row.quoted_at.toISOString(),
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    ...(row.completed_at !== null ? { completedAt: row.completed_at.toISOString() } : {}),
  }
}

/**
 * What Tessera's two requests of one trade write, issued directly: the quote (after one read of the two accounts),
 * then the commit's database transaction (take the quote, record the transaction, hold the origin's money under
 * its account's lock, the events, the flow at its second step, its history and its job).
 */
async function rawRequests(client: pg.PoolClient, organizationId: string, template: Template, trader: Trader): Promise<void> {
  const { userId, eur, btc } = trader
  const quotedAt = new Date()
  const quoteId = uuidv7(quotedAt.getTime())
  // POST /core/transactions/quote
  await client.query(
    `select a.id, a.asset, l.available from accounts a join ledger_accounts l on l.organization_id = a.organization_id and l.id = a.id
     where a.organization_id = $1 and a.owner_id = $2 and a.id = any($3::uuid[]) and a.archived_at is null`,
    [organizationId, userId, [eur.id, btc.id]],
  )
  await client.query(
    insertRows('quotes', QUOTE_COLUMNS, [
      [organizationId, quoteId, userId, 'trade', JSON.stringify({ type: 'account', id: eur.id, ownerId: userId }), JSON.stringify({ type: 'account', id: btc.id, ownerId: userId }),
        eur.id, btc.id, 'EUR', template.originAmount, template.originRate, 'BTC', template.destinationAmount, template.destinationRate, JSON.stringify(template.denomination),
        JSON.stringify(template.fees), '[]', quotedAt, new Date(quotedAt.getTime() + 30_000), null],
    ]),
  )

  // POST /core/transactions
  await inTransaction(client, async () => {
    const at = new Date()
    const quote = await useQuote<Omit<TransactionRow, 'id' | 'status' | 'created_at' | 'updated_at' | 'completed_at'> & { id: string; created_at: Date }>(client, organizationId, userId, quoteId, at)
    const row: TransactionRow = { ...quote, id: uuidv7(at.getTime()), status: 'processing', quoted_at: quote.created_at, created_at: at, updated_at: at, completed_at: null }
    await client.query(
      insertRows(
        'transactions',
        ['organization_id', 'id', 'owner_id', 'type', 'status', 'reason', 'origin', 'origin_asset', 'origin_amount', 'origin_rate', 'destination', 'destination_asset',
          'destination_amount', 'destination_rate', 'denomination', 'fees', 'origin_account_id', 'destination_account_id', 'network', 'reference', 'quote_id', 'quoted_at',
          'created_at', 'updated_at', 'completed_at'],
        [[organizationId, row.id, userId, 'trade', 'processing', null, JSON.stringify(row.origin), row.origin_asset, row.origin_amount, row.origin_rate, JSON.stringify(row.destination),
          row.destination_asset, row.destination_amount, row.destination_rate, JSON.stringify(row.denomination), JSON.stringify(row.fees), row.origin_account_id,
          row.destination_account_id, null, null, quote.id, row.quoted_at, at, at, null]],
      ),
    )
    const created = () => [uuidv7(), organizationId, 'core.transaction.created', 'transaction', row.id, userId, JSON.stringify({ transaction: presentTransaction(row) }), at]
    const holdId = await holdOrigin(client, organizationId, { transactionId: row.id, accountId: row.origin_account_id, asset: row.origin_asset, amount: row.origin_amount }, created, at)
    await startFlow(client, organizationId, 'trade', row.id, { holdId, originAsset: row.origin_asset, destinationAsset: row.destination_asset }, RAW_JOB_TYPE, at)
  })
}

/**
 * What Tessera's worker writes for a batch of trade flows, issued directly: the claim of their jobs (the worker's
 * statement), the `screen` step's database transaction (velocity off: the step only records itself), the `exchange`
 * step's (capture each hold to the liquidity and fee accounts, pay the destination from the BTC liquidity account,
 * the balance-changed and status-changed events, the transactions completed), and the jobs' completion. Each step
 * locks its flows, and the exchange the transactions and every account, in id order, as Tessera does; each table is
 * written once per database transaction. Resolves with how many flows it completed (0: no job was due).
 */
async function rawWorkerBatch(client: pg.PoolClient, organizationId: string, system: SystemAccounts, workerId: string): Promise<number> {
  const jobs = await claimJobs(client, workerId, RAW_JOB_TYPE, batchSize)
  if (jobs.length === 0) return 0
  const flowIds = jobs.map((job) => job.payload.flowId)
  // As Tessera's worker does for flows due together: their remaining steps (`screen`, then `exchange`) in one
  // database transaction, each step locking its flows, moving them on and writing its history rows.
  await inTransaction(client, async () => {
    // One time for the transaction's rows, as Tessera's runner stamps a chain of steps.
    const at = new Date()
    const step = async (index: number, name: string, work: (flows: { id: string; data: { holdId: string } }[], at: Date) => Promise<void>) => {
      const flows = await lockFlows(client, organizationId, flowIds, index)
      await work(flows, at)
      await client.query('update flows set step = $1, status = $2, updated_at = $3 where organization_id = $4 and id = any($5::uuid[])', [
        index + 1, index === 2 ? 'completed' : 'running', at, organizationId, flows.map((flow) => flow.id),
      ])
      await client.query(insertRows('flow_steps', FLOW_STEP_COLUMNS, flows.map((flow) => [organizationId, flow.id, name, 'run', index, null, at])))
    }
    await step(1, 'screen', async () => {})
    await step(2, 'exchange', async (flows, at) => {
      const rows = await lockProcessing<TransactionRow>(client, organizationId, flows.map((flow) => flow.id))
      const holds = new Map(flows.map((flow) => [flow.id, flow.data.holdId]))
      const accounts = await lockAccounts(client, organizationId, [
        system.liquidityEur, system.feesEur, system.liquidityBtc, ...rows.flatMap((row) => [row.origin_account_id, row.destination_account_id]),
      ])
      const captured: unknown[][] = []
      const postings: unknown[][] = []
      const entries: unknown[][] = []
      const events: unknown[][] = []
      for (const row of rows) {
        const captureId = uuidv7(at.getTime())
        const deliverId = uuidv7(at.getTime())
        captured.push([holds.get(row.id), captureId])
        postings.push(
          [organizationId, captureId, 'trade', `${row.id}:capture`, 'raw-sql', holds.get(row.id), JSON.stringify({ transactionId: row.id }), at],
          [organizationId, deliverId, 'trade', `${row.id}:deliver`, 'raw-sql', null, JSON.stringify({ transactionId: row.id }), at],
        )
        const fee = row.fees.reduce((sum, item) => sum.plus(item.amount), new BigNumber(0))
        const legs: [string, string, BigNumber][] = [
          [captureId, system.liquidityEur, new BigNumber(row.origin_amount).minus(fee)],
          [captureId, system.feesEur, fee],
          [captureId, row.origin_account_id, new BigNumber(row.origin_amount).negated()],
          [deliverId, system.liquidityBtc, new BigNumber(row.destination_amount).negated()],
          [deliverId, row.destination_account_id, new BigNumber(row.destination_amount)],
        ]
        for (const [ledgerTransactionId, accountId, amount] of legs) {
          const account = accounts.get(accountId)!
          account.total = account.total.plus(amount)
          // The held money left `available` when it was held: capturing the whole hold moves only the total.
          if (accountId !== row.origin_account_id) account.available = account.available.plus(amount)
          entries.push([organizationId, uuidv7(at.getTime()), ledgerTransactionId, accountId, account.asset, amount.toFixed(), at])
        }
      }
      // As Tessera's one ledger write for the batch: one balance-changed event per user account, with its final balance.
      for (const accountId of new Set(rows.flatMap((row) => [row.origin_account_id, row.destination_account_id]))) {
        events.push(balanceChanged(organizationId, accounts.get(accountId)!, at))
      }
      await captureHolds(client, organizationId, captured, at)
      await client.query(insertRows('ledger_transactions', LEDGER_TRANSACTION_COLUMNS, postings))
      await setBalances(client, organizationId, [...accounts.values()], at)
      await client.query(insertRows('ledger_entries', LEDGER_ENTRY_COLUMNS, entries))
      const completed = await completeTransactions<TransactionRow>(client, organizationId, rows.map((row) => row.id), at)
      for (const row of completed) {
        events.push([uuidv7(), organizationId, 'core.transaction.status-changed', 'transaction', row.id, row.owner_id, JSON.stringify({ transaction: presentTransaction(row) }), at])
      }
      await client.query(insertRows('outbox_events', EVENT_COLUMNS, events))
    })
  })
  await completeJobs(client, jobs, workerId)
  return jobs.length
}

/**
 * `count` trades for the traders (round robin) through `pg`: `settings.clients` connections issue the requests' work
 * (a trade at a time, like the API clients), and `settings.concurrency` connections the worker's, in batches of
 * what is due, up to `settings.batchSize`. Like Tessera's worker, an idle baseline worker is woken by each commit.
 */
async function rawSql(url: string, organizationId: string, system: SystemAccounts, template: Template, targets: readonly Trader[], count: number): Promise<Measured> {
  const pool = new pg.Pool({ connectionString: url, max: settings.clients + settings.concurrency })
  let next = 0
  let done = 0
  let failed: unknown = null
  // Commits so far, and the workers waiting for the next: a worker that found nothing due waits only if no commit
  // came meanwhile (one that came while it claimed may not have been visible to its claim).
  let commits = 0
  let wake: Array<() => void> = []
  const poke = () => {
    commits++
    for (const resolve of wake) resolve()
    wake = []
  }
  const started = performance.now()
  const requests = Array.from({ length: settings.clients }, async () => {
    const client = await pool.connect()
    try {
      for (let n = next++; n < count && failed === null; n = next++) {
        await rawRequests(client, organizationId, template, targets[n % targets.length]!)
        poke()
      }
    } catch (error) {
      failed ??= error
      poke()
    } finally {
      client.release()
    }
  })
  const workers = Array.from({ length: settings.concurrency }, async (_, worker) => {
    const client = await pool.connect()
    try {
      while (done < count && failed === null) {
        const seen = commits
        const ran = await rawWorkerBatch(client, organizationId, system, `raw-sql-worker-${worker}`)
        done += ran
        if (ran === 0 && done < count && commits === seen) await new Promise<void>((resolve) => wake.push(resolve))
      }
    } catch (error) {
      failed ??= error
    } finally {
      client.release()
      // A worker that stops wakes the others, so that the last of them sees that everything is done.
      poke()
    }
  })
  try {
    await Promise.all([...requests, ...workers])
  } finally {
    await pool.end()
  }
  if (failed !== null) throw failed
  const seconds = (performance.now() - started) / 1000
  return { trades: count, seconds, perSecond: count / seconds }
}

// ---------------------------------------------------------------------------------------------------------------

async function main(): Promise<number> {
  const startedAt = new Date()
  log(`node ${process.version}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? 'unknown'})`)
  if (settings.trades !== requested.trades) log(`${requested.trades} trades rounded up to ${settings.trades}, a multiple of the ${settings.clients} API clients`)
  const backgroundLoad = await backgroundCpuLoad()
  if (backgroundLoad > 0.1) log(`WARNING: ${(backgroundLoad * 100).toFixed(0)}% of the CPUs were busy before the run started; other processes will skew the figures`)
  const url = await scratchDatabase(settings.databaseUrl ?? (await startCluster()), 'bench_trades')
  const postgresVersion = await databaseVersion(url)

  const credentials = newClientCredentials()
  const profileDir = settings.cpuProfile ? path.join(RESULTS_DIR, `trades-profile-${startedAt.toISOString().replace(/[:.]/g, '-')}`) : null
  const tessera = await startTessera(url, credentials, {
    // Velocity would refuse most of the trades of the hot account (60 a minute per user by default).
    env: { WORKER_CONCURRENCY: String(settings.concurrency), VELOCITY_MAX_MOVEMENTS: '0' },
    profileDir,
  })
  const token = await accessToken(tessera.baseUrl, credentials)
  const pool = new pg.Pool({ connectionString: url, max: 2 })
  onCleanup('status pool', () => pool.end())

  // Enough for the hot account to pay for every trade of the run (both scenarios, both paths, the warm-up), and a tenth more.
  const funding = new BigNumber(TRADE_EUR).times(settings.warmup + 4 * settings.trades).times(1.1).integerValue(BigNumber.ROUND_UP).toFixed()
  log(`${settings.users} verified users, each with a BTC account and an EUR account funded with ${funding} EUR`)
  const traders = await mapLimit(Array.from({ length: settings.users }, (_, i) => i), 8, (i) => trader(tessera.baseUrl, token, i, funding))
  await untilNoneProcessing(pool)

  // Warm-up (not timed): JIT, connection pools, caches; it also opens the liquidity and fee accounts.
  log(`warm-up: ${settings.warmup} trades through the API`)
  await throughApi(tessera.baseUrl, pool, traders, settings.warmup)
  const organizationId = (await pool.query<{ organization_id: string }>('select organization_id from accounts where id = $1', [traders[0]!.eur.id])).rows[0]!.organization_id
  const systemAccount = async (code: string, asset: string) =>
    (await pool.query<{ id: string }>('select id from ledger_accounts where organization_id = $1 and system_code = $2 and asset = $3', [organizationId, code, asset])).rows[0]!.id
  const system: SystemAccounts = { liquidityEur: await systemAccount('liquidity', 'EUR'), feesEur: await systemAccount('fees', 'EUR'), liquidityBtc: await systemAccount('liquidity', 'BTC') }
  const sample = (await pool.query<{ origin_amount: string; origin_rate: string; destination_amount: string; destination_rate: string; fees: Template['fees']; denomination: Record<string, unknown> }>(
    "select origin_amount, origin_rate, destination_amount, destination_rate, fees, denomination from transactions where type = 'trade' order by id desc limit 1",
  )).rows[0]!
  const template: Template = {
    originAmount: new BigNumber(sample.origin_amount).toFixed(),
    originRate: sample.origin_rate,
    destinationAmount: new BigNumber(sample.destination_amount).toFixed(),
    destinationRate: sample.destination_rate,
    fees: sample.fees,
    denomination: sample.denomination,
  }

  log(`${settings.trades} trades per scenario, ${settings.clients} API clients, ${settings.concurrency} worker runs at a time and baseline connections`)
  const perTrade = (added: RowCounts) => Object.fromEntries(TRADE_TABLES.map((table) => [table, added[table] / settings.trades]))
  const rows: {
    scenario: string
    trades: number
    seconds: number
    tradesPerSecond: number
    rawSqlSeconds: number
    rawSqlPerSecond: number
    ratio: number
    latencyMs: { p50: number; p99: number }
    rowsPerTrade: Record<string, number>
    /** Database transactions of the worker's steps per trade: one per batch of flows run together. */
    workerTransactionsPerTrade: { tessera: number; rawSql: number }
  }[] = []
  for (const [scenario, targets] of [['many users', traders], ['one hot account', [traders[0]!]]] as const) {
    log(`${scenario}: raw SQL baseline`)
    const { outcome: raw, added: rawRows, workerTransactions: rawWorkerTransactions } = await counting(pool, () => rawSql(url, organizationId, system, template, targets, settings.trades))
    log(`${scenario}: through the API and the worker`)
    const { outcome: api, added: apiRows, workerTransactions: apiWorkerTransactions } = await counting(pool, () => throughApi(tessera.baseUrl, pool, targets, settings.trades))
    // The baseline must do the same work: the same rows in every table (it is the ratio's whole premise).
    const differing = TRADE_TABLES.filter((table) => rawRows[table] !== apiRows[table])
    if (differing.length > 0) {
      throw new Error(`${scenario}: the baseline wrote other rows than Tessera: ${differing.map((table) => `${table} ${rawRows[table]} against ${apiRows[table]}`).join(', ')}`)
    }
    rows.push({ scenario, trades: api.trades, seconds: api.seconds, tradesPerSecond: api.perSecond, rawSqlSeconds: raw.seconds, rawSqlPerSecond: raw.perSecond, ratio: api.perSecond / raw.perSecond, latencyMs: api.latencyMs, rowsPerTrade: perTrade(apiRows),
      workerTransactionsPerTrade: { tessera: apiWorkerTransactions / settings.trades, rawSql: rawWorkerTransactions / settings.trades } })
  }
  await stopChild(tessera.child)

  await ledgerCheck(url)

  const met = (ratio: number) => (ratio >= TARGET_RATIO ? 'met' : 'not met')
  const lines = [
    '',
    `Trades — ${startedAt.toISOString()} — node ${process.version}, PostgreSQL ${postgresVersion}, ${os.cpus().length} CPUs`,
    `${settings.trades} trades per scenario, ${settings.users} users, ${settings.clients} API clients, ${settings.concurrency} worker runs at a time, velocity off`,
    '',
    `${'scenario'.padEnd(18)}${'trades'.padStart(8)}${'seconds'.padStart(9)}${'trades/s'.padStart(10)}${'raw SQL/s'.padStart(11)}${'ratio'.padStart(8)}  target ${TARGET_RATIO.toFixed(2)}`,
    ...rows.map((row) =>
      `${row.scenario.padEnd(18)}${String(row.trades).padStart(8)}${row.seconds.toFixed(1).padStart(9)}${row.tradesPerSecond.toFixed(0).padStart(10)}${row.rawSqlPerSecond.toFixed(0).padStart(11)}${row.ratio.toFixed(3).padStart(8)}  ${met(row.ratio)}`),
    '',
    'database transactions of the worker per trade (shared by the flows of a batch; the requests add two: the quote, the commit):',
    ...rows.map((row) => `  ${row.scenario}: Tessera ${row.workerTransactionsPerTrade.tessera.toFixed(3)}, raw SQL ${row.workerTransactionsPerTrade.rawSql.toFixed(3)}`),
    '',
    'tessera ledger check: every invariant holds',
    '',
  ]
  process.stdout.write(lines.join('\n'))
  const figures = {
    settings: { ...settings, databaseUrl: settings.databaseUrl ? '(given)' : null, velocityMaxMovements: 0, tradeEur: TRADE_EUR },
    targetRatio: TARGET_RATIO,
    rows,
  }
  writeResults('trades', startedAt, { postgres: postgresVersion, backgroundCpuLoad: backgroundLoad }, figures, profileDir)
  return 0
}

await runMain(main)
