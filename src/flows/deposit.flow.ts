import type { LedgerService } from '../modules/ledger/index.ts'
import type { TransactionsService } from '../modules/transactions/index.ts'
import { failTransaction } from './failure-reasons.ts'
import type { FlowHandle, FlowRunner } from './runner.ts'
import { screenStep, type ScreenedDeposit, type TravelRuleStepDeps } from './travel-rule.steps.ts'

/**
 * A deposit: money a rail reports for a user's account. Steps:
 * 1. `screen` — the travel rule (src/flows/travel-rule.steps.ts): a crypto deposit at or above its asset's
 *    threshold from an address the user has not declared waits `on-hold`, its money in the suspense account, until
 *    its request for information is answered; refused or expired, it fails and the money stays in suspense,
 *    accounted for, to be returned.
 * 2. `settle` — the network's clearing account (or the suspense account, for a deposit that was held) pays the account
 *    and the transaction completes, in one database transaction. Deposits due together settle together (those of
 *    one organization share the transaction), so that under load the clearing account, a row every deposit locks, is
 *    locked once per batch rather than once per deposit. A deposit the ledger refuses for good (the account was
 *    archived meanwhile) fails; the clearing account is then not debited, so the money stays recorded as owed by the
 *    network, to be returned to its sender.
 */
/** The network the money arrived on and its asset (which clearing account pays), what arrived, from whom, for whom. */
export type DepositFlowData = ScreenedDeposit

export function defineDepositFlow(deps: { runner: FlowRunner; ledger: LedgerService; transactions: TransactionsService; batchSize: number; travelRule: TravelRuleStepDeps }): FlowHandle<DepositFlowData> {
  const { ledger, transactions } = deps
  return deps.runner.define<DepositFlowData>({
    type: 'deposit',
    batchSize: deps.batchSize,
    steps: [
      screenStep<DepositFlowData>('deposit', deps.travelRule),
      {
        name: 'settle',
        async prepare(flows) {
          for (const { organizationId, data } of flows) {
            await ledger.systemAccount(organizationId, data.travelRule?.parked ? { kind: 'suspense', asset: data.asset } : { kind: 'clearing', network: data.network, asset: data.asset })
          }
        },
        async run(tx, flows) {
          const organizationId = flows[0]!.organizationId
          const rows = await transactions.lockProcessing(tx, organizationId, flows.map((flow) => flow.id))
          if (rows.length === 0) return
          const parked = new Set(flows.filter((flow) => flow.data.travelRule?.parked).map((flow) => flow.id))
          const postings = []
          for (const row of rows) {
            const payer = parked.has(row.id)
              ? ledger.knownSystemAccount(organizationId, { kind: 'suspense', asset: row.destination_asset })
              : ledger.knownSystemAccount(organizationId, { kind: 'clearing', network: row.network!, asset: row.destination_asset })
            postings.push({
              organizationId,
              type: 'deposit',
              // The transaction's id: a deposit can never be posted twice.
              reference: row.id,
              legs: [{ accountId: payer, amount: `-${row.destination_amount}` }, { accountId: row.destination_account_id!, amount: row.destination_amount }],
              data: { transactionId: row.id },
            })
          }
          await ledger.postAll(postings, { tx })
          await transactions.apply(tx, rows, 'settle')
        },
      },
    ],
    onFailed: failTransaction(transactions),
  })
}
