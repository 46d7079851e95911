// Trade benchmark: trades per second quoted and committed through Tessera's API and completed by its background
// worker on PostgreSQL, each as a ratio to a raw SQL baseline that writes the same rows, takes the same row locks
// and uses as many database transactions per trade, directly through `pg`, in the same run. See bench/README.md
// ("Trade benchmark").
import BigNumber from 'bignumber.js'
import pg from 'pg'
import {
  assertSameRows,
  counting,
  finishRun,
  ledgerCheck,
  log,
  mapLimit,
  type Measured,
  movementSettings,
  organizationOf,
  type PhaseCount,
  quoteAndCommit,
  reportHeading,
  requestClients,
  type RowCounts,
  runMain,
  setLogPrefix,
  startRun,
  stopChild,
  systemAccountId,
  untilNoneProcessing,
  verifiedUser,
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
  insertRows,
  inTransaction,
  LEDGER_ENTRY_COLUMNS,
  LEDGER_TRANSACTION_COLUMNS,
  lockAccounts,
  lockFlows,
  lockProcessing,
  QUOTE_COLUMNS,
  setBalances,
  startFlow,
  transactionEvent,
  transactionOf,
  type TransactionRow,
  useQuote,
} from './raw-sql.ts'
import { uuidv7 } from '../src/lib/ids.ts'

setLogPrefix('bench:trades')

const TARGET_RATIO = 0.5
/** What every trade sells: EUR, denominated in the origin. */
const TRADE_EUR = '10'

const { settings: movements, rounding } = movementSettings('trades', { count: 'BENCH_TRADES', users: 'BENCH_TRADE_USERS' })
const settings = {
  ...movements,
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
type Table = (typeof TRADE_TABLES)[number]

/**
 * What a phase counts: the rows it added to each table (balance events apart: there is one per account and ledger
 * write, so their number follows how the worker's batches happened to form), and how many database transactions the
 * worker's steps took: the flows a step runs together share one, which writes all their history rows with the same
 * time.
 */
const PHASE_COUNT: PhaseCount<Table> = { tables: TRADE_TABLES, sharedSteps: [['screen', 'exchange']] }

// ---------------------------------------------------------------------------------------------------------------
// Through the API and the worker

/**
 * Sends `count` trades for the traders (round robin): each of `settings.clients` connections sends a quote, then
 * the commit of the quote it got back, and again. Timed from the first request until every response is in and no
 * transaction is processing (the worker completes the trades meanwhile).
 */
function throughApi(baseUrl: string, pool: pg.Pool, targets: readonly Trader[], count: number) {
  return quoteAndCommit(baseUrl, pool, {
    connections: settings.clients,
    count,
    type: 'trade',
    targets,
    quote: (target) => ({ headers: target.headers, body: target.quoteBody }),
  })
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

/** A trade's row: both ends are the user's accounts. */
type TradeRow = TransactionRow & { origin_account_id: string; destination_account_id: string }

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
    const quote = await useQuote(client, organizationId, userId, quoteId, at)
    const row = transactionOf(quote, 'trade', at)
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
    const created = () => transactionEvent(organizationId, 'core.transaction.created', row, at)
    const holdId = await holdOrigin(client, organizationId, { transactionId: row.id, accountId: row.origin_account_id!, asset: row.origin_asset, amount: row.origin_amount }, created, at)
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
  // Tessera's WORKER_BATCH_SIZE: the baseline's batches too.
  const jobs = await claimJobs(client, workerId, RAW_JOB_TYPE, settings.batchSize)
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
      const rows = await lockProcessing<TradeRow>(client, organizationId, flows.map((flow) => flow.id))
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
      for (const row of completed) events.push(transactionEvent(organizationId, 'core.transaction.status-changed', row, at))
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
  const requests = requestClients(pool, settings.clients, count, (client, n) => rawRequests(client, organizationId, template, targets[n % targets.length]!), {
    issued: poke,
    failed: (error) => {
      failed ??= error
      poke()
    },
    stopped: () => failed !== null,
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
  return { count, seconds, perSecond: count / seconds }
}

// ---------------------------------------------------------------------------------------------------------------

async function main(): Promise<number> {
  // Velocity would refuse most of the trades of the hot account (60 a minute per user by default).
  const run = await startRun('trades', settings, { env: { VELOCITY_MAX_MOVEMENTS: '0' }, note: rounding })
  const { url, tessera, pool } = run

  // Enough for the hot account to pay for every trade of the run (both scenarios, both paths, the warm-up), and a tenth more.
  const funding = new BigNumber(TRADE_EUR).times(settings.warmup + 4 * settings.trades).times(1.1).integerValue(BigNumber.ROUND_UP).toFixed()
  log(`${settings.users} verified users, each with a BTC account and an EUR account funded with ${funding} EUR`)
  const traders = await mapLimit(Array.from({ length: settings.users }, (_, i) => i), 8, (i) => trader(tessera.baseUrl, run.token, i, funding))
  await untilNoneProcessing(pool)

  // Warm-up (not timed): JIT, connection pools, caches; it also opens the liquidity and fee accounts.
  log(`warm-up: ${settings.warmup} trades through the API`)
  await throughApi(tessera.baseUrl, pool, traders, settings.warmup)
  const organizationId = await organizationOf(pool, traders[0]!.eur.id)
  const systemAccount = (code: string, asset: string) => systemAccountId(pool, organizationId, code, asset)
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
  const perTrade = (added: RowCounts<Table>) => Object.fromEntries(TRADE_TABLES.map((table) => [table, added[table] / settings.trades]))
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
    const { outcome: raw, added: rawRows, workerTransactions: rawWorkerTransactions } = await counting(pool, PHASE_COUNT, null, () => rawSql(url, organizationId, system, template, targets, settings.trades))
    log(`${scenario}: through the API and the worker`)
    const { outcome: api, added: apiRows, workerTransactions: apiWorkerTransactions } = await counting(pool, PHASE_COUNT, null, () => throughApi(tessera.baseUrl, pool, targets, settings.trades))
    assertSameRows(scenario, TRADE_TABLES, rawRows, apiRows)
    rows.push({ scenario, trades: api.count, seconds: api.seconds, tradesPerSecond: api.perSecond, rawSqlSeconds: raw.seconds, rawSqlPerSecond: raw.perSecond, ratio: api.perSecond / raw.perSecond, latencyMs: api.latencyMs, rowsPerTrade: perTrade(apiRows),
      workerTransactionsPerTrade: { tessera: apiWorkerTransactions / settings.trades, rawSql: rawWorkerTransactions / settings.trades } })
  }
  await stopChild(tessera.child)

  await ledgerCheck(url)

  const met = (ratio: number) => (ratio >= TARGET_RATIO ? 'met' : 'not met')
  const lines = [
    '',
    reportHeading('Trades', run.startedAt, run.postgresVersion),
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
  // The trade runner reports the target without enforcing it (its settings have no `enforceTarget`).
  return finishRun(run, 'trades', lines, { ...settings, velocityMaxMovements: 0, tradeEur: TRADE_EUR }, { targetRatio: TARGET_RATIO, rows }, rows)
}

await runMain(main)
