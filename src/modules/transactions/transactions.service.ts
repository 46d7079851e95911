import type { Db, Executor, TransactionRow } from '../../db/schema.ts'
import { notFound } from '../../http/errors.ts'
import { pageWindow, type PageWindow, type PaginationParams } from '../../http/pagination.ts'
import type { Principal } from '../../http/principal.ts'
import { isUuid } from '../../lib/ids.ts'
import { recordEvents } from '../events/outbox.ts'
import { formatAmount } from '../ledger/ledger.service.ts'
import * as repository from './transactions.repository.ts'
import type { Transaction, TransactionNode, TransactionStatusReason } from './transactions.schemas.ts'

export const TRANSACTION_EVENTS = {
  created: 'core.transaction.created',
  statusChanged: 'core.transaction.status-changed',
} as const

/** A transaction as the API shows it. Same-asset movements so far: both ends carry the amount at rate 1. */
export function presentTransaction(row: TransactionRow): Transaction {
  const amount = formatAmount(row.amount)
  const end = (node: Record<string, unknown>) => ({ asset: row.asset, amount, rate: '1', node: node as TransactionNode })
  return {
    id: row.id,
    type: row.type,
    origin: end(row.origin),
    destination: end(row.destination),
    denomination: { asset: row.asset, amount, rate: '1', target: row.type === 'deposit' ? 'destination' : 'origin' },
    fees: [],
    status: row.status,
    ...(row.reason !== null ? { statusDetails: { reason: row.reason as TransactionStatusReason } } : {}),
    quotedAt: row.created_at.toISOString(),
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

function actingUser(principal: Principal): string {
  if (principal.userId === null) throw notFound('user')
  return principal.userId
}

type Page = { transactions: Transaction[]; window: PageWindow; anchor: string | undefined; hasNext: boolean }

/** The read side of the users' transactions; each kind of transaction has its own service that writes them. */
export class TransactionsService {
  private readonly db: Db
  private readonly accounts: AccountDirectory

  constructor(deps: { db: Db; accounts: AccountDirectory }) {
    this.db = deps.db
    this.accounts = deps.accounts
  }

  list(principal: Principal, query: PaginationParams & { status?: string }): Promise<Page> {
    return this.page(principal, undefined, query)
  }

  async listForAccount(principal: Principal, accountId: string, query: PaginationParams & { status?: string }): Promise<Page> {
    const id = await this.accounts.ownedAccount(principal, accountId)
    if (id === null) throw notFound('account')
    return this.page(principal, id, query)
  }

  async get(principal: Principal, transactionId: string): Promise<Transaction> {
    const ownerId = actingUser(principal)
    const row = isUuid(transactionId) ? await repository.findOwned(this.db, principal.organizationId, ownerId, transactionId.toLowerCase()) : undefined
    if (!row) throw notFound('transaction')
    return presentTransaction(row)
  }

  /** The transaction `/core/transactions/{entityId}/metadata` names, when it is the acting user's. */
  async metadataOwner(principal: Principal, entityId: string): Promise<string | null> {
    if (principal.userId === null || !isUuid(entityId)) return null
    const row = await repository.findOwned(this.db, principal.organizationId, principal.userId, entityId.toLowerCase())
    return row?.id ?? null
  }

  private async page(principal: Principal, accountId: string | undefined, query: PaginationParams & { status?: string }): Promise<Page> {
    const ownerId = actingUser(principal)
    const window = pageWindow(query)
    const statuses = query.status === undefined ? undefined : [...new Set(query.status.split(','))]
    const page = await repository.listPage(this.db, { organizationId: principal.organizationId, ownerId, accountId, statuses }, window)
    return { transactions: page.items.map(presentTransaction), window, anchor: page.anchor, hasNext: page.hasNext }
  }
}
