// What the raw SQL baselines of bench/trades.ts, bench/withdrawals.ts and bench/cards.ts share: the statements Tessera
// issues for a quote, a commit and a flow's worker steps that are the same whatever the flow moves, issued directly
// through `pg`. Each mirrors Tessera's own statement (named in its comment), so that the baselines write the same rows
// and take the same row locks as Tessera; what differs between a trade, a withdrawal and a card deposit stays in its
// runner. See bench/README.md.
import BigNumber from 'bignumber.js'
import type pg from 'pg'
import { uuidv7 } from '../src/lib/ids.ts'

/** One multi-row insert; `suffix` follows the values (`on conflict …`, `returning …`). */
export function insertRows(table: string, columns: readonly string[], rows: readonly unknown[][], suffix = ''): { text: string; values: unknown[] } {
  const values = rows.map((_, r) => `(${columns.map((_, c) => `$${r * columns.length + c + 1}`).join(', ')})`).join(', ')
  return { text: `insert into ${table} (${columns.join(', ')}) values ${values}${suffix}`, values: rows.flat() }
}

export const QUOTE_COLUMNS = [
  'organization_id', 'id', 'owner_id', 'kind', 'origin', 'destination', 'origin_account_id', 'destination_account_id', 'origin_asset', 'origin_amount', 'origin_rate',
  'destination_asset', 'destination_amount', 'destination_rate', 'denomination', 'fees', 'requirements', 'created_at', 'expires_at', 'used_at',
] as const
export const EVENT_COLUMNS = ['id', 'organization_id', 'type', 'subject_type', 'subject_id', 'user_id', 'data', 'occurred_at'] as const
export const FLOW_STEP_COLUMNS = ['organization_id', 'flow_id', 'step', 'action', 'position', 'error', 'at'] as const
export const LEDGER_TRANSACTION_COLUMNS = ['organization_id', 'id', 'type', 'reference', 'request_hash', 'hold_id', 'data', 'created_at'] as const
export const LEDGER_ENTRY_COLUMNS = ['organization_id', 'id', 'transaction_id', 'account_id', 'asset', 'amount', 'created_at'] as const
/** The columns of a transaction the commit records with its counterparty (a withdrawal, a card deposit). */
export const TRANSACTION_COLUMNS = [
  'organization_id', 'id', 'owner_id', 'type', 'status', 'reason', 'origin', 'origin_asset', 'origin_amount', 'origin_rate', 'destination', 'destination_asset',
  'destination_amount', 'destination_rate', 'denomination', 'fees', 'origin_account_id', 'destination_account_id', 'network', 'reference', 'counterparty', 'quote_id',
  'quoted_at', 'created_at', 'updated_at', 'completed_at',
] as const

/** What a baseline reads and writes of a transaction's row (the quote's columns, as the commit copies them, and its own). */
export interface TransactionRow {
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
  /** Null where that end is not one of Tessera's accounts (a withdrawal's destination, a card deposit's origin). */
  origin_account_id: string | null
  destination_account_id: string | null
  status: string
  quoted_at: Date
  created_at: Date
  updated_at: Date
  completed_at: Date | null
}

/** A transaction as the API shows it (the payload of its events), from its row. */
export function presentTransaction(row: TransactionRow) {
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
 * The outbox row (EVENT_COLUMNS) of a transaction's `core.transaction.created` or `core.transaction.status-changed`
 * event, for its owner, with the transaction as the API shows it.
 */
export function transactionEvent(organizationId: string, type: 'core.transaction.created' | 'core.transaction.status-changed', row: TransactionRow, at: Date): unknown[] {
  return [uuidv7(), organizationId, type, 'transaction', row.id, row.owner_id, JSON.stringify({ transaction: presentTransaction(row) }), at]
}

/** Runs `work` in one database transaction on `client`: begin, then commit, or rollback when it throws. */
export async function inTransaction(client: pg.PoolClient, work: () => Promise<void>): Promise<void> {
  await client.query('begin')
  try {
    await work()
    await client.query('commit')
  } catch (error) {
    await client.query('rollback').catch(() => {})
    throw error
  }
}

/** The columns of a quote the commit copies into its transaction (`useQuote`), as they come back. */
export type QuoteRow = Omit<TransactionRow, 'type' | 'status' | 'quoted_at' | 'updated_at' | 'completed_at'>

/** POST /core/transactions: takes the user's quote (unused and unexpired), as the commit's first statement. */
export async function useQuote(client: pg.PoolClient, organizationId: string, userId: string, quoteId: string, at: Date): Promise<QuoteRow> {
  const { rows: [quote] } = await client.query<QuoteRow>(
    'update quotes set used_at = $1 where organization_id = $2 and owner_id = $3 and id = $4 and used_at is null and expires_at > $1 returning *',
    [at, organizationId, userId, quoteId],
  )
  if (!quote) throw new Error('raw SQL baseline: the quote was not found')
  return quote
}

/** The row of the transaction of `type` that a commit at `at` makes of its quote: processing, priced as quoted. */
export function transactionOf(quote: QuoteRow, type: string, at: Date): TransactionRow {
  return { ...quote, id: uuidv7(at.getTime()), type, status: 'processing', quoted_at: quote.created_at, created_at: at, updated_at: at, completed_at: null }
}

/** POST /core/transactions: the insert of the transaction (TRANSACTION_COLUMNS) the commit made of the quote `quoteId`. */
export async function insertTransaction(
  client: pg.PoolClient,
  organizationId: string,
  row: TransactionRow,
  recorded: { network: string | null; counterparty: string | null; quoteId: string },
): Promise<void> {
  await client.query(
    insertRows('transactions', TRANSACTION_COLUMNS, [
      [organizationId, row.id, row.owner_id, row.type, row.status, null, JSON.stringify(row.origin), row.origin_asset, row.origin_amount, row.origin_rate,
        JSON.stringify(row.destination), row.destination_asset, row.destination_amount, row.destination_rate, JSON.stringify(row.denomination), JSON.stringify(row.fees),
        row.origin_account_id, row.destination_account_id, recorded.network, null, recorded.counterparty, recorded.quoteId, row.quoted_at, row.created_at, row.updated_at, row.completed_at],
    ]),
  )
}

export interface LockedAccount {
  id: string
  asset: string
  total: BigNumber
  available: BigNumber
  /** Null for a system account. */
  owner_id: string | null
  label: string | null
  created_at: Date | null
}

/**
 * Locks ledger accounts in id order (`for no key update`, as the ledger does) and reads, in the same statement, what
 * a balance-changed event shows of a user's account.
 */
export async function lockAccounts(client: pg.PoolClient, organizationId: string, ids: readonly string[]): Promise<Map<string, LockedAccount>> {
  const { rows } = await client.query<{ id: string; asset: string; total: string; available: string; owner_id: string | null; label: string | null; created_at: Date | null }>(
    `select l.id, l.asset, l.total, l.available, a.owner_id, a.label, a.created_at
     from ledger_accounts l left join accounts a on a.organization_id = l.organization_id and a.id = l.id
     where l.organization_id = $1 and l.id = any($2::uuid[]) order by l.id for no key update of l`,
    [organizationId, [...new Set(ids)]],
  )
  return new Map(rows.map((row) => [row.id, { ...row, total: new BigNumber(row.total), available: new BigNumber(row.available) }]))
}

/** Writes the balances of locked accounts in one statement, as the ledger's `setBalances`. */
export async function setBalances(client: pg.PoolClient, organizationId: string, balances: readonly LockedAccount[], at: Date): Promise<void> {
  const ordered = [...balances].sort((a, b) => (a.id < b.id ? -1 : 1))
  const values = ordered.map((_, i) => `($${3 * i + 3}::uuid, $${3 * i + 4}::numeric, $${3 * i + 5}::numeric)`).join(', ')
  await client.query(
    `update ledger_accounts as a set total = v.total, available = v.available, updated_at = $1
     from (values ${values}) as v(id, total, available) where a.organization_id = $2 and a.id = v.id`,
    [at, organizationId, ...ordered.flatMap((b) => [b.id, b.total.toFixed(), b.available.toFixed()])],
  )
}

/** The outbox row of a balance-changed event of a user's account (EVENT_COLUMNS), with its balance as locked and changed. */
export function balanceChanged(organizationId: string, account: LockedAccount, at: Date): unknown[] {
  const data = {
    account: {
      id: account.id,
      ownerId: account.owner_id,
      label: account.label,
      asset: account.asset,
      balance: { total: account.total.toFixed(), available: account.available.toFixed() },
      createdAt: account.created_at!.toISOString(),
      updatedAt: at.toISOString(),
    },
  }
  return [uuidv7(), organizationId, 'core.account.balance-changed', 'account', account.id, account.owner_id, JSON.stringify(data), at]
}

/**
 * The commit's hold of the origin's money: the hold row, then the origin's balance under its account's lock, then
 * the outbox rows (its balance-changed event, then `created()`, the transaction's created event, made after it so
 * that the events' ids keep that order). Resolves with the hold's id.
 */
export async function holdOrigin(
  client: pg.PoolClient,
  organizationId: string,
  hold: { transactionId: string; accountId: string; asset: string; amount: string },
  created: () => unknown[],
  at: Date,
): Promise<string> {
  const holdId = uuidv7(at.getTime())
  await client.query(
    insertRows('ledger_holds', ['organization_id', 'id', 'account_id', 'asset', 'amount', 'status', 'reference', 'request_hash', 'created_at', 'updated_at'], [
      [organizationId, holdId, hold.accountId, hold.asset, hold.amount, 'open', `${hold.transactionId}:hold`, 'raw-sql', at, at],
    ]),
  )
  const account = (await lockAccounts(client, organizationId, [hold.accountId])).get(hold.accountId)!
  account.available = account.available.minus(hold.amount)
  if (account.available.isNegative()) throw new Error('raw SQL baseline: the origin ran out of money')
  await setBalances(client, organizationId, [account], at)
  await client.query(insertRows('outbox_events', EVENT_COLUMNS, [balanceChanged(organizationId, account, at), created()]))
  return holdId
}

/**
 * The commit's flow, past its first step (`reserve`), its history row and its job (of `jobType`, the baseline's own),
 * as the flow runner starts a flow.
 */
export async function startFlow(client: pg.PoolClient, organizationId: string, flowType: string, flowId: string, data: unknown, jobType: string, at: Date): Promise<void> {
  await client.query(
    insertRows('flows', ['organization_id', 'id', 'type', 'status', 'step', 'data', 'error', 'created_at', 'updated_at'], [
      [organizationId, flowId, flowType, 'running', 1, JSON.stringify(data), null, at, at],
    ]),
  )
  await client.query(insertRows('flow_steps', FLOW_STEP_COLUMNS, [[organizationId, flowId, 'reserve', 'run', 0, null, at]]))
  await client.query(
    insertRows(
      'jobs',
      ['id', 'organization_id', 'type', 'payload', 'status', 'attempts', 'max_attempts', 'run_at', 'locked_until', 'locked_by', 'last_error', 'created_at', 'updated_at', 'finished_at'],
      [[uuidv7(at.getTime()), organizationId, jobType, JSON.stringify({ organizationId, flowId }), 'pending', 0, 10, at, null, null, null, at, at, null]],
    ),
  )
}

export interface RawJob {
  id: string
  payload: { flowId: string }
}

/** The worker's claim statement: up to `limit` due jobs of `jobType`, leased to `workerId`. */
export async function claimJobs(client: pg.PoolClient, workerId: string, jobType: string, limit: number): Promise<RawJob[]> {
  const { rows } = await client.query<RawJob>(
    `update jobs set status = 'running', attempts = attempts + 1, locked_by = $1, locked_until = now() + make_interval(secs => 60), updated_at = now()
     where id in (
       select id from jobs where type = $2 and ((status = 'pending' and run_at <= now()) or (status = 'running' and locked_until <= now()))
       order by run_at, id limit $3 for update skip locked)
     returning id, payload`,
    [workerId, jobType, limit],
  )
  return rows
}

/** The worker's completion of the jobs it ran, after their flows' last database transaction. */
export async function completeJobs(client: pg.PoolClient, jobs: readonly RawJob[], workerId: string): Promise<void> {
  const finished = new Date()
  await client.query(
    "update jobs set status = 'completed', locked_by = null, locked_until = null, last_error = null, updated_at = $1, finished_at = $1 where id = any($2::uuid[]) and locked_by = $3 and status = 'running'",
    [finished, jobs.map((job) => job.id), workerId],
  )
}

/** A step's lock of its flows (still running, at `step`), in id order, as the flow runner takes them. */
export async function lockFlows<D = { holdId: string }>(client: pg.PoolClient, organizationId: string, flowIds: readonly string[], step: number): Promise<{ id: string; data: D }[]> {
  const { rows } = await client.query<{ id: string; data: D }>(
    "select * from flows where organization_id = $1 and id = any($2::uuid[]) and status = 'running' and step = $3 order by id for update",
    [organizationId, flowIds, step],
  )
  return rows
}

/** The lock of the flows' transactions still processing, in id order. */
export async function lockProcessing<T extends pg.QueryResultRow>(client: pg.PoolClient, organizationId: string, ids: readonly string[]): Promise<T[]> {
  const { rows } = await client.query<T>(
    "select * from transactions where organization_id = $1 and id = any($2::uuid[]) and status = 'processing' order by id for update",
    [organizationId, ids],
  )
  return rows
}

/** Captures open holds, each into its ledger transaction (`captured`: [hold id, ledger transaction id]), in one statement. */
export async function captureHolds(client: pg.PoolClient, organizationId: string, captured: readonly unknown[][], at: Date): Promise<void> {
  const holdValues = captured.map((_, i) => `($${2 * i + 3}::uuid, $${2 * i + 4}::uuid)`).join(', ')
  await client.query(
    `update ledger_holds as h set status = 'captured', updated_at = $1, transaction_id = v.transaction_id
     from (values ${holdValues}) as v(id, transaction_id) where h.organization_id = $2 and h.id = v.id and h.status = 'open'`,
    [at, organizationId, ...captured.flat()],
  )
}

/** Completes the transactions still processing; resolves with their rows as completed. */
export async function completeTransactions<T extends pg.QueryResultRow>(client: pg.PoolClient, organizationId: string, ids: readonly string[], at: Date): Promise<T[]> {
  const { rows } = await client.query<T>(
    "update transactions set status = 'completed', reason = null, updated_at = $1, completed_at = $1 where organization_id = $2 and id = any($3::uuid[]) and status = 'processing' returning *",
    [at, organizationId, ids],
  )
  return rows
}

/**
 * The start of a flow whose first step calls an outside party (a card deposit: the issuer's authorization), as the
 * flow runner starts one with nothing inline: the flow at its first step, no history yet, and its job (of
 * `jobType`, the baseline's own) due only after `jobDelayMs`, standing by while the request makes that call itself
 * once the commit is done.
 */
export async function startDeferredFlow(
  client: pg.PoolClient,
  organizationId: string,
  flow: { type: string; id: string; data: unknown },
  jobType: string,
  jobDelayMs: number,
  at: Date,
): Promise<void> {
  await client.query(
    insertRows('flows', ['organization_id', 'id', 'type', 'status', 'step', 'data', 'error', 'created_at', 'updated_at'], [
      [organizationId, flow.id, flow.type, 'running', 0, JSON.stringify(flow.data), null, at, at],
    ]),
  )
  await client.query(
    insertRows(
      'jobs',
      ['id', 'organization_id', 'type', 'payload', 'status', 'attempts', 'max_attempts', 'run_at', 'locked_until', 'locked_by', 'last_error', 'created_at', 'updated_at', 'finished_at'],
      [[uuidv7(at.getTime()), organizationId, jobType, JSON.stringify({ organizationId, flowId: flow.id }), 'pending', 0, 10, new Date(at.getTime() + jobDelayMs), null, null, null, at, at, null]],
    ),
  )
}

/** Makes the deferred jobs of flows due now, as the flow runner's `wake` (the request made the flows' first call). */
export async function wakeFlowJobs(client: pg.PoolClient, jobType: string, organizationId: string, flowIds: readonly string[], at: Date): Promise<void> {
  await client.query(
    "update jobs set run_at = $1, updated_at = $1 where type = $2 and organization_id = $3 and status = 'pending' and run_at > $1 and payload->>'flowId' = any($4::text[])",
    [at, jobType, organizationId, flowIds],
  )
}

/**
 * Moves locked flows past a stretch of steps to `step` (completed or still running), merging what the steps
 * learned (`patches`, by flow id) into their data, in one statement, as the flow runner's `advance`.
 */
export async function advanceFlows(client: pg.PoolClient, organizationId: string, patches: ReadonlyMap<string, Record<string, unknown>>, step: number, completed: boolean, at: Date): Promise<void> {
  if (patches.size === 0) return
  await client.query(
    `update flows as f set step = $1, status = $2, updated_at = $3, data = f.data || v.patch
     from jsonb_to_recordset($4::jsonb) as v(id uuid, patch jsonb) where f.organization_id = $5 and f.id = v.id`,
    [step, completed ? 'completed' : 'running', at, JSON.stringify([...patches].map(([id, patch]) => ({ id, patch }))), organizationId],
  )
}

/**
 * One step run on its own, as the flow runner runs one: in a database transaction, lock the flows at the step's
 * `position`, move them on to the next with what it learned (`patch`, per flow; it may throw to refuse one) and write
 * their history rows. Resolves with the flows it locked.
 */
export async function runStep<D = { holdId: string }>(
  client: pg.PoolClient,
  organizationId: string,
  flowIds: readonly string[],
  step: { name: string; position: number },
  patch: (flow: { id: string; data: D }) => Record<string, unknown>,
): Promise<{ id: string; data: D }[]> {
  let flows: { id: string; data: D }[] = []
  await inTransaction(client, async () => {
    const at = new Date()
    flows = await lockFlows<D>(client, organizationId, flowIds, step.position)
    await advanceFlows(client, organizationId, new Map(flows.map((flow) => [flow.id, patch(flow)])), step.position + 1, false, at)
    await client.query(insertRows('flow_steps', FLOW_STEP_COLUMNS, flows.map((flow) => [organizationId, flow.id, step.name, 'run', step.position, null, at])))
  })
  return flows
}

/**
 * The end of a flow's last stretch, once its ledger transactions are in and its accounts locked, in the stretch's
 * database transaction, as the ledger and the flow runner write it: the balances of `accounts` as changed, the
 * `entries`, the transactions completed with one balance-changed event per user account (`userAccountIds`, with its
 * final balance, as the ledger's one write for the batch) and one status-changed event each, then the flows
 * completed with what the stretch learned (`patches`, by flow id) and their history rows (`steps`, by position).
 */
export async function completeStretch(
  client: pg.PoolClient,
  organizationId: string,
  work: {
    accounts: ReadonlyMap<string, LockedAccount>
    entries: readonly unknown[][]
    userAccountIds: readonly string[]
    transactionIds: readonly string[]
    patches: ReadonlyMap<string, Record<string, unknown>>
    steps: readonly { name: string; position: number }[]
  },
  at: Date,
): Promise<void> {
  await setBalances(client, organizationId, [...work.accounts.values()], at)
  await client.query(insertRows('ledger_entries', LEDGER_ENTRY_COLUMNS, work.entries))
  const events = [...new Set(work.userAccountIds)].map((id) => balanceChanged(organizationId, work.accounts.get(id)!, at))
  const completed = await completeTransactions<TransactionRow>(client, organizationId, work.transactionIds, at)
  for (const row of completed) events.push(transactionEvent(organizationId, 'core.transaction.status-changed', row, at))
  await client.query(insertRows('outbox_events', EVENT_COLUMNS, events))
  await advanceFlows(client, organizationId, work.patches, work.steps.at(-1)!.position + 1, true, at)
  await client.query(
    insertRows('flow_steps', FLOW_STEP_COLUMNS, [...work.patches.keys()].flatMap((id) => work.steps.map((step) => [organizationId, id, step.name, 'run', step.position, null, at]))),
  )
}
