// Card deposit benchmark: frictionless card deposits per second quoted and paid through Tessera's API (the request
// asks the sandbox card processor for the authorization itself) and completed by its background worker (3-D Secure
// passed, capture, settlement) on PostgreSQL, as a ratio to a raw SQL baseline that writes the same rows, takes the
// same row locks and uses as many database transactions per deposit, directly through `pg`, in the same run. See
// bench/README.md ("Card deposit benchmark").
import { randomUUID } from 'node:crypto'
import BigNumber from 'bignumber.js'
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
  sameRows,
  scenarioLoad,
  setLogPrefix,
  startRun,
  stopChild,
  systemAccountId,
  verifiedUser,
} from './harness.ts'
import {
  completeJobs,
  completeStretch,
  EVENT_COLUMNS,
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
  startDeferredFlow,
  transactionEvent,
  transactionOf,
  type TransactionRow,
  useQuote,
  wakeFlowJobs,
} from './raw-sql.ts'
import type { CpuSpent } from './cpu.ts'
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

const { settings: movements, rounding } = movementSettings('deposits', { count: 'BENCH_CARD_DEPOSITS', users: 'BENCH_CARD_USERS' }, { rounds: positiveInteger('BENCH_CARD_ROUNDS', 3) })
const settings = { ...movements, ...batchedSettings() }

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

/**
 * What a phase counts: the rows it added to each table, and how many database transactions the worker's steps took:
 * per batch one for `authenticate` and one for `capture` + `settle` (the flows a stretch of steps runs together share
 * one, which writes all their history rows with the same time), and one capture each (the processor's own);
 * `authenticate`'s transactions are the batches the worker formed.
 */
const PHASE_COUNT: PhaseCount<Table> = { tables: DEPOSIT_TABLES, sharedSteps: [['authenticate'], ['settle']], ownSteps: ['capture'], batchStep: 'authenticate' }

// ---------------------------------------------------------------------------------------------------------------
// Through the API and the worker

/**
 * Sends `count` card deposits for the payers (round robin) over `settings.clients` connections: each sends a quote,
 * then `POST /core/transactions` with the quote's id and its 3-D Secure return address, and again. Timed from the
 * first request until every response is in and no transaction is processing (the worker completes the deposits
 * meanwhile); fails unless every request answered 201 and every deposit completed.
 */
function throughApi(baseUrl: string, pool: pg.Pool, targets: readonly Payer[], count: number) {
  return quoteAndCommit(baseUrl, pool, {
    connections: settings.clients,
    count,
    type: 'deposit',
    label: 'card deposits',
    targets,
    quote: (target) => ({ headers: target.headers, body: quoteBody(target) }),
    params: PAY_PARAMS,
  })
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

/** A card deposit's row: its destination is the user's account. */
type DepositRow = TransactionRow & { destination_account_id: string }

/** What the flow of a card deposit holds, as Tessera's (src/flows/card-deposit.flow.ts). */
interface CardFlowData {
  authorizationId?: string
  confirmationUrl?: string
  captureId?: string
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
    const quote = await useQuote(client, organizationId, userId, quoteId, at)
    const row = transactionOf(quote, 'deposit', at)
    transactionId = row.id
    await insertTransaction(client, organizationId, row, { network: ends.network, counterparty: `external-account:${cardId}`, quoteId: quote.id })
    const data = { originAccountId: null, originAmount: row.origin_amount, originAsset: row.origin_asset, destinationAsset: row.destination_asset, network: ends.network, returnUrl: RETURN_URL }
    await startDeferredFlow(client, organizationId, { type: 'card-deposit', id: row.id, data }, RAW_JOB_TYPE, AFTER_COMMIT_JOB_DELAY_MS, at)
    await client.query(insertRows('outbox_events', EVENT_COLUMNS, [transactionEvent(organizationId, 'core.transaction.created', row, at)]))
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
  await runStep<CardFlowData>(client, organizationId, [transactionId], { name: 'authorize', position: 0 }, () => ({ authorizationId: payment.id }))
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
  const flows = await runStep<CardFlowData>(client, organizationId, flowIds, { name: 'authenticate', position: 1 }, (flow) => {
    if (flow.data.confirmationUrl !== undefined || flow.data.authorizationId === undefined) throw new Error('raw SQL baseline: a payment waits for a challenge')
    return {}
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
    const rows = await lockProcessing<DepositRow>(client, organizationId, locked.map((flow) => flow.id))
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
    await completeStretch(client, organizationId, {
      accounts,
      entries,
      userAccountIds: rows.map((row) => row.destination_account_id),
      transactionIds: rows.map((row) => row.id),
      patches: new Map(locked.map((flow) => [flow.id, { captureId: captures.get(flow.id) }])),
      steps: [{ name: 'capture', position: 2 }, { name: 'settle', position: 3 }],
    }, at)
  })
  await completeJobs(client, jobs, workerId)
}

/**
 * `count` card deposits for the payers (round robin) through `pg`: `settings.clients` connections issue the
 * requests' work (a deposit at a time, like the API clients; its job is due once the request has woken it), and a
 * worker loop like Tessera's the worker's, with up to `settings.concurrency` runs in flight, in the batches Tessera's
 * worker formed in the same round (`batches`), so that the baseline makes as many database transactions per deposit
 * as Tessera did (harness.ts `batchedBaseline`).
 */
function rawSql(
  pool: pg.Pool,
  organizationId: string,
  system: { clearingId: string; feesId: string },
  template: Template,
  targets: readonly Payer[],
  count: number,
  batches: readonly number[],
): Promise<Measured> {
  return batchedBaseline(pool, settings, {
    count,
    jobType: RAW_JOB_TYPE,
    batches,
    request: (client, n) => rawRequests(client, organizationId, template, targets[n % targets.length]!),
    run: (client, workerId, jobs) => rawRun(client, organizationId, system, workerId, jobs),
  })
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
  rows: { tessera: RowCounts<Table> & { balanceEvents: number }; rawSql: RowCounts<Table> & { balanceEvents: number } }
  /** Database transactions of the worker's steps per deposit: two per batch, and each capture's. */
  workerTransactionsPerDeposit: { tessera: number; rawSql: number }
  /** The flows of each batch Tessera's worker ran, in order: the baseline's runs took the same. */
  batches: number[]
}

async function main(): Promise<number> {
  // The sandbox rail settles at once (card deposits do not use it; as the other runners).
  const run = await startRun('cards', settings, { env: { SANDBOX_RAIL_SETTLE_MS: '0' }, note: rounding })
  const { tessera, pool } = run
  const { rawPool, meter } = await baselinePool(run, settings)

  log(`${settings.users} verified users, each with an EUR account and the frictionless test card linked`)
  const setupStarted = performance.now()
  const payers = await mapLimit(Array.from({ length: settings.users }, (_, i) => i), 8, (i) => payer(tessera.baseUrl, run.token, i))
  log(`fixture ready in ${((performance.now() - setupStarted) / 1000).toFixed(1)} s`)

  // Warm-up (not timed): JIT, connection pools, caches; it also opens the card network's clearing account and the
  // fee account.
  log(`warm-up: ${settings.warmup} card deposits through the API`)
  await throughApi(tessera.baseUrl, pool, payers, settings.warmup)
  const organizationId = await organizationOf(pool, payers[0]!.eur.id)
  const system = { clearingId: await systemAccountId(pool, organizationId, 'clearing:visa', 'EUR'), feesId: await systemAccountId(pool, organizationId, 'fees', 'EUR') }
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
    const backgroundLoad = await scenarioLoad(scenario)
    const rounds: Round[] = []
    let lastAdded: RowCounts<Table> | null = null
    for (let round = 1; round <= settings.rounds; round++) {
      // Tessera first in each round: the baseline's worker then takes the batches Tessera's worker formed in it.
      const { api, raw } = await apiThenBaseline(
        pool,
        PHASE_COUNT,
        meter,
        { scenario, round: { n: round, of: settings.rounds }, count: settings.deposits, noun: 'deposits' },
        () => throughApi(tessera.baseUrl, pool, targets, settings.deposits),
        (batches) => rawSql(rawPool, organizationId, system, template, targets, settings.deposits, batches),
      )
      // The last round's rows are printed; another's only when they differ (then the run fails).
      if (!sameRows(DEPOSIT_TABLES, raw.added, api.added) || round === settings.rounds) {
        comparisons.push(...rowsComparison(`rows added, ${scenario}, round ${round} (${settings.deposits} deposits):`, DEPOSIT_TABLES, raw, api, settings.deposits))
      }
      assertSameRows(`${scenario}, round ${round}`, DEPOSIT_TABLES, raw.added, api.added, comparisons)
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
      backgroundCpuLoad: backgroundLoad,
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
  await ledgerCheck(run.url)

  const met = (ratio: number) => (ratio >= TARGET_RATIO ? 'met' : 'not met')
  /** A path's CPU time by whom, the median over the rounds (null if any round's is). */
  const medianCpu = (rounds: readonly Round[], path: 'rawSql' | 'tessera') => {
    const of = (who: 'runner' | 'tessera' | 'postgres') => {
      const values = rounds.map((round) => round.cpuMs[path][who])
      return values.some((value) => value === null) ? null : median(values as number[])
    }
    return { runner: of('runner'), tessera: of('tessera'), postgres: of('postgres') }
  }
  const lines = [
    '',
    reportHeading('Card deposits', run.startedAt, run.postgresVersion),
    `${settings.deposits} frictionless card deposits per run, ${settings.rounds} rounds per scenario, ${settings.users} users, ${settings.clients} API clients, ${settings.concurrency} worker runs at a time`,
    `other processes' CPU before the run: ${percent(run.backgroundLoad)}; before each scenario: ${scenarios.map((row) => percent(row.backgroundCpuLoad)).join(', ')}`,
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
    ...cpuTable(
      'CPU per deposit, ms, medians over the rounds (runner: the load generator, or the baseline\'s pg client):',
      scenarios.map((row) => ({ scenario: row.scenario, rawSql: medianCpu(row.rounds, 'rawSql'), tessera: medianCpu(row.rounds, 'tessera') })),
      settings.deposits,
    ),
    '',
    'database transactions of the worker\'s steps per deposit (two per batch, shared by its flows, and one capture each; the requests add three: the quote, the commit, the authorization\'s step), by round:',
    ...scenarios.map((row) => `  ${row.scenario}: ${row.rounds.map((round) => `Tessera ${round.workerTransactionsPerDeposit.tessera.toFixed(3)}, raw SQL ${round.workerTransactionsPerDeposit.rawSql.toFixed(3)}`).join('; ')}`),
    '',
    `card payments: ${payments!.n}, every one captured once; tessera ledger check: every invariant holds`,
    '',
  ]
  const card = `${CARD_NUMBER.slice(0, 6)}…${CARD_NUMBER.slice(-4)}`
  return finishRun(run, 'cards', lines, { ...settings, sandboxRailSettleMs: 0, card, amount: AMOUNT }, { targetRatio: TARGET_RATIO, scenarios }, scenarios)
}

await runMain(main)
