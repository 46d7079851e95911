import type { Db, RequestForInformationRow, TransactionRow } from '../db/schema.ts'
import { DomainError } from '../lib/errors.ts'
import type { LedgerService } from '../modules/ledger/index.ts'
import type { DepositStart, TransactionsService } from '../modules/transactions/index.ts'
import { needsTravelRule, type RequestContext, type RequestsForInformationService } from '../modules/travel-rule/index.ts'
import { FlowFailure, FlowWait, type Flow, type FlowStep } from './runner.ts'

/**
 * The travel rule in a money flow: one step, `screen`, that holds a crypto movement until its other party is
 * described, before a deposit settles and before a withdrawal is sent.
 *
 * Its call (outside the runner's database transaction) decides whether the movement needs a request for information:
 * a crypto deposit worth at least its asset's threshold from an address the user has not declared, a withdrawal whose
 * quote carries the `travel-rule` requirement. The common case (a deposit below the threshold) costs no query. When
 * one is needed and none exists yet, it holds the movement in a database transaction of its own, once (the request is
 * looked up first, under the transaction's lock): a withdrawal form answered for the quote is bound to the transaction
 * (nothing held when it was accepted), or a request is opened; the transaction goes `on-hold`
 * (`pending-requests-for-information`); a deposit's money moves from the network's clearing account to the suspense
 * account, where it is accounted for but nobody's to spend. Then it waits (the job deferred to the request's expiry,
 * no attempt spent; an answer wakes it): `ok` lets the flow go on — the step's run releases the transaction
 * (`processing`) with the next steps' effects — while `failed` or `expired` fail it with `travel-rule-verification-failed`.
 * A failed deposit's money stays in suspense, to be returned to its sender by the operator; a withdrawal's reservation
 * is released by the reserve step's compensation.
 */
export interface TravelRuleState {
  /** The quote a withdrawal executes, when the quote carried the `travel-rule` requirement. */
  quoteId?: string
  /** The request that held the movement, once answered. */
  requestId?: string
  /** A deposit's money waited in the suspense account (its settlement pays from there). */
  parked?: boolean
}

export interface WithTravelRule {
  travelRule?: TravelRuleState
}

/**
 * What a deposit's flow starts with, so that screening a deposit below the threshold reads nothing (flows started
 * before deposits carried their figures have only the network and the asset).
 */
export type ScreenedDeposit = Pick<DepositStart, 'network' | 'asset'> & Partial<DepositStart> & WithTravelRule

/** What the deposit screening needs to know. */
export interface TravelRuleScreening {
  /** What an amount of an asset is worth in US dollars at the mid now; null without a price. */
  valueUsd(asset: string, amount: string): Promise<string | null>
  /** Whether any of the addresses is declared by the user (a verified crypto external account of theirs). */
  declared(organizationId: string, ownerId: string, network: string, addresses: readonly string[]): Promise<boolean>
  /** Whether the network is a chain (the travel rule applies to crypto only). */
  isCrypto(network: string): boolean
}

export interface TravelRuleStepDeps {
  db: Db
  requests: RequestsForInformationService
  transactions: TransactionsService
  ledger: LedgerService
  screening: TravelRuleScreening
  /** The address of a crypto external account (a withdrawal's destination): the external accounts module answers. */
  directory: { cryptoAddress(organizationId: string, id: string): Promise<string | undefined> }
}

export const PENDING_INFORMATION = 'pending-requests-for-information' as const

/** The error that fails a movement whose request was refused or expired. */
export function travelRuleFailed(why: string | null): DomainError {
  return new DomainError('operation_not_allowed', `The travel-rule information was not accepted${why ? `: ${why}` : ''}`, {
    details: { reasons: ['travel-rule-verification-failed'], reason: 'travel-rule-verification-failed' },
  })
}

type Answer<D> = Partial<D> | FlowWait | FlowFailure

export function screenStep<D extends WithTravelRule>(direction: 'deposit' | 'withdrawal', deps: TravelRuleStepDeps): FlowStep<D> {
  const { db, requests, transactions, ledger, screening, directory } = deps

  /** The request a movement needs (undefined: none), with what it asks; reads only what the decision needs. */
  async function contextOf(flow: Flow<D>, row: () => Promise<TransactionRow | undefined>): Promise<RequestContext | undefined> {
    if (direction === 'withdrawal') {
      if (flow.data.travelRule?.quoteId === undefined) return undefined
      const transaction = await row()
      if (!transaction) return undefined
      const destination = transaction.destination as Record<string, unknown>
      const address = destination.type === 'external-account' ? await directory.cryptoAddress(flow.organizationId, String(destination.id)) : typeof destination.address === 'string' ? destination.address : undefined
      return { direction, party: 'beneficiary', network: transaction.network!, asset: transaction.destination_asset, amount: transaction.destination_amount, addresses: address ? [address] : [] }
    }
    const deposit = flow.data as unknown as ScreenedDeposit
    if (!screening.isCrypto(deposit.network)) return undefined
    let amount = deposit.amount
    let ownerId = deposit.ownerId
    let sender = deposit.sender
    if (amount === undefined || ownerId === undefined) {
      // A deposit recorded before its flow carried its figures.
      const transaction = await row()
      if (!transaction) return undefined
      amount = transaction.destination_amount
      ownerId = transaction.owner_id
      const origin = transaction.origin as Record<string, unknown>
      sender = typeof origin.address === 'string' ? origin.address : undefined
    }
    const addresses = sender !== undefined ? [sender] : []
    const valueUsd = await screening.valueUsd(deposit.asset, amount)
    // The threshold first: below it, whether the sender is declared does not matter.
    if (!needsTravelRule(requests.rules, { asset: deposit.asset, valueUsd, counterpartyDeclared: false })) return undefined
    if (addresses.length > 0 && (await screening.declared(flow.organizationId, ownerId, deposit.network, addresses))) return undefined
    return { direction, party: 'originator', network: deposit.network, asset: deposit.asset, amount, addresses }
  }

  /** Holds the movement for its request, in a database transaction of its own, once; answers the request. */
  async function hold(flow: Flow<D>, context: RequestContext): Promise<RequestForInformationRow | undefined> {
    return db.transaction().execute(async (tx) => {
      const [row] = await transactions.lockProcessing(tx, flow.organizationId, [flow.id])
      // Held already (by a run of this step that crashed before its answer), or no longer processing.
      const [existing] = await requests.ofTransactions(tx, flow.organizationId, [flow.id])
      if (existing || !row) return existing
      const at = new Date()
      const quoteId = flow.data.travelRule?.quoteId
      const request = (quoteId !== undefined ? await requests.claimForQuote(tx, flow.organizationId, quoteId, row.id, at) : undefined) ??
        (await requests.open(tx, { organizationId: flow.organizationId, ownerId: row.owner_id, transactionId: row.id, ...(quoteId !== undefined ? { quoteId } : {}), context, at }))
      if (direction === 'deposit') {
        await ledger.postAll([{
          organizationId: flow.organizationId,
          type: 'deposit',
          // Never twice: the posting's reference is the transaction's.
          reference: `${row.id}:park`,
          legs: [
            { accountId: ledger.knownSystemAccount(flow.organizationId, { kind: 'clearing', network: row.network!, asset: row.destination_asset }), amount: `-${row.destination_amount}` },
            { accountId: ledger.knownSystemAccount(flow.organizationId, { kind: 'suspense', asset: row.destination_asset }), amount: row.destination_amount },
          ],
          data: { transactionId: row.id },
        }], { tx })
      }
      // A withdrawal form answered and accepted before the quote was executed: nothing to wait for.
      if (request.status !== 'ok') await transactions.apply(tx, [row], 'hold', PENDING_INFORMATION)
      return request
    })
  }

  /** Where the flow goes, given its request. */
  async function standing(flow: Flow<D>, request: RequestForInformationRow): Promise<Answer<D>> {
    let current: RequestForInformationRow | undefined = request
    const now = new Date()
    if (current.status === 'pending' && current.expires_at.getTime() <= now.getTime()) current = await requests.expireIfDue(flow.organizationId, current.id, now)
    if (!current) return new FlowFailure(travelRuleFailed('the request is missing'))
    if (current.status === 'ok') return { travelRule: { ...flow.data.travelRule, requestId: current.id, ...(direction === 'deposit' ? { parked: true } : {}) } } as Partial<D>
    if (current.status === 'pending') return new FlowWait(current.expires_at)
    return new FlowFailure(travelRuleFailed(current.status === 'expired' ? 'nobody answered in time' : current.reason))
  }

  return {
    name: 'screen',
    async prepare(flows) {
      if (direction !== 'deposit') return
      for (const { organizationId, data } of flows) {
        const deposit = data as unknown as ScreenedDeposit
        if (!screening.isCrypto(deposit.network)) continue
        await ledger.systemAccount(organizationId, { kind: 'suspense', asset: deposit.asset })
        await ledger.systemAccount(organizationId, { kind: 'clearing', network: deposit.network, asset: deposit.asset })
      }
    },
    async call(flows) {
      const answers = new Map<string, Answer<D>>()
      const organizationId = flows[0]!.organizationId
      let rows: Map<string, TransactionRow> | undefined
      const rowOf = async (id: string) => {
        rows ??= new Map((await transactions.findMany(organizationId, flows.map((flow) => flow.id))).map((row) => [row.id, row]))
        const row = rows.get(id)
        return row?.status === 'processing' || row?.status === 'on-hold' ? row : undefined
      }
      const contexts = new Map<string, RequestContext>()
      for (const flow of flows) {
        const context = await contextOf(flow, () => rowOf(flow.id))
        if (context) contexts.set(flow.id, context)
      }
      if (contexts.size === 0) return answers
      const existing = new Map((await requests.ofTransactions(db, organizationId, [...contexts.keys()])).map((row) => [row.transaction_id!, row]))
      for (const flow of flows) {
        const context = contexts.get(flow.id)
        if (!context) continue
        const request = existing.get(flow.id) ?? (await hold(flow, context))
        // Not processing any more (it failed meanwhile): the flow's run finds nothing to move.
        if (request) answers.set(flow.id, await standing(flow, request))
      }
      return answers
    },
    async run(tx, flows) {
      const asked = flows.filter((flow) => flow.data.travelRule?.requestId !== undefined)
      if (asked.length === 0) return
      const held = await transactions.lockHeld(tx, asked[0]!.organizationId, asked.map((flow) => flow.id))
      await transactions.apply(tx, held, 'release')
    },
    async compensate(tx, flow) {
      // A request still pending when the flow fails for another reason expires with it.
      for (const request of await requests.ofTransactions(tx, flow.organizationId, [flow.id])) {
        if (request.status === 'pending') await requests.abandon(tx, flow.organizationId, request.id, new Date())
      }
    },
  }
}
