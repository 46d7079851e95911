import type { AccountRow, Db, Executor, Tx } from '../../db/schema.ts'
import { pageWindow, type PageWindow, type PaginationParams } from '../../http/pagination.ts'
import type { Principal } from '../../http/principal.ts'
import { DomainError, notFound, type ErrorBody } from '../../lib/errors.ts'
import { uuidv7 } from '../../lib/ids.ts'
import { auditObject } from '../audit/index.ts'
import { recordEvent, recordEvents } from '../events/index.ts'
import type { AccountBalance, LedgerService } from '../ledger/index.ts'
import { attachInitialMetadata } from '../metadata/index.ts'
import * as repository from './accounts.repository.ts'
import type { Account, CreateAccountBody, UpdateAccountBody } from './accounts.schemas.ts'

/**
 * Whether the acting user may hold an asset at all. Throws 404 `entity_not_found` (entity `asset`) for an
 * asset that does not exist.
 */
export interface AssetHolding {
  mayHold(principal: Principal, assetCode: string): Promise<boolean>
}

export const ACCOUNT_EVENTS = {
  created: 'core.account.created',
  archived: 'core.account.archived',
  balanceChanged: 'core.account.balance-changed',
} as const

function present(row: AccountRow, balance: Pick<AccountBalance, 'total' | 'available' | 'updatedAt'> | undefined): Account {
  const updatedAt = balance && balance.updatedAt > row.updated_at ? balance.updatedAt : row.updated_at
  return {
    id: row.id,
    ownerId: row.owner_id,
    label: row.label,
    asset: row.asset,
    balance: { total: balance?.total ?? '0', available: balance?.available ?? '0' },
    createdAt: row.created_at.toISOString(),
    updatedAt: updatedAt.toISOString(),
  }
}

/** A new open account, created now (its id a UUIDv7 of the same instant). */
function newAccountRow(organizationId: string, ownerId: string, label: string, asset: string): AccountRow {
  const now = new Date()
  return { organization_id: organizationId, id: uuidv7(now.getTime()), owner_id: ownerId, label, asset, archived_at: null, created_at: now, updated_at: now }
}

function actingUser(principal: Principal): string {
  if (principal.userId === null) throw notFound('user')
  return principal.userId
}

/** The users' accounts: one asset each, their balances kept by the ledger. */
export class AccountsService {
  private readonly db: Db
  private readonly ledger: LedgerService
  private readonly assets: AssetHolding

  constructor(deps: { db: Db; ledger: LedgerService; assets: AssetHolding }) {
    this.db = deps.db
    this.ledger = deps.ledger
    this.assets = deps.assets
    this.ledger.onBalanceChanged((tx, changed) => this.announceBalances(tx, changed))
  }

  async create(principal: Principal, input: CreateAccountBody): Promise<{ account: Account; errors?: { metadata: ErrorBody } }> {
    const ownerId = actingUser(principal)
    await this.assertMayHold(principal, [input.asset])
    const row = newAccountRow(principal.organizationId, ownerId, input.label, input.asset)
    auditObject('account', row.id)
    const now = row.created_at
    return this.db.transaction().execute(async (tx) => {
      await this.insert(tx, row)
      const metadataError = input.metadata !== undefined
        ? await attachInitialMetadata(tx, { organizationId: row.organization_id, entityType: 'accounts', entityId: row.id }, input.metadata, now)
        : null
      const account = present(row, undefined)
      await this.announce(tx, row.organization_id, ACCOUNT_EVENTS.created, account, now)
      return metadataError ? { account, errors: { metadata: metadataError.toBody() } } : { account }
    })
  }

  /** Refuses (409 `asset_not_supported`) when the acting user may not hold one of `assets`. Call outside a transaction. */
  async assertMayHold(principal: Principal, assets: readonly string[]): Promise<void> {
    for (const asset of assets) {
      if (!(await this.assets.mayHold(principal, asset))) {
        throw new DomainError('asset_not_supported', 'The asset is not supported', { details: { context: 'body', property: 'asset' } })
      }
    }
  }

  /**
   * The acting user's default account of each of `assets`, opened in `tx` where the user has none (labelled with
   * the asset's code); `assertMayHold` first, outside the transaction. Called under a lock that serializes the user's
   * callers (the user's row), so that two of them cannot each open one and the later commit, with the older id,
   * become the default after the other used its own.
   */
  async openDefaults(tx: Tx, principal: Principal, assets: readonly string[]): Promise<{ id: string; asset: string }[]> {
    const ownerId = actingUser(principal)
    const existing = await repository.defaults(tx, principal.organizationId, ownerId, assets)
    const opened: { id: string; asset: string }[] = []
    for (const asset of assets) {
      const found = existing.find((row) => row.asset === asset)
      if (found) {
        opened.push({ id: found.id, asset })
        continue
      }
      const row = newAccountRow(principal.organizationId, ownerId, asset, asset)
      await this.insert(tx, row)
      await this.announce(tx, row.organization_id, ACCOUNT_EVENTS.created, present(row, undefined), row.created_at)
      opened.push({ id: row.id, asset })
    }
    return opened
  }

  private async insert(tx: Tx, row: AccountRow): Promise<void> {
    await this.ledger.openAccount(tx, { organizationId: row.organization_id, id: row.id, asset: row.asset, at: row.created_at })
    await repository.insertAccount(tx, row)
  }

  async list(principal: Principal, query: PaginationParams & { assets?: readonly string[] }): Promise<{ accounts: Account[]; window: PageWindow; anchor: string | undefined; hasNext: boolean }> {
    const ownerId = actingUser(principal)
    const window = pageWindow(query)
    const page = await repository.listPage(this.db, principal.organizationId, ownerId, query.assets, window)
    return { accounts: await this.withBalances(principal.organizationId, page.items), window, anchor: page.anchor, hasNext: page.hasNext }
  }

  async defaults(principal: Principal, assets?: readonly string[]): Promise<Account[]> {
    const rows = await repository.defaults(this.db, principal.organizationId, actingUser(principal), assets)
    return this.withBalances(principal.organizationId, rows)
  }

  /** The acting user's open accounts among `accountIds` (ids as stored, lower case), with their balances; the others are left out. */
  async getMany(principal: Principal, accountIds: readonly string[]): Promise<Account[]> {
    const rows = await repository.findActiveMany(this.db, principal.organizationId, actingUser(principal), accountIds)
    return this.withBalances(principal.organizationId, rows)
  }

  /** The acting user's open accounts among `accountIds` (ids as stored), without their balances; the others are left out. */
  async openAmong(principal: Principal, accountIds: readonly string[]): Promise<{ id: string; asset: string }[]> {
    const rows = await repository.findActiveMany(this.db, principal.organizationId, actingUser(principal), accountIds)
    return rows.map((row) => ({ id: row.id, asset: row.asset }))
  }

  async get(principal: Principal, accountId: string): Promise<Account> {
    const row = await repository.findActive(this.db, principal.organizationId, actingUser(principal), accountId.toLowerCase())
    if (!row) throw notFound('account')
    const [account] = await this.withBalances(principal.organizationId, [row])
    return account!
  }

  async update(principal: Principal, accountId: string, input: UpdateAccountBody): Promise<Account> {
    const ownerId = actingUser(principal)
    const id = accountId.toLowerCase()
    if (input.label === undefined) return this.get(principal, id)
    const row = await repository.updateLabel(this.db, principal.organizationId, ownerId, id, input.label, new Date())
    if (!row) throw notFound('account')
    const [account] = await this.withBalances(principal.organizationId, [row])
    return account!
  }

  /** Archives an empty account with nothing in flight; it disappears from the API and accepts no movements. */
  async archive(principal: Principal, accountId: string): Promise<void> {
    const ownerId = actingUser(principal)
    const id = accountId.toLowerCase()
    if (!(await repository.findActive(this.db, principal.organizationId, ownerId, id))) throw notFound('account')
    await this.db.transaction().execute(async (tx) => {
      const now = new Date()
      // The ledger locks the balance first: a movement cannot land between its check and the archiving.
      await this.ledger.close(tx, principal.organizationId, id, now)
      const row = await repository.archive(tx, principal.organizationId, ownerId, id, now)
      if (!row) throw notFound('account')
      await this.announce(tx, principal.organizationId, ACCOUNT_EVENTS.archived, present(row, { total: '0', available: '0', updatedAt: now }), now)
    })
  }

  /** The account `/core/accounts/{entityId}/metadata` names, when it is an active account of the acting user. */
  async metadataOwner(principal: Principal, entityId: string): Promise<string | null> {
    if (principal.userId === null) return null
    const row = await repository.findActive(this.db, principal.organizationId, principal.userId, entityId)
    return row?.id ?? null
  }

  /**
   * The asset of an account of the user and whether it is archived, read with `executor`: other modules check an
   * account this way inside their own database transaction. Undefined when the user has no such account.
   */
  async find(executor: Executor, organizationId: string, ownerId: string, accountId: string): Promise<{ asset: string; archived: boolean } | undefined> {
    const row = await repository.findHolding(executor, organizationId, ownerId, accountId)
    return row && { asset: row.asset, archived: row.archived_at !== null }
  }

  /** Who owns each of the accounts (ids as stored): for the portfolio's first record of an account. */
  async owners(executor: Executor, organizationId: string, accountIds: readonly string[]): Promise<Map<string, { ownerId: string }>> {
    const rows = await repository.findByIds(executor, organizationId, accountIds)
    return new Map(rows.map((row) => [row.id, { ownerId: row.owner_id }]))
  }

  private async withBalances(organizationId: string, rows: readonly AccountRow[]): Promise<Account[]> {
    const balances = await this.ledger.balances(this.db, organizationId, rows.map((row) => row.id))
    return rows.map((row) => present(row, balances.get(row.id)))
  }

  private async announce(tx: Tx, organizationId: string, type: string, account: Account, at: Date): Promise<void> {
    await recordEvent(tx, {
      organizationId,
      type,
      subject: { type: 'account', id: account.id },
      userId: account.ownerId,
      data: { account },
      occurredAt: at,
    })
  }

  /**
   * A `core.account.balance-changed` event per user account whose balance a ledger write changed, in its
   * transaction. Movements posted together (a batch of settled deposits) make one event per account, carrying
   * the balance they left.
   */
  private async announceBalances(tx: Tx, changed: readonly AccountBalance[]): Promise<void> {
    for (const [organizationId, balances] of Map.groupBy(changed, (balance) => balance.organizationId)) {
      const rows = new Map((await repository.findByIds(tx, organizationId, balances.map((b) => b.id))).map((row) => [row.id, row]))
      await recordEvents(
        tx,
        balances.flatMap((balance) => {
          const row = rows.get(balance.id)
          if (!row) return []
          return [{ organizationId, type: ACCOUNT_EVENTS.balanceChanged, subject: { type: 'account', id: row.id }, userId: row.owner_id, data: { account: present(row, balance) }, occurredAt: balance.updatedAt }]
        }),
      )
    }
  }
}
