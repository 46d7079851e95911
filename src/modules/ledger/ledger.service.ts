import BigNumber from 'bignumber.js'
import type { Db, Executor, LedgerAccountRow, LedgerHoldRow, Tx } from '../../db/schema.ts'
import { conflict, notFound } from '../../lib/errors.ts'
import { isUuid, uuidv7 } from '../../lib/ids.ts'
import * as repository from './ledger.repository.ts'
import {
  applyDelta,
  captureDelta,
  checkBalanced,
  lockOrder,
  parseAmount,
  postingDeltas,
  requestDigest,
  type Balance,
  type BalanceDelta,
  type Leg,
} from './ledger.rules.ts'

export type { Violation } from './ledger.repository.ts'

/** What the ledger needs to know about assets: how many decimals an amount of each may have. */
export interface LedgerAssets {
  decimalsOf(asset: string): number | undefined
}

/**
 * System accounts make the other side of money that enters or leaves the users' accounts. Whether one may go
 * negative follows from what it stands for:
 * - `clearing` (one per rail network and asset): money in transit with the outside world. A deposit debits it
 *   before the rail has paid us and a withdrawal credits it until the rail has paid out, so its balance is
 *   routinely negative: minus what the outside owes.
 * - `liquidity` (one per asset): the counterparty of trades. It delivers one asset and receives another; its
 *   funding happens outside the ledger, so it may go negative in any asset.
 * - `fees` (one per asset): only ever credited with fees; a debit that would make it negative is a bug.
 */
export const SYSTEM_ACCOUNT_KINDS = {
  clearing: { mayGoNegative: true },
  liquidity: { mayGoNegative: true },
  fees: { mayGoNegative: false },
  // Money that arrived but belongs to nobody yet: a deposit held for information, or one refused (to be returned).
  suspense: { mayGoNegative: false },
} as const

export type SystemAccount = { kind: 'clearing'; network: string; asset: string } | { kind: 'liquidity' | 'fees' | 'suspense'; asset: string }

export function systemCodeOf(account: SystemAccount): string {
  return account.kind === 'clearing' ? `clearing:${account.network}` : account.kind
}

export interface AccountBalance {
  organizationId: string
  id: string
  asset: string
  /** Null for a user's account. */
  systemCode: string | null
  total: string
  available: string
  updatedAt: Date
}

/** One posting's changes to the totals of users' accounts (system accounts left out), as written. */
export interface Movement {
  /** The ledger transaction. */
  transactionId: string
  data: Record<string, unknown>
  changes: readonly { accountId: string; asset: string; amount: string }[]
}

/**
 * Called inside the transaction of every movement with the users' accounts whose balance it changed (their final
 * balances) and, in posting order, the postings that changed their totals (a hold placed or released changes only
 * an available balance and has none).
 */
export type BalanceListener = (tx: Tx, changed: readonly AccountBalance[], movements: readonly Movement[], at: Date) => Promise<void>

export interface PostingInput {
  organizationId: string
  /** What the movement is, for readers of the ledger: `deposit`, `transfer`, `withdrawal`, `trade`, `fee`, … */
  type: string
  /** Makes the posting idempotent: a second posting with the same reference posts nothing and returns the first. */
  reference?: string
  /** Signed amounts (a leading `-` debits the account); per asset they must sum to zero. */
  legs: readonly { accountId: string; amount: string }[]
  data?: Record<string, unknown>
}

export interface TransferInput {
  organizationId: string
  type: string
  reference?: string
  from: string
  to: string
  amount: string
  data?: Record<string, unknown>
}

export interface Posting {
  transactionId: string
  /** True when the reference had already been posted and this call changed nothing. */
  replayed: boolean
}

export interface HoldInput {
  organizationId: string
  accountId: string
  amount: string
  reference?: string
}

export interface Hold {
  id: string
  accountId: string
  asset: string
  amount: string
  status: 'open' | 'released' | 'captured'
  /** The posting that captured it. */
  transactionId: string | null
  replayed: boolean
}

export interface CaptureInput {
  organizationId: string
  holdId: string
  type: string
  reference?: string
  /** Where the captured money goes; their sum is debited from the held account and must not exceed the hold. */
  credits: readonly { accountId: string; amount: string }[]
  data?: Record<string, unknown>
}

/** Optionally, the caller's own open transaction: the movement then commits or rolls back with the caller's work. */
export interface InTransaction {
  tx?: Tx
}

/**
 * Options of a posting. `at` dates it (its entries, its balances and what the balance listeners record) at an
 * earlier moment than now: for history imported as it happened (the sandbox's generated history). The caller keeps
 * the ledger chronological: nothing of the accounts it touches may have been posted after `at`. Ids keep the order
 * of creation (uuidv7 never goes back within a process), so they may carry a later time than `at`.
 */
export interface PostingOptions extends InTransaction {
  at?: Date
}

function toHold(row: LedgerHoldRow, replayed: boolean): Hold {
  return { id: row.id, accountId: row.account_id, asset: row.asset, amount: row.amount, status: row.status, transactionId: row.transaction_id, replayed }
}

function referenceReused(): never {
  throw conflict('ledger_reference_reused', 'This reference was already used for a different movement')
}

/** Ids as stored (lower case); anything that is not a UUID names nothing. */
function idOf(entity: 'account' | 'hold', id: string): string {
  if (typeof id !== 'string' || !isUuid(id)) throw notFound(entity, entity === 'account' ? { accountId: id } : {})
  return id.toLowerCase()
}

function parseSigned(value: string, decimals: number): BigNumber {
  return value.startsWith('-') ? parseAmount(value.slice(1), decimals).negated() : parseAmount(value, decimals)
}

/** A posting as the ledger stores it: ids as stored, amounts checked, and the digest that tells a retry from a reuse. */
function checkedPosting<P extends PostingInput>(request: P) {
  const input = { ...request, legs: request.legs.map((leg) => ({ accountId: idOf('account', leg.accountId), amount: leg.amount })) }
  for (const leg of input.legs) parseSigned(leg.amount, Number.MAX_SAFE_INTEGER)
  return { ...input, requestHash: requestDigest({ type: input.type, legs: input.legs, data: input.data ?? {} }) }
}

/** A capture as the ledger stores it, likewise. */
function checkedCapture(request: CaptureInput) {
  const input = { ...request, holdId: idOf('hold', request.holdId), credits: request.credits.map((c) => ({ accountId: idOf('account', c.accountId), amount: c.amount })) }
  for (const credit of input.credits) parseAmount(credit.amount, Number.MAX_SAFE_INTEGER)
  if (input.credits.length === 0) throw new Error('A capture needs at least one credit')
  return { ...input, requestHash: requestDigest({ type: input.type, holdId: input.holdId, credits: input.credits, data: input.data ?? {} }) }
}

/** The key of a system account in the process's memory of them. */
function systemKey(organizationId: string, account: SystemAccount): string {
  return `${organizationId}|${systemCodeOf(account)}|${account.asset}`
}

/** A decimal without an exponent or trailing zeros, as the API writes amounts. */
export function formatAmount(value: string | BigNumber): string {
  return new BigNumber(value).toFixed()
}

/**
 * The double-entry ledger. Every movement is one ledger transaction whose entries sum to zero per asset, written
 * in one database transaction together with the balance changes and (through the balance listeners) the events.
 *
 * Concurrency: each movement locks the rows of every account it touches with `SELECT … FOR UPDATE` in id order,
 * then checks and writes. Balances are read under the lock, so no update is lost and no money is spent twice;
 * locks are always requested in the same order, so movements never deadlock among themselves. The only other
 * rows locked are a hold's (release, capture) and a reference's uniqueness slot, and both are taken before any
 * account, so they cannot close a cycle either.
 *
 * When a method throws inside a caller's transaction (`tx`), the caller must roll that transaction back.
 */
export class LedgerService {
  private readonly db: Db
  private readonly assets: LedgerAssets
  private readonly listeners: BalanceListener[] = []
  private readonly systemAccounts = new Map<string, string>()

  constructor(deps: { db: Db; assets: LedgerAssets }) {
    this.db = deps.db
    this.assets = deps.assets
  }

  onBalanceChanged(listener: BalanceListener): void {
    this.listeners.push(listener)
  }

  private within<T>(tx: Tx | undefined, work: (tx: Tx) => Promise<T>): Promise<T> {
    return tx ? work(tx) : this.db.transaction().execute(work)
  }

  private decimalsOf(asset: string): number {
    const decimals = this.assets.decimalsOf(asset)
    if (decimals === undefined) throw notFound('asset', { asset })
    return decimals
  }

  /** Opens a user's ledger account (zero balance) in the caller's transaction. */
  async openAccount(tx: Executor, input: { organizationId: string; id: string; asset: string; at: Date }): Promise<void> {
    this.decimalsOf(input.asset)
    await repository.insertAccount(tx, { ...input, systemCode: null, mayGoNegative: false })
  }

  /**
   * The id of the organization's system account, created on first use. Call it outside any database transaction
   * (a flow step does in its `prepare`): the account is then created committed, on its own, and its id can be
   * remembered — a system account's id never changes, so after the first lookup a movement pays no round trip.
   */
  async systemAccount(organizationId: string, account: SystemAccount): Promise<string> {
    this.decimalsOf(account.asset)
    const systemCode = systemCodeOf(account)
    const key = systemKey(organizationId, account)
    const known = this.systemAccounts.get(key)
    if (known !== undefined) return known
    const existing = await repository.findSystemAccount(this.db, organizationId, systemCode, account.asset)
    const id = existing
      ? existing.id
      : await repository.ensureSystemAccount(this.db, {
        organizationId,
        id: uuidv7(),
        asset: account.asset,
        systemCode,
        mayGoNegative: SYSTEM_ACCOUNT_KINDS[account.kind].mayGoNegative,
        at: new Date(),
      })
    this.systemAccounts.set(key, id)
    return id
  }

  /**
   * The id of a system account already looked up by `systemAccount` in this process; for use inside a database
   * transaction, where `systemAccount` must not be called. Throws when it was not looked up first.
   */
  knownSystemAccount(organizationId: string, account: SystemAccount): string {
    const id = this.systemAccounts.get(systemKey(organizationId, account))
    if (id === undefined) throw new Error(`System account ${systemCodeOf(account)} ${account.asset} was not looked up before the transaction`)
    return id
  }

  /** Balances of accounts of the organization, by id; unknown ids are left out. */
  async balances(executor: Executor, organizationId: string, ids: readonly string[]): Promise<Map<string, AccountBalance>> {
    const rows = await repository.findAccounts(executor, organizationId, ids.filter((id) => isUuid(id)).map((id) => id.toLowerCase()))
    return new Map(rows.map((row) => [row.id, balanceOf(row, row)]))
  }

  /** Posts a balanced movement between accounts. */
  async post(request: PostingInput, options: PostingOptions = {}): Promise<Posting> {
    const [posting] = await this.postAll([request], options)
    return posting!
  }

  /**
   * Posts several balanced movements of one organization together, with the outcome of posting them one after the
   * other in the given order: each is its own ledger transaction with its own reference, checked against the
   * balances the ones before it left. They share the database round trips (one claim of their references, one
   * lock of all their accounts, one write of the balances and one of the entries), and the balance listeners are
   * called once, with each changed account's final balance. All or nothing: when one is refused, this throws and
   * nothing may be committed.
   */
  async postAll(requests: readonly PostingInput[], options: PostingOptions = {}): Promise<Posting[]> {
    if (requests.length === 0) return []
    const organizationId = requests[0]!.organizationId
    if (requests.some((request) => request.organizationId !== organizationId)) throw new Error('postAll takes the postings of one organization')
    const inputs = requests.map(checkedPosting)
    return this.within(options.tx, async (tx) => {
      const at = options.at ?? new Date()
      const postings = inputs.map((input) => ({ ...input, id: uuidv7(at.getTime()), holdId: null, at }))
      const replays = await this.claim(tx, organizationId, postings)
      const fresh = postings.filter((posting) => !replays.has(posting.id))
      await this.postLegs(tx, organizationId, fresh.map((posting) => ({ transactionId: posting.id, data: posting.data, legs: posting.legs, extra: new Map() })), at)
      return postings.map((posting) => replays.get(posting.id) ?? { transactionId: posting.id, replayed: false })
    })
  }

  /** Moves an amount from one account to another of the same asset. */
  async transfer(input: TransferInput, options: InTransaction = {}): Promise<Posting> {
    if (idOf('account', input.from) === idOf('account', input.to)) throw conflict('operation_not_allowed', 'The origin and the destination are the same account')
    const { from, to, amount, ...rest } = input
    return this.post({ ...rest, legs: [{ accountId: from, amount: `-${amount}` }, { accountId: to, amount }] }, options)
  }

  /** Sets money aside for a movement in flight: the available balance drops, the total stays. */
  async placeHold(request: HoldInput, options: InTransaction = {}): Promise<Hold> {
    const input = { ...request, accountId: idOf('account', request.accountId) }
    parseAmount(input.amount, Number.MAX_SAFE_INTEGER)
    const requestHash = requestDigest({ accountId: input.accountId, amount: input.amount })
    return this.within(options.tx, async (tx) => {
      const at = new Date()
      const id = uuidv7(at.getTime())
      // One statement reads the account's asset and claims the reference (before any account lock, as always).
      const claimed = await repository.claimHoldOn(tx, { organizationId: input.organizationId, id, accountId: input.accountId, amount: formatAmount(input.amount), reference: input.reference ?? null, requestHash, at })
      if (!claimed) {
        const existing = input.reference === undefined ? undefined : await repository.findHoldByReference(tx, input.organizationId, input.reference)
        if (!existing) {
          if ((await repository.findAccounts(tx, input.organizationId, [input.accountId])).length === 0) throw notFound('account', { accountId: input.accountId })
          referenceReused()
        }
        if (existing.request_hash !== requestHash) referenceReused()
        return toHold(existing, true)
      }
      // Checked once the asset is known; throwing rolls the claim back with the caller's transaction.
      const amount = parseAmount(input.amount, this.decimalsOf(claimed.asset))
      await this.move(tx, input.organizationId, new Map([[claimed.account_id, { total: new BigNumber(0), available: amount.negated() }]]), at)
      return { id, accountId: claimed.account_id, asset: claimed.asset, amount: amount.toFixed(), status: 'open', transactionId: null, replayed: false }
    })
  }

  /** Gives held money back to the available balance. Releasing a released hold changes nothing. */
  async releaseHold(request: { organizationId: string; holdId: string }, options: InTransaction = {}): Promise<Hold> {
    const input = { ...request, holdId: idOf('hold', request.holdId) }
    return this.within(options.tx, async (tx) => {
      const at = new Date()
      const released = await repository.settleHold(tx, input.organizationId, input.holdId, 'released', at)
      if (!released) {
        const hold = await this.settledHold(tx, input.organizationId, input.holdId)
        if (hold.status !== 'released') throw conflict('hold_not_open', 'The hold was already captured')
        return toHold(hold, true)
      }
      await this.move(tx, input.organizationId, new Map([[released.account_id, { total: new BigNumber(0), available: new BigNumber(released.amount) }]]), at)
      return toHold(released, false)
    })
  }

  /**
   * Turns a hold into a posting: the held account is debited by the credits' sum, which may be less than the
   * hold (the rest becomes available again) but not more. A retried capture with the same credits changes nothing.
   */
  async captureHold(request: CaptureInput, options: InTransaction = {}): Promise<Posting> {
    const input = checkedCapture(request)
    return this.within(options.tx, async (tx) => {
      const at = new Date()
      const transactionId = uuidv7(at.getTime())
      const hold = await repository.settleHold(tx, input.organizationId, input.holdId, 'captured', at, transactionId)
      if (!hold) {
        const settled = await this.settledHold(tx, input.organizationId, input.holdId)
        const posting = settled.transaction_id === null ? undefined : await repository.findTransaction(tx, input.organizationId, settled.transaction_id)
        if (!posting || posting.request_hash !== input.requestHash) throw conflict('hold_not_open', `The hold was already ${settled.status}`)
        return { transactionId: posting.id, replayed: true }
      }
      const replays = await this.claim(tx, input.organizationId, [{ ...input, id: transactionId, holdId: hold.id, at }])
      if (replays.size > 0) referenceReused()
      const decimals = this.decimalsOf(hold.asset)
      const captured = input.credits.reduce((sum, credit) => sum.plus(parseAmount(credit.amount, decimals)), new BigNumber(0))
      const heldDelta = captureDelta(new BigNumber(hold.amount), captured)
      await this.postLegs(tx, input.organizationId, [{ transactionId, data: input.data, legs: input.credits, extra: new Map([[hold.account_id, { delta: heldDelta, entry: captured.negated() }]]) }], at)
      return { transactionId, replayed: false }
    })
  }

  /**
   * Captures holds and posts movements of one organization together, in the caller's transaction, with the
   * outcome of capturing them and then posting them one after the other (a trade's capture and delivery, for
   * a batch of trades). They share the round trips: one update of the holds, one claim of every reference, one
   * lock of every account, one write of the balances and one of the entries. All or nothing. Unlike
   * `captureHold` and `post`, nothing here is a replay: a hold no longer open or a reference already used
   * throws, for callers (flow steps) whose own record already makes them run once.
   */
  async captureAndPost(request: { organizationId: string; captures: readonly CaptureInput[]; postings: readonly PostingInput[] }, options: { tx: Tx }): Promise<void> {
    const { organizationId, captures, postings } = request
    if (captures.length === 0) {
      await this.postAll(postings, options)
      return
    }
    const tx = options.tx
    const at = new Date()
    const captured = captures.map((capture) => ({ ...checkedCapture(capture), id: uuidv7(at.getTime()) }))
    const posted = postings.map((posting) => ({ ...checkedPosting(posting), id: uuidv7(at.getTime()), holdId: null }))
    const holds = await repository.captureHolds(tx, organizationId, captured.map((capture) => ({ id: capture.holdId, transactionId: capture.id })), at)
    if (holds.length !== captured.length) throw conflict('hold_not_open', `${captured.length - holds.length} of the holds were no longer open`)
    const replays = await this.claim(tx, organizationId, [...captured.map((capture) => ({ ...capture, at })), ...posted.map((posting) => ({ ...posting, at }))])
    if (replays.size > 0) referenceReused()
    const byHold = new Map(holds.map((hold) => [hold.id, hold]))
    const batch = captured.map((capture) => {
      const hold = byHold.get(capture.holdId)!
      const decimals = this.decimalsOf(hold.asset)
      const total = capture.credits.reduce((sum, credit) => sum.plus(parseAmount(credit.amount, decimals)), new BigNumber(0))
      return { transactionId: capture.id, data: capture.data, legs: capture.credits, extra: new Map([[hold.account_id, { delta: captureDelta(new BigNumber(hold.amount), total), entry: total.negated() }]]) }
    })
    await this.postLegs(tx, organizationId, [...batch, ...posted.map((posting) => ({ transactionId: posting.id, data: posting.data, legs: posting.legs, extra: new Map() }))], at)
  }

  /**
   * Closes a user's account for good, in the caller's transaction: refused while it holds money or has
   * movements in flight. Under the account's lock, so that no movement slips in between the check and the close.
   */
  async close(tx: Tx, organizationId: string, id: string, at: Date): Promise<void> {
    const accountId = idOf('account', id)
    const [row] = await repository.lockAccounts(tx, organizationId, [accountId])
    if (!row) throw notFound('account')
    if (await repository.hasOpenHolds(tx, organizationId, accountId)) {
      throw conflict('account_has_pending_transactions', 'The account has pending transactions and cannot be archived')
    }
    if (!new BigNumber(row.total).isZero()) throw conflict('account_has_balance', 'The account has balance and cannot be archived')
    await repository.closeAccount(tx, organizationId, accountId, at)
  }

  async hold(organizationId: string, holdId: string): Promise<Hold> {
    const row = await repository.findHold(this.db, organizationId, idOf('hold', holdId))
    if (!row) throw notFound('hold')
    return toHold(row, false)
  }

  /** The entries of a posting, oldest first. */
  async entries(organizationId: string, transactionId: string): Promise<{ accountId: string; asset: string; amount: string }[]> {
    const rows = await repository.entriesOf(this.db, organizationId, transactionId)
    return rows.map((row) => ({ accountId: row.account_id, asset: row.asset, amount: formatAmount(row.amount) }))
  }

  /** Every broken invariant of the whole ledger (all organizations); empty when the books are right. */
  check(executor: Executor = this.db): Promise<repository.Violation[]> {
    return repository.findViolations(executor)
  }

  private async settledHold(tx: Tx, organizationId: string, holdId: string): Promise<LedgerHoldRow> {
    const hold = await repository.findHold(tx, organizationId, holdId)
    if (!hold) throw notFound('hold')
    return hold
  }

  /**
   * Claims the postings' references; returns, by posting id, the earlier postings of those already posted (or
   * throws a conflict when a reference was used for a different movement). A reference repeated within the same
   * call is posted once: its later occurrences are replays of the first.
   */
  private async claim(
    tx: Tx,
    organizationId: string,
    postings: readonly { id: string; type: string; reference?: string; requestHash: string; holdId: string | null; data?: Record<string, unknown>; at: Date }[],
  ): Promise<Map<string, Posting>> {
    const claimed = await repository.claimTransactions(
      tx,
      postings.map((posting) => ({ ...posting, organizationId, reference: posting.reference ?? null, data: posting.data ?? {} })),
    )
    const replays = new Map<string, Posting>()
    const unclaimed = postings.filter((posting) => !claimed.has(posting.id))
    if (unclaimed.length === 0) return replays
    const earlier = new Map((await repository.findTransactionsByReference(tx, organizationId, unclaimed.map((posting) => posting.reference!))).map((row) => [row.reference, row]))
    for (const posting of unclaimed) {
      const existing = earlier.get(posting.reference!)
      if (!existing || existing.request_hash !== posting.requestHash) referenceReused()
      replays.set(posting.id, { transactionId: existing.id, replayed: true })
    }
    return replays
  }

  /**
   * Locks the accounts of all the postings once, then, posting by posting, checks amounts against each account's
   * asset and the balances the postings before it left; writes the final balances and every entry. `extra` adds
   * accounts whose change is not a plain leg (a captured hold).
   */
  private async postLegs(
    tx: Tx,
    organizationId: string,
    postings: readonly {
      transactionId: string
      data: Record<string, unknown> | undefined
      legs: readonly { accountId: string; amount: string }[]
      extra: Map<string, { delta: BalanceDelta; entry: BigNumber }>
    }[],
    at: Date,
  ): Promise<void> {
    if (postings.length === 0) return
    const rows = await this.lock(tx, organizationId, postings.flatMap((posting) => [...posting.legs.map((leg) => leg.accountId), ...posting.extra.keys()]))
    const steps: Map<string, BalanceDelta>[] = []
    const entries: repository.NewEntry[] = []
    const movements: Movement[] = []
    for (const posting of postings) {
      const legs: Leg[] = posting.legs.map((leg) => {
        const account = rows.get(leg.accountId)!
        return { accountId: account.id, asset: account.asset, amount: parseSigned(leg.amount, this.decimalsOf(account.asset)) }
      })
      const deltas = postingDeltas(legs)
      for (const [accountId, { delta, entry }] of posting.extra) {
        const current = deltas.get(accountId) ?? { total: new BigNumber(0), available: new BigNumber(0) }
        deltas.set(accountId, { total: current.total.plus(delta.total), available: current.available.plus(delta.available) })
        legs.push({ accountId, asset: rows.get(accountId)!.asset, amount: entry })
      }
      checkBalanced(legs)
      steps.push(deltas)
      for (const leg of legs) entries.push({ id: uuidv7(at.getTime()), transactionId: posting.transactionId, accountId: leg.accountId, asset: leg.asset, amount: leg.amount.toFixed() })
      const changes = legs.filter((leg) => rows.get(leg.accountId)!.system_code === null && !leg.amount.isZero())
        .map((leg) => ({ accountId: leg.accountId, asset: leg.asset, amount: leg.amount.toFixed() }))
      if (changes.length > 0) movements.push({ transactionId: posting.transactionId, data: posting.data ?? {}, changes })
    }
    await this.apply(tx, organizationId, rows, steps, at, movements)
    await repository.insertEntries(tx, organizationId, entries, at)
  }

  private async move(tx: Tx, organizationId: string, deltas: Map<string, BalanceDelta>, at: Date): Promise<void> {
    const rows = await this.lock(tx, organizationId, [...deltas.keys()])
    await this.apply(tx, organizationId, rows, [deltas], at, [])
  }

  /** Locks the accounts in the one fixed order; every one must exist and be open. */
  private async lock(tx: Tx, organizationId: string, accountIds: readonly string[]): Promise<Map<string, LedgerAccountRow>> {
    const ordered = lockOrder(accountIds)
    const rows = new Map((await repository.lockAccounts(tx, organizationId, ordered)).map((row) => [row.id, row]))
    for (const id of ordered) {
      const row = rows.get(id)
      if (!row) throw notFound('account', { accountId: id })
      if (row.closed_at !== null) throw conflict('account_archived', 'The account is archived', { accountId: id })
    }
    return rows
  }

  /**
   * Applies the steps (each one movement's changes) in order, checking each against the balances the steps before
   * it left, before writing any; then writes the final balances and tells the listeners.
   */
  private async apply(
    tx: Tx,
    organizationId: string,
    rows: Map<string, LedgerAccountRow>,
    steps: readonly Map<string, BalanceDelta>[],
    at: Date,
    movements: readonly Movement[],
  ): Promise<void> {
    const balances = new Map<string, Balance>()
    for (const deltas of steps) {
      for (const id of lockOrder(deltas.keys())) {
        const row = rows.get(id)!
        const current = balances.get(id) ?? { total: new BigNumber(row.total), available: new BigNumber(row.available) }
        balances.set(id, applyDelta({ id, ...current, mayGoNegative: row.may_go_negative }, deltas.get(id)!))
      }
    }
    const next = lockOrder(balances.keys()).map((id) => {
      const balance = balances.get(id)!
      return { row: rows.get(id)!, total: balance.total.toFixed(), available: balance.available.toFixed() }
    })
    await repository.setBalances(tx, organizationId, next.map(({ row, total, available }) => ({ id: row.id, total, available })), at)
    const changed = next.filter(({ row }) => row.system_code === null).map(({ row, total, available }) => balanceOf(row, { total, available, updated_at: at }))
    if (changed.length === 0) return
    for (const listener of this.listeners) await listener(tx, changed, movements, at)
  }
}

/**
 * Checks the invariants over the whole database: every transaction sums to zero per asset, every entry is in its
 * account's asset, every total equals the sum of its entries, every available balance equals the total less the
 * open holds, and no account that may not go negative is. Needs no service: the command line runs it directly.
 */
export async function checkLedger(executor: Executor): Promise<{ violations: repository.Violation[]; checked: { accounts: number; transactions: number; entries: number } }> {
  const violations = await repository.findViolations(executor)
  return { violations, checked: await repository.ledgerSize(executor) }
}

function balanceOf(row: LedgerAccountRow, balance: { total: string; available: string; updated_at: Date }): AccountBalance {
  return {
    organizationId: row.organization_id,
    id: row.id,
    asset: row.asset,
    systemCode: row.system_code,
    total: formatAmount(balance.total),
    available: formatAmount(balance.available),
    updatedAt: balance.updated_at,
  }
}
