import { DomainError } from '../lib/errors.ts'
import type { LedgerService } from '../modules/ledger/index.ts'
import type { QuotedMovement, TransactionsService } from '../modules/transactions/index.ts'
import { CardProcessorUnavailableError, type CardPaymentFailureReason, type CardProcessor } from '../providers/cards/card-processor.ts'
import { failTransaction } from './failure-reasons.ts'
import { prepareAccounts, settleIncoming, type CounterpartyDirectory } from './rail.flows.ts'
import { FlowFailure, FlowWait, type FlowHandle, type FlowRunner } from './runner.ts'

/**
 * A card deposit: the user pays from a linked card into one of their accounts. The payment is authorized by the
 * card's issuer, with 3-D Secure: frictionless, or a challenge the cardholder answers on the issuer's page (the
 * transaction's `origin.node.confirmationUrl`), after which the issuer sends them back to the `returnUrl` the
 * client gave. Only a captured payment credits the account.
 */
export interface CardDepositData extends QuotedMovement {
  /** The issuer's authorization, once asked for. */
  authorizationId?: string
  /** Where the cardholder answers the issuer's 3-D Secure challenge, when one is asked. */
  confirmationUrl?: string
  /** The capture, once the money was taken. */
  captureId?: string
}

export interface CardDepositFlowDeps {
  runner: FlowRunner
  ledger: LedgerService
  transactions: TransactionsService
  processor: CardProcessor
  directory: CounterpartyDirectory
  batchSize: number
  /** How long a flow waits for a challenge's answer before it looks again (the processor's news wakes it sooner). */
  challengePollMs: number
}

const declined = (reason: CardPaymentFailureReason) => new DomainError('operation_not_allowed', `The card payment was declined: ${reason}`, { details: { reasons: [reason], reason } })

const unavailable = (error: unknown) =>
  error instanceof CardProcessorUnavailableError ? new DomainError('service_unavailable', 'The card processor cannot be reached', { retryable: true, cause: error }) : error

async function calling<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call()
  } catch (error) {
    throw unavailable(error)
  }
}

type Answers = Map<string, Partial<CardDepositData> | FlowWait | FlowFailure>

/**
 * Steps:
 * 1. `authorize` — asks the issuer to authorize the payment (key: the transaction's, so a retry is the same
 *    payment), made by the request that creates the transaction, the flow's job standing by should it die first. A
 *    decline fails the transaction with the issuer's reason; a challenge records its address on the transaction's
 *    origin (`confirmationUrl`).
 * 2. `authenticate` — while a challenge waits for the cardholder, waits (the job deferred, no attempt spent; the
 *    processor's news wakes it). A failed, abandoned or expired challenge fails the transaction
 *    (`card-unauthorized`). Frictionless payments pass at once.
 * 3. `capture` — takes the money, once (its key is the transaction's); a transaction that ended meanwhile is not
 *    captured but voided (the hold on the card released). Past this point nothing is undone on an
 *    error: a failing step is retried until it goes through; only the issuer's refusal of the capture fails it.
 * 4. `settle` — the card network's clearing account pays the account (through the liquidity accounts when the
 *    asset changes) and the fees; the deposit completes.
 */
export function defineCardDepositFlow(deps: CardDepositFlowDeps): FlowHandle<CardDepositData> {
  const { ledger, transactions, processor, directory } = deps
  return deps.runner.define<CardDepositData>({
    type: 'card-deposit',
    batchSize: deps.batchSize,
    irreversibleAfter: 'authenticate',
    steps: [
      {
        name: 'authorize',
        async call(flows) {
          const organizationId = flows[0]!.organizationId
          const rows = (await transactions.findMany(organizationId, flows.map((flow) => flow.id))).filter((row) => row.status === 'processing')
          const cards = rows.length === 0 ? new Map() : await directory.counterparties(organizationId, rows.map((row) => ({ id: String((row.origin as { id: string }).id), network: row.network! })))
          const returnUrls = new Map(flows.map((flow) => [flow.id, flow.data.returnUrl]))
          const answers: Answers = new Map()
          await Promise.all(rows.map(async (row) => {
            const card = cards.get(`${String((row.origin as { id: string }).id)}|${row.network!}`)
            if (card?.kind !== 'card') throw new Error(`Card deposit ${row.id} does not come from a card`)
            const authorization = await calling(() => processor.authorize({
              key: `${row.id}:authorize`,
              organizationId,
              reference: row.id,
              card: { number: card.number, expiryDate: card.expiryDate, network: card.network },
              amount: row.origin_amount,
              asset: row.origin_asset,
              returnUrl: returnUrls.get(row.id) ?? '',
            }))
            if (authorization.status === 'declined') answers.set(row.id, new FlowFailure(declined(authorization.reason)))
            else if (authorization.status === 'challenge') answers.set(row.id, { authorizationId: authorization.authorizationId, confirmationUrl: authorization.challengeUrl })
            else answers.set(row.id, { authorizationId: authorization.authorizationId })
          }))
          return answers
        },
        async run(tx, flows) {
          const challenged = flows.filter((flow) => flow.data.confirmationUrl !== undefined)
          if (challenged.length > 0) await transactions.recordConfirmationUrls(tx, challenged[0]!.organizationId, challenged.map((flow) => ({ id: flow.id, confirmationUrl: flow.data.confirmationUrl! })))
        },
      },
      {
        name: 'authenticate',
        async call(flows) {
          const answers: Answers = new Map()
          const challenged = flows.filter((flow) => flow.data.confirmationUrl !== undefined)
          for (const flow of flows) if (flow.data.confirmationUrl === undefined) answers.set(flow.id, {})
          if (challenged.length === 0) return answers
          const organizationId = challenged[0]!.organizationId
          const states = await calling(() => processor.authorizations(organizationId, challenged.map((flow) => flow.data.authorizationId!)))
          const now = Date.now()
          for (const flow of challenged) {
            const state = states.get(flow.data.authorizationId!)
            if (!state) answers.set(flow.id, new FlowFailure(declined('unspecified-error')))
            else if (state.status === 'declined') answers.set(flow.id, new FlowFailure(declined(state.reason)))
            else if (state.status === 'challenge') answers.set(flow.id, new FlowWait(new Date(Math.min(state.expiresAt.getTime(), now + deps.challengePollMs))))
            else answers.set(flow.id, {})
          }
          return answers
        },
      },
      {
        name: 'capture',
        async call(flows) {
          const answers: Answers = new Map()
          const live = new Set((await transactions.findMany(flows[0]!.organizationId, flows.map((flow) => flow.id))).filter((row) => row.status === 'processing').map((row) => row.id))
          await Promise.all(flows.map(async (flow) => {
            if (!live.has(flow.id)) {
              // The transaction ended meanwhile (it will not be credited): the hold on the card is released, nothing taken.
              await calling(() => processor.void({ organizationId: flow.organizationId, authorizationId: flow.data.authorizationId!, key: `${flow.id}:void` }))
              answers.set(flow.id, new FlowFailure(declined('unspecified-error')))
              return
            }
            const capture = await calling(() => processor.capture({ organizationId: flow.organizationId, authorizationId: flow.data.authorizationId!, key: `${flow.id}:capture` }))
            answers.set(flow.id, capture.status === 'captured' ? { captureId: capture.captureId } : new FlowFailure(declined(capture.reason)))
          }))
          return answers
        },
      },
      {
        name: 'settle',
        prepare: (flows) => prepareAccounts(ledger, flows),
        run: (tx, flows) => settleIncoming(tx, ledger, transactions, flows),
      },
    ],
    onFailed: failTransaction(transactions, directory),
  })
}
