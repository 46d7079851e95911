import { sql } from 'kysely'
import type { Executor, LedgerAccountRow, LedgerHoldRow, LedgerTransactionRow, Tx } from '../../db/schema.ts'

export interface NewLedgerAccount {
  organizationId: string
  id: string
  asset: string
  systemCode: string | null
  mayGoNegative: boolean
  at: Date
}

function accountValues(account: NewLedgerAccount) {
  return {
    organization_id: account.organizationId,
    id: account.id,
    asset: account.asset,
    system_code: account.systemCode,
    may_go_negative: account.mayGoNegative,
    created_at: account.at,
    updated_at: account.at,
  }
}

export async function insertAccount(db: Executor, account: NewLedgerAccount): Promise<void> {
  await db.insertInto('ledger_accounts').values(accountValues(account)).execute()
}

/** Creates the system account unless another transaction did first; returns its id either way. */
export async function ensureSystemAccount(db: Executor, account: NewLedgerAccount & { systemCode: string }): Promise<string> {
  const inserted = await db
    .insertInto('ledger_accounts')
    .values(accountValues(account))
    .onConflict((conflict) => conflict.columns(['organization_id', 'system_code', 'asset']).where('system_code', 'is not', null).doNothing())
    .returning('id')
    .executeTakeFirst()
  if (inserted) return inserted.id
  const existing = await findSystemAccount(db, account.organizationId, account.systemCode, account.asset)
  if (!existing) throw new Error(`System account ${account.systemCode} ${account.asset} vanished`)
  return existing.id
}

export function findSystemAccount(db: Executor, organizationId: string, systemCode: string, asset: string): Promise<LedgerAccountRow | undefined> {
  return db
    .selectFrom('ledger_accounts')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('system_code', '=', systemCode)
    .where('asset', '=', asset)
    .executeTakeFirst()
}

export function findAccounts(db: Executor, organizationId: string, ids: readonly string[]): Promise<LedgerAccountRow[]> {
  if (ids.length === 0) return Promise.resolve([])
  return db.selectFrom('ledger_accounts').selectAll().where('organization_id', '=', organizationId).where('id', 'in', ids).execute()
}

/**
 * Locks the accounts' rows for the rest of the transaction, in id order. Every movement locks through here, so
 * any two movements request their common rows in the same order and cannot wait on each other in a cycle.
 * `FOR NO KEY UPDATE` (what an UPDATE of the balances takes anyway), not `FOR UPDATE`: the key-share locks
 * that inserting holds and entries take on their account through the foreign keys must not conflict with it,
 * or two movements that each inserted a row before locking would wait on each other.
 */
export function lockAccounts(tx: Tx, organizationId: string, orderedIds: readonly string[]): Promise<LedgerAccountRow[]> {
  return tx
    .selectFrom('ledger_accounts')
    .selectAll()
    .where('organization_id', '=', organizationId)
    .where('id', 'in', orderedIds)
    .orderBy('id')
    .forNoKeyUpdate()
    .execute()
}

/** Writes the new balances of locked accounts in one statement. */
export async function setBalances(tx: Tx, organizationId: string, balances: readonly { id: string; total: string; available: string }[], at: Date): Promise<void> {
  if (balances.length === 0) return
  const rows = sql.join(balances.map((b) => sql`(${b.id}::uuid, ${b.total}::numeric, ${b.available}::numeric)`))
  await sql`
    update ledger_accounts as a
    set total = v.total, available = v.available, updated_at = ${at}
    from (values ${rows}) as v(id, total, available)
    where a.organization_id = ${organizationId} and a.id = v.id`.execute(tx)
}

export async function closeAccount(tx: Tx, organizationId: string, id: string, at: Date): Promise<void> {
  await tx.updateTable('ledger_accounts').set({ closed_at: at, updated_at: at }).where('organization_id', '=', organizationId).where('id', '=', id).execute()
}

export interface NewTransaction {
  organizationId: string
  id: string
  type: string
  reference: string | null
  requestHash: string
  holdId: string | null
  data: Record<string, unknown>
  at: Date
}

/**
 * Inserts the transactions; returns the ids of those inserted (the others' references are already taken, by a
 * committed or concurrent posting, or by one earlier in the same list). Rows go in reference order, so that two
 * concurrent inserts wait on each other's references in the same order and cannot deadlock.
 */
export async function claimTransactions(tx: Tx, transactions: readonly NewTransaction[]): Promise<Set<string>> {
  if (transactions.length === 0) return new Set()
  const ordered = [...transactions].sort((a, b) => ((a.reference ?? '') < (b.reference ?? '') ? -1 : (a.reference ?? '') > (b.reference ?? '') ? 1 : 0))
  const inserted = await tx
    .insertInto('ledger_transactions')
    .values(
      ordered.map((transaction) => ({
        organization_id: transaction.organizationId,
        id: transaction.id,
        type: transaction.type,
        reference: transaction.reference,
        request_hash: transaction.requestHash,
        hold_id: transaction.holdId,
        data: JSON.stringify(transaction.data),
        created_at: transaction.at,
      })),
    )
    .onConflict((conflict) => conflict.columns(['organization_id', 'reference']).doNothing())
    .returning('id')
    .execute()
  return new Set(inserted.map((row) => row.id))
}

export function findTransactionsByReference(db: Executor, organizationId: string, references: readonly string[]): Promise<LedgerTransactionRow[]> {
  if (references.length === 0) return Promise.resolve([])
  return db.selectFrom('ledger_transactions').selectAll().where('organization_id', '=', organizationId).where('reference', 'in', references).execute()
}

export function findTransaction(db: Executor, organizationId: string, id: string): Promise<LedgerTransactionRow | undefined> {
  return db.selectFrom('ledger_transactions').selectAll().where('organization_id', '=', organizationId).where('id', '=', id).executeTakeFirst()
}

export interface NewEntry {
  id: string
  transactionId: string
  accountId: string
  asset: string
  amount: string
}

export async function insertEntries(tx: Tx, organizationId: string, entries: readonly NewEntry[], at: Date): Promise<void> {
  if (entries.length === 0) return
  await tx
    .insertInto('ledger_entries')
    .values(
      entries.map((entry) => ({
        organization_id: organizationId,
        id: entry.id,
        transaction_id: entry.transactionId,
        account_id: entry.accountId,
        asset: entry.asset,
        amount: entry.amount,
        created_at: at,
      })),
    )
    .execute()
}

export function entriesOf(db: Executor, organizationId: string, transactionId: string): Promise<{ account_id: string; asset: string; amount: string }[]> {
  return db
    .selectFrom('ledger_entries')
    .select(['account_id', 'asset', 'amount'])
    .where('organization_id', '=', organizationId)
    .where('transaction_id', '=', transactionId)
    .orderBy('id')
    .execute()
}

/**
 * Inserts an open hold on the account, in the account's asset, in one statement; undefined when the account
 * does not exist or the reference is already taken (the caller tells them apart, off the usual path).
 */
export async function claimHoldOn(
  tx: Tx,
  hold: { organizationId: string; id: string; accountId: string; amount: string; reference: string | null; requestHash: string; at: Date },
): Promise<LedgerHoldRow | undefined> {
  const result = await sql<LedgerHoldRow>`
    insert into ledger_holds (organization_id, id, account_id, asset, amount, status, reference, request_hash, transaction_id, created_at, updated_at)
    select a.organization_id, ${hold.id}::uuid, a.id, a.asset, ${hold.amount}::numeric, 'open', ${hold.reference}, ${hold.requestHash}, null,
      ${hold.at}::timestamptz, ${hold.at}::timestamptz
    from ledger_accounts a
    where a.organization_id = ${hold.organizationId} and a.id = ${hold.accountId}
    on conflict (organization_id, reference) do nothing
    returning *`.execute(tx)
  return result.rows[0]
}

export function findHold(db: Executor, organizationId: string, id: string): Promise<LedgerHoldRow | undefined> {
  return db.selectFrom('ledger_holds').selectAll().where('organization_id', '=', organizationId).where('id', '=', id).executeTakeFirst()
}

export function findHoldByReference(db: Executor, organizationId: string, reference: string): Promise<LedgerHoldRow | undefined> {
  return db.selectFrom('ledger_holds').selectAll().where('organization_id', '=', organizationId).where('reference', '=', reference).executeTakeFirst()
}

/**
 * Moves an open hold to its final state; the row lock it takes makes a release and a capture of the same hold
 * exclude each other. Undefined when the hold was not open (any more).
 */
export function settleHold(
  tx: Tx,
  organizationId: string,
  id: string,
  status: 'released' | 'captured',
  at: Date,
  transactionId: string | null = null,
): Promise<LedgerHoldRow | undefined> {
  return tx
    .updateTable('ledger_holds')
    .set({ status, updated_at: at, transaction_id: transactionId })
    .where('organization_id', '=', organizationId)
    .where('id', '=', id)
    .where('status', '=', 'open')
    .returningAll()
    .executeTakeFirst()
}

export async function hasOpenHolds(db: Executor, organizationId: string, accountId: string): Promise<boolean> {
  const row = await db
    .selectFrom('ledger_holds')
    .select('id')
    .where('organization_id', '=', organizationId)
    .where('account_id', '=', accountId)
    .where('status', '=', 'open')
    .limit(1)
    .executeTakeFirst()
  return row !== undefined
}

/** One broken invariant, named so that an operator can find the rows. */
export interface Violation {
  rule: 'transaction-unbalanced' | 'total-mismatch' | 'available-mismatch' | 'available-negative' | 'entry-asset-mismatch'
  organizationId: string
  /** The transaction (transaction-unbalanced) or the account (every other rule). */
  id: string
  detail: string
}

/** Every invariant of the ledger, checked over the whole database with set queries. */
export async function findViolations(db: Executor): Promise<Violation[]> {
  const violations: Violation[] = []
  const unbalanced = await sql<{ organization_id: string; transaction_id: string; asset: string; sum: string }>`
    select organization_id, transaction_id, asset, sum(amount)::text as sum
    from ledger_entries
    group by organization_id, transaction_id, asset
    having sum(amount) <> 0
    order by organization_id, transaction_id, asset`.execute(db)
  for (const row of unbalanced.rows) {
    violations.push({ rule: 'transaction-unbalanced', organizationId: row.organization_id, id: row.transaction_id, detail: `${row.asset} entries sum to ${row.sum}` })
  }
  const mismatched = await sql<{ organization_id: string; id: string; asset: string; entry_asset: string }>`
    select a.organization_id, a.id, a.asset, e.asset as entry_asset
    from ledger_entries e
    join ledger_accounts a on a.organization_id = e.organization_id and a.id = e.account_id
    where e.asset <> a.asset
    group by a.organization_id, a.id, a.asset, e.asset
    order by a.organization_id, a.id`.execute(db)
  for (const row of mismatched.rows) {
    violations.push({ rule: 'entry-asset-mismatch', organizationId: row.organization_id, id: row.id, detail: `an entry in ${row.entry_asset} on a ${row.asset} account` })
  }
  // The comparisons are made in SQL, on numeric values: exact, whatever the scale of the text.
  const balances = await sql<{ organization_id: string; id: string; total: string; available: string; entries: string; held: string; total_ok: boolean; available_ok: boolean; negative: boolean }>`
    select a.organization_id, a.id, a.total::text as total, a.available::text as available,
      coalesce(e.sum, 0)::text as entries, coalesce(h.sum, 0)::text as held,
      a.total = coalesce(e.sum, 0) as total_ok,
      a.available = a.total - coalesce(h.sum, 0) as available_ok,
      (not a.may_go_negative and a.available < 0) as negative
    from ledger_accounts a
    left join (select organization_id, account_id, sum(amount) as sum from ledger_entries group by organization_id, account_id) e
      on e.organization_id = a.organization_id and e.account_id = a.id
    left join (select organization_id, account_id, sum(amount) as sum from ledger_holds where status = 'open' group by organization_id, account_id) h
      on h.organization_id = a.organization_id and h.account_id = a.id
    where a.total <> coalesce(e.sum, 0)
      or a.available <> a.total - coalesce(h.sum, 0)
      or (not a.may_go_negative and a.available < 0)
    order by a.organization_id, a.id`.execute(db)
  for (const row of balances.rows) {
    const base = { organizationId: row.organization_id, id: row.id }
    if (!row.total_ok) violations.push({ ...base, rule: 'total-mismatch', detail: `total ${row.total} but its entries sum to ${row.entries}` })
    if (!row.available_ok) {
      violations.push({ ...base, rule: 'available-mismatch', detail: `available ${row.available} but total ${row.total} less open holds ${row.held}` })
    }
    if (row.negative) violations.push({ ...base, rule: 'available-negative', detail: `available ${row.available}` })
  }
  return violations
}

export async function ledgerSize(db: Executor): Promise<{ accounts: number; transactions: number; entries: number }> {
  const row = await sql<{ accounts: string; transactions: string; entries: string }>`
    select (select count(*) from ledger_accounts)::text as accounts,
      (select count(*) from ledger_transactions)::text as transactions,
      (select count(*) from ledger_entries)::text as entries`.execute(db)
  const counts = row.rows[0]!
  return { accounts: Number(counts.accounts), transactions: Number(counts.transactions), entries: Number(counts.entries) }
}

/**
 * Captures open holds in one statement, each with the posting that captures it; returns those captured (a hold
 * no longer open is left out). The row locks it takes order holds like `settleHold` does.
 */
export async function captureHolds(tx: Tx, organizationId: string, holds: readonly { id: string; transactionId: string }[], at: Date): Promise<LedgerHoldRow[]> {
  if (holds.length === 0) return []
  const values = sql.join(holds.map((hold) => sql`(${hold.id}::uuid, ${hold.transactionId}::uuid)`))
  const result = await sql<LedgerHoldRow>`
    update ledger_holds as h
    set status = 'captured', transaction_id = v.transaction_id, updated_at = ${at}
    from (values ${values}) as v(id, transaction_id)
    where h.organization_id = ${organizationId} and h.id = v.id and h.status = 'open'
    returning h.*`.execute(tx)
  return result.rows
}
