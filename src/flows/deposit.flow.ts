import type { LedgerService } from '../modules/ledger/index.ts'
import type { TransactionsService } from '../modules/transactions/index.ts'
import { failTransaction } from './failure-reasons.ts'
import type { FlowHandle, FlowRunner } from './runner.ts'

/**
 * A deposit: money a rail reports for a user's account. One step, `settle`: the network's clearing account pays
 * the account and the transaction completes, in one database transaction. Deposits due together settle together
 * (those of one organization share the transaction), so that under load the clearing account, a row every
 * deposit locks, is locked once per batch rather than once per deposit. A deposit the ledger refuses for good
 * (the account was archived meanwhile) fails; the clearing account is then not debited, so the money stays
 * recorded as owed by the network, to be returned to its sender.
 */
export interface DepositFlowData {
  /** The network the money arrived on, and its asset: which clearing account pays. */
  network: string
  asset: string
}

export function defineDepositFlow(deps: { runner: FlowRunner; ledger: LedgerService; transactions: TransactionsService; batchSize: number }): FlowHandle<DepositFlowData> {
  const { ledger, transactions } = deps
  return deps.runner.define<DepositFlowData>({
    type: 'deposit',
    batchSize: deps.batchSize,
    steps: [
      {
        name: 'settle',
        async prepare(flows) {
          for (const { organizationId, data } of flows) await ledger.systemAccount(organizationId, { kind: 'clearing', network: data.network, asset: data.asset })
        },
        async run(tx, flows) {
          const organizationId = flows[0]!.organizationId
          const rows = await transactions.lockProcessing(tx, organizationId, flows.map((flow) => flow.id))
          if (rows.length === 0) return
          const postings = []
          for (const row of rows) {
            const clearing = ledger.knownSystemAccount(organizationId, { kind: 'clearing', network: row.network!, asset: row.destination_asset })
            postings.push({
              organizationId,
              type: 'deposit',
              // The transaction's id: a deposit can never be posted twice.
              reference: row.id,
              legs: [{ accountId: clearing, amount: `-${row.destination_amount}` }, { accountId: row.destination_account_id!, amount: row.destination_amount }],
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
