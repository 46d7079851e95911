import BigNumber from 'bignumber.js'
import type { Tx } from '../db/schema.ts'
import { DomainError } from '../lib/errors.ts'
import type { LedgerService } from '../modules/ledger/index.ts'
import type { QuotedMovement, TransactionsService } from '../modules/transactions/index.ts'
import { failTransaction } from './failure-reasons.ts'
import { reserveStep, type Reserved } from './reserve.step.ts'
import type { FlowHandle, FlowRunner } from './runner.ts'

/** What the origin pays, from which account: the transaction's own figures, given when the flow starts. */
export type TradeFlowData = QuotedMovement & Reserved

export interface VelocityLimit {
  /** Movements one user may start per window; 0 turns the check off. */
  maxMovements: number
  windowSeconds: number
}

/**
 * A movement between two accounts of the same user: a trade (two assets) or a transfer (one asset). Steps:
 * 1. `reserve` — holds what the origin pays (amount and fees). Runs when the transaction is created, in the same
 *    database transaction, so a commit the origin cannot fund is refused and leaves nothing. Compensation
 *    releases the hold.
 * 2. `screen` — velocity: a user who started more movements than allowed in the window fails with `velocity`.
 * 3. `exchange` — captures the hold: the origin pays the exchanged amount to the liquidity account of its asset
 *    and the fees to the fee account; the liquidity account of the destination asset pays the destination (a
 *    transfer pays the destination straight from the hold); the transaction completes.
 * Every posting is referenced by the transaction's id and step, so it is made once whatever the retries.
 */
export function defineTradeFlow(deps: { runner: FlowRunner; ledger: LedgerService; transactions: TransactionsService; velocity: VelocityLimit; batchSize: number }): FlowHandle<TradeFlowData> {
  const { ledger, transactions, velocity } = deps

  const exchange = async (tx: Tx, organizationId: string, ids: readonly string[], holds: ReadonlyMap<string, string>) => {
    const rows = await transactions.lockProcessing(tx, organizationId, ids)
    if (rows.length === 0) return
    const system = (kind: 'liquidity' | 'fees', asset: string) => ledger.knownSystemAccount(organizationId, { kind, asset })
    const plans = []
    for (const row of rows) {
      const fee = row.fees.reduce((sum, item) => sum.plus(item.amount), new BigNumber(0))
      const exchanged = new BigNumber(row.origin_amount).minus(fee)
      const credits = row.type === 'transfer'
        ? [{ accountId: row.destination_account_id!, amount: exchanged.toFixed() }]
        : [{ accountId: system('liquidity', row.origin_asset), amount: exchanged.toFixed() }]
      if (fee.isGreaterThan(0)) credits.push({ accountId: system('fees', row.origin_asset), amount: fee.toFixed() })
      const delivery = row.type === 'trade'
        ? { accountId: system('liquidity', row.destination_asset), destinationId: row.destination_account_id!, amount: row.destination_amount }
        : null
      plans.push({ row, credits, delivery })
    }
    const captures = []
    const postings = []
    for (const { row, credits, delivery } of plans) {
      const holdId = holds.get(row.id)
      if (holdId === undefined) throw new Error(`Movement ${row.id} reached the exchange without a hold`)
      captures.push({ organizationId, holdId, type: row.type, reference: `${row.id}:capture`, credits, data: { transactionId: row.id } })
      if (delivery) {
        postings.push({
          organizationId,
          type: row.type,
          reference: `${row.id}:deliver`,
          legs: [{ accountId: delivery.accountId, amount: `-${delivery.amount}` }, { accountId: delivery.destinationId, amount: delivery.amount }],
          data: { transactionId: row.id },
        })
      }
    }
    // The whole batch in one ledger write: its accounts locked once, in the ledger's one order.
    await ledger.captureAndPost({ organizationId, captures, postings }, { tx })
    await transactions.apply(tx, rows, 'settle')
  }

  return deps.runner.define<TradeFlowData>({
    type: 'trade',
    batchSize: deps.batchSize,
    steps: [
      reserveStep<TradeFlowData>(ledger),
      {
        name: 'screen',
        async run(tx, flows) {
          if (velocity.maxMovements === 0) return
          for (const flow of flows) {
            const [row] = await transactions.lockProcessing(tx, flow.organizationId, [flow.id])
            if (!row) continue
            const since = new Date(row.created_at.getTime() - velocity.windowSeconds * 1000)
            const before = await transactions.countMovements(tx, flow.organizationId, row.owner_id, since, row.created_at)
            if (before >= velocity.maxMovements) {
              throw new DomainError('operation_not_allowed', `More than ${velocity.maxMovements} movements in ${velocity.windowSeconds} seconds`, {
                details: { reasons: ['velocity'], reason: 'velocity' },
              })
            }
          }
        },
      },
      {
        name: 'exchange',
        async prepare(flows) {
          for (const { organizationId, data } of flows) {
            await ledger.systemAccount(organizationId, { kind: 'liquidity', asset: data.originAsset })
            await ledger.systemAccount(organizationId, { kind: 'fees', asset: data.originAsset })
            await ledger.systemAccount(organizationId, { kind: 'liquidity', asset: data.destinationAsset })
          }
        },
        async run(tx, flows) {
          await exchange(tx, flows[0]!.organizationId, flows.map((flow) => flow.id), new Map(flows.map((flow) => [flow.id, flow.data.holdId!])))
        },
      },
    ],
    onFailed: failTransaction(transactions),
  })
}
