import BigNumber from 'bignumber.js'
import type { Db, Executor, Tx } from '../../db/schema.ts'
import { conflict, DomainError, notFound } from '../../lib/errors.ts'
import { isUuid, uuidv7 } from '../../lib/ids.ts'
import { auditObject } from '../audit/index.ts'
import { parseAmount, type LedgerAssets } from '../ledger/index.ts'
import * as repository from './transactions.repository.ts'
import type { TransactionNode } from './transactions.schemas.ts'
import { announceTransactions, TRANSACTION_EVENTS, type MovementFlow } from './transactions.service.ts'

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

/** What a deposit's flow starts with: the network and asset (which clearing account pays), what arrived, for whom, from whom. */
export interface DepositStart {
  network: string
  asset: string
  amount: string
  ownerId: string
  sender?: string
}

/** The asset of an account of the user, read in the caller's transaction; the accounts module answers. */
export interface AccountAssets {
  find(executor: Executor, organizationId: string, ownerId: string, accountId: string): Promise<{ asset: string } | undefined>
}

/** Which networks exist and what kind they are (`crypto`, `fiat`, …). */
export interface NetworkKinds {
  networkType(code: string): string | undefined
}

/**
 * Deposits: money that arrived for a user's account on a network. Recording one creates the transaction
 * (`processing`) and starts its deposit flow (src/flows/deposit.flow.ts) in the caller's database transaction;
 * the worker then settles it once.
 */
export class DepositsService {
  private readonly db: Db
  private readonly accounts: AccountAssets
  private readonly assets: LedgerAssets
  private readonly networks: NetworkKinds
  private readonly flow: MovementFlow<DepositStart>

  constructor(deps: { db: Db; accounts: AccountAssets; assets: LedgerAssets; networks: NetworkKinds; flow: MovementFlow<DepositStart> }) {
    this.db = deps.db
    this.accounts = deps.accounts
    this.assets = deps.assets
    this.networks = deps.networks
    this.flow = deps.flow
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
      throw new DomainError('request_invalid', 'A deposit needs a reference of 1 to 255 characters')
    }
    if (!isUuid(input.accountId)) throw notFound('account')
    const accountId = input.accountId.toLowerCase()
    const source: TransactionNode = input.source ?? (networkType === 'crypto' ? { type: 'crypto-address', network: input.network } : { type: 'bank-address', network: input.network })

    const work = async (tx: Tx) => {
      const account = await this.accounts.find(tx, input.organizationId, input.userId, accountId)
      if (!account) throw notFound('account')
      if (account.asset !== input.asset) throw conflict('asset_not_supported', 'The account holds another asset', { accountId, asset: input.asset })
      const at = new Date()
      const id = uuidv7(at.getTime())
      auditObject('transaction', id)
      const inserted = await repository.insertDeposit(tx, {
        organization_id: input.organizationId,
        id,
        owner_id: input.userId,
        type: 'deposit',
        origin: source,
        origin_asset: input.asset,
        origin_amount: amount,
        origin_rate: '1',
        destination: { type: 'account', id: accountId, ownerId: input.userId },
        destination_asset: input.asset,
        destination_amount: amount,
        destination_rate: '1',
        denomination: { asset: input.asset, amount, rate: '1', target: 'destination' },
        fees: [],
        origin_account_id: null,
        destination_account_id: accountId,
        network: input.network,
        reference: input.reference,
        quote_id: null,
        quoted_at: at,
        created_at: at,
      })
      if (!inserted) {
        // Not inserted: the reference was recorded before.
        const existing = await repository.findByReference(tx, input.organizationId, input.reference)
        const same = existing && existing.type === 'deposit' && existing.destination_account_id === accountId && existing.destination_asset === input.asset &&
          existing.network === input.network && new BigNumber(existing.destination_amount).isEqualTo(amount)
        if (!same) throw conflict('transaction_reference_reused', 'This reference was already recorded for a different transaction')
        return { transactionId: existing.id }
      }
      await announceTransactions(tx, TRANSACTION_EVENTS.created, [inserted])
      const sender = source.type === 'crypto-address' ? source.address : undefined
      await this.flow.start(tx, { organizationId: input.organizationId, id: inserted.id, data: { network: input.network, asset: input.asset, amount, ownerId: input.userId, ...(sender !== undefined ? { sender } : {}) } })
      return { transactionId: inserted.id }
    }
    return executor.isTransaction ? work(executor as Tx) : executor.transaction().execute(work)
  }
}
