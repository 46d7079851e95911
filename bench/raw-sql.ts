// What the raw SQL baselines of bench/trades.ts, bench/withdrawals.ts and bench/cards.ts share: the statements Tessera issues for a
// quote, a commit and a flow's worker steps that are the same whatever the flow moves, issued directly through `pg`.
// Each mirrors Tessera's own statement (named in its comment), so that the baselines write the same rows and take the
// same row locks as Tessera; what differs between a trade and a withdrawal stays in its runner. See bench/README.md.
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

/** POST /core/transactions: takes the user's quote (unused and unexpired), as the commit's first statement. */
export async function useQuote<Q>(client: pg.PoolClient, organizationId: string, userId: string, quoteId: string, at: Date): Promise<Q> {
  const { rows: [quote] } = await client.query<Q & pg.QueryResultRow>(
    'update quotes set used_at = $1 where organization_id = $2 and owner_id = $3 and id = $4 and used_at is null and expires_at > $1 returning *',
    [at, organizationId, userId, quoteId],
  )
  if (!quote) throw new Error('raw SQL baseline: the quote was not found')
  return quote
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
