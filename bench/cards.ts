// Card deposit benchmark: frictionless card deposits per second quoted and paid through Tessera's API (the request
// asks the sandbox card processor for the authorization itself) and completed by its background worker (3-D Secure
// passed, capture, settlement) on PostgreSQL, as a ratio to a raw SQL baseline that writes the same rows, takes the
// same row locks and uses as many database transactions per deposit, directly through `pg`, in the same run. See
// bench/README.md ("Card deposit benchmark").
import { randomUUID } from 'node:crypto'
import os from 'node:os'
import path from 'node:path'
import type { RequestParams } from 'autocannon'
import BigNumber from 'bignumber.js'
import pg from 'pg'
import {
  accessToken,
  backgroundCpuLoad,
  databaseVersion,
  isCleaning,
  ledgerCheck,
  load,
  log,
  mapLimit,
  newClientCredentials,
  onCleanup,
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
  advanceFlows,
  balanceChanged,
  claimJobs,
  completeJobs,
  completeTransactions,
  EVENT_COLUMNS,
  FLOW_STEP_COLUMNS,
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
  startDeferredFlow,
  useQuote,
  wakeFlowJobs,
} from './raw-sql.ts'
import { cpuMeter, type CpuMeter, type CpuSpent } from './cpu.ts'
import { positiveInteger } from './settings.ts'
import { uuidv7 } from '../src/lib/ids.ts'

setLogPrefix('bench:cards')

const TARGET_RATIO = 0.4
/** The sandbox's test card that authorizes without a 3-D Secure challenge and captures (docs/sandbox.md). */
const CARD_NUMBER = '4242424242424242'
/** What every deposit pays (EUR): within the sandbox processor's bounds and the deposit limits. */
const AMOUNT = '10.00'
/** Where the issuer would send the cardholder back after a challenge (none comes: the card is frictionless). */
const RETURN_URL = 'https://merchant.example/back'
/** How long Tessera defers the job of a flow whose first call the request makes (transactions.service.ts). */
const AFTER_COMMIT_JOB_DELAY_MS = 10_000

const requested = {
  deposits: positiveInteger('BENCH_CARD_DEPOSITS', 2000),
  users: positiveInteger('BENCH_CARD_USERS', 200),
  rounds: positiveInteger('BENCH_CARD_ROUNDS', 3),
  clients: positiveInteger('BENCH_API_CLIENTS', 16),
  concurrency: positiveInteger('BENCH_WORKER_CONCURRENCY', 8),
}
/** Tessera's own setting (passed through to it): how many due flows its worker runs together at most. */
const batchSize = positiveInteger('WORKER_BATCH_SIZE', 100)
// Each API connection sends whole deposits (a quote, then its payment): autocannon shares the requests out evenly
// over the connections, so the deposits are rounded up to a multiple of the connections.
const roundToClients = (n: number) => Math.ceil(n / requested.clients) * requested.clients
const settings = {
  ...requested,
  batchSize,
  deposits: roundToClients(requested.deposits),
  warmup: roundToClients(Math.min(500, requested.deposits)),
  /** Tessera's own setting (passed through to it): how long its idle worker sleeps between polls; the baseline's too. */
  pollIntervalMs: positiveInteger('WORKER_POLL_INTERVAL_MS', 250),
  databaseUrl: process.env.BENCH_DATABASE_URL?.trim() || null,
  cpuProfile: process.env.BENCH_CPU_PROF === '1',
  enforceTarget: process.env.BENCH_ENFORCE_TARGET === '1',
}

// ---------------------------------------------------------------------------------------------------------------
// Fixture, through the API

interface Payer {
  userId: string
  /** The user's EUR account: the destination of every deposit. */
  eur: { id: string }
  /** The user's linked card (EUR, visa): the origin of every deposit, through the API and the baseline's. */
  cardId: string
  /** Headers that act for the user, with a JSON body. */
  headers: Record<string, string>
}

/**
 * A user who may link cards and pay from them (the `cards` and `deposits` capabilities: a French resident with
 * identity, proof of address, due diligence and a complete residential address), an EUR account, and the sandbox's
 * frictionless test card linked (its issuer is French: the card's asset is EUR, its network visa).
 */
async function payer(baseUrl: string, token: string, index: number): Promise<Payer> {
  const { userId, headers, call } = await verifiedUser(baseUrl, token, `bench-cards-${index}@example.com`)
  // The `cards` capability needs the residential address itself, beyond its country.
  await call('PATCH', '/core/kyc/processes/address', headers, 200, { input: { address: { city: 'Paris', line1: '1 rue de Rivoli', postalCode: '75001' } } })
  const { account } = (await call('POST', '/core/accounts', headers, 201, { label: `Bench EUR ${index}`, asset: 'EUR' })) as { account: { id: string } }
  const { externalAccount } = (await call('POST', '/core/external-accounts', headers, 201, {
    type: 'card',
    label: `Bench card ${index}`,
    number: CARD_NUMBER,
    securityCode: '123',
    expiryDate: { month: 12, year: new Date().getUTCFullYear() + 3 },
  })) as { externalAccount: { id: string; asset: string; network: string } }
  if (externalAccount.asset !== 'EUR' || externalAccount.network !== 'visa') throw new Error(`the test card was linked as ${externalAccount.asset} on ${externalAccount.network}, not EUR on visa`)
  return { userId, eur: { id: account.id }, cardId: externalAccount.id, headers }
}

function quoteBody(target: Payer): string {
  return JSON.stringify({
    origin: { type: 'external-account', id: target.cardId },
    destination: { type: 'account', id: target.eur.id },
    denomination: { asset: 'EUR', amount: AMOUNT },
  })
}

const PAY_PARAMS = { requirements: [{ name: 'authorize:3ds', returnUrl: RETURN_URL }] }

/** The tables one card deposit writes rows to. */
const DEPOSIT_TABLES = [
  'quotes', 'transactions', 'flows', 'flow_steps', 'jobs', 'sandbox_card_payments', 'ledger_transactions', 'ledger_entries', 'outbox_events',
] as const
type Table = (typeof DEPOSIT_TABLES)[number]
type RowCounts = Record<Table, number>

async function rowCounts(pool: pg.Pool): Promise<RowCounts & { balanceEvents: number }> {
  // Balance events are counted apart: there is one per account and ledger write, so their number follows how the
  // worker's batches happened to form, in either path; every other row is one per deposit (or per step).
  const count = (table: string) => (table === 'outbox_events' ? `(select count(*) from outbox_events where type <> 'core.account.balance-changed')` : `(select count(*) from ${table})`)
  const { rows } = await pool.query<Record<string, string>>(
    `select ${DEPOSIT_TABLES.map((table) => `${count(table)} as ${table}`).join(', ')},
       (select count(*) from outbox_events where type = 'core.account.balance-changed') as balance_events`,
  )
  return { ...(Object.fromEntries(DEPOSIT_TABLES.map((table) => [table, Number(rows[0]![table])])) as RowCounts), balanceEvents: Number(rows[0]!.balance_events) }
}

interface Counted<T> {
  outcome: T
  added: RowCounts
  balanceEvents: number
  /** The worker's database transactions: per batch one for `authenticate` and one for `capture` + `settle`, and one capture each. */
  workerTransactions: number
  batches: number[]
  cpu: CpuSpent
}

/**
 * Runs `phase` and resolves with its outcome, the rows it added to each table, how many database transactions the
 * worker's steps took (the flows a stretch of steps runs together share one, which writes all their history rows
 * with the same time; each capture is the processor's own), the batches the worker formed, and the CPU time spent
 * meanwhile.
 */
async function counting<T>(pool: pg.Pool, meter: CpuMeter, phase: () => Promise<T>): Promise<Counted<T>> {
  const before = await rowCounts(pool)
  const since = new Date()
  const measure = meter.start()
  const outcome = await phase()
  const cpu = measure.stop()
  const after = await rowCounts(pool)
  const { rows } = await pool.query<{ n: string }>(
    `select (select count(distinct at) from flow_steps where step = 'authenticate' and at >= $1)
       + (select count(distinct at) from flow_steps where step = 'settle' and at >= $1)
       + (select count(*) from flow_steps where step = 'capture' and at >= $1) as n`,
    [since],
  )
  // The flows each `authenticate` transaction took, in the order they ran: the batches, as the worker formed them.
  const { rows: batches } = await pool.query<{ n: string }>("select count(*) as n from flow_steps where step = 'authenticate' and at >= $1 group by at order by at", [since])
  return {
    outcome,
    added: Object.fromEntries(DEPOSIT_TABLES.map((table) => [table, after[table] - before[table]])) as RowCounts,
    balanceEvents: after.balanceEvents - before.balanceEvents,
    workerTransactions: Number(rows[0]!.n),
    batches: batches.map((row) => Number(row.n)),
    cpu,
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Through the API and the worker

interface Measured {
  deposits: number
  seconds: number
  perSecond: number
}

/** What one connection of the request sequence carries from the quote to the payment. */
interface QuoteContext {
  headers?: Record<string, string>
  quoteId?: string | null
}

// bench/autocannon.d.ts leaves out what a request sequence with a dependency needs: autocannon hands each request's
// response to its `onResponse` together with the connection's context, and that context to the next `setupRequest`.
type SequenceRequest = Omit<RequestParams, 'setupRequest'> & {
  setupRequest?: (request: RequestParams, context?: QuoteContext) => RequestParams
  onResponse?: (status: number, body: string, context: QuoteContext) => void
}

/**
 * Sends `count` card deposits for the payers (round robin) over `settings.clients` connections: each sends a quote,
 * then `POST /core/transactions` with the quote's id and its 3-D Secure return address, and again. Timed from the
 * first request until every response is in and no transaction is processing (the worker completes the deposits
 * meanwhile); fails unless every request answered 201 and every deposit completed.
 */
async function throughApi(baseUrl: string, pool: pg.Pool, targets: readonly Payer[], count: number): Promise<Measured & { latencyMs: { p50: number; p99: number } }> {
  let next = 0
  let answered = 0
  // The end is when the last answer is in and no transaction is processing, not when autocannon returns (on its
  // next one-second tick).
  let allAnswered!: () => void
  const lastAnswer = new Promise<void>((resolve) => (allAnswered = resolve))
  const completed = lastAnswer.then(async () => {
    await untilNoneProcessing(pool)
    return performance.now()
  })
  const requests: SequenceRequest[] = [
    {
      method: 'POST',
      path: '/core/transactions/quote',
      setupRequest: (request, context) => {
        const target = targets[next++ % targets.length]!
        context!.headers = target.headers
        return { ...request, headers: target.headers, body: quoteBody(target) }
      },
      onResponse: (status, body, context) => {
        context.quoteId = status === 201 ? (JSON.parse(body) as { quote: { id: string } }).quote.id : null
      },
    },
    {
      method: 'POST',
      path: '/core/transactions',
      setupRequest: (request, context) => ({ ...request, headers: context!.headers!, body: JSON.stringify({ quoteId: context!.quoteId, params: PAY_PARAMS }) }),
    },
  ]
  const started = performance.now()
  const result = await load({ url: baseUrl, connections: settings.clients, amount: 2 * count, requests }, () => {
    if (++answered === 2 * count) allAnswered()
  })
  const created = result.statusCodeStats['201']?.count ?? 0
  if (created !== 2 * count || result.errors > 0 || result.timeouts > 0) {
    throw new Error(`card deposits were refused: ${created} of ${2 * count} requests answered 201; status codes ${JSON.stringify(result.statusCodeStats)}, ${result.errors} errors`)
  }
  const seconds = ((await completed) - started) / 1000
  const { rows } = await pool.query<{ n: string }>("select count(*) as n from transactions where type = 'deposit' and status <> 'completed'")
  if (Number(rows[0]!.n) > 0) throw new Error(`${rows[0]!.n} card deposits did not complete (see the transactions and flows tables)`)
  return { deposits: count, seconds, perSecond: count / seconds, latencyMs: { p50: result.latency.p50, p99: result.latency.p99 } }
}

// ---------------------------------------------------------------------------------------------------------------
// Raw SQL baseline

/** What every baseline quote copies from a card deposit Tessera quoted during the warm-up. */
interface Template {
  originAmount: string
  destinationAmount: string
  denomination: Record<string, unknown>
  fees: { amount: string }[]
  ttlMs: number
}

/** The baseline's jobs: a type of their own, so that Tessera's worker (idle meanwhile) never takes them. */
const RAW_JOB_TYPE = 'flow:card-deposit:raw-sql'

const PAYMENT_COLUMNS = [
  'id', 'organization_id', 'key', 'reference', 'network', 'last_four', 'asset', 'amount', 'outcome', 'status', 'reason', 'return_url', 'challenge_expires_at', 'created_at', 'updated_at',
] as const

const TRANSACTION_COLUMNS = [
  'organization_id', 'id', 'owner_id', 'type', 'status', 'reason', 'origin', 'origin_asset', 'origin_amount', 'origin_rate', 'destination', 'destination_asset',
  'destination_amount', 'destination_rate', 'denomination', 'fees', 'origin_account_id', 'destination_account_id', 'network', 'reference', 'counterparty', 'quote_id',
  'quoted_at', 'created_at', 'updated_at', 'completed_at',
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
  destination_account_id: string
  network: string
  status: string
  quoted_at: Date
  created_at: Date
  updated_at: Date
  completed_at: Date | null
}

/** What the flow of a card deposit holds, as Tessera's (src/flows/card-deposit.flow.ts). */
interface CardFlowData {
  authorizationId?: string
  confirmationUrl?: string
  captureId?: string
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
 * What Tessera's two requests of one card deposit write, issued directly: the quote (after one read of the
 * destination account and of the card), then the commit's database transaction (take the quote, record the
 * transaction, the flow at its first step with its job deferred, the created event), then, after the commit, what
 * the request does with the issuer: one read of the transaction with its card, the sandbox processor's
 * authorization (its insert and its read, as it records it), one database transaction that locks the flow at its
 * first step, moves it on with the authorization's id and writes its history, and the wake of its job.
 */
async function rawRequests(client: pg.PoolClient, organizationId: string, template: Template, target: Payer): Promise<void> {
  const { userId, eur, cardId } = target
  const quotedAt = new Date()
  const quoteId = uuidv7(quotedAt.getTime())
  // POST /core/transactions/quote
  const { rows: [ends] } = await client.query<{ asset: string; card_asset: string; network: string; type: string; details: { expiryDate: { month: number; year: number } } }>(
    `select a.asset, e.asset as card_asset, e.network, e.type, e.details
     from accounts a, external_accounts e
     where a.organization_id = $1 and a.owner_id = $2 and a.id = $3 and a.archived_at is null
       and e.organization_id = $1 and e.owner_id = $2 and e.id = $4 and e.deleted_at is null`,
    [organizationId, userId, eur.id, cardId],
  )
  const expiry = ends?.details.expiryDate
  if (!ends || ends.type !== 'card' || ends.asset !== ends.card_asset || !expiry || expiry.year * 12 + expiry.month < quotedAt.getUTCFullYear() * 12 + quotedAt.getUTCMonth() + 1) {
    throw new Error('raw SQL baseline: the account or the card is missing, expired, or of another asset')
  }
  const origin = { type: 'external-account', id: cardId, ownerId: userId, network: ends.network }
  const destination = { type: 'account', id: eur.id, ownerId: userId }
  await client.query(
    insertRows('quotes', QUOTE_COLUMNS, [
      [organizationId, quoteId, userId, 'deposit', JSON.stringify(origin), JSON.stringify(destination), null, eur.id, ends.card_asset, template.originAmount, '1', ends.asset,
        template.destinationAmount, '1', JSON.stringify(template.denomination), JSON.stringify(template.fees), JSON.stringify(['authorize:3ds']), quotedAt,
        new Date(quotedAt.getTime() + template.ttlMs), null],
    ]),
  )

  // POST /core/transactions: the commit.
  let transactionId = ''
  await inTransaction(client, async () => {
    const at = new Date()
    const quote = await useQuote<Omit<TransactionRow, 'status' | 'type' | 'network' | 'quoted_at' | 'updated_at' | 'completed_at'>>(client, organizationId, userId, quoteId, at)
    const row: TransactionRow = {
      ...quote,
      id: uuidv7(at.getTime()),
      type: 'deposit',
      network: ends.network,
      status: 'processing',
      quoted_at: quote.created_at,
      created_at: at,
      updated_at: at,
      completed_at: null,
    }
    transactionId = row.id
    await client.query(
      insertRows('transactions', TRANSACTION_COLUMNS, [
        [organizationId, row.id, userId, 'deposit', 'processing', null, JSON.stringify(row.origin), row.origin_asset, row.origin_amount, row.origin_rate,
          JSON.stringify(row.destination), row.destination_asset, row.destination_amount, row.destination_rate, JSON.stringify(row.denomination), JSON.stringify(row.fees),
          null, row.destination_account_id, ends.network, null, `external-account:${cardId}`, quote.id, row.quoted_at, at, at, null],
      ]),
    )
    const data = { originAccountId: null, originAmount: row.origin_amount, originAsset: row.origin_asset, destinationAsset: row.destination_asset, network: ends.network, returnUrl: RETURN_URL }
    await startDeferredFlow(client, organizationId, { type: 'card-deposit', id: row.id, data }, RAW_JOB_TYPE, AFTER_COMMIT_JOB_DELAY_MS, at)
    await client.query(
      insertRows('outbox_events', EVENT_COLUMNS, [[uuidv7(), organizationId, 'core.transaction.created', 'transaction', row.id, userId, JSON.stringify({ transaction: presentTransaction(row) }), at]]),
    )
  })

  // The same request, after the commit: the issuer's authorization (`authorize`), then the job made due.
  const { rows: [paying] } = await client.query<{ origin_asset: string; origin_amount: string; network: string; details: { last4Digits: string } }>(
    `select t.origin_asset, t.origin_amount, t.network, e.details
     from transactions t join external_accounts e on e.organization_id = t.organization_id and e.id = (t.origin->>'id')::uuid
     where t.organization_id = $1 and t.id = $2 and t.status = 'processing'`,
    [organizationId, transactionId],
  )
  if (!paying) throw new Error('raw SQL baseline: the deposit is no longer processing')
  const key = `${transactionId}:authorize`
  const asked = new Date()
  await client.query(
    insertRows('sandbox_card_payments', PAYMENT_COLUMNS, [
      [randomUUID(), organizationId, key, transactionId, paying.network, paying.details.last4Digits, paying.origin_asset, paying.origin_amount, 'approve', 'authorized', null, RETURN_URL,
        null, asked, asked],
    ], ' on conflict (organization_id, key) do nothing'),
  )
  const { rows: [payment] } = await client.query<{ id: string; status: string }>('select * from sandbox_card_payments where organization_id = $1 and key = $2', [organizationId, key])
  if (payment?.status !== 'authorized') throw new Error('raw SQL baseline: the payment was not authorized')
  await inTransaction(client, async () => {
    const at = new Date()
    const flows = await lockFlows<CardFlowData>(client, organizationId, [transactionId], 0)
    await advanceFlows(client, organizationId, new Map(flows.map((flow) => [flow.id, { authorizationId: payment.id }])), 1, false, at)
    await client.query(insertRows('flow_steps', FLOW_STEP_COLUMNS, flows.map((flow) => [organizationId, flow.id, 'authorize', 'run', 0, null, at])))
  })
  await wakeFlowJobs(client, RAW_JOB_TYPE, organizationId, [transactionId], new Date())
}

/**
 * What Tessera's worker writes for a batch of card deposit flows it claimed, issued directly: `authenticate` (one
 * database transaction: lock the flows, move them on, their history; a frictionless payment asks the processor
 * nothing); `capture`: one read of the transactions still processing, then the sandbox processor's capture of each
 * payment, a database transaction each (lock the payment, record the capture), as it makes them; `settle`, in the
 * capture's stretch (one database transaction): lock the flows and the transactions still processing, post one
 * ledger transaction per deposit (the card network's clearing account pays the fee account and the user's account,
 * under the accounts' locks in id order), complete the transactions with their events, complete the flows with
 * the captures' ids and their history; then the jobs' completion.
 */
async function rawRun(client: pg.PoolClient, organizationId: string, system: { clearingId: string; feesId: string }, workerId: string, jobs: readonly RawJob[]): Promise<void> {
  const flowIds = jobs.map((job) => job.payload.flowId)

  // authenticate: nothing to ask for a frictionless payment; the step's record.
  let flows: { id: string; data: CardFlowData }[] = []
  await inTransaction(client, async () => {
    const at = new Date()
    flows = await lockFlows<CardFlowData>(client, organizationId, flowIds, 1)
    if (flows.some((flow) => flow.data.confirmationUrl !== undefined || flow.data.authorizationId === undefined)) throw new Error('raw SQL baseline: a payment waits for a challenge')
    await advanceFlows(client, organizationId, new Map(flows.map((flow) => [flow.id, {}])), 2, false, at)
    await client.query(insertRows('flow_steps', FLOW_STEP_COLUMNS, flows.map((flow) => [organizationId, flow.id, 'authenticate', 'run', 1, null, at])))
  })

  // capture: the transactions still processing, outside any database transaction, then each payment's capture.
  const { rows: live } = await client.query<{ id: string }>(
    "select id from transactions where organization_id = $1 and id = any($2::uuid[]) and status = 'processing'",
    [organizationId, flows.map((flow) => flow.id)],
  )
  if (live.length !== flows.length) throw new Error('raw SQL baseline: a deposit ended before its capture')
  const captures = new Map<string, string>()
  for (const flow of flows) {
    await inTransaction(client, async () => {
      const { rows: [payment] } = await client.query<{ id: string; status: string; amount: string; operations: { kind: string }[] }>(
        'select * from sandbox_card_payments where id = $1 and organization_id = $2 for update',
        [flow.data.authorizationId, organizationId],
      )
      if (!payment || payment.status !== 'authorized' || payment.operations.some((operation) => operation.kind === 'capture')) throw new Error('raw SQL baseline: a payment cannot be captured')
      const now = new Date()
      const captureId = randomUUID()
      const operations = [...payment.operations, { kind: 'capture', key: `${flow.id}:capture`, id: captureId, amount: payment.amount, at: now.toISOString() }]
      await client.query(
        "update sandbox_card_payments set status = 'captured', captured_amount = $1, operations = $2, updated_at = $3 where id = $4 returning *",
        [payment.amount, JSON.stringify(operations), now, payment.id],
      )
      captures.set(flow.id, captureId)
    })
  }

  // settle, in the capture's stretch: one database transaction.
  await inTransaction(client, async () => {
    const at = new Date()
    const locked = await lockFlows<CardFlowData>(client, organizationId, flowIds, 2)
    const rows = await lockProcessing<TransactionRow>(client, organizationId, locked.map((flow) => flow.id))
    const postings = rows.map((row) => [organizationId, uuidv7(at.getTime()), 'deposit', `${row.id}:settle`, 'raw-sql', null, JSON.stringify({ transactionId: row.id }), at])
    // The references first, then the accounts, as the ledger's `postAll`.
    await client.query(insertRows('ledger_transactions', LEDGER_TRANSACTION_COLUMNS, postings))
    const accounts = await lockAccounts(client, organizationId, [system.clearingId, system.feesId, ...rows.map((row) => row.destination_account_id)])
    const clearing = accounts.get(system.clearingId)!
    const fees = accounts.get(system.feesId)!
    const entries: unknown[][] = []
    rows.forEach((row, i) => {
      const paid = new BigNumber(row.origin_amount)
      const fee = row.fees.reduce((sum, item) => sum.plus(item.amount), new BigNumber(0))
      const credited = new BigNumber(row.destination_amount)
      const account = accounts.get(row.destination_account_id)!
      clearing.total = clearing.total.minus(paid)
      clearing.available = clearing.available.minus(paid)
      fees.total = fees.total.plus(fee)
      fees.available = fees.available.plus(fee)
      account.total = account.total.plus(credited)
      account.available = account.available.plus(credited)
      const postingId = postings[i]![1]
      entries.push(
        [organizationId, uuidv7(at.getTime()), postingId, clearing.id, clearing.asset, paid.negated().toFixed(), at],
        [organizationId, uuidv7(at.getTime()), postingId, fees.id, fees.asset, fee.toFixed(), at],
        [organizationId, uuidv7(at.getTime()), postingId, account.id, account.asset, credited.toFixed(), at],
      )
    })
    await setBalances(client, organizationId, [...accounts.values()], at)
    await client.query(insertRows('ledger_entries', LEDGER_ENTRY_COLUMNS, entries))
    // One balance-changed event per user account, with its final balance, as the ledger's one write for the batch.
    const events = [...new Set(rows.map((row) => row.destination_account_id))].map((id) => balanceChanged(organizationId, accounts.get(id)!, at))
    const completed = await completeTransactions<TransactionRow>(client, organizationId, rows.map((row) => row.id), at)
    for (const row of completed) {
      events.push([uuidv7(), organizationId, 'core.transaction.status-changed', 'transaction', row.id, row.owner_id, JSON.stringify({ transaction: presentTransaction(row) }), at])
    }
    await client.query(insertRows('outbox_events', EVENT_COLUMNS, events))
    await advanceFlows(client, organizationId, new Map(locked.map((flow) => [flow.id, { captureId: captures.get(flow.id) }])), 4, true, at)
    await client.query(
      insertRows('flow_steps', FLOW_STEP_COLUMNS, locked.flatMap((flow) => [[organizationId, flow.id, 'capture', 'run', 2, null, at], [organizationId, flow.id, 'settle', 'run', 3, null, at]])),
    )
  })
  await completeJobs(client, jobs, workerId)
}

/**
 * `count` card deposits for the payers (round robin) through `pg`: `settings.clients` connections issue the
 * requests' work (a deposit at a time, like the API clients), and a worker loop like Tessera's (src/jobs/worker.ts)
 * the worker's, with up to `settings.concurrency` runs in flight, each on a connection of its own. Its runs take the
 * batches Tessera's worker formed in the same round (`batches`, in turn): a run starts once as many jobs are due as
 * its batch holds (or every request is done), so that the baseline makes as many database transactions per deposit
 * as Tessera did.
 */
async function rawSql(
  pool: pg.Pool,
  organizationId: string,
  system: { clearingId: string; feesId: string },
  template: Template,
  targets: readonly Payer[],
  count: number,
  batches: readonly number[],
): Promise<Measured> {
  let next = 0
  let done = 0
  let failed: unknown = null
  // Deposits whose job is due (authorized, the job woken), and claimed by the worker: the difference is what is due.
  let due = 0
  let claimedTotal = 0
  // A deposit made due wakes the worker loop; one that comes while the loop is awake keeps it from sleeping next time.
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
        await rawRequests(client, organizationId, template, targets[n % targets.length]!)
        due++
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
        const wanted = Math.min(batches[batch % batches.length] ?? 1, count - claimedTotal)
        if (idle.length > 0 && wanted > 0 && due - claimedTotal >= wanted) {
          const jobs = await claimJobs(claimer, workerId, RAW_JOB_TYPE, wanted)
          claimed = jobs.length
          claimedTotal += claimed
          batch++
          if (claimed > 0) {
            const client = idle.pop()!
            const run = rawRun(client, organizationId, system, workerId, jobs).then(
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
  return { deposits: count, seconds, perSecond: count / seconds }
}

// ---------------------------------------------------------------------------------------------------------------

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

interface Round {
  seconds: number
  depositsPerSecond: number
  rawSqlSeconds: number
  rawSqlPerSecond: number
  ratio: number
  latencyMs: { p50: number; p99: number }
  /** CPU time spent during each path (ms), by whom; `others` is other processes' (null: the database is elsewhere). */
  cpuMs: { rawSql: CpuSpent; tessera: CpuSpent }
  rows: { tessera: RowCounts & { balanceEvents: number }; rawSql: RowCounts & { balanceEvents: number } }
  /** Database transactions of the worker's steps per deposit: two per batch, and each capture's. */
  workerTransactionsPerDeposit: { tessera: number; rawSql: number }
  /** The flows of each batch Tessera's worker ran, in order: the baseline's runs took the same. */
  batches: number[]
}

async function main(): Promise<number> {
  const startedAt = new Date()
  log(`node ${process.version}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? 'unknown'})`)
  if (settings.deposits !== requested.deposits) log(`${requested.deposits} deposits rounded up to ${settings.deposits}, a multiple of the ${settings.clients} API clients`)
  const warnIfBusy = (load: number, when: string) => {
    if (load > 0.1) log(`WARNING: ${(load * 100).toFixed(0)}% of the CPUs were busy ${when}; other processes will skew the figures`)
  }
  const backgroundLoad = await backgroundCpuLoad()
  warnIfBusy(backgroundLoad, 'before the run started')
  const url = await scratchDatabase(settings.databaseUrl ?? (await startCluster()), 'bench_cards')
  const postgresVersion = await databaseVersion(url)

  const credentials = newClientCredentials()
  const profileDir = settings.cpuProfile ? path.join(RESULTS_DIR, `cards-profile-${startedAt.toISOString().replace(/[:.]/g, '-')}`) : null
  const tessera = await startTessera(url, credentials, {
    // The sandbox rail settles at once (card deposits do not use it; as the other runners).
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

  log(`${settings.users} verified users, each with an EUR account and the frictionless test card linked`)
  const setupStarted = performance.now()
  const payers = await mapLimit(Array.from({ length: settings.users }, (_, i) => i), 8, (i) => payer(tessera.baseUrl, token, i))
  log(`fixture ready in ${((performance.now() - setupStarted) / 1000).toFixed(1)} s`)

  // Warm-up (not timed): JIT, connection pools, caches; it also opens the card network's clearing account and the
  // fee account.
  log(`warm-up: ${settings.warmup} card deposits through the API`)
  await throughApi(tessera.baseUrl, pool, payers, settings.warmup)
  const organizationId = (await pool.query<{ organization_id: string }>('select organization_id from accounts where id = $1', [payers[0]!.eur.id])).rows[0]!.organization_id
  const systemAccount = async (code: string) =>
    (await pool.query<{ id: string }>("select id from ledger_accounts where organization_id = $1 and system_code = $2 and asset = 'EUR'", [organizationId, code])).rows[0]!.id
  const system = { clearingId: await systemAccount('clearing:visa'), feesId: await systemAccount('fees') }
  const sample = (await pool.query<{ origin_amount: string; destination_amount: string; denomination: Record<string, unknown>; fees: { amount: string }[]; created_at: Date; expires_at: Date }>(
    "select origin_amount, destination_amount, denomination, fees, created_at, expires_at from quotes where kind = 'deposit' order by id desc limit 1",
  )).rows[0]!
  const template: Template = {
    originAmount: sample.origin_amount,
    destinationAmount: sample.destination_amount,
    denomination: sample.denomination,
    fees: sample.fees,
    ttlMs: sample.expires_at.getTime() - sample.created_at.getTime(),
  }

  log(`${settings.deposits} card deposits per run, ${settings.rounds} rounds per scenario (API, then raw SQL), ${settings.clients} API clients, ${settings.concurrency} worker runs at a time and baseline connections`)
  const scenarios: {
    scenario: string
    deposits: number
    /** Medians over the rounds. */
    depositsPerSecond: number
    rawSqlPerSecond: number
    ratio: number
    /** Share of the CPUs other processes kept busy in the second before the scenario. */
    backgroundCpuLoad: number
    rowsPerDeposit: Record<string, number>
    rounds: Round[]
  }[] = []
  const comparisons: string[] = []
  for (const [scenario, targets] of [['many users', payers], ['one hot account', [payers[0]!]]] as const) {
    const scenarioLoad = await backgroundCpuLoad()
    warnIfBusy(scenarioLoad, `before the "${scenario}" scenario`)
    const rounds: Round[] = []
    let lastAdded: RowCounts | null = null
    for (let round = 1; round <= settings.rounds; round++) {
      // Tessera first: the baseline's worker then takes the batches Tessera's worker formed in this round.
      log(`${scenario}, round ${round}/${settings.rounds}: through the API and the worker`)
      const api = await counting(pool, meter, () => throughApi(tessera.baseUrl, pool, targets, settings.deposits))
      log(`${scenario}, round ${round}/${settings.rounds}: raw SQL baseline, in Tessera's ${api.batches.length} batches (${(settings.deposits / api.batches.length).toFixed(1)} deposits each on average)`)
      const raw = await counting(pool, meter, () => rawSql(rawPool, organizationId, system, template, targets, settings.deposits, api.batches))
      warnIfBusy((raw.cpu.others ?? 0) / raw.cpu.available, `during the "${scenario}" raw SQL baseline, round ${round}`)
      warnIfBusy((api.cpu.others ?? 0) / api.cpu.available, `during the "${scenario}" API run, round ${round}`)
      // The baseline must do the same work: the same rows in every table (it is the ratio's whole premise).
      const differing = DEPOSIT_TABLES.filter((table) => raw.added[table] !== api.added[table])
      if (differing.length > 0 || round === settings.rounds) {
        comparisons.push(
          `rows added, ${scenario}, round ${round} (${settings.deposits} deposits):`,
          `  ${'table'.padEnd(22)}${'raw SQL'.padStart(9)}${'Tessera'.padStart(9)}${'each'.padStart(7)}`,
          ...DEPOSIT_TABLES.map((table) =>
            `  ${table.padEnd(22)}${String(raw.added[table]).padStart(9)}${String(api.added[table]).padStart(9)}${(api.added[table] / settings.deposits).toFixed(2).padStart(7)}${raw.added[table] === api.added[table] ? '' : '  DIFFERENT'}`),
          `  ${'(balance events)'.padEnd(22)}${String(raw.balanceEvents).padStart(9)}${String(api.balanceEvents).padStart(9)}${(api.balanceEvents / settings.deposits).toFixed(2).padStart(7)}  not compared: one per account and ledger write`,
          '',
        )
      }
      if (differing.length > 0) {
        process.stdout.write(`\n${comparisons.join('\n')}`)
        throw new Error(`${scenario}, round ${round}: the baseline wrote other rows than Tessera: ${differing.map((table) => `${table} ${raw.added[table]} against ${api.added[table]}`).join(', ')}`)
      }
      lastAdded = api.added
      rounds.push({
        seconds: api.outcome.seconds,
        depositsPerSecond: api.outcome.perSecond,
        rawSqlSeconds: raw.outcome.seconds,
        rawSqlPerSecond: raw.outcome.perSecond,
        ratio: api.outcome.perSecond / raw.outcome.perSecond,
        latencyMs: api.outcome.latencyMs,
        cpuMs: { rawSql: raw.cpu, tessera: api.cpu },
        rows: { tessera: { ...api.added, balanceEvents: api.balanceEvents }, rawSql: { ...raw.added, balanceEvents: raw.balanceEvents } },
        workerTransactionsPerDeposit: { tessera: api.workerTransactions / settings.deposits, rawSql: raw.workerTransactions / settings.deposits },
        batches: api.batches,
      })
      log(`${scenario}, round ${round}: ${api.outcome.perSecond.toFixed(0)} against ${raw.outcome.perSecond.toFixed(0)} per second, ratio ${(api.outcome.perSecond / raw.outcome.perSecond).toFixed(3)}`)
    }
    scenarios.push({
      scenario,
      deposits: settings.deposits,
      depositsPerSecond: median(rounds.map((round) => round.depositsPerSecond)),
      rawSqlPerSecond: median(rounds.map((round) => round.rawSqlPerSecond)),
      ratio: median(rounds.map((round) => round.ratio)),
      backgroundCpuLoad: scenarioLoad,
      rowsPerDeposit: Object.fromEntries(DEPOSIT_TABLES.map((table) => [table, lastAdded![table] / settings.deposits])),
      rounds,
    })
  }
  await stopChild(tessera.child)

  // Every payment of the run, both paths', was captured once.
  const { rows: [payments] } = await pool.query<{ n: string; uncaptured: string }>(
    "select count(*) as n, count(*) filter (where status <> 'captured' or captured_amount <> amount) as uncaptured from sandbox_card_payments",
  )
  if (Number(payments!.uncaptured) > 0) throw new Error(`${payments!.uncaptured} of ${payments!.n} card payments were not captured in full`)
  await ledgerCheck(url)

  const met = (ratio: number) => (ratio >= TARGET_RATIO ? 'met' : 'not met')
  const percent = (load: number) => `${(load * 100).toFixed(0)}%`
  const othersShare = (cpu: CpuSpent) => (cpu.others === null ? 'n/a' : percent(cpu.others / cpu.available))
  const perDepositMs = (ms: number | null) => (ms === null ? '  n/a' : (ms / settings.deposits).toFixed(2).padStart(5))
  const medianCpu = (rounds: readonly Round[], path: 'rawSql' | 'tessera', who: 'runner' | 'tessera' | 'postgres') => {
    const values = rounds.map((round) => round.cpuMs[path][who])
    return values.some((value) => value === null) ? null : median(values as number[])
  }
  const lines = [
    '',
    `Card deposits — ${startedAt.toISOString()} — node ${process.version}, PostgreSQL ${postgresVersion}, ${os.cpus().length} CPUs`,
    `${settings.deposits} frictionless card deposits per run, ${settings.rounds} rounds per scenario, ${settings.users} users, ${settings.clients} API clients, ${settings.concurrency} worker runs at a time`,
    `other processes' CPU before the run: ${percent(backgroundLoad)}; before each scenario: ${scenarios.map((row) => percent(row.backgroundCpuLoad)).join(', ')}`,
    `other processes' CPU during the measured phases (raw SQL / API, by round): ${scenarios.map((row) => `${row.scenario} ${row.rounds.map((round) => `${othersShare(round.cpuMs.rawSql)} / ${othersShare(round.cpuMs.tessera)}`).join(', ')}`).join('; ')}`,
    '',
    `${'scenario'.padEnd(18)}${'round'.padStart(7)}${'deposits'.padStart(10)}${'seconds'.padStart(9)}${'per s'.padStart(8)}${'raw SQL/s'.padStart(11)}${'ratio'.padStart(8)}  target ${TARGET_RATIO.toFixed(2)}`,
    ...scenarios.flatMap((row) => [
      ...row.rounds.map((round, i) =>
        `${row.scenario.padEnd(18)}${String(i + 1).padStart(7)}${String(row.deposits).padStart(10)}${round.seconds.toFixed(1).padStart(9)}${round.depositsPerSecond.toFixed(0).padStart(8)}${round.rawSqlPerSecond.toFixed(0).padStart(11)}${round.ratio.toFixed(3).padStart(8)}`),
      `${row.scenario.padEnd(18)}${'median'.padStart(7)}${''.padStart(10)}${''.padStart(9)}${row.depositsPerSecond.toFixed(0).padStart(8)}${row.rawSqlPerSecond.toFixed(0).padStart(11)}${row.ratio.toFixed(3).padStart(8)}  ${met(row.ratio)}`,
    ]),
    '',
    ...comparisons,
    'CPU per deposit, ms, medians over the rounds (runner: the load generator, or the baseline\'s pg client):',
    `  ${''.padEnd(26)}${'runner'.padStart(8)}${'Tessera'.padStart(9)}${'PostgreSQL'.padStart(12)}`,
    ...scenarios.flatMap((row) => [
      `  ${`${row.scenario}, raw SQL`.padEnd(26)}${perDepositMs(medianCpu(row.rounds, 'rawSql', 'runner')).padStart(8)}${'-'.padStart(9)}${perDepositMs(medianCpu(row.rounds, 'rawSql', 'postgres')).padStart(12)}`,
      `  ${`${row.scenario}, API`.padEnd(26)}${perDepositMs(medianCpu(row.rounds, 'tessera', 'runner')).padStart(8)}${perDepositMs(medianCpu(row.rounds, 'tessera', 'tessera')).padStart(9)}${perDepositMs(medianCpu(row.rounds, 'tessera', 'postgres')).padStart(12)}`,
    ]),
    '',
    'database transactions of the worker\'s steps per deposit (two per batch, shared by its flows, and one capture each; the requests add three: the quote, the commit, the authorization\'s step), by round:',
    ...scenarios.map((row) => `  ${row.scenario}: ${row.rounds.map((round) => `Tessera ${round.workerTransactionsPerDeposit.tessera.toFixed(3)}, raw SQL ${round.workerTransactionsPerDeposit.rawSql.toFixed(3)}`).join('; ')}`),
    '',
    `card payments: ${payments!.n}, every one captured once; tessera ledger check: every invariant holds`,
    '',
  ]
  process.stdout.write(lines.join('\n'))
  const figures = {
    settings: { ...settings, databaseUrl: settings.databaseUrl ? '(given)' : null, sandboxRailSettleMs: 0, card: `${CARD_NUMBER.slice(0, 6)}…${CARD_NUMBER.slice(-4)}`, amount: AMOUNT },
    targetRatio: TARGET_RATIO,
    scenarios,
  }
  writeResults('cards', startedAt, { postgres: postgresVersion, backgroundCpuLoad: backgroundLoad }, figures, profileDir)
  const missed = scenarios.filter((row) => row.ratio < TARGET_RATIO)
  if (settings.enforceTarget && missed.length > 0) {
    process.stderr.write(`\n${missed.map((row) => `${row.scenario} ${row.ratio.toFixed(3)}`).join(', ')}: below the target of ${TARGET_RATIO} (BENCH_ENFORCE_TARGET=1)\n`)
    return 1
  }
  return 0
}

await runMain(main)
