import BigNumber from 'bignumber.js'
import type { Db, Executor, JobRow, TransactionRow, Tx } from '../../db/schema.ts'
import { ApiError, conflict, notFound } from '../../http/errors.ts'
import { isUuid, uuidv7 } from '../../lib/ids.ts'
import { enqueue, type JobHandlers } from '../../jobs/queue.ts'
import { parseAmount } from '../ledger/ledger.rules.ts'
import type { LedgerAssets, LedgerService } from '../ledger/ledger.service.ts'
import * as repository from './transactions.repository.ts'
import type { TransactionNode, TransactionStatusReason } from './transactions.schemas.ts'
import { announceTransactions, TRANSACTION_EVENTS } from './transactions.service.ts'

export const SETTLE_DEPOSIT_JOB = 'deposit.settle'

/** How many deposit settlements the worker hands over at once by default (see WORKER_BATCH_SIZE). */
export const DEFAULT_SETTLEMENT_BATCH = 100

export interface DepositInput {
  organizationId: string
  /** The user who owns the account credited. */
  userId: string
  accountId: string
  asset: string
  /** A positive decimal string in the asset's precision. */
  amount: string
  /** The network (rail) the money arrived on; its clearing account is debited. */
  network: string
  /** Where the money came from, as the transaction's origin; a bare bank or crypto address of the network by default. */
  source?: TransactionNode
  /**
   * The caller's unique id of what arrived (e.g. the rail's payment id). Recording the same reference again
   * records nothing and returns the first transaction; with a different deposit it is refused.
   */
  reference: string
}

/** Which networks exist and what kind they are (`crypto`, `fiat`, …). */
export interface NetworkKinds {
  networkType(code: string): string | undefined
}

/** Ledger failures that no retry can cure: the deposit fails instead of retrying forever. */
const PERMANENT_FAILURES: Record<string, TransactionStatusReason> = {
  account_archived: 'unspecified-error',
  entity_not_found: 'unspecified-error',
  transaction_amount_invalid: 'unspecified-error',
}

function payloadOf(job: JobRow): { organizationId: string; transactionId: string } {
  return job.payload as { organizationId: string; transactionId: string }
}

/**
 * Deposits: money that arrived for a user's account on a network. Recording one creates the transaction
 * (`processing`) and its settlement job in the caller's database transaction; the worker then posts it to the
 * ledger (network clearing → account) and completes it, both in one database transaction, once. The worker
 * hands over the settlements that are due together, and those of one organization share one database
 * transaction: under load, the network's clearing account (a row every deposit locks) is locked once per batch
 * rather than once per deposit.
 */
export class DepositsService {
  private readonly db: Db
  private readonly ledger: LedgerService
  private readonly assets: LedgerAssets
  private readonly networks: NetworkKinds

  constructor(deps: { db: Db; ledger: LedgerService; assets: LedgerAssets; networks: NetworkKinds; jobs: JobHandlers; settlementBatch?: number }) {
    this.db = deps.db
    this.ledger = deps.ledger
    this.assets = deps.assets
    this.networks = deps.networks
    deps.jobs.registerBatch(SETTLE_DEPOSIT_JOB, (jobs) => this.settleAll(jobs), { maxJobs: deps.settlementBatch ?? DEFAULT_SETTLEMENT_BATCH })
  }

  /**
   * Records a deposit in `executor` (the caller's transaction, or the pool: then in a transaction of its own).
   * Throws 404 `entity_not_found` for an account that is not the user's, an unknown asset or network; 409
   * `asset_not_supported` when the account holds another asset; 409 `transaction_amount_invalid` for a bad amount;
   * `transaction_reference_reused` for a reference already recorded for another deposit.
   */
  async record(executor: Executor, input: DepositInput): Promise<{ transactionId: string }> {
    const decimals = this.assets.decimalsOf(input.asset)
    if (decimals === undefined) throw notFound('asset', { asset: input.asset })
    const amount = parseAmount(input.amount, decimals).toFixed()
    const networkType = this.networks.networkType(input.network)
    if (networkType === undefined) throw notFound('network', { network: input.network })
    if (typeof input.reference !== 'string' || input.reference.length === 0 || input.reference.length > 255) {
      throw new ApiError(400, 'request_invalid', 'A deposit needs a reference of 1 to 255 characters')
    }
    if (!isUuid(input.accountId)) throw notFound('account')
    const accountId = input.accountId.toLowerCase()
    const source: TransactionNode = input.source ?? (networkType === 'crypto' ? { type: 'crypto-address', network: input.network } : { type: 'bank-address', network: input.network })

    const work = async (tx: Executor) => {
      const at = new Date()
      const row = {
        organization_id: input.organizationId,
        id: uuidv7(at.getTime()),
        owner_id: input.userId,
        type: 'deposit',
        status: 'processing' as const,
        asset: input.asset,
        amount,
        account_id: accountId,
        network: input.network,
        origin: JSON.stringify(source),
        destination: JSON.stringify({ type: 'account', id: accountId, ownerId: input.userId }),
        reference: input.reference,
        created_at: at,
        updated_at: at,
      }
      const inserted = await repository.insertForAccount(tx, row)
      if (!inserted) {
        // Not inserted: the account is not the user's or holds another asset, or the reference was recorded before.
        const account = await tx
          .selectFrom('accounts')
          .select('asset')
          .where('organization_id', '=', input.organizationId)
          .where('owner_id', '=', input.userId)
          .where('id', '=', accountId)
          .executeTakeFirst()
        if (!account) throw notFound('account')
        if (account.asset !== input.asset) throw conflict('asset_not_supported', 'The account holds another asset', { accountId, asset: input.asset })
        const existing = await repository.findByReference(tx, input.organizationId, input.reference)
        const same = existing && existing.type === 'deposit' && existing.account_id === accountId && existing.asset === input.asset &&
          existing.network === input.network && new BigNumber(existing.amount).isEqualTo(amount)
        if (!same) throw conflict('transaction_reference_reused', 'This reference was already recorded for a different transaction')
        return { transactionId: existing.id }
      }
      await announceTransactions(tx, TRANSACTION_EVENTS.created, [inserted])
      await enqueue(tx, { type: SETTLE_DEPOSIT_JOB, organizationId: input.organizationId, payload: { organizationId: input.organizationId, transactionId: row.id } })
      return { transactionId: row.id }
    }
    return executor.isTransaction ? work(executor) : executor.transaction().execute(work)
  }

  /**
   * Settles the deposits of the jobs: those of one organization together (see `settleTogether`). When that fails
   * (one of them refused, a lost race), each is settled on its own instead, so that no deposit's failure holds
   * up another. Resolves with the jobs that failed, to be retried.
   */
  async settleAll(jobs: readonly JobRow[]): Promise<Map<string, unknown>> {
    const failures = new Map<string, unknown>()
    for (const [organizationId, group] of Map.groupBy(jobs, (job) => payloadOf(job).organizationId)) {
      if (group.length > 1) {
        try {
          await this.settleTogether(organizationId, group.map((job) => payloadOf(job).transactionId))
          continue
        } catch {
          // Settled one by one below: the one that cannot settle is found and fails or retries on its own.
        }
      }
      for (const job of group) {
        try {
          await this.settle(job)
        } catch (error) {
          failures.set(job.id, error)
        }
      }
    }
    return failures
  }

  /**
   * Settles one recorded deposit. A deposit the ledger refuses for good (the account was archived meanwhile)
   * fails with a reason; the clearing account is then not debited, so the money stays recorded as owed by the
   * network, to be returned to its sender. Any other error is thrown, for the job to be retried.
   */
  async settle(job: JobRow): Promise<void> {
    const { organizationId, transactionId } = payloadOf(job)
    try {
      await this.settleTogether(organizationId, [transactionId])
    } catch (error) {
      const reason = error instanceof ApiError ? PERMANENT_FAILURES[error.code] : undefined
      if (reason === undefined) throw error
      await this.db.transaction().execute((tx) => this.finish(tx, organizationId, [transactionId], { status: 'failed', reason }))
    }
  }

  /**
   * Posts the deposits to the ledger and completes them, all in one database transaction, for those still
   * `processing`: a retried or duplicated job finds its deposit settled and does nothing. The ledger postings
   * are referenced by the transaction ids, so that a deposit can never be posted twice.
   */
  private async settleTogether(organizationId: string, transactionIds: readonly string[]): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      const rows = await repository.lockInStatus(tx, organizationId, transactionIds, 'processing')
      if (rows.length === 0) return
      const clearing = new Map<string, string>()
      const clearingOf = async (row: TransactionRow) => {
        const key = `${row.network}|${row.asset}`
        if (!clearing.has(key)) clearing.set(key, await this.ledger.systemAccount(organizationId, { kind: 'clearing', network: row.network, asset: row.asset }, tx))
        return clearing.get(key)!
      }
      const postings = []
      for (const row of rows) {
        postings.push({
          organizationId,
          type: 'deposit',
          reference: row.id,
          legs: [{ accountId: await clearingOf(row), amount: `-${row.amount}` }, { accountId: row.account_id, amount: row.amount }],
          data: { transactionId: row.id },
        })
      }
      await this.ledger.postAll(postings, { tx })
      await this.finish(tx, organizationId, rows.map((row) => row.id), { status: 'completed', reason: null })
    })
  }

  private async finish(tx: Tx, organizationId: string, ids: readonly string[], to: { status: 'completed' | 'failed'; reason: TransactionStatusReason | null }): Promise<void> {
    const rows = await repository.transition(tx, organizationId, ids, 'processing', { ...to, at: new Date() })
    await announceTransactions(tx, TRANSACTION_EVENTS.statusChanged, rows)
  }
}
