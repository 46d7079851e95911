import type { Db, Executor, RequestForInformationRow, TransactionRow, Tx } from '../../db/schema.ts'
import type { Principal } from '../../http/principal.ts'
import { DomainError, notFound, operationNotAllowed, requestInvalid } from '../../lib/errors.ts'
import { isUuid, uuidv7 } from '../../lib/ids.ts'
import { TravelRuleNodeUnavailableError, type TravelRuleNode } from '../../providers/travel-rule/travel-rule-node.ts'
import { readAnswer, type Answer, type Direction } from './answer.rules.ts'
import * as repository from './requests-for-information.repository.ts'
import { nextRequestStatus, type RequestForInformationEvent, type RequestForInformationStatus } from './rfi.machine.ts'
import { selfDeclarationSuffices, type TravelRuleRules } from './travel-rule.policy.ts'
import type { RequestForInformation } from './travel-rule.schemas.ts'
import { auditObject, withoutAudit } from '../audit/index.ts'

/** What a request asks about: the other end of the movement. */
export interface RequestContext {
  direction: Direction
  /** The side of the other party: the originator of a deposit, the beneficiary of a withdrawal. */
  party: 'originator' | 'beneficiary'
  network: string
  asset: string
  amount: string
  /** The other end's addresses (a deposit's senders, a withdrawal's destination). */
  addresses: string[]
}

/** The acting user's transaction, or 404 (the transactions module answers). */
export interface RequestTransactions {
  owned(principal: Principal, transactionId: string): Promise<TransactionRow>
}

/** Checks a signed message for an address of a network (the signature library, with the network's family and chain). */
export type MessageSignatureCheck = (input: { network: string; address: string; message: string; signature: string; publicKey?: string }) =>
  { valid: true; scheme: string } | { valid: false; reason: string }

export interface RequestsSettings {
  rules: TravelRuleRules
  /** How long a request waits for its answer before it expires (and fails its transaction). */
  ttlMs: number
}

/** A travel-rule request that did not end well fails its transaction for this reason. */
export const TRAVEL_RULE_FAILED = 'travel-rule-verification-failed'

const updateNotAllowed = () => operationNotAllowed('The current status of the request for information does not allow updates', ['request-for-information-update-not-allowed'])

export function presentRequest(row: RequestForInformationRow): RequestForInformation {
  return {
    id: row.id,
    ...(row.transaction_id !== null ? { transactionId: row.transaction_id } : {}),
    type: row.type,
    status: row.status,
    ...(row.data !== null ? { data: row.data } : {}),
    context: row.context as RequestForInformation['context'],
    ...(row.reason !== null ? { statusDetails: { reason: row.reason } } : {}),
    expiresAt: row.expires_at.toISOString(),
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  }
}

/**
 * Requests for information of the travel rule. A money flow opens one when a crypto movement's other party must be
 * described (src/flows/travel-rule.steps.ts) and holds the transaction until it is answered; the user answers it
 * through the API (`PUT`) or the travel-rule widget. An answer is read (answer.rules.ts), its proofs verified (a
 * signed message for real), then screened by the travel-rule node: accepted, the request is `ok` and the flow goes
 * on; refused, it `failed`, as it `expired` when nobody answered in time, and the transaction fails.
 */
export class RequestsForInformationService {
  private readonly db: Db
  private readonly transactions: RequestTransactions
  private readonly node: TravelRuleNode | null
  private readonly checkSignature: MessageSignatureCheck
  private readonly canonicalAddress: (network: string, address: string) => string
  private readonly valueUsd: (asset: string, amount: string) => Promise<string | null>
  private readonly settings: RequestsSettings
  private wakeFlow: (executor: Executor, organizationId: string, transactionId: string) => Promise<void> = async () => {}
  private afterWake: () => void = () => {}

  constructor(deps: {
    db: Db
    transactions: RequestTransactions
    /** Null where the deployment has no travel-rule network: answers are then kept after Tessera's own checks. */
    node: TravelRuleNode | null
    checkSignature: MessageSignatureCheck
    canonicalAddress: (network: string, address: string) => string
    valueUsd: (asset: string, amount: string) => Promise<string | null>
    settings: RequestsSettings
  }) {
    this.db = deps.db
    this.transactions = deps.transactions
    this.node = deps.node
    this.checkSignature = deps.checkSignature
    this.canonicalAddress = deps.canonicalAddress
    this.valueUsd = deps.valueUsd
    this.settings = deps.settings
  }

  /**
   * How the flow of a transaction whose request was answered or expired is woken to go on: `wake` runs in the
   * database transaction that moves the request (the news and the wake-up commit together), `after` once it committed.
   */
  onSettled(wake: (executor: Executor, organizationId: string, transactionId: string) => Promise<void>, after: () => void = () => {}): void {
    this.wakeFlow = wake
    this.afterWake = after
  }

  /** Moves a request and wakes its transaction's flow, in one database transaction. */
  private async moveAndWake(organizationId: string, id: string, from: RequestForInformationStatus, to: Parameters<typeof repository.move>[4]): Promise<RequestForInformationRow | undefined> {
    const moved = await this.db.transaction().execute(async (tx) => {
      const row = await repository.move(tx, organizationId, id, from, to)
      if (row?.transaction_id) await this.wakeFlow(tx, organizationId, row.transaction_id)
      return row
    })
    if (moved?.transaction_id) this.afterWake()
    return moved
  }

  get rules(): TravelRuleRules {
    return this.settings.rules
  }

  async list(principal: Principal, transactionId: string): Promise<RequestForInformation[]> {
    const transaction = await this.transactions.owned(principal, transactionId)
    return (await repository.listForTransactions(this.db, principal.organizationId, [transaction.id])).map(presentRequest)
  }

  async get(principal: Principal, transactionId: string, id: string): Promise<RequestForInformation> {
    const transaction = await this.transactions.owned(principal, transactionId)
    return presentRequest(await this.ofTransaction(principal.organizationId, transaction.id, id))
  }

  /**
   * Answers a pending request: 400 `request_invalid` for an answer that does not describe the other party, 409
   * `operation_not_allowed` for a proof that does not hold (`proof-invalid`, `signature-proof-required`) or a request
   * that is no longer pending (`request-for-information-update-not-allowed`), 503 while the node cannot be reached.
   * Nothing changes on any of them. The request is then `ok` (accepted) or `failed` (refused by the node).
   */
  async answer(principal: Principal, transactionId: string, id: string, data: Record<string, unknown>): Promise<RequestForInformation> {
    const transaction = await this.transactions.owned(principal, transactionId)
    const row = await this.ofTransaction(principal.organizationId, transaction.id, id)
    return presentRequest(await this.settle(row, data))
  }

  // For the travel-rule widget (src/modules/widgets).

  /**
   * The acting user's pending deposit request a deposit form answers: by its id, or the pending one of a transaction.
   * 404 (`request-for-information`, or `transaction`) when there is none; 409 when it is not a deposit's or no longer
   * pending.
   */
  async forDepositForm(principal: Principal, by: { requestForInformationId?: string; transactionId?: string }): Promise<RequestForInformationRow> {
    let row: RequestForInformationRow | undefined
    if (by.requestForInformationId !== undefined) {
      const found = isUuid(by.requestForInformationId) ? await repository.find(this.db, principal.organizationId, by.requestForInformationId.toLowerCase()) : undefined
      row = found && found.owner_id === principal.userId ? found : undefined
    } else {
      const transaction = await this.transactions.owned(principal, by.transactionId ?? '')
      const rows = await repository.listForTransactions(this.db, principal.organizationId, [transaction.id])
      row = rows.find((candidate) => candidate.status === 'pending') ?? rows[rows.length - 1]
    }
    if (!row) throw notFound('request-for-information', { context: 'body', property: by.requestForInformationId !== undefined ? 'data.requestForInformationId' : 'data.transactionId' })
    if ((row.context as unknown as RequestContext).direction !== 'deposit') throw operationNotAllowed('The request for information is not a deposit\'s', ['request-for-information-not-a-deposit'])
    if (row.status !== 'pending') throw updateNotAllowed()
    return row
  }

  /**
   * The request a withdrawal form answers for a quote not executed yet (opened now, or the one opened before):
   * answered and accepted, the transaction that executes the quote is not held.
   */
  async forWithdrawalForm(principal: Principal, quote: { id: string; expiresAt: Date; context: RequestContext }): Promise<RequestForInformationRow> {
    const ownerId = principal.userId!
    return this.db.transaction().execute(async (tx) => {
      const existing = await repository.findForQuote(tx, principal.organizationId, quote.id)
      if (existing) {
        if (existing.owner_id !== ownerId) throw notFound('quote', { context: 'body', property: 'data.quoteId' })
        if (existing.status !== 'pending') throw updateNotAllowed()
        return existing
      }
      const at = new Date()
      const id = uuidv7(at.getTime())
      auditObject('request-for-information', id)
      return repository.insert(tx, {
        organizationId: principal.organizationId,
        id,
        ownerId,
        transactionId: null,
        quoteId: quote.id,
        context: { ...quote.context },
        // Until the quote could still be executed, and no longer than a request of a transaction.
        expiresAt: new Date(Math.max(quote.expiresAt.getTime(), at.getTime() + this.settings.ttlMs)),
        at,
      })
    })
  }

  /** The request a widget session is bound to, if still the acting user's; 404 otherwise. */
  async bound(principal: Principal, id: string): Promise<RequestForInformationRow> {
    const row = isUuid(id) ? await repository.find(this.db, principal.organizationId, id) : undefined
    if (!row || row.owner_id !== principal.userId) throw notFound('request-for-information')
    return row
  }

  /** Answers the request a widget session is bound to: see `answer`. */
  async answerBound(principal: Principal, id: string, data: Record<string, unknown>): Promise<RequestForInformation> {
    return presentRequest(await this.settle(await this.bound(principal, id), data))
  }

  private async ofTransaction(organizationId: string, transactionId: string, id: string): Promise<RequestForInformationRow> {
    const row = await repository.find(this.db, organizationId, id)
    if (!row || row.transaction_id !== transactionId) throw notFound('request-for-information')
    return row
  }

  /** Reads, verifies and screens an answer, then moves the request: see `answer`. */
  private async settle(row: RequestForInformationRow, data: Record<string, unknown>): Promise<RequestForInformationRow> {
    if (row.status !== 'pending') throw updateNotAllowed()
    const now = new Date()
    if (row.expires_at.getTime() <= now.getTime()) {
      // What the expiry job would do: the refused answer itself changed nothing (no audit row).
      await withoutAudit(() => this.expireIfDue(row.organization_id, row.id, now))
      throw updateNotAllowed()
    }
    // The widget's answer names no request in its path.
    auditObject('request-for-information', row.id)
    const context = row.context as unknown as RequestContext
    const read = readAnswer(context.direction, data)
    if ('violations' in read) throw requestInvalid('body', read.violations)
    await this.checkProof(context, read.answer)
    let assessment: Awaited<ReturnType<TravelRuleNode['assess']>> = { status: 'accepted' }
    try {
      if (this.node) assessment = await this.node.assess({
        organizationId: row.organization_id,
        reference: row.id,
        direction: context.direction,
        network: context.network,
        asset: context.asset,
        amount: context.amount,
        addresses: context.addresses,
        counterparty: read.answer.counterparty,
        names: read.answer.names,
      })
    } catch (error) {
      if (error instanceof TravelRuleNodeUnavailableError) throw new DomainError('service_unavailable', 'The travel-rule network cannot be reached; try again later', { retryable: true, cause: error })
      throw error
    }
    const event: RequestForInformationEvent = assessment.status === 'accepted' ? 'accept' : 'refuse'
    const moved = await this.moveAndWake(row.organization_id, row.id, 'pending', {
      status: nextRequestStatus('pending', event)!,
      data,
      ...(assessment.status === 'refused' ? { reason: assessment.reason } : {}),
      at: new Date(),
      notExpiredAt: new Date(),
    })
    if (!moved) throw updateNotAllowed()
    return moved
  }

  /** 409 unless the answer's proof shows that the user controls the address, where the other party is themself. */
  private async checkProof(context: RequestContext, answer: Answer): Promise<void> {
    const proof = answer.proof
    if (proof === null) return
    if (proof.kind === 'self-declaration') {
      if (answer.counterparty === 'self' && !selfDeclarationSuffices(this.settings.rules, await this.valueUsd(context.asset, context.amount))) {
        throw new DomainError('operation_not_allowed', 'A movement of this value needs a message signed with the address\'s key', { details: { reasons: ['signature-proof-required'] } })
      }
      return
    }
    const known = context.addresses.map((address) => this.canonicalAddress(context.network, address))
    const claimed = this.canonicalAddress(context.network, proof.address)
    if (!known.includes(claimed)) {
      throw new DomainError('operation_not_allowed', 'The proof is for another address than the movement\'s', { details: { reasons: ['proof-invalid'], reason: 'address-mismatch' } })
    }
    const check = this.checkSignature({ network: context.network, address: proof.address, message: proof.message, signature: proof.signature, ...(proof.publicKey !== undefined ? { publicKey: proof.publicKey } : {}) })
    if (!check.valid) throw new DomainError('operation_not_allowed', 'The signature does not prove control of the address', { details: { reasons: ['proof-invalid'], reason: check.reason } })
  }

  // For money flows (src/flows/travel-rule.steps.ts).

  /** Opens a pending request for a transaction, in the flow's database transaction. */
  open(tx: Tx, input: { organizationId: string; ownerId: string; transactionId: string; quoteId?: string; context: RequestContext; at: Date }): Promise<RequestForInformationRow> {
    return repository.insert(tx, {
      organizationId: input.organizationId,
      id: uuidv7(input.at.getTime()),
      ownerId: input.ownerId,
      transactionId: input.transactionId,
      quoteId: input.quoteId ?? null,
      context: { ...input.context },
      expiresAt: new Date(input.at.getTime() + this.settings.ttlMs),
      at: input.at,
    })
  }

  /** The request a withdrawal form opened for the quote before it was executed, bound now to its transaction. */
  async claimForQuote(tx: Tx, organizationId: string, quoteId: string, transactionId: string, at: Date): Promise<RequestForInformationRow | undefined> {
    const row = await repository.findForQuote(tx, organizationId, quoteId)
    if (!row || row.transaction_id !== null) return row
    return repository.bindTransaction(tx, organizationId, row.id, transactionId, at)
  }

  /** The requests of the transactions (in `executor`: the pool, or a transaction holding their locks). */
  ofTransactions(executor: Executor, organizationId: string, transactionIds: readonly string[]): Promise<RequestForInformationRow[]> {
    return repository.listForTransactions(executor, organizationId, transactionIds)
  }

  /** Expires a pending request whose time ran out, committed on its own; answers it as it now stands. */
  async expireIfDue(organizationId: string, id: string, now: Date): Promise<RequestForInformationRow | undefined> {
    const moved = await this.moveAndWake(organizationId, id, 'pending', { status: nextRequestStatus('pending', 'expire')!, at: now, expiredAt: now })
    return moved ?? (await repository.find(this.db, organizationId, id))
  }

  /** A flow that failed for another reason leaves no request pending: it expires with it (compensation). */
  async abandon(executor: Executor, organizationId: string, id: string, at: Date): Promise<void> {
    await repository.move(executor, organizationId, id, 'pending', { status: 'expired', reason: 'transaction-failed', at })
  }
}
