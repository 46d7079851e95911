// Withdrawal benchmark: withdrawals per second quoted and committed through Tessera's API and carried out by its
// background worker over the sandbox payment rail (hold, submit, confirm, settle) on PostgreSQL, each as a ratio to
// a raw SQL baseline that writes the same rows, takes the same row locks and uses as many database transactions per
// withdrawal, directly through `pg`, in the same run. See bench/README.md ("Withdrawal benchmark").
import { createHash } from 'node:crypto'
import os from 'node:os'
import path from 'node:path'
import BigNumber from 'bignumber.js'
import { composeIBAN, isValidIBAN } from 'ibantools'
import pg from 'pg'
import {
  accessToken,
  backgroundCpuLoad,
  databaseVersion,
  isCleaning,
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
  type RawJob,
  setBalances,
  startFlow,
  useQuote,
} from './raw-sql.ts'
import { cpuMeter, type CpuMeter, type CpuSpent } from './cpu.ts'
import { positiveInteger } from './settings.ts'
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

const requested = {
  withdrawals: positiveInteger('BENCH_WITHDRAWALS', 2000),
  users: positiveInteger('BENCH_WITHDRAWAL_USERS', 200),
  clients: positiveInteger('BENCH_API_CLIENTS', 16),
  concurrency: positiveInteger('BENCH_WORKER_CONCURRENCY', 8),
}
/** Tessera's own setting (passed through to it): how many due flows its worker runs together at most. */
const batchSize = positiveInteger('WORKER_BATCH_SIZE', 100)
// Each API connection sends whole withdrawals (a quote, then its commit): autocannon shares the requests out evenly
// over the connections, so the withdrawals are rounded up to a multiple of the connections.
const roundToClients = (n: number) => Math.ceil(n / requested.clients) * requested.clients
const settings = {
  ...requested,
  batchSize,
  withdrawals: roundToClients(requested.withdrawals),
  warmup: roundToClients(Math.min(500, requested.withdrawals)),
  /** Tessera's own setting (passed through to it): how long its idle worker sleeps between polls; the baseline's too. */
  pollIntervalMs: positiveInteger('WORKER_POLL_INTERVAL_MS', 250),
  databaseUrl: process.env.BENCH_DATABASE_URL?.trim() || null,
  cpuProfile: process.env.BENCH_CPU_PROF === '1',
  enforceTarget: process.env.BENCH_ENFORCE_TARGET === '1',
}

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
type RowCounts = Record<Table, number>

async function rowCounts(pool: pg.Pool): Promise<RowCounts & { balanceEvents: number }> {
  // Balance events are counted apart: there is one per account and ledger write, so their number follows how the
  // worker's batches happened to form, in either path; every other row is one per withdrawal (or per step).
  const count = (table: string) => (table === 'outbox_events' ? `(select count(*) from outbox_events where type <> 'core.account.balance-changed')` : `(select count(*) from ${table})`)
  const { rows } = await pool.query<Record<string, string>>(
    `select ${WITHDRAWAL_TABLES.map((table) => `${count(table)} as ${table}`).join(', ')},
       (select count(*) from outbox_events where type = 'core.account.balance-changed') as balance_events`,
  )
  return { ...(Object.fromEntries(WITHDRAWAL_TABLES.map((table) => [table, Number(rows[0]![table])])) as RowCounts), balanceEvents: Number(rows[0]!.balance_events) }
}

/**
 * Runs `phase` and resolves with its outcome, the rows it added to each table, and how many database transactions
 * the worker's steps took: the flows a stretch of steps runs together share one, which writes all their history
 * rows with the same time (`submit` in one, `confirm` and `settle` in the next), with the batches they formed, and
 * the CPU time spent meanwhile.
 */
async function counting<T>(pool: pg.Pool, meter: CpuMeter, phase: () => Promise<T>): Promise<{ outcome: T; added: RowCounts; balanceEvents: number; workerTransactions: number; batches: number[]; cpu: CpuSpent }> {
  const before = await rowCounts(pool)
  const since = new Date()
  const measure = meter.start()
  const outcome = await phase()
  const cpu = measure.stop()
  const after = await rowCounts(pool)
  const { rows } = await pool.query<{ n: string }>(
    "select (select count(distinct at) from flow_steps where step = 'submit' and at >= $1) + (select count(distinct at) from flow_steps where step = 'settle' and at >= $1) as n",
    [since],
  )
  // The flows each `submit` transaction took, in the order they ran: the batches, as the worker formed them.
  const { rows: batches } = await pool.query<{ n: string }>("select count(*) as n from flow_steps where step = 'submit' and at >= $1 group by at order by at", [since])
  return {
    outcome,
    added: Object.fromEntries(WITHDRAWAL_TABLES.map((table) => [table, after[table] - before[table]])) as RowCounts,
    balanceEvents: after.balanceEvents - before.balanceEvents,
    workerTransactions: Number(rows[0]!.n),
    batches: batches.map((row) => Number(row.n)),
    cpu,
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Through the API and the worker

interface Measured {
  withdrawals: number
  seconds: number
  perSecond: number
}

/**
 * Sends `count` withdrawals for the withdrawers (round robin): each of `settings.clients` connections sends a quote,
 * then the commit of the quote it got back, and again. Timed from the first request until every response is in and
 * no transaction is processing (the worker carries the withdrawals out meanwhile).
 */
async function throughApi(baseUrl: string, pool: pg.Pool, targets: readonly Withdrawer[], count: number): Promise<Measured & { latencyMs: { p50: number; p99: number } }> {
  let next = 0
  const { seconds, latencyMs } = await quoteAndCommit(baseUrl, pool, {
    connections: settings.clients,
    count,
    type: 'withdrawal',
    next: () => {
      const target = targets[next++ % targets.length]!
      return { headers: target.headers, body: quoteBody(target, nextAmount(target)) }
    },
  })
  return { withdrawals: count, seconds, perSecond: count / seconds, latencyMs }
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

interface TransactionRow {
  id: string
  owner_id: string
  type: string
  origin: unknown
  origin_asset: string
  origin_amount: string
  origin_rate: string
  destination: unknown
  destination_asset: string
  destination_amount: string
  destination_rate: string
  denomination: Record<string, unknown> & { amount: string }
  fees: { amount: string }[]
  origin_account_id: string
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
    type: row.type,
    origin: { asset: row.origin_asset, amount: new BigNumber(row.origin_amount).toFixed(), rate: row.origin_rate, node: row.origin },
    destination: { asset: row.destination_asset, amount: new BigNumber(row.destination_amount).toFixed(), rate: row.destination_rate, node: row.destination },
    denomination: { ...row.denomination, amount: new BigNumber(row.denomination.amount).toFixed() },
    fees: row.fees,
    status: row.status,
    quotedAt: row.quoted_at.toISOString(),
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    ...(row.completed_at !== null ? { completedAt: row.completed_at.toISOString() } : {}),
  }
}

/**
 * Moves locked flows past a stretch of steps and merges what the steps learned into their data, in one statement
 * (Tessera merges each flow's data in a statement of its own, then moves them all on in another).
 */
async function advanceFlows(client: pg.PoolClient, organizationId: string, patches: ReadonlyMap<string, Record<string, unknown>>, step: number, completed: boolean, at: Date): Promise<void> {
  const entries = [...patches]
  const values = entries.map((_, i) => `($${2 * i + 5}::uuid, $${2 * i + 6}::jsonb)`).join(', ')
  await client.query(
    `update flows as f set step = $1, status = $2, updated_at = $3, data = f.data || v.patch
     from (values ${values}) as v(id, patch) where f.organization_id = $4 and f.id = v.id`,
    [step, completed ? 'completed' : 'running', at, organizationId, ...entries.flatMap(([id, patch]) => [id, JSON.stringify(patch)])],
  )
}

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
    const quote = await useQuote<Omit<TransactionRow, 'status' | 'type' | 'quoted_at' | 'updated_at' | 'completed_at'>>(client, organizationId, userId, quoteId, at)
    // The duplicate-withdrawal rule: serialized per user and destination, then one lookup.
    const counterparty = `external-account:${externalAccountId}`
    await client.query('select pg_advisory_xact_lock(hashtextextended($1, 0))', [`transactions:counterparty:${organizationId}:${userId}:${counterparty}`])
    const { rows: duplicates } = await client.query(
      `select id from transactions where organization_id = $1 and owner_id = $2 and counterparty = $3 and created_at >= $4 and type = 'withdrawal' and status <> 'failed'
         and denomination->>'asset' = $5 and (denomination->>'amount')::numeric = $6::numeric limit 1`,
      [organizationId, userId, counterparty, new Date(at.getTime() - 2 * 60_000), 'EUR', amount],
    )
    if (duplicates.length > 0) throw new Error('raw SQL baseline: a duplicate withdrawal (the amounts must not repeat within 2 minutes)')
    const row: TransactionRow = {
      ...quote,
      id: uuidv7(at.getTime()),
      type: 'withdrawal',
      status: 'processing',
      quoted_at: quote.created_at,
      created_at: at,
      updated_at: at,
      completed_at: null,
    }
    await client.query(
      insertRows(
        'transactions',
        ['organization_id', 'id', 'owner_id', 'type', 'status', 'reason', 'origin', 'origin_asset', 'origin_amount', 'origin_rate', 'destination', 'destination_asset',
          'destination_amount', 'destination_rate', 'denomination', 'fees', 'origin_account_id', 'destination_account_id', 'network', 'reference', 'counterparty', 'quote_id',
          'quoted_at', 'created_at', 'updated_at', 'completed_at'],
        [[organizationId, row.id, userId, 'withdrawal', 'processing', null, JSON.stringify(row.origin), row.origin_asset, row.origin_amount, row.origin_rate,
          JSON.stringify(row.destination), row.destination_asset, row.destination_amount, row.destination_rate, JSON.stringify(row.denomination), JSON.stringify(row.fees),
          row.origin_account_id, null, ends.network, null, counterparty, quote.id, row.quoted_at, at, at, null]],
      ),
    )
    const created = () => [uuidv7(), organizationId, 'core.transaction.created', 'transaction', row.id, userId, JSON.stringify({ transaction: presentTransaction(row) }), at]
    const holdId = await holdOrigin(client, organizationId, { transactionId: row.id, accountId: row.origin_account_id, asset: row.origin_asset, amount: row.origin_amount }, created, at)
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
  await inTransaction(client, async () => {
    const at = new Date()
    const flows = await lockFlows(client, organizationId, flowIds, 1)
    await advanceFlows(client, organizationId, new Map(flows.map((flow) => [flow.id, { orderId: orderOf.get(flow.id) }])), 2, false, at)
    await client.query(insertRows('flow_steps', FLOW_STEP_COLUMNS, flows.map((flow) => [organizationId, flow.id, 'submit', 'run', 1, null, at])))
  })

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
    const rows = await lockProcessing<TransactionRow>(client, organizationId, flows.map((flow) => flow.id))
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
    await setBalances(client, organizationId, [...accounts.values()], at)
    await client.query(insertRows('ledger_entries', LEDGER_ENTRY_COLUMNS, entries))
    // One balance-changed event per user account, with its final balance, as the ledger's one write for the batch.
    const events = [...new Set(rows.map((row) => row.origin_account_id))].map((id) => balanceChanged(organizationId, accounts.get(id)!, at))
    const completed = await completeTransactions<TransactionRow>(client, organizationId, rows.map((row) => row.id), at)
    for (const row of completed) {
      events.push([uuidv7(), organizationId, 'core.transaction.status-changed', 'transaction', row.id, row.owner_id, JSON.stringify({ transaction: presentTransaction(row) }), at])
    }
    await client.query(insertRows('outbox_events', EVENT_COLUMNS, events))
    await advanceFlows(client, organizationId, new Map(flows.map((flow) => [flow.id, { networkReference: traceOf.get(flow.id) }])), 4, true, at)
    await client.query(
      insertRows('flow_steps', FLOW_STEP_COLUMNS, flows.flatMap((flow) => [[organizationId, flow.id, 'confirm', 'run', 2, null, at], [organizationId, flow.id, 'settle', 'run', 3, null, at]])),
    )
  })
  await completeJobs(client, jobs, workerId)
}

/**
 * `count` withdrawals for the withdrawers (round robin) through `pg`: `settings.clients` connections issue the
 * requests' work (a withdrawal at a time, like the API clients), and a worker loop like Tessera's (src/jobs/worker.ts)
 * the worker's, with up to `settings.concurrency` runs in flight, each on a connection of its own. Its runs take the
 * batches Tessera's worker formed in the same scenario (`batches`, in turn): a run starts once as many jobs are due
 * as its batch holds (or every request is done), so that the baseline makes as many database transactions per
 * withdrawal as Tessera did. Left to itself, its batches would follow its own pace: larger than Tessera's where its
 * runs queue behind each other (many users), single withdrawals where the requests trickle in (one hot account).
 */
async function rawSql(pool: pg.Pool, organizationId: string, clearingId: string, template: Template, targets: readonly Withdrawer[], count: number, batches: readonly number[]): Promise<Measured> {
  let next = 0
  let done = 0
  let failed: unknown = null
  // Withdrawals committed, and claimed by the worker: the difference is what is due.
  let committed = 0
  let claimedTotal = 0
  // A commit wakes the worker loop; one that comes while the loop is awake keeps it from sleeping next time.
  let wake: (() => void) | null = null
  let poked = false
  const poke = () => {
    if (wake) wake()
    else poked = true
  }
  const started = performance.now()
  const requests = Array.from({ length: settings.clients }, async () => {
    const client = await pool.connect()
    try {
      for (let n = next++; n < count && failed === null; n = next++) {
        const target = targets[n % targets.length]!
        await rawRequests(client, organizationId, template, target, nextAmount(target))
        committed++
        poke()
      }
    } catch (error) {
      failed ??= error
      poke()
    } finally {
      client.release()
    }
  })
  const worker = (async () => {
    const workerId = 'raw-sql-worker'
    const claimer = await pool.connect()
    const idle = await Promise.all(Array.from({ length: settings.concurrency }, () => pool.connect()))
    const running = new Set<Promise<void>>()
    let batch = 0
    try {
      while (done < count && failed === null) {
        let claimed = 0
        const wanted = Math.min(batches[batch % batches.length]!, count - claimedTotal)
        if (idle.length > 0 && wanted > 0 && committed - claimedTotal >= wanted) {
          const jobs = await claimJobs(claimer, workerId, RAW_JOB_TYPE, wanted)
          claimed = jobs.length
          claimedTotal += claimed
          batch++
          if (claimed > 0) {
            const client = idle.pop()!
            const run = rawRun(client, organizationId, clearingId, workerId, jobs).then(
              () => {
                done += jobs.length
              },
              (error: unknown) => {
                failed ??= error
              },
            ).finally(() => {
              running.delete(run)
              idle.push(client)
              if (done >= count || failed !== null) poke()
            })
            running.add(run)
          }
        }
        if (done >= count || failed !== null) break
        const full = idle.length === 0
        if (claimed > 0 && !full) continue
        if (poked && !full) {
          poked = false
          continue
        }
        poked = false
        await new Promise<void>((resolve) => {
          const resume = () => {
            clearTimeout(timer)
            wake = null
            resolve()
          }
          const timer = setTimeout(resume, settings.pollIntervalMs)
          if (full) void Promise.race(running).then(resume, resume)
          wake = resume
        })
      }
      await Promise.allSettled(running)
    } finally {
      claimer.release()
      for (const client of idle) client.release()
    }
  })()
  await Promise.all([...requests, worker])
  if (failed !== null) throw failed
  const seconds = (performance.now() - started) / 1000
  return { withdrawals: count, seconds, perSecond: count / seconds }
}

// ---------------------------------------------------------------------------------------------------------------

async function main(): Promise<number> {
  const startedAt = new Date()
  if (!isValidIBAN(IBANS.api) || !isValidIBAN(IBANS.rawSql)) throw new Error(`not valid IBANs: ${IBANS.api}, ${IBANS.rawSql}`)
  log(`node ${process.version}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? 'unknown'})`)
  if (settings.withdrawals !== requested.withdrawals) log(`${requested.withdrawals} withdrawals rounded up to ${settings.withdrawals}, a multiple of the ${settings.clients} API clients`)
  const warnIfBusy = (load: number, when: string) => {
    if (load > 0.1) log(`WARNING: ${(load * 100).toFixed(0)}% of the CPUs were busy ${when}; other processes will skew the figures`)
  }
  const backgroundLoad = await backgroundCpuLoad()
  warnIfBusy(backgroundLoad, 'before the run started')
  const url = await scratchDatabase(settings.databaseUrl ?? (await startCluster()), 'bench_withdrawals')
  const postgresVersion = await databaseVersion(url)

  const credentials = newClientCredentials()
  const profileDir = settings.cpuProfile ? path.join(RESULTS_DIR, `withdrawals-profile-${startedAt.toISOString().replace(/[:.]/g, '-')}`) : null
  const tessera = await startTessera(url, credentials, {
    // The sandbox rail settles at once: the benchmark measures Tessera, not the rail's simulated delay.
    env: { WORKER_CONCURRENCY: String(settings.concurrency), SANDBOX_RAIL_SETTLE_MS: '0' },
    profileDir,
  })
  const token = await accessToken(tessera.baseUrl, credentials)
  const pool = new pg.Pool({ connectionString: url, max: 2 })
  onCleanup('status pool', () => pool.end())
  // The baseline's connections, opened once: connections that close while a phase runs would blur its CPU figures.
  const rawPool = new pg.Pool({ connectionString: url, max: settings.clients + settings.concurrency + 1, idleTimeoutMillis: 0 })
  onCleanup('baseline pool', () => rawPool.end())
  // `end()` resolves before every connection has closed: the database's drop at cleanup may still terminate one,
  // whose error reaches its pool as an idle client's. Anything else is worth a line.
  for (const idlePool of [pool, rawPool]) {
    idlePool.on('error', (error) => {
      if (!isCleaning()) log(`an idle database connection failed: ${error.message}`)
    })
  }
  const opened = await Promise.all(Array.from({ length: settings.clients + settings.concurrency + 1 }, () => rawPool.connect()))
  for (const client of opened) client.release()
  const meter = cpuMeter(tessera.child.process.pid!, (await pool.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid)

  // Enough for the hot account to pay for every withdrawal of the run (both scenarios, both paths, its share of the
  // warm-up) at the amounts of its sequence, and a tenth more.
  const hotCount = Math.ceil(settings.warmup / settings.users) + 2 * Math.ceil(settings.withdrawals / settings.users) + 2 * settings.withdrawals
  const funding = new BigNumber(hotCount).times(FIRST_AMOUNT_CENTS).plus((hotCount * (hotCount - 1)) / 2).div(100).times(1.1).integerValue(BigNumber.ROUND_UP).toFixed()
  log(`${settings.users} verified users, each with an EUR account funded with ${funding} EUR and two SEPA bank accounts`)
  const setupStarted = performance.now()
  const withdrawers = await mapLimit(Array.from({ length: settings.users }, (_, i) => i), 8, (i) => withdrawer(tessera.baseUrl, token, i, funding))
  await untilNoneProcessing(pool)
  log(`fixture ready in ${((performance.now() - setupStarted) / 1000).toFixed(1)} s`)

  // Warm-up (not timed): JIT, connection pools, caches; it also opens the rail's clearing account.
  log(`warm-up: ${settings.warmup} withdrawals through the API`)
  await throughApi(tessera.baseUrl, pool, withdrawers, settings.warmup)
  const organizationId = (await pool.query<{ organization_id: string }>('select organization_id from accounts where id = $1', [withdrawers[0]!.eur.id])).rows[0]!.organization_id
  const clearingId = (await pool.query<{ id: string }>("select id from ledger_accounts where organization_id = $1 and system_code = 'clearing:sepa' and asset = 'EUR'", [organizationId])).rows[0]!.id
  const sample = (await pool.query<{ denomination: { rate: string }; created_at: Date; expires_at: Date }>(
    "select denomination, created_at, expires_at from quotes where kind = 'withdrawal' order by id desc limit 1",
  )).rows[0]!
  const template: Template = { denominationRate: sample.denomination.rate, ttlMs: sample.expires_at.getTime() - sample.created_at.getTime() }

  log(`${settings.withdrawals} withdrawals per scenario, ${settings.clients} API clients, ${settings.concurrency} worker runs at a time and baseline connections`)
  const perWithdrawal = (added: RowCounts) => Object.fromEntries(WITHDRAWAL_TABLES.map((table) => [table, added[table] / settings.withdrawals]))
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
    rows: { tessera: RowCounts & { balanceEvents: number }; rawSql: RowCounts & { balanceEvents: number } }
    /** Database transactions of the worker's steps per withdrawal: two per batch of flows run together. */
    workerTransactionsPerWithdrawal: { tessera: number; rawSql: number }
    /** The flows of each batch Tessera's worker ran, in order: the baseline's runs took the same. */
    batches: number[]
  }[] = []
  const comparisons: string[] = []
  for (const [scenario, targets] of [['many users', withdrawers], ['one hot account', [withdrawers[0]!]]] as const) {
    const scenarioLoad = await backgroundCpuLoad()
    warnIfBusy(scenarioLoad, `before the "${scenario}" scenario`)
    // Tessera first: the baseline's worker then takes the batches Tessera's worker formed.
    log(`${scenario}: through the API and the worker`)
    const api = await counting(pool, meter, () => throughApi(tessera.baseUrl, pool, targets, settings.withdrawals))
    log(`${scenario}: raw SQL baseline, in Tessera's ${api.batches.length} batches (${(settings.withdrawals / api.batches.length).toFixed(1)} withdrawals each on average)`)
    const raw = await counting(pool, meter, () => rawSql(rawPool, organizationId, clearingId, template, targets, settings.withdrawals, api.batches))
    warnIfBusy((raw.cpu.others ?? 0) / raw.cpu.available, `during the "${scenario}" raw SQL baseline`)
    warnIfBusy((api.cpu.others ?? 0) / api.cpu.available, `during the "${scenario}" API run`)
    comparisons.push(
      `rows added, ${scenario} (${settings.withdrawals} withdrawals):`,
      `  ${'table'.padEnd(22)}${'raw SQL'.padStart(9)}${'Tessera'.padStart(9)}${'each'.padStart(7)}`,
      ...WITHDRAWAL_TABLES.map((table) =>
        `  ${table.padEnd(22)}${String(raw.added[table]).padStart(9)}${String(api.added[table]).padStart(9)}${(api.added[table] / settings.withdrawals).toFixed(2).padStart(7)}${raw.added[table] === api.added[table] ? '' : '  DIFFERENT'}`),
      `  ${'(balance events)'.padEnd(22)}${String(raw.balanceEvents).padStart(9)}${String(api.balanceEvents).padStart(9)}${(api.balanceEvents / settings.withdrawals).toFixed(2).padStart(7)}  not compared: one per account and ledger write`,
      '',
    )
    // The baseline must do the same work: the same rows in every table (it is the ratio's whole premise).
    const differing = WITHDRAWAL_TABLES.filter((table) => raw.added[table] !== api.added[table])
    if (differing.length > 0) {
      process.stdout.write(`\n${comparisons.join('\n')}`)
      throw new Error(`${scenario}: the baseline wrote other rows than Tessera: ${differing.map((table) => `${table} ${raw.added[table]} against ${api.added[table]}`).join(', ')}`)
    }
    rows.push({
      scenario,
      withdrawals: api.outcome.withdrawals,
      seconds: api.outcome.seconds,
      withdrawalsPerSecond: api.outcome.perSecond,
      rawSqlSeconds: raw.outcome.seconds,
      rawSqlPerSecond: raw.outcome.perSecond,
      ratio: api.outcome.perSecond / raw.outcome.perSecond,
      latencyMs: api.outcome.latencyMs,
      backgroundCpuLoad: scenarioLoad,
      cpuMs: { rawSql: raw.cpu, tessera: api.cpu },
      rowsPerWithdrawal: perWithdrawal(api.added),
      rows: { tessera: { ...api.added, balanceEvents: api.balanceEvents }, rawSql: { ...raw.added, balanceEvents: raw.balanceEvents } },
      workerTransactionsPerWithdrawal: { tessera: api.workerTransactions / settings.withdrawals, rawSql: raw.workerTransactions / settings.withdrawals },
      batches: api.batches,
    })
  }
  await stopChild(tessera.child)

  await ledgerCheck(url)

  const met = (ratio: number) => (ratio >= TARGET_RATIO ? 'met' : 'not met')
  const percent = (load: number) => `${(load * 100).toFixed(0)}%`
  const othersShare = (cpu: CpuSpent) => (cpu.others === null ? 'n/a' : percent(cpu.others / cpu.available))
  const perWithdrawalMs = (ms: number | null) => (ms === null ? '  n/a' : (ms / settings.withdrawals).toFixed(2).padStart(5))
  const lines = [
    '',
    `Withdrawals — ${startedAt.toISOString()} — node ${process.version}, PostgreSQL ${postgresVersion}, ${os.cpus().length} CPUs`,
    `${settings.withdrawals} SEPA withdrawals per scenario, ${settings.users} users, ${settings.clients} API clients, ${settings.concurrency} worker runs at a time, rail settles at once`,
    `other processes' CPU before the run: ${percent(backgroundLoad)}; before each scenario: ${rows.map((row) => percent(row.backgroundCpuLoad)).join(', ')}`,
    `other processes' CPU during the measured phases (raw SQL / API): ${rows.map((row) => `${row.scenario} ${othersShare(row.cpuMs.rawSql)} / ${othersShare(row.cpuMs.tessera)}`).join(', ')}`,
    '',
    `${'scenario'.padEnd(18)}${'withdrawals'.padStart(12)}${'seconds'.padStart(9)}${'per s'.padStart(8)}${'raw SQL/s'.padStart(11)}${'ratio'.padStart(8)}  target ${TARGET_RATIO.toFixed(2)}`,
    ...rows.map((row) =>
      `${row.scenario.padEnd(18)}${String(row.withdrawals).padStart(12)}${row.seconds.toFixed(1).padStart(9)}${row.withdrawalsPerSecond.toFixed(0).padStart(8)}${row.rawSqlPerSecond.toFixed(0).padStart(11)}${row.ratio.toFixed(3).padStart(8)}  ${met(row.ratio)}`),
    '',
    ...comparisons,
    'CPU per withdrawal, ms (runner: the load generator, or the baseline\'s pg client):',
    `  ${''.padEnd(26)}${'runner'.padStart(8)}${'Tessera'.padStart(9)}${'PostgreSQL'.padStart(12)}`,
    ...rows.flatMap((row) => [
      `  ${`${row.scenario}, raw SQL`.padEnd(26)}${perWithdrawalMs(row.cpuMs.rawSql.runner).padStart(8)}${'-'.padStart(9)}${perWithdrawalMs(row.cpuMs.rawSql.postgres).padStart(12)}`,
      `  ${`${row.scenario}, API`.padEnd(26)}${perWithdrawalMs(row.cpuMs.tessera.runner).padStart(8)}${perWithdrawalMs(row.cpuMs.tessera.tessera).padStart(9)}${perWithdrawalMs(row.cpuMs.tessera.postgres).padStart(12)}`,
    ]),
    '',
    'database transactions of the worker\'s steps per withdrawal (shared by the flows of a batch; the requests add two: the quote, the commit):',
    ...rows.map((row) => `  ${row.scenario}: Tessera ${row.workerTransactionsPerWithdrawal.tessera.toFixed(3)}, raw SQL ${row.workerTransactionsPerWithdrawal.rawSql.toFixed(3)}`),
    '',
    'tessera ledger check: every invariant holds',
    '',
  ]
  process.stdout.write(lines.join('\n'))
  const figures = {
    settings: { ...settings, databaseUrl: settings.databaseUrl ? '(given)' : null, sandboxRailSettleMs: 0, ibans: IBANS, firstAmountCents: FIRST_AMOUNT_CENTS },
    targetRatio: TARGET_RATIO,
    rows,
  }
  writeResults('withdrawals', startedAt, { postgres: postgresVersion, backgroundCpuLoad: backgroundLoad }, figures, profileDir)
  const missed = rows.filter((row) => row.ratio < TARGET_RATIO)
  if (settings.enforceTarget && missed.length > 0) {
    process.stderr.write(`\n${missed.map((row) => `${row.scenario} ${row.ratio.toFixed(3)}`).join(', ')}: below the target of ${TARGET_RATIO} (BENCH_ENFORCE_TARGET=1)\n`)
    return 1
  }
  return 0
}

await runMain(main)
