import BigNumber from 'bignumber.js'
import type { TransactionRow, Tx } from '../db/schema.ts'
import { DomainError } from '../lib/errors.ts'
import type { LedgerService } from '../modules/ledger/index.ts'
import type { QuotedMovement, TransactionsService } from '../modules/transactions/index.ts'
import { RailUnavailableError, type PaymentRail, type RailCounterparty, type RailFailureReason, type RailOrder } from '../providers/rails/payouts.ts'
import { failTransaction, type PaymentFailureListener } from './failure-reasons.ts'
import { reserveStep, type Reserved } from './reserve.step.ts'
import { FlowFailure, FlowWait, type Flow, type FlowHandle, type FlowRunner, type FlowStep } from './runner.ts'
import { screenStep, type TravelRuleStepDeps, type WithTravelRule } from './travel-rule.steps.ts'

/**
 * Movements that leave Tessera, or come in, over a payment rail: withdrawals (to a bank account, a card, a crypto
 * address) and bank pulls (a deposit the user starts from their linked bank account). Both send one order to the
 * rail, wait for the rail's outcome, and only then move the money in the ledger; a refused or failed order fails
 * the transaction with the rail's reason, after releasing what was held.
 */

type PostingInput = Parameters<LedgerService['postAll']>[0][number]

/** The transaction's figures (its origin account: none for a bank pull; its rail network), then what the steps learn. */
export interface RailFlowData extends QuotedMovement, Reserved {
  travelRule?: WithTravelRule['travelRule']
  /** The rail's id of the order, once it took it. */
  orderId?: string
  /** The rail's trace of the payment, once it completed. */
  networkReference?: string
}

/**
 * Where movements' outside ends are, as the rail reaches them, keyed `<id>|<network>`, and who hears of the payments
 * that failed there (the external accounts module answers).
 */
export interface CounterpartyDirectory extends PaymentFailureListener {
  counterparties(organizationId: string, targets: readonly { id: string; network: string }[]): Promise<Map<string, RailCounterparty>>
}

const railFailure = (reason: RailFailureReason) => new DomainError('operation_not_allowed', `The payment rail refused the order: ${reason}`, { details: { reasons: [reason], reason } })

const railUnavailable = (error: unknown) =>
  error instanceof RailUnavailableError ? new DomainError('service_unavailable', 'The payment rail cannot be reached', { retryable: true, cause: error }) : error

/** The outside end of a movement: the destination of a withdrawal, the origin of a bank pull. */
function outsideNode(row: TransactionRow): Record<string, unknown> {
  return (row.type === 'withdrawal' ? row.destination : row.origin) as Record<string, unknown>
}

/** The orders of movements, their linked external accounts read together. */
async function ordersOf(rows: readonly TransactionRow[], directory: CounterpartyDirectory): Promise<RailOrder[]> {
  const linked = rows.map(outsideNode).filter((node) => node.type === 'external-account').map((node) => ({ id: String(node.id), network: String(node.network) }))
  const counterparties = linked.length === 0 ? new Map<string, RailCounterparty>() : await directory.counterparties(rows[0]!.organization_id, linked)
  return rows.map((row) => orderOf(row, counterparties))
}

function orderOf(row: TransactionRow, counterparties: ReadonlyMap<string, RailCounterparty>): RailOrder {
  const node = outsideNode(row)
  const network = String(node.network)
  const counterparty: RailCounterparty = node.type === 'crypto-address'
    ? { kind: 'crypto', network, address: String(node.address), ...(typeof node.reference === 'string' ? { reference: node.reference } : {}) }
    : counterparties.get(`${String(node.id)}|${network}`)!
  const payout = row.type === 'withdrawal'
  return {
    // The transaction and the step: whatever the retries and crashes, the rail sees one order.
    key: `${row.id}:submit`,
    organizationId: row.organization_id,
    direction: payout ? 'payout' : 'collection',
    asset: payout ? row.destination_asset : row.origin_asset,
    amount: payout ? row.destination_amount : row.origin_amount,
    counterparty,
    reference: row.id,
  }
}

/** What the rail flows are built from. */
export interface RailFlowDeps {
  runner: FlowRunner
  ledger: LedgerService
  transactions: TransactionsService
  rail: PaymentRail
  directory: CounterpartyDirectory
  batchSize: number
  /** Withdrawals wait for the travel rule's information where their quote asks for it. */
  travelRule: TravelRuleStepDeps
}

/** The two steps that talk to the rail: send the order once, then ask for its outcome until it is final. */
function railSteps(deps: RailFlowDeps): FlowStep<RailFlowData>[] {
  const { rail, transactions, directory } = deps
  return [
    {
      name: 'submit',
      async call(flows) {
        const rows = await transactions.findMany(flows[0]!.organizationId, flows.map((flow) => flow.id))
        // A transaction that is no longer processing (failed meanwhile) sends nothing.
        const live = rows.filter((row) => row.status === 'processing')
        const orders = await ordersOf(live, directory)
        let receipts
        try {
          receipts = orders.length === 0 ? [] : await rail.submit(orders)
        } catch (error) {
          throw railUnavailable(error)
        }
        const answers = new Map<string, Partial<RailFlowData> | FlowFailure>()
        receipts.forEach((receipt, i) => {
          answers.set(live[i]!.id, receipt.status === 'accepted' ? { orderId: receipt.orderId } : new FlowFailure(railFailure(receipt.reason)))
        })
        return answers
      },
    },
    {
      name: 'confirm',
      async call(flows) {
        const ids = flows.flatMap((flow) => (flow.data.orderId ? [flow.data.orderId] : []))
        let outcomes
        try {
          outcomes = await rail.outcomes(ids)
        } catch (error) {
          throw railUnavailable(error)
        }
        const answers = new Map<string, Partial<RailFlowData> | FlowWait | FlowFailure>()
        for (const flow of flows) {
          const outcome = flow.data.orderId ? outcomes.get(flow.data.orderId) : undefined
          if (!outcome) continue
          if (outcome.status === 'pending') answers.set(flow.id, new FlowWait(outcome.retryAt))
          else if (outcome.status === 'failed') answers.set(flow.id, new FlowFailure(railFailure(outcome.reason)))
          else answers.set(flow.id, outcome.networkReference !== undefined ? { networkReference: outcome.networkReference } : {})
        }
        return answers
      },
    },
  ]
}

/** The system accounts a settlement posts to: prepared outside its database transaction. */
export async function prepareAccounts(ledger: LedgerService, flows: readonly Flow<QuotedMovement>[]): Promise<void> {
  for (const { organizationId, data } of flows) {
    const railAsset = data.originAccountId === null ? data.originAsset : data.destinationAsset
    await ledger.systemAccount(organizationId, { kind: 'clearing', network: data.network!, asset: railAsset })
    await ledger.systemAccount(organizationId, { kind: 'fees', asset: data.originAsset })
    if (data.originAsset !== data.destinationAsset) {
      await ledger.systemAccount(organizationId, { kind: 'liquidity', asset: data.originAsset })
      await ledger.systemAccount(organizationId, { kind: 'liquidity', asset: data.destinationAsset })
    }
  }
}

function feeOf(row: TransactionRow): BigNumber {
  return row.fees.reduce((sum, fee) => sum.plus(fee.amount), new BigNumber(0))
}

/**
 * A withdrawal. Steps:
 * 1. `reserve` — holds what the origin pays (amount and fees), when the transaction is created, in its database
 *    transaction: a withdrawal the account cannot fund is refused and leaves nothing. Compensation releases it.
 * 2. `screen` — the travel rule (travel-rule.steps.ts): a withdrawal whose quote
 *    carries the `travel-rule` requirement waits `on-hold` until its beneficiary is described (a withdrawal form
 *    answered for the quote, or the request it opens, answered); refused or expired, it fails and the hold is released.
 * 3. `submit` — sends the order to the rail, once (its key is the transaction's); a refusal fails the withdrawal
 *    alone (the other orders of its batch are not sent again).
 * 4. `confirm` — asks the rail for the outcome, waiting (the job deferred, no attempt spent) while it is pending;
 *    a failure (a returned payment, a declined card credit) fails the withdrawal and the hold is released.
 * 5. `settle` — captures the hold: the fees to the fee account, the rest to the rail's clearing account of the
 *    network (through the liquidity accounts when the asset changes on the way); the withdrawal completes.
 */
export function defineWithdrawalFlow(deps: RailFlowDeps): FlowHandle<RailFlowData> {
  const { ledger, transactions } = deps
  return deps.runner.define<RailFlowData>({
    type: 'withdrawal',
    batchSize: deps.batchSize,
    // Once the rail took the order, only the rail's word fails the withdrawal: the money may be on its way.
    irreversibleAfter: 'submit',
    steps: [
      reserveStep<RailFlowData>(ledger),
      screenStep<RailFlowData>('withdrawal', deps.travelRule),
      ...railSteps(deps),
      {
        name: 'settle',
        prepare: (flows) => prepareAccounts(ledger, flows),
        async run(tx, flows) {
          await settleWithdrawals(tx, ledger, transactions, flows, deps.rail.cryptoExecution)
        },
      },
    ],
    onFailed: failTransaction(transactions, deps.directory),
  })
}

async function settleWithdrawals(tx: Tx, ledger: LedgerService, transactions: TransactionsService, flows: readonly Flow<RailFlowData>[], mode: PaymentRail['cryptoExecution']): Promise<void> {
  const organizationId = flows[0]!.organizationId
  const rows = await transactions.lockProcessing(tx, organizationId, flows.map((flow) => flow.id))
  if (rows.length === 0) return
  const holds = new Map(flows.map((flow) => [flow.id, flow.data.holdId]))
  const system = (account: Parameters<LedgerService['knownSystemAccount']>[1]) => ledger.knownSystemAccount(organizationId, account)
  const captures = []
  const postings: PostingInput[] = []
  for (const row of rows) {
    const holdId = holds.get(row.id)
    if (holdId === undefined) throw new Error(`Withdrawal ${row.id} reached settlement without a hold`)
    const fee = feeOf(row)
    const exchanged = new BigNumber(row.origin_amount).minus(fee).toFixed()
    const clearing = system({ kind: 'clearing', network: row.network!, asset: row.destination_asset })
    const exchange = row.origin_asset !== row.destination_asset
    const credits = [{ accountId: exchange ? system({ kind: 'liquidity', asset: row.origin_asset }) : clearing, amount: exchanged }]
    if (fee.isGreaterThan(0)) credits.push({ accountId: system({ kind: 'fees', asset: row.origin_asset }), amount: fee.toFixed() })
    captures.push({ organizationId, holdId, type: 'withdrawal', reference: `${row.id}:capture`, credits, data: { transactionId: row.id } })
    if (exchange) {
      postings.push({
        organizationId,
        type: 'withdrawal',
        reference: `${row.id}:deliver`,
        legs: [{ accountId: system({ kind: 'liquidity', asset: row.destination_asset }), amount: `-${row.destination_amount}` }, { accountId: clearing, amount: row.destination_amount }],
        data: { transactionId: row.id },
      })
    }
  }
  await ledger.captureAndPost({ organizationId, captures, postings }, { tx })
  const references = new Map(flows.map((flow) => [flow.id, flow.data.networkReference]))
  for (const row of rows) {
    const transactionHash = references.get(row.id)
    if (transactionHash !== undefined) await transactions.recordExecution(tx, row, { mode, transactionHash })
  }
  await transactions.apply(tx, rows, 'settle')
}

/**
 * A deposit pulled from the user's linked bank account (an ACH debit). Steps: `submit` (the collection order, once),
 * `confirm` (wait for the rail: a debit the bank returns, e.g. for insufficient funds, fails the deposit), then
 * `settle`: the rail's clearing account pays the account (through the liquidity accounts when the asset changes)
 * and the fees; the deposit completes. Nothing is held before, so a failure has nothing to release.
 */
export function defineBankPullFlow(deps: RailFlowDeps): FlowHandle<RailFlowData> {
  const { ledger, transactions } = deps
  return deps.runner.define<RailFlowData>({
    type: 'bank-pull',
    batchSize: deps.batchSize,
    // Once the rail took the collection, the money may be on its way in: it is never dropped on an error.
    irreversibleAfter: 'submit',
    steps: [
      ...railSteps(deps),
      {
        name: 'settle',
        prepare: (flows) => prepareAccounts(ledger, flows),
        run: (tx, flows) => settleIncoming(tx, ledger, transactions, flows),
      },
    ],
    onFailed: failTransaction(transactions, deps.directory),
  })
}

/**
 * Settles deposits from outside Tessera whose money the network has (a bank pull the rail completed, a captured
 * card payment): the network's clearing account pays the account (through the liquidity accounts when the asset
 * changes) and the fees, and the deposits complete. The posting's reference is the transaction's: never twice.
 */
export async function settleIncoming(tx: Tx, ledger: LedgerService, transactions: TransactionsService, flows: readonly Flow<QuotedMovement>[]): Promise<void> {
  const organizationId = flows[0]!.organizationId
  const rows = await transactions.lockProcessing(tx, organizationId, flows.map((flow) => flow.id))
  if (rows.length === 0) return
  const system = (account: Parameters<LedgerService['knownSystemAccount']>[1]) => ledger.knownSystemAccount(organizationId, account)
  const postings: PostingInput[] = rows.map((row) => {
    const fee = feeOf(row)
    const exchanged = new BigNumber(row.origin_amount).minus(fee).toFixed()
    const clearing = system({ kind: 'clearing', network: row.network!, asset: row.origin_asset })
    const legs = [{ accountId: clearing, amount: `-${row.origin_amount}` }]
    if (fee.isGreaterThan(0)) legs.push({ accountId: system({ kind: 'fees', asset: row.origin_asset }), amount: fee.toFixed() })
    if (row.origin_asset === row.destination_asset) {
      legs.push({ accountId: row.destination_account_id!, amount: row.destination_amount })
    } else {
      legs.push(
        { accountId: system({ kind: 'liquidity', asset: row.origin_asset }), amount: exchanged },
        { accountId: system({ kind: 'liquidity', asset: row.destination_asset }), amount: `-${row.destination_amount}` },
        { accountId: row.destination_account_id!, amount: row.destination_amount },
      )
    }
    return { organizationId, type: 'deposit', reference: `${row.id}:settle`, legs, data: { transactionId: row.id } }
  })
  await ledger.postAll(postings, { tx })
  await transactions.apply(tx, rows, 'settle')
}
