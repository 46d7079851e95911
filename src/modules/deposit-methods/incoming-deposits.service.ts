import type { Db } from '../../db/schema.ts'
import { DomainError } from '../../lib/errors.ts'
import type { IncomingBankPayment, IncomingChainTransfer } from '../../providers/rails/rails.ts'
import type { DepositsService, TransactionNode } from '../transactions/index.ts'
import type { DepositMethodsService, IncomingDestination } from './deposit-methods.service.ts'

/** Records an incoming deposit as a pending transaction and enqueues its settlement, in the caller's transaction. */
export type DepositRecorder = Pick<DepositsService, 'record'>

export function depositMethodNotFound(): DomainError {
  return new DomainError('entity_not_found', 'The account deposit method cannot be found', { details: { entity: 'depositMethod' } })
}

/**
 * The payments the bank and chain rails report (src/providers/rails). Each is resolved to the deposit method
 * its destination names within its organization, and recorded pending for the account that owns it; the
 * background worker settles it into the account. The rail's id of the payment is the deposit's reference, so a
 * payment reported twice is recorded once.
 */
export class IncomingDepositsService {
  private readonly db: Db
  private readonly depositMethods: DepositMethodsService
  private readonly deposits: DepositRecorder
  private readonly afterRecord: () => void

  constructor(deps: {
    db: Db
    depositMethods: DepositMethodsService
    deposits: DepositRecorder
    /** Called once a deposit is committed (e.g. to wake the worker rather than wait for its next poll). */
    afterRecord?: () => void
  }) {
    this.db = deps.db
    this.depositMethods = deps.depositMethods
    this.deposits = deps.deposits
    this.afterRecord = deps.afterRecord ?? (() => {})
  }

  bankPayment(payment: IncomingBankPayment): Promise<void> {
    const { network } = payment.recipient
    return this.record(payment, { type: 'bank', ...payment.recipient }, { type: 'bank-address', network })
  }

  chainTransfer(transfer: IncomingChainTransfer): Promise<void> {
    const { network, address, reference, senders } = transfer
    return this.record(
      transfer,
      { type: 'crypto', network, address, ...(reference !== undefined ? { reference } : {}) },
      { type: 'crypto-address', network, ...(senders[0] !== undefined ? { address: senders[0] } : {}) },
    )
  }

  private async record(payment: IncomingBankPayment | IncomingChainTransfer, destination: IncomingDestination, source: TransactionNode): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      const owner = await this.depositMethods.resolveDestination(tx, payment.organizationId, destination)
      if (!owner) throw depositMethodNotFound()
      if (owner.asset !== payment.asset) throw new DomainError('asset_not_supported', 'The asset is not supported', { details: { context: 'body', property: 'asset' } })
      await this.deposits.record(tx, {
        organizationId: payment.organizationId,
        userId: owner.ownerId,
        accountId: owner.accountId,
        asset: payment.asset,
        amount: payment.amount,
        network: destination.network,
        source,
        reference: payment.id,
      })
    })
    this.afterRecord()
  }
}
