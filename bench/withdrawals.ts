// Withdrawal benchmark: withdrawals per second quoted and committed through Tessera's API and carried out by its
// background worker over the sandbox payment rail (hold, submit, confirm, settle) on PostgreSQL, each as a ratio to
// a raw SQL baseline that writes the same rows, takes the same row locks and uses as many database transactions per
// withdrawal, directly through `pg`, in the same run. See bench/README.md ("Withdrawal benchmark").
import { createHash } from 'node:crypto'
import BigNumber from 'bignumber.js'
import { composeIBAN, isValidIBAN } from 'ibantools'
import type pg from 'pg'
import {
  apiThenBaseline,
  assertSameRows,
  baselinePool,
  batchedBaseline,
  batchedSettings,
  cpuTable,
  finishRun,
  ledgerCheck,
  log,
  mapLimit,
  type Measured,
  movementSettings,
  organizationOf,
  othersShare,
  percent,
  type PhaseCount,
  quoteAndCommit,
  reportHeading,
  type RowCounts,
  rowsComparison,
  runMain,
  scenarioLoad,
  setLogPrefix,
  startRun,
  stopChild,
  systemAccountId,
  untilNoneProcessing,
  verifiedUser,
} from './harness.ts'
import {
  captureHolds,
  completeJobs,
  completeStretch,
  holdOrigin,
  insertRows,
  insertTransaction,
  inTransaction,
  LEDGER_TRANSACTION_COLUMNS,
  lockAccounts,
  lockFlows,
  lockProcessing,
  QUOTE_COLUMNS,
  type RawJob,
  runStep,
  startFlow,
  transactionEvent,
  transactionOf,
  type TransactionRow,
  useQuote,
} from './raw-sql.ts'
import type { CpuSpent } from './cpu.ts'
import { uuidv7 } from '../src/lib/ids.ts'

setLogPrefix('bench:withdrawals')

const TARGET_RATIO = 0.5
/**
 * Each user links two SEPA accounts at the same bank (valid IBANs, composed with ibantools): the API's withdrawals go
 * to the first, the baseline's to the second. The duplicate-withdrawal rule looks up the user's recent withdrawals to
 * the destination under its lock, and that lookup costs more the more there are: with one destination, the path
 * measured second would look through the other's rows too. The sandbox rail completes an order to either (their last
 * four digits select no failure: SANDBOX_RAIL_TEST_VALUES).
 */
const IBANS = { api: composeIBAN({ countryCode: 'DE', bban: '370400440532010001' })!, rawSql: composeIBAN({ countryCode: 'DE', bban: '370400440532011001' })! }
const BIC = 'COBADEFFXXX'
/**
 * Every withdrawal of a user gets the next amount of their own sequence, from this many cents up by one cent: a
 * second withdrawal of the same amount to the same external account within 2 minutes is refused
 * (`duplicate-withdrawal`).
 */
const FIRST_AMOUNT_CENTS = 500

const { settings: movements, rounding } = movementSettings('withdrawals', { count: 'BENCH_WITHDRAWALS', users: 'BENCH_WITHDRAWAL_USERS' })
const settings = { ...movements, ...batchedSettings() }

// ---------------------------------------------------------------------------------------------------------------
// Fixture, through the API

interface Withdrawer {
  userId: string
  /** The user's EUR account: the origin of every withdrawal. */
  eur: { id: string; label: string; createdAt: string }
  /** The user's SEPA external accounts: the destination of the withdrawals through the API, and of the baseline's. */
  externalAccounts: { api: string; rawSql: string }
  /** Headers that act for the user, with a JSON body. */
  headers: Record<string, string>
  /** How many amounts of the user's sequence were taken. */
  taken: number
}

/** The next amount of the user's sequence (EUR, two decimals). */
function nextAmount(withdrawer: Withdrawer): string {
  return new BigNumber(FIRST_AMOUNT_CENTS + withdrawer.taken++).div(100).toFixed(2)
}

function quoteBody(withdrawer: Withdrawer, amount: string): string {
  return JSON.stringify({
    origin: { type: 'account', id: withdrawer.eur.id },
    destination: { type: 'external-account', id: withdrawer.externalAccounts.api },
    denomination: { asset: 'EUR', amount },
  })
}

/**
 * A user who may withdraw to a bank (the `bank-withdrawals` capability: a French resident with identity, proof of
 * address and due diligence, as test/money.ts `verifiedUser`), an EUR account funded with `funding` through a
 * simulated SEPA deposit, and two linked SEPA bank accounts (IBANS).
 */
async function withdrawer(baseUrl: string, token: string, index: number, funding: string): Promise<Withdrawer> {
  const { userId, acting, headers, call } = await verifiedUser(baseUrl, token, `bench-withdrawals-${index}@example.com`)
  const label = `Bench EUR ${index}`
  const { account } = (await call('POST', '/core/accounts', headers, 201, { label, asset: 'EUR' })) as { account: { id: string; createdAt: string } }
  const method = await call('PUT', `/core/accounts/${account.id}/deposit-method?type=bank&asset=EUR&network=sepa`, acting, 201)
  const { iban, reference } = (method.depositMethod as { details: { iban: string; reference: string } }).details
  await call('POST', '/core/accounts/test-helpers/bank-deposits', headers, 202, { network: 'sepa', iban, reference, asset: 'EUR', amount: funding })
  const link = async (iban: string) =>
    ((await call('POST', '/core/external-accounts', headers, 201, { type: 'bank', asset: 'EUR', network: 'sepa', label: `Bench bank ${index}`, iban, bic: BIC })).externalAccount as { id: string }).id
  const externalAccounts = { api: await link(IBANS.api), rawSql: await link(IBANS.rawSql) }
  return { userId, eur: { id: account.id, label, createdAt: account.createdAt }, externalAccounts, headers, taken: 0 }
}

/** The tables one withdrawal writes rows to. */
const WITHDRAWAL_TABLES = [
  'quotes', 'transactions', 'ledger_holds', 'ledger_transactions', 'ledger_entries', 'outbox_events', 'flows', 'flow_steps', 'jobs', 'sandbox_rail_orders',
] as const
type Table = (typeof WITHDRAWAL_TABLES)[number]

/**
 * What a phase counts: the rows it added to each table, and how many database transactions the worker's steps took:
 * the flows a stretch of steps runs together share one, which writes all their history rows with the same time
 * (`submit` in one, `confirm` and `settle` in the next); `submit`'s transactions are the batches the worker formed.
 */
const PHASE_COUNT: PhaseCount<Table> = { tables: WITHDRAWAL_TABLES, sharedSteps: [['submit'], ['settle']], batchStep: 'submit' }

// ---------------------------------------------------------------------------------------------------------------
// Through the API and the worker

/**
 * Sends `count` withdrawals for the withdrawers (round robin): each of `settings.clients` connections sends a quote,
 * then the commit of the quote it got back, and again. Timed from the first request until every response is in and
 * no transaction is processing (the worker carries the withdrawals out meanwhile).
 */
function throughApi(baseUrl: string, pool: pg.Pool, targets: readonly Withdrawer[], count: number) {
  return quoteAndCommit(baseUrl, pool, {
    connections: settings.clients,
    count,
    type: 'withdrawal',
    targets,
    quote: (target) => ({ headers: target.headers, body: quoteBody(target, nextAmount(target)) }),
  })
}

// ---------------------------------------------------------------------------------------------------------------
// Raw SQL baseline

/** What every baseline quote copies from a withdrawal Tessera quoted during the warm-up (all but the amounts). */
interface Template {
  /** The denomination's rate (1: EUR to EUR). */
  denominationRate: string
  ttlMs: number
}

/** The baseline's jobs: a type of their own, so that Tessera's worker (idle meanwhile) never takes them. */
const RAW_JOB_TYPE = 'flow:withdrawal:raw-sql'

const RAIL_ORDER_COLUMNS = [
  'key', 'order_id', 'organization_id', 'direction', 'kind', 'network', 'asset', 'amount', 'counterparty', 'reference', 'status', 'reason', 'network_reference', 'received',
  'received_at', 'settles_at',
] as const

/** A withdrawal's row: its origin is the user's account. */
type WithdrawalRow = TransactionRow & { origin_account_id: string }

/**
 * What Tessera's two requests of one withdrawal write, issued directly: the quote (after one read of the origin
 * account with its balance and of the external account), then the commit's database transaction (take the quote,
 * serialize on the destination and look for a duplicate, record the transaction, hold the origin's money under its
 * account's lock, the events, the flow at its second step, its history and its job).
 */
async function rawRequests(client: pg.PoolClient, organizationId: string, template: Template, target: Withdrawer, amount: string): Promise<void> {
  const { userId, eur } = target
  const externalAccountId = target.externalAccounts.rawSql
  const quotedAt = new Date()
  const quoteId = uuidv7(quotedAt.getTime())
  // POST /core/transactions/quote
  const { rows: [ends] } = await client.query<{ asset: string; available: string; external_asset: string; network: string; status: string }>(
    `select a.asset, l.available, e.asset as external_asset, e.network, e.status
     from accounts a join ledger_accounts l on l.organization_id = a.organization_id and l.id = a.id,
       external_accounts e
     where a.organization_id = $1 and a.owner_id = $2 and a.id = $3 and a.archived_at is null
       and e.organization_id = $1 and e.owner_id = $2 and e.id = $4 and e.deleted_at is null`,
    [organizationId, userId, eur.id, externalAccountId],
  )
  if (!ends || new BigNumber(ends.available).isLessThan(amount)) throw new Error('raw SQL baseline: the origin or the destination is missing, or the origin ran out of money')
  const origin = { type: 'account', id: eur.id, ownerId: userId }
  const destination = { type: 'external-account', id: externalAccountId, ownerId: userId, network: ends.network }
  const denomination = { asset: 'EUR', amount, rate: template.denominationRate, target: 'origin' }
  await client.query(
    insertRows('quotes', QUOTE_COLUMNS, [
      [organizationId, quoteId, userId, 'withdrawal', JSON.stringify(origin), JSON.stringify(destination), eur.id, null, ends.asset, amount, '1', ends.external_asset, amount, '1',
        JSON.stringify(denomination), '[]', '[]', quotedAt, new Date(quotedAt.getTime() + template.ttlMs), null],
    ]),
  )

  // POST /core/transactions
  await inTransaction(client, async () => {
    const at = new Date()
    const quote = await useQuote(client, organizationId, userId, quoteId, at)
    // The duplicate-withdrawal rule: serialized per user and destination, then one lookup.
    const counterparty = `external-account:${externalAccountId}`
    await client.query('select pg_advisory_xact_lock(hashtextextended($1, 0))', [`transactions:counterparty:${organizationId}:${userId}:${counterparty}`])
    const { rows: duplicates } = await client.query(
      `select id from transactions where organization_id = $1 and owner_id = $2 and counterparty = $3 and created_at >= $4 and type = 'withdrawal' and status <> 'failed'
         and denomination->>'asset' = $5 and (denomination->>'amount')::numeric = $6::numeric limit 1`,
      [organizationId, userId, counterparty, new Date(at.getTime() - 2 * 60_000), 'EUR', amount],
    )
    if (duplicates.length > 0) throw new Error('raw SQL baseline: a duplicate withdrawal (the amounts must not repeat within 2 minutes)')
    const row = transactionOf(quote, 'withdrawal', at)
    await insertTransaction(client, organizationId, row, { network: ends.network, counterparty, quoteId: quote.id })
    const created = () => transactionEvent(organizationId, 'core.transaction.created', row, at)
    const holdId = await holdOrigin(client, organizationId, { transactionId: row.id, accountId: row.origin_account_id!, asset: row.origin_asset, amount: row.origin_amount }, created, at)
    const data = { originAccountId: row.origin_account_id, originAmount: row.origin_amount, originAsset: row.origin_asset, destinationAsset: row.destination_asset, network: ends.network, holdId }
    await startFlow(client, organizationId, 'withdrawal', row.id, data, RAW_JOB_TYPE, at)
  })
}

/** The sandbox rail's trace of a completed SEPA order, derived from its key as the simulator derives it. */
function networkReference(key: string): string {
  return `SBX${createHash('sha256').update(key).digest('hex').slice(0, 12).toUpperCase()}`
}

/**
 * What Tessera's worker writes for a batch of withdrawal flows it claimed, issued directly: `submit`: one read of
 * the transactions with their external accounts, the rail's order rows (`insert … on conflict`, as the simulator
 * records them), then one database transaction that locks the flows, records the order ids and moves them on;
 * `confirm` and `settle`: one read of the orders' outcomes, then one database transaction that locks the flows,
 * the transactions still processing, captures the holds to the rail's clearing account (ledger transactions,
 * entries, balances under the accounts' locks in id order), completes the transactions with their events and the
 * flows with their history; then the jobs' completion.
 */
async function rawRun(client: pg.PoolClient, organizationId: string, clearingId: string, workerId: string, jobs: readonly RawJob[]): Promise<void> {
  const flowIds = jobs.map((job) => job.payload.flowId)

  // submit: the orders, outside any database transaction, then the step's record.
  const { rows: live } = await client.query<{ id: string; destination_asset: string; destination_amount: string; network: string; details: { iban: string; bic: string } }>(
    `select t.id, t.destination_asset, t.destination_amount, e.network, e.details
     from transactions t join external_accounts e on e.organization_id = t.organization_id and e.id = (t.destination->>'id')::uuid
     where t.organization_id = $1 and t.id = any($2::uuid[]) and t.status = 'processing' order by t.id`,
    [organizationId, flowIds],
  )
  const received = new Date()
  const { rows: receipts } = await client.query<{ reference: string; order_id: string; status: string }>(
    insertRows(
      'sandbox_rail_orders',
      RAIL_ORDER_COLUMNS,
      live.map((row) => {
        const key = `${row.id}:submit`
        const counterparty = { kind: 'bank', network: row.network, iban: row.details.iban, bic: row.details.bic }
        return [key, uuidv7(received.getTime()), organizationId, 'payout', 'bank', row.network, row.destination_asset, row.destination_amount, JSON.stringify(counterparty), row.id,
          'completed', null, networkReference(key), 1, received, received]
      }),
      ' on conflict (key) do update set received = sandbox_rail_orders.received + excluded.received returning *',
    ),
  )
  const orderOf = new Map(receipts.map((receipt) => [receipt.reference, receipt.order_id]))
  await runStep(client, organizationId, flowIds, { name: 'submit', position: 1 }, (flow) => ({ orderId: orderOf.get(flow.id) }))

  // confirm: the outcomes, outside any database transaction; then confirm and settle in one database transaction.
  const { rows: outcomes } = await client.query<{ reference: string; status: string; network_reference: string; settles_at: Date }>(
    'select * from sandbox_rail_orders where order_id = any($1::uuid[])',
    [[...orderOf.values()]],
  )
  const now = new Date()
  if (outcomes.some((outcome) => outcome.status !== 'completed' || outcome.settles_at > now)) throw new Error('raw SQL baseline: an order did not complete at once')
  const traceOf = new Map(outcomes.map((outcome) => [outcome.reference, outcome.network_reference]))
  await inTransaction(client, async () => {
    const at = new Date()
    const flows = await lockFlows(client, organizationId, flowIds, 2)
    const rows = await lockProcessing<WithdrawalRow>(client, organizationId, flows.map((flow) => flow.id))
    const holds = new Map(flows.map((flow) => [flow.id, flow.data.holdId]))
    const captured: unknown[][] = []
    const postings: unknown[][] = []
    for (const row of rows) {
      const captureId = uuidv7(at.getTime())
      captured.push([holds.get(row.id), captureId])
      postings.push([organizationId, captureId, 'withdrawal', `${row.id}:capture`, 'raw-sql', holds.get(row.id), JSON.stringify({ transactionId: row.id }), at])
    }
    // The holds first, then the references, then the accounts, as the ledger's `captureAndPost`.
    await captureHolds(client, organizationId, captured, at)
    await client.query(insertRows('ledger_transactions', LEDGER_TRANSACTION_COLUMNS, postings))
    const accounts = await lockAccounts(client, organizationId, [clearingId, ...rows.map((row) => row.origin_account_id)])
    const entries: unknown[][] = []
    rows.forEach((row, i) => {
      const amount = new BigNumber(row.origin_amount)
      const clearing = accounts.get(clearingId)!
      clearing.total = clearing.total.plus(amount)
      clearing.available = clearing.available.plus(amount)
      // The held money left `available` when it was held: capturing the whole hold moves only the total.
      const origin = accounts.get(row.origin_account_id)!
      origin.total = origin.total.minus(amount)
      const captureId = postings[i]![1]
      entries.push(
        [organizationId, uuidv7(at.getTime()), captureId, clearingId, clearing.asset, amount.toFixed(), at],
        [organizationId, uuidv7(at.getTime()), captureId, row.origin_account_id, origin.asset, amount.negated().toFixed(), at],
      )
    })
    await completeStretch(client, organizationId, {
      accounts,
      entries,
      userAccountIds: rows.map((row) => row.origin_account_id),
      transactionIds: rows.map((row) => row.id),
      patches: new Map(flows.map((flow) => [flow.id, { networkReference: traceOf.get(flow.id) }])),
      steps: [{ name: 'confirm', position: 2 }, { name: 'settle', position: 3 }],
    }, at)
  })
  await completeJobs(client, jobs, workerId)
}

/**
 * `count` withdrawals for the withdrawers (round robin) through `pg`: `settings.clients` connections issue the
 * requests' work (a withdrawal at a time, like the API clients), and a worker loop like Tessera's the worker's, with up
 * to `settings.concurrency` runs in flight, in the batches Tessera's worker formed in the same scenario (`batches`),
 * so that the baseline makes as many database transactions per withdrawal as Tessera did (harness.ts
 * `batchedBaseline`). Left to itself, its batches would be larger than Tessera's with many users (its runs queue
 * behind each other) and single withdrawals with one hot account (the requests trickle in).
 */
function rawSql(pool: pg.Pool, organizationId: string, clearingId: string, template: Template, targets: readonly Withdrawer[], count: number, batches: readonly number[]): Promise<Measured> {
  return batchedBaseline(pool, settings, {
    count,
    jobType: RAW_JOB_TYPE,
    batches,
    request: (client, n) => {
      const target = targets[n % targets.length]!
      return rawRequests(client, organizationId, template, target, nextAmount(target))
    },
    run: (client, workerId, jobs) => rawRun(client, organizationId, clearingId, workerId, jobs),
  })
}

// ---------------------------------------------------------------------------------------------------------------

async function main(): Promise<number> {
  if (!isValidIBAN(IBANS.api) || !isValidIBAN(IBANS.rawSql)) throw new Error(`not valid IBANs: ${IBANS.api}, ${IBANS.rawSql}`)
  // The sandbox rail settles at once: the benchmark measures Tessera, not the rail's simulated delay.
  const run = await startRun('withdrawals', settings, { env: { SANDBOX_RAIL_SETTLE_MS: '0' }, note: rounding })
  const { tessera, pool } = run
  const { rawPool, meter } = await baselinePool(run, settings)

  // Enough for the hot account to pay for every withdrawal of the run (both scenarios, both paths, its share of the
  // warm-up) at the amounts of its sequence, and a tenth more.
  const hotCount = Math.ceil(settings.warmup / settings.users) + 2 * Math.ceil(settings.withdrawals / settings.users) + 2 * settings.withdrawals
  const funding = new BigNumber(hotCount).times(FIRST_AMOUNT_CENTS).plus((hotCount * (hotCount - 1)) / 2).div(100).times(1.1).integerValue(BigNumber.ROUND_UP).toFixed()
  log(`${settings.users} verified users, each with an EUR account funded with ${funding} EUR and two SEPA bank accounts`)
  const setupStarted = performance.now()
  const withdrawers = await mapLimit(Array.from({ length: settings.users }, (_, i) => i), 8, (i) => withdrawer(tessera.baseUrl, run.token, i, funding))
  await untilNoneProcessing(pool)
  log(`fixture ready in ${((performance.now() - setupStarted) / 1000).toFixed(1)} s`)

  // Warm-up (not timed): JIT, connection pools, caches; it also opens the rail's clearing account.
  log(`warm-up: ${settings.warmup} withdrawals through the API`)
  await throughApi(tessera.baseUrl, pool, withdrawers, settings.warmup)
  const organizationId = await organizationOf(pool, withdrawers[0]!.eur.id)
  const clearingId = await systemAccountId(pool, organizationId, 'clearing:sepa', 'EUR')
  const sample = (await pool.query<{ denomination: { rate: string }; created_at: Date; expires_at: Date }>(
    "select denomination, created_at, expires_at from quotes where kind = 'withdrawal' order by id desc limit 1",
  )).rows[0]!
  const template: Template = { denominationRate: sample.denomination.rate, ttlMs: sample.expires_at.getTime() - sample.created_at.getTime() }

  log(`${settings.withdrawals} withdrawals per scenario, ${settings.clients} API clients, ${settings.concurrency} worker runs at a time and baseline connections`)
  const perWithdrawal = (added: RowCounts<Table>) => Object.fromEntries(WITHDRAWAL_TABLES.map((table) => [table, added[table] / settings.withdrawals]))
  const rows: {
    scenario: string
    withdrawals: number
    seconds: number
    withdrawalsPerSecond: number
    rawSqlSeconds: number
    rawSqlPerSecond: number
    ratio: number
    latencyMs: { p50: number; p99: number }
    /** Share of the CPUs other processes kept busy in the second before the scenario. */
    backgroundCpuLoad: number
    /** CPU time spent during each path (ms), by whom; `others` is other processes' (null: the database is elsewhere). */
    cpuMs: { rawSql: CpuSpent; tessera: CpuSpent }
    rowsPerWithdrawal: Record<string, number>
    rows: { tessera: RowCounts<Table> & { balanceEvents: number }; rawSql: RowCounts<Table> & { balanceEvents: number } }
    /** Database transactions of the worker's steps per withdrawal: two per batch of flows run together. */
    workerTransactionsPerWithdrawal: { tessera: number; rawSql: number }
    /** The flows of each batch Tessera's worker ran, in order: the baseline's runs took the same. */
    batches: number[]
  }[] = []
  const comparisons: string[] = []
  for (const [scenario, targets] of [['many users', withdrawers], ['one hot account', [withdrawers[0]!]]] as const) {
    const backgroundLoad = await scenarioLoad(scenario)
    const { api, raw } = await apiThenBaseline(
      pool,
      PHASE_COUNT,
      meter,
      { scenario, count: settings.withdrawals, noun: 'withdrawals' },
      () => throughApi(tessera.baseUrl, pool, targets, settings.withdrawals),
      (batches) => rawSql(rawPool, organizationId, clearingId, template, targets, settings.withdrawals, batches),
    )
    comparisons.push(...rowsComparison(`rows added, ${scenario} (${settings.withdrawals} withdrawals):`, WITHDRAWAL_TABLES, raw, api, settings.withdrawals))
    assertSameRows(scenario, WITHDRAWAL_TABLES, raw.added, api.added, comparisons)
    rows.push({
      scenario,
      withdrawals: api.outcome.count,
      seconds: api.outcome.seconds,
      withdrawalsPerSecond: api.outcome.perSecond,
      rawSqlSeconds: raw.outcome.seconds,
      rawSqlPerSecond: raw.outcome.perSecond,
      ratio: api.outcome.perSecond / raw.outcome.perSecond,
      latencyMs: api.outcome.latencyMs,
      backgroundCpuLoad: backgroundLoad,
      cpuMs: { rawSql: raw.cpu, tessera: api.cpu },
      rowsPerWithdrawal: perWithdrawal(api.added),
      rows: { tessera: { ...api.added, balanceEvents: api.balanceEvents }, rawSql: { ...raw.added, balanceEvents: raw.balanceEvents } },
      workerTransactionsPerWithdrawal: { tessera: api.workerTransactions / settings.withdrawals, rawSql: raw.workerTransactions / settings.withdrawals },
      batches: api.batches,
    })
  }
  await stopChild(tessera.child)

  await ledgerCheck(run.url)

  const met = (ratio: number) => (ratio >= TARGET_RATIO ? 'met' : 'not met')
  const lines = [
    '',
    reportHeading('Withdrawals', run.startedAt, run.postgresVersion),
    `${settings.withdrawals} SEPA withdrawals per scenario, ${settings.users} users, ${settings.clients} API clients, ${settings.concurrency} worker runs at a time, rail settles at once`,
    `other processes' CPU before the run: ${percent(run.backgroundLoad)}; before each scenario: ${rows.map((row) => percent(row.backgroundCpuLoad)).join(', ')}`,
    `other processes' CPU during the measured phases (raw SQL / API): ${rows.map((row) => `${row.scenario} ${othersShare(row.cpuMs.rawSql)} / ${othersShare(row.cpuMs.tessera)}`).join(', ')}`,
    '',
    `${'scenario'.padEnd(18)}${'withdrawals'.padStart(12)}${'seconds'.padStart(9)}${'per s'.padStart(8)}${'raw SQL/s'.padStart(11)}${'ratio'.padStart(8)}  target ${TARGET_RATIO.toFixed(2)}`,
    ...rows.map((row) =>
      `${row.scenario.padEnd(18)}${String(row.withdrawals).padStart(12)}${row.seconds.toFixed(1).padStart(9)}${row.withdrawalsPerSecond.toFixed(0).padStart(8)}${row.rawSqlPerSecond.toFixed(0).padStart(11)}${row.ratio.toFixed(3).padStart(8)}  ${met(row.ratio)}`),
    '',
    ...comparisons,
    ...cpuTable('CPU per withdrawal, ms (runner: the load generator, or the baseline\'s pg client):', rows.map((row) => ({ scenario: row.scenario, ...row.cpuMs })), settings.withdrawals),
    '',
    'database transactions of the worker\'s steps per withdrawal (shared by the flows of a batch; the requests add two: the quote, the commit):',
    ...rows.map((row) => `  ${row.scenario}: Tessera ${row.workerTransactionsPerWithdrawal.tessera.toFixed(3)}, raw SQL ${row.workerTransactionsPerWithdrawal.rawSql.toFixed(3)}`),
    '',
    'tessera ledger check: every invariant holds',
    '',
  ]
  return finishRun(run, 'withdrawals', lines, { ...settings, sandboxRailSettleMs: 0, ibans: IBANS, firstAmountCents: FIRST_AMOUNT_CENTS }, { targetRatio: TARGET_RATIO, rows }, rows)
}

await runMain(main)
