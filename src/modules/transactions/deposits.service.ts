import BigNumber from 'bignumber.js'
import type { Db, Executor, JobRow, Tx } from '../../db/schema.ts'
import { ApiError, conflict, notFound } from '../../http/errors.ts'
import { isUuid, uuidv7 } from '../../lib/ids.ts'
import { enqueue, type JobHandlers } from '../../jobs/queue.ts'
import { parseAmount } from '../ledger/ledger.rules.ts'
import type { LedgerAssets, LedgerService } from '../ledger/ledger.service.ts'
import * as repository from './transactions.repository.ts'
import type { TransactionNode, TransactionStatusReason } from './transactions.schemas.ts'
import { announceTransaction, TRANSACTION_EVENTS } from './transactions.service.ts'

export const SETTLE_DEPOSIT_JOB = 'deposit.settle'

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

/**
 * Deposits: money that arrived for a user's account on a network. Recording one creates the transaction
 * (`processing`) and its settlement job in the caller's database transaction; the worker then posts it to the
 * ledger (network clearing → account) and completes it, both in one database transaction, once.
 */
export class DepositsService {
  private readonly db: Db
  private readonly ledger: LedgerService
  private readonly assets: LedgerAssets
  private readonly networks: NetworkKinds

  constructor(deps: { db: Db; ledger: LedgerService; assets: LedgerAssets; networks: NetworkKinds; jobs: JobHandlers }) {
    this.db = deps.db
    this.ledger = deps.ledger
    this.assets = deps.assets
    this.networks = deps.networks
    deps.jobs.register(SETTLE_DEPOSIT_JOB, (job) => this.settle(job))
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
      const account = await tx
        .selectFrom('accounts')
        .select(['id', 'asset', 'owner_id'])
        .where('organization_id', '=', input.organizationId)
        .where('owner_id', '=', input.userId)
        .where('id', '=', accountId)
        .executeTakeFirst()
      if (!account) throw notFound('account')
      if (account.asset !== input.asset) throw conflict('asset_not_supported', 'The account holds another asset', { accountId, asset: input.asset })
      const at = new Date()
      const row = {
        organization_id: input.organizationId,
        id: uuidv7(at.getTime()),
        owner_id: input.userId,
        type: 'deposit',
        status: 'processing' as const,
        reason: null,
        asset: input.asset,
        amount,
        account_id: accountId,
        network: input.network,
        origin: JSON.stringify(source),
        destination: JSON.stringify({ type: 'account', id: accountId, ownerId: input.userId }),
        reference: input.reference,
        created_at: at,
        updated_at: at,
        completed_at: null,
      }
      if (!(await repository.insertOnce(tx, row))) {
        const existing = await repository.findByReference(tx, input.organizationId, input.reference)
        const same = existing && existing.type === 'deposit' && existing.account_id === accountId && existing.asset === input.asset &&
          existing.network === input.network && new BigNumber(existing.amount).isEqualTo(amount)
        if (!same) throw conflict('transaction_reference_reused', 'This reference was already recorded for a different transaction')
        return { transactionId: existing.id }
      }
      const inserted = (await repository.find(tx, input.organizationId, row.id))!
      await announceTransaction(tx, TRANSACTION_EVENTS.created, inserted)
      await enqueue(tx, { type: SETTLE_DEPOSIT_JOB, organizationId: input.organizationId, payload: { organizationId: input.organizationId, transactionId: row.id } })
      return { transactionId: row.id }
    }
    return executor.isTransaction ? work(executor) : executor.transaction().execute(work)
  }

  /**
   * Settles a recorded deposit. The ledger posting (referenced by the transaction id) and the status change
   * commit together, and only while the transaction is still `processing`: a retried or duplicated job finds
   * it settled and does nothing. A deposit the ledger refuses for good (the account was archived meanwhile)
   * fails with a reason; the clearing account is then not debited, so the money stays recorded as owed by the
   * network, to be returned to its sender.
   */
  async settle(job: JobRow): Promise<void> {
    const { organizationId, transactionId } = job.payload as { organizationId: string; transactionId: string }
    try {
      await this.db.transaction().execute(async (tx) => {
        const row = await repository.lockInStatus(tx, organizationId, transactionId, 'processing')
        if (!row) return
        const clearing = await this.ledger.systemAccount(organizationId, { kind: 'clearing', network: row.network, asset: row.asset }, tx)
        await this.ledger.transfer(
          { organizationId, type: 'deposit', reference: row.id, from: clearing, to: row.account_id, amount: row.amount, data: { transactionId: row.id } },
          { tx },
        )
        await this.finish(tx, row.organization_id, row.id, { status: 'completed', reason: null })
      })
    } catch (error) {
      const reason = error instanceof ApiError ? PERMANENT_FAILURES[error.code] : undefined
      if (reason === undefined) throw error
      await this.db.transaction().execute((tx) => this.finish(tx, organizationId, transactionId, { status: 'failed', reason }))
    }
  }

  private async finish(tx: Tx, organizationId: string, id: string, to: { status: 'completed' | 'failed'; reason: TransactionStatusReason | null }): Promise<void> {
    const row = await repository.transition(tx, organizationId, id, 'processing', { ...to, at: new Date() })
    if (row) await announceTransaction(tx, TRANSACTION_EVENTS.statusChanged, row)
  }
}
