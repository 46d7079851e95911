import type { Db, Executor, QuoteRow, StoredDenomination, StoredFee, TransactionRow, Tx } from '../../db/schema.ts'
import { pageWindow, type PageWindow, type PaginationParams } from '../../http/pagination.ts'
import type { Principal } from '../../http/principal.ts'
import { DomainError, notFound, operationNotAllowed, type ErrorBody } from '../../lib/errors.ts'
import { isUuid, uuidv7 } from '../../lib/ids.ts'
import { auditObject } from '../audit/index.ts'
import { recordEvents } from '../events/index.ts'
import { formatAmount } from '../ledger/index.ts'
import { attachInitialMetadata } from '../metadata/index.ts'
import { isTransactionKind, nextStatus, type TransactionEvent, type TransactionKind } from './transaction.machine.ts'
import * as repository from './transactions.repository.ts'
import type { CreateTransactionBody, Transaction, TransactionNode, TransactionStatusReason } from './transactions.schemas.ts'

export const TRANSACTION_EVENTS = {
  created: 'core.transaction.created',
  statusChanged: 'core.transaction.status-changed',
} as const

/** The two ends of a transaction, as recorded. */
export interface TransactionTerms {
  originAsset: string
  originAmount: string
  destinationAsset: string
  destinationAmount: string
  createdAt: Date
}

/** A movement that already happened, as imported history records it (`TransactionsService.recordCompleted`). */
export interface CompletedMovement {
  organizationId: string
  ownerId: string
  type: 'deposit' | 'trade' | 'withdrawal'
  /** Each end as a transaction stores it; `accountId` is the user's account at that end, if any. */
  origin: { asset: string; amount: string; rate: string; node: TransactionNode; accountId: string | null }
  destination: { asset: string; amount: string; rate: string; node: TransactionNode; accountId: string | null }
  denomination: StoredDenomination
  fees: StoredFee[]
  /** The rail network it arrived on or left by; null inside Tessera. */
  network: string | null
  /** When it was quoted, created and completed. */
  at: Date
}

/** A transaction as the API shows it. */
export function presentTransaction(row: TransactionRow): Transaction {
  return {
    id: row.id,
    type: row.type,
    origin: { asset: row.origin_asset, amount: formatAmount(row.origin_amount), rate: row.origin_rate, node: row.origin as TransactionNode },
    destination: { asset: row.destination_asset, amount: formatAmount(row.destination_amount), rate: row.destination_rate, node: row.destination as TransactionNode },
    denomination: { ...row.denomination, amount: formatAmount(row.denomination.amount) },
    fees: row.fees.map((fee) => ({ ...fee, amount: formatAmount(fee.amount) })),
    status: row.status,
    ...(row.reason !== null ? { statusDetails: { reason: row.reason as TransactionStatusReason } } : {}),
    quotedAt: row.quoted_at.toISOString(),
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    ...(row.completed_at !== null ? { completedAt: row.completed_at.toISOString() } : {}),
  }
}

/** Records the outbox events of new transactions or of their status change, in the transaction that made it. */
export async function announceTransactions(executor: Executor, type: (typeof TRANSACTION_EVENTS)[keyof typeof TRANSACTION_EVENTS], rows: readonly TransactionRow[]): Promise<void> {
  await recordEvents(
    executor,
    rows.map((row) => ({
      organizationId: row.organization_id,
      type,
      subject: { type: 'transaction', id: row.id },
      userId: row.owner_id,
      data: { transaction: presentTransaction(row) },
      occurredAt: row.updated_at,
    })),
  )
}

/** Which of the acting user's accounts exist for them (not archived); the accounts module answers. */
export interface AccountDirectory {
  ownedAccount(principal: Principal, accountId: string): Promise<string | null>
}

/** A quote taken for execution (the quotes module's `use`): what the transaction copies from it. */
export type UsedQuote = Omit<QuoteRow, 'organization_id' | 'owner_id' | 'expires_at' | 'used_at'>

export interface QuoteUser {
  use(tx: Tx, principal: Principal, quoteId: string, at: Date): Promise<UsedQuote>
}

/** A second withdrawal of the same amount to the same place within this window is refused (spec §8). */
export const DUPLICATE_WITHDRAWAL_WINDOW_MS = 2 * 60_000

/** What the flow of a quoted movement starts with: what its origin pays, from which account (none for a bank pull). */
export interface QuotedMovement {
  originAccountId: string | null
  originAmount: string
  originAsset: string
  destinationAsset: string
  /** The rail network of a movement that leaves or enters Tessera; null inside it. */
  network: string | null
  /** Where a payer who authenticates with their bank (3-D Secure) is sent back to, when the movement needs it. */
  returnUrl?: string
  /** The movement's other party must be declared (the travel rule): the quote a withdrawal form may have answered. */
  travelRule?: { quoteId?: string }
}

/** How a kind of movement is carried out once recorded: its money flow (src/flows), started in the same transaction. */
export interface MovementFlow<D = Record<string, unknown>> {
  start(tx: Tx, input: { organizationId: string; id: string; data: D; inline?: number; jobDelayMs?: number }): Promise<void>
  /** Runs the flow's next steps now, after its start committed (see FlowHandle.advance); answers the error left for its job. */
  advance(organizationId: string, id: string, steps: number): Promise<unknown>
  /** Makes the flows' jobs due now. */
  wake(organizationId: string, ids: readonly string[]): Promise<number>
}

/** How a kind of movement is executed: its flow, the steps run in the creating transaction, the calls made right after it. */
interface Execution {
  flow: MovementFlow<QuotedMovement>
  inline: number
  afterCommit: number
}

/** A quote that must be authorized by the payer with 3-D Secure (a card deposit) is carried out by a flow of its own. */
const AUTHORIZE_3DS = 'authorize:3ds'
/** A quote whose other party must be declared (the travel rule): its flow asks for the information, if not given yet. */
const TRAVEL_RULE = 'travel-rule'

/** The route of a quote among the flows: its kind, or `deposit:card` for a deposit the cardholder authorizes. */
export function executionRoute(quote: Pick<UsedQuote, 'kind' | 'requirements'>): string {
  return quote.kind === 'deposit' && (quote.requirements as string[]).includes(AUTHORIZE_3DS) ? 'deposit:card' : quote.kind
}

/** How long the job of a flow whose first call the request makes waits before it takes over (the request died). */
const AFTER_COMMIT_JOB_DELAY_MS = 10_000

/**
 * Guards a money-moving creation with its `Idempotency-Key`: `claim` records the key inside the creation's own
 * database transaction (refusing, by throwing, when a request with the key already committed), and `complete`
 * stores the answer there too. Key and movement commit together or not at all. An answer that the request
 * completes after the commit (an outside party's first word) replaces the stored one, so that a retry gets it.
 */
export interface AtomicIdempotency {
  claim(tx: Tx): Promise<void>
  complete(tx: Tx, status: number, body: unknown): Promise<void>
  replace(status: number, body: unknown): Promise<void>
}

/** The one spelling of an address on a network (the reference module's networks answer). */
export type CanonicalAddress = (network: string, address: string, reference?: string) => string

/**
 * One key for a place outside Tessera, so that movements to it can be found again: the external account, or the
 * crypto address in its one spelling on its network (with its tag).
 */
export function counterpartyOf(node: Record<string, unknown>, canonical: CanonicalAddress): string | null {
  if (node.type === 'external-account') return `external-account:${String(node.id)}`
  if (node.type === 'crypto-address') {
    const network = String(node.network)
    return `crypto-address:${network}:${canonical(network, String(node.address), typeof node.reference === 'string' ? node.reference : undefined)}`
  }
  return null
}

/**
 * Where the payer comes back to after the 3-D Secure challenge of a quote that needs one; 409
 * `operation_not_allowed` (`missing-return-url`) without it.
 */
function returnUrlOf(body: CreateTransactionBody): string {
  const requirement = body.params?.requirements?.find((item) => item.name === AUTHORIZE_3DS)
  const returnUrl = requirement?.returnUrl ?? body.params?.returnUrl
  if (returnUrl === undefined) throw operationNotAllowed('Transaction not allowed due to a missing return URL', ['missing-return-url'])
  return returnUrl
}

function actingUser(principal: Principal): string {
  if (principal.userId === null) throw notFound('user')
  return principal.userId
}

type Page = { transactions: Transaction[]; window: PageWindow; anchor: string | undefined; hasNext: boolean }
type ListQuery = PaginationParams & { status?: string; type?: string }

const list = (value: string | undefined) => (value === undefined ? undefined : [...new Set(value.split(','))])

/**
 * The users' transactions: the read side, the execution of quotes (`POST /core/transactions`), and the status
 * changes the money flows make. Every status change goes through the state machine and writes its event in the
 * same database transaction.
 */
export class TransactionsService {
  private readonly db: Db
  private readonly accounts: AccountDirectory
  private readonly quotes: QuoteUser
  private readonly flows = new Map<string, Execution>()
  private readonly afterCreate: () => void
  private readonly canonicalAddress: CanonicalAddress

  constructor(deps: { db: Db; accounts: AccountDirectory; quotes: QuoteUser; canonicalAddress: CanonicalAddress; afterCreate?: () => void }) {
    this.db = deps.db
    this.canonicalAddress = deps.canonicalAddress
    this.accounts = deps.accounts
    this.quotes = deps.quotes
    this.afterCreate = deps.afterCreate ?? (() => {})
  }

  /**
   * The flow that carries out quotes of a route (a kind, `trade`, `transfer`, …, or `deposit:card`), how many of
   * its first steps run when the transaction is created (1 by default: the hold on the origin account), and how
   * many the request makes right after the creation committed (an outside party's answer the response shows, such
   * as a card issuer's 3-D Secure challenge), its job standing by meanwhile.
   */
  executeWith(route: TransactionKind | 'deposit:card', flow: MovementFlow<QuotedMovement>, options: { inline?: number; afterCommit?: number } = {}): void {
    this.flows.set(route, { flow, inline: options.inline ?? 1, afterCommit: options.afterCommit ?? 0 })
  }

  /**
   * Executes a quote: marks it used, records the transaction (`processing`) and starts its flow, whose first step
   * (holding the origin's money) runs here, so that a commit the origin cannot fund is refused (409
   * `insufficient_balance`) and leaves nothing behind. The rest of the flow runs in the background.
   */
  async create(principal: Principal, body: CreateTransactionBody, idempotency: AtomicIdempotency | null = null): Promise<{ transaction: Transaction; errors?: { metadata: ErrorBody } }> {
    const ownerId = actingUser(principal)
    // A widget session acts for one quote only: any other is, for it, a quote that does not exist.
    if (principal.widget?.quoteId !== undefined && principal.widget.quoteId !== body.quoteId.toLowerCase()) throw notFound('quote')
    let started: { execution: Execution; organizationId: string; id: string } | undefined
    const result = await this.db.transaction().execute(async (tx) => {
      await idempotency?.claim(tx)
      const at = new Date()
      const quote = await this.quotes.use(tx, principal, body.quoteId, at)
      const execution = this.flows.get(executionRoute(quote))
      if (!execution || !isTransactionKind(quote.kind)) throw new Error(`No flow executes quotes of kind ${quote.kind}`)
      const returnUrl = (quote.requirements as string[]).includes(AUTHORIZE_3DS) ? returnUrlOf(body) : undefined
      const outside = quote.kind === 'withdrawal' ? quote.destination : quote.kind === 'deposit' ? quote.origin : null
      const counterparty = outside ? counterpartyOf(outside, this.canonicalAddress) : null
      if (quote.kind === 'withdrawal' && counterparty !== null) await this.refuseDuplicateWithdrawal(tx, principal.organizationId, ownerId, counterparty, quote, at)
      const id = uuidv7(at.getTime())
      auditObject('transaction', id)
      const row = await repository.insert(tx, {
        organization_id: principal.organizationId,
        id,
        owner_id: ownerId,
        type: quote.kind,
        origin: quote.origin,
        origin_asset: quote.origin_asset,
        origin_amount: quote.origin_amount,
        origin_rate: quote.origin_rate,
        destination: quote.destination,
        destination_asset: quote.destination_asset,
        destination_amount: quote.destination_amount,
        destination_rate: quote.destination_rate,
        denomination: quote.denomination,
        fees: quote.fees,
        origin_account_id: quote.origin_account_id,
        destination_account_id: quote.destination_account_id,
        network: outside && typeof outside.network === 'string' ? outside.network : null,
        reference: null,
        counterparty,
        quote_id: quote.id,
        quoted_at: quote.created_at,
        created_at: at,
      })
      // Created first, so that a status the inline steps give it (on hold for information) follows in the outbox.
      await announceTransactions(tx, TRANSACTION_EVENTS.created, [row])
      try {
        const data = {
          originAccountId: quote.origin_account_id,
          originAmount: quote.origin_amount,
          originAsset: quote.origin_asset,
          destinationAsset: quote.destination_asset,
          network: row.network,
          ...(returnUrl !== undefined ? { returnUrl } : {}),
          ...((quote.requirements as string[]).includes(TRAVEL_RULE) ? { travelRule: { quoteId: quote.id } } : {}),
        }
        await execution.flow.start(tx, {
          organizationId: principal.organizationId,
          id: row.id,
          data,
          inline: execution.inline,
          ...(execution.afterCommit > 0 ? { jobDelayMs: AFTER_COMMIT_JOB_DELAY_MS } : {}),
        })
        started = { execution, organizationId: principal.organizationId, id: row.id }
      } catch (error) {
        // The ledger names its account; the API names the request's part, as the reference does.
        if (error instanceof DomainError && error.code === 'insufficient_balance') {
          throw new DomainError('insufficient_balance', error.message, { details: { context: 'body', property: 'origin' } })
        }
        throw error
      }
      const metadataError = body.metadata !== undefined
        ? await attachInitialMetadata(tx, { organizationId: principal.organizationId, entityType: 'transactions', entityId: row.id }, body.metadata, at)
        : null
      // As the inline steps left it.
      const [current] = execution.inline > 1 ? await repository.findMany(tx, principal.organizationId, [row.id]) : [row]
      const response = { transaction: presentTransaction(current!), ...(metadataError ? { errors: { metadata: metadataError.toBody() } } : {}) }
      await idempotency?.complete(tx, 201, response)
      return response
    })
    if (started && started.execution.afterCommit > 0) {
      const { execution, organizationId, id } = started
      // The outside party's first answer (a 3-D Secure challenge to show) is part of the response. Whatever
      // happens here, the flow's job resumes it; it is made due now so that the rest does not wait.
      await execution.flow.advance(organizationId, id, execution.afterCommit)
      await execution.flow.wake(organizationId, [id])
      this.afterCreate()
      const [row] = await repository.findMany(this.db, organizationId, [id])
      const answer = { ...result, transaction: presentTransaction(row!) }
      await idempotency?.replace(201, answer)
      return answer
    }
    this.afterCreate()
    return result
  }

  list(principal: Principal, query: ListQuery): Promise<Page> {
    return this.page(principal, undefined, query)
  }

  async listForAccount(principal: Principal, accountId: string, query: ListQuery): Promise<Page> {
    const id = await this.accounts.ownedAccount(principal, accountId)
    if (id === null) throw notFound('account')
    return this.page(principal, id, query)
  }

  async get(principal: Principal, transactionId: string): Promise<Transaction> {
    const ownerId = actingUser(principal)
    const row = await repository.findOwned(this.db, principal.organizationId, ownerId, transactionId)
    // A widget session sees the transaction of its own quote only.
    if (!row || (principal.widget !== undefined && row.quote_id !== principal.widget.quoteId)) throw notFound('transaction')
    return presentTransaction(row)
  }

  /** The transaction `/core/transactions/{entityId}/metadata` names, when it is the acting user's. */
  async metadataOwner(principal: Principal, entityId: string): Promise<string | null> {
    if (principal.userId === null) return null
    const row = await repository.findOwned(this.db, principal.organizationId, principal.userId, entityId)
    return row?.id ?? null
  }

  /** For flows: locks the transactions still `processing`, in id order (the others moved on and are left out). */
  lockProcessing(tx: Tx, organizationId: string, ids: readonly string[]): Promise<TransactionRow[]> {
    return repository.lockInStatus(tx, organizationId, ids, ['processing'])
  }

  /** For flows: locks the transactions not final yet (`processing` or `on-hold`), in id order. */
  lockLive(tx: Tx, organizationId: string, ids: readonly string[]): Promise<TransactionRow[]> {
    return repository.lockInStatus(tx, organizationId, ids, ['processing', 'on-hold'])
  }

  /** For flows: locks the transactions `on-hold`, in id order. */
  lockHeld(tx: Tx, organizationId: string, ids: readonly string[]): Promise<TransactionRow[]> {
    return repository.lockInStatus(tx, organizationId, ids, ['on-hold'])
  }

  /** The acting user's transaction (a widget session's: only its own), or 404 `entity_not_found` (entity `transaction`). */
  async owned(principal: Principal, transactionId: string): Promise<TransactionRow> {
    const ownerId = actingUser(principal)
    const row = isUuid(transactionId) ? await repository.findOwned(this.db, principal.organizationId, ownerId, transactionId.toLowerCase()) : undefined
    if (!row) throw notFound('transaction')
    return row
  }

  /**
   * For flows: applies an event to locked transactions through the state machine, writes the new status
   * conditionally on the old one, and records the status-changed events. A move the machine refuses is a bug
   * in the flow and throws.
   */
  async apply(tx: Tx, rows: readonly TransactionRow[], event: TransactionEvent, reason: TransactionStatusReason | null = null): Promise<TransactionRow[]> {
    const moved: TransactionRow[] = []
    const at = new Date()
    for (const group of Map.groupBy(rows, (row) => `${row.organization_id}|${row.type}|${row.status}`).values()) {
      const { organization_id: organizationId, type, status } = group[0]!
      if (!isTransactionKind(type)) throw new Error(`Transaction kind ${type} has no state machine`)
      const to = nextStatus(type, status, event)
      if (to === null) throw new Error(`A ${type} cannot ${event} from ${status}`)
      // A failure and a hold say why; a release or a settlement clears the reason.
      const why = to === 'failed' ? (reason ?? 'unspecified-error') : to === 'on-hold' ? reason : null
      const changed = await repository.transition(tx, organizationId, group.map((row) => row.id), status, { status: to, reason: why, at })
      if (changed.length !== group.length) throw new Error(`Transactions changed status under their lock (${group.length - changed.length} of ${group.length})`)
      moved.push(...changed)
    }
    await announceTransactions(tx, TRANSACTION_EVENTS.statusChanged, moved)
    return moved
  }

  /** 409 `operation_not_allowed` (`duplicate-withdrawal`) for the same amount to the same place within the window. */
  private async refuseDuplicateWithdrawal(tx: Tx, organizationId: string, ownerId: string, counterparty: string, quote: UsedQuote, at: Date): Promise<void> {
    await repository.lockCounterparty(tx, organizationId, ownerId, counterparty)
    const since = new Date(at.getTime() - DUPLICATE_WITHDRAWAL_WINDOW_MS)
    if (await repository.hasRecentWithdrawal(tx, { organizationId, ownerId, counterparty, asset: quote.denomination.asset, amount: quote.denomination.amount, since })) {
      throw operationNotAllowed('Transaction not allowed due to a duplicate withdrawal', ['duplicate-withdrawal'])
    }
  }

  /**
   * For flows: records where the payers of card deposits answer their issuer's 3-D Secure challenge, on the
   * transactions' origin (`confirmationUrl`), where clients and the payment widget find it.
   */
  async recordConfirmationUrls(tx: Tx, organizationId: string, urls: readonly { id: string; confirmationUrl: string }[]): Promise<void> {
    for (const row of await repository.findMany(tx, organizationId, urls.map((url) => url.id))) {
      const confirmationUrl = urls.find((url) => url.id === row.id)!.confirmationUrl
      await repository.setOrigin(tx, organizationId, row.id, { ...(row.origin as Record<string, unknown>), confirmationUrl })
    }
  }

  /**
   * For flows: records how a crypto withdrawal was carried out (the reference's `execution`: on chain or simulated,
   * with its transaction hash) on its destination node, before its status changes so that the event shows it.
   */
  async recordExecution(tx: Tx, row: TransactionRow, execution: { mode: 'onchain' | 'simulated'; transactionHash: string }): Promise<void> {
    const node = row.destination as Record<string, unknown>
    if (node.type !== 'crypto-address') return
    await repository.setDestination(tx, row.organization_id, row.id, { ...node, execution })
  }

  /** For flows: the transactions, as they stand (outside any database transaction: for calls to outside parties). */
  findMany(organizationId: string, ids: readonly string[]): Promise<TransactionRow[]> {
    return repository.findMany(this.db, organizationId, ids)
  }

  /** For flows: how many trades and transfers the user started in [since, before). */
  countMovements(tx: Tx, organizationId: string, ownerId: string, since: Date, before: Date): Promise<number> {
    return repository.countSince(tx, organizationId, ownerId, ['trade', 'transfer'], since, before)
  }

  /** For the portfolio, valuing what a movement brought: the two ends of the transactions, by id. */
  async terms(executor: Executor, organizationId: string, ids: readonly string[]): Promise<Map<string, TransactionTerms>> {
    const rows = await repository.findMany(executor, organizationId, ids)
    return new Map(rows.map((row) => [row.id, {
      originAsset: row.origin_asset,
      originAmount: row.origin_amount,
      destinationAsset: row.destination_asset,
      destinationAmount: row.destination_amount,
      createdAt: row.created_at,
    }]))
  }

  /** Whether the user has any transaction, whatever its status, read with `executor`. */
  hasTransactions(executor: Executor, organizationId: string, ownerId: string): Promise<boolean> {
    return repository.hasAny(executor, organizationId, ownerId)
  }

  /**
   * Records a movement that already happened, `completed` at its moment, in the caller's transaction, where the
   * caller posts its ledger movements too (the sandbox's generated history). It is stored as executed quotes are, so
   * that lists and statements show it like any other; it has no quote and no flow. No event is written: imported
   * history is not news, and webhooks about the past delivered now would read as movements happening now.
   */
  async recordCompleted(tx: Tx, movement: CompletedMovement): Promise<Transaction> {
    const { origin, destination, at } = movement
    const outside = movement.type === 'withdrawal' ? destination.node : movement.type === 'deposit' ? origin.node : null
    const row = await repository.insertCompleted(tx, {
      organization_id: movement.organizationId,
      id: uuidv7(at.getTime()),
      owner_id: movement.ownerId,
      type: movement.type,
      origin: origin.node,
      origin_asset: origin.asset,
      origin_amount: origin.amount,
      origin_rate: origin.rate,
      destination: destination.node,
      destination_asset: destination.asset,
      destination_amount: destination.amount,
      destination_rate: destination.rate,
      denomination: movement.denomination,
      fees: movement.fees,
      origin_account_id: origin.accountId,
      destination_account_id: destination.accountId,
      network: movement.network,
      reference: null,
      counterparty: outside ? counterpartyOf(outside, this.canonicalAddress) : null,
      quote_id: null,
      quoted_at: at,
      created_at: at,
    })
    return presentTransaction(row)
  }

  /** For statements: the acting user's transactions completed in [from, to), oldest first, a page at a time. */
  async completedBetween(principal: Principal, from: Date, to: Date, window: PageWindow): Promise<{ transactions: Transaction[]; hasNext: boolean }> {
    const rows = await repository.completedBetween(this.db, principal.organizationId, actingUser(principal), from, to, { offset: window.offset, limit: window.perPage + 1 })
    return { transactions: rows.slice(0, window.perPage).map(presentTransaction), hasNext: rows.length > window.perPage }
  }

  private async page(principal: Principal, accountId: string | undefined, query: ListQuery): Promise<Page> {
    const ownerId = actingUser(principal)
    const window = pageWindow(query)
    const page = await repository.listPage(this.db, { organizationId: principal.organizationId, ownerId, accountId, statuses: list(query.status), types: list(query.type) }, window)
    return { transactions: page.items.map(presentTransaction), window, anchor: page.anchor, hasNext: page.hasNext }
  }
}
