import { createHmac } from 'node:crypto'
import type { Db, Executor, ExternalAccountRow, JobRow, Tx } from '../../db/schema.ts'
import { isUniqueViolation } from '../../db/errors.ts'
import { pageWindow, type PageWindow, type PaginationParams } from '../../http/pagination.ts'
import type { Principal } from '../../http/principal.ts'
import { enqueue, JobDeferral, type JobHandlers } from '../../jobs/queue.ts'
import { DomainError, notFound, operationNotAllowed, type ErrorBody } from '../../lib/errors.ts'
import { isUuid, uuidv7 } from '../../lib/ids.ts'
import { derivePurposeKey, type Sealer } from '../../lib/sealing.ts'
import { cardNumberContext } from './card-numbers.sealed.ts'
import { verifyMessageSignature } from '../../lib/signatures/index.ts'
import { CardProcessorUnavailableError, type CardProcessor, type CardVerification } from '../../providers/cards/card-processor.ts'
import type { RailCounterparty } from '../../providers/rails/payouts.ts'
import { auditObject } from '../audit/index.ts'
import { recordEvent } from '../events/index.ts'
import { attachInitialMetadata } from '../metadata/index.ts'
import type { AddressFamily, Chain } from '../reference/index.ts'
import { cardExpiresAt, checkAch, checkCard, checkFps, checkSepa, findBinRange, isCardExpired, type BinRange, type DetailProblem } from './details.ts'
import * as repository from './external-accounts.repository.ts'
import type { CreateExternalAccountBody, EXTERNAL_ACCOUNT_STATUS_REASONS, ExternalAccount, ExternalAccountType, UpdateExternalAccountBody } from './external-accounts.schemas.ts'
import type { VerificationLevel } from './verification.machine.ts'
import { AddressVerifications, type VerificationSummary } from './verifications.service.ts'
import type { Verification } from './verifications.schemas.ts'

export const EXTERNAL_ACCOUNT_EVENTS = {
  created: 'core.external-account.created',
  statusChanged: 'core.external-account.status-changed',
  deleted: 'core.external-account.deleted',
} as const

/**
 * The job that changes an external account's status and announces it (payload `{externalAccountId, status,
 * reason}`): due when the card expires, or at once when a payment showed the account unusable.
 */
export const STATUS_CHANGE_JOB = 'external-accounts.status-change'

type StatusReason = (typeof EXTERNAL_ACCOUNT_STATUS_REASONS)[number]

/**
 * The reasons a payment fails with that are the issuer's word on the card itself, not on the one payment: every later
 * payment would fail the same way, so the card fails with that reason. A bank's return (even for a holder name that
 * does not match) is about one payment, and leaves the account as it is.
 */
const ACCOUNT_FAILURES: ReadonlySet<string> = new Set<StatusReason>(['card-expired', 'card-permanently-declined-by-bank'])

type Feature = 'deposit' | 'withdraw'

/** A rail of the deployment (reference data): how an asset moves over a network, by which method. */
export interface ExternalAccountRails {
  list(filters: { type?: readonly string[]; network?: readonly string[]; method?: readonly string[]; asset?: readonly string[] }): { network: string; method: string; features: readonly string[] }[]
}

export interface ExternalAccountNetworks {
  validateAddress(code: string, address: string, reference?: string): { isValid: true } | { isValid: false; error: { code: string; message: string } }
  /** The one spelling of an address on the network, so that the same address written otherwise compares equal. */
  canonicalAddress(code: string, address: string, reference?: string): string
  /** How addresses of a crypto network are written (what signs for them); undefined for other networks. */
  addressFamily(code: string): AddressFamily | undefined
  /** The chain this deployment uses: test chains in sandbox, main chains in production. */
  readonly deploymentChain: Chain
}

export interface ExternalAccountCapabilities {
  enabledFor(principal: Principal): Promise<ReadonlySet<string>>
  /** 409 `user_capability_failure` unless the acting user may use the capability now. */
  require(principal: Principal, code: 'cards' | 'paypal' | 'venmo'): Promise<unknown>
}

export interface ExternalAccountUsers {
  /** The acting user's country of residence, if they declared an address. */
  residence(principal: Principal): Promise<string | null>
}

export interface ExternalAccountsSettings {
  /** Cards a user may have linked at once; more needs one deleted first. */
  maxLiveCards: number
  /** Distinct cards a user may ever link. */
  maxDistinctCards: number
}

/** What a movement checks of an external account before it is used. */
export interface MovementAccount {
  type: ExternalAccountType
  /** Cards: whether the issuer takes push payments. */
  octSupport?: string
  /** Cards: whether the expiry month has passed. */
  expired?: boolean
}

/** Which capability allows each feature of each type of external account (docs/external-accounts.md). */
const FEATURE_CAPABILITIES: Record<ExternalAccountType, (network: string) => Record<Feature, string>> = {
  bank: () => ({ deposit: 'bank-deposits', withdraw: 'bank-withdrawals' }),
  card: () => ({ deposit: 'deposits', withdraw: 'card-withdrawals' }),
  crypto: () => ({ deposit: 'crypto-deposits', withdraw: 'crypto-withdrawals' }),
  apm: (network) => ({ deposit: 'deposits', withdraw: `${network}-withdrawals` }),
}

/** Bank networks on which Tessera can pull money from a user's account (a deposit the user starts): ACH debits. */
export const PULL_NETWORKS: readonly string[] = ['ach']

const PAYPAL_IDENTIFIER = /^[^\s@]+@[^\s@]+\.[^\s@]+$/
const VENMO_IDENTIFIER = /^@[A-Za-z0-9_-]{5,30}$/

function actingUser(principal: Principal): string {
  if (principal.userId === null) throw notFound('user')
  return principal.userId
}

/** The owner of an external account, as the capabilities read a request acting for them (their type is read from them). */
function ownerOf(row: ExternalAccountRow): Principal {
  return { organizationId: row.organization_id, clientId: '', scopes: new Set(), subject: 'user:individual', userId: row.owner_id }
}

function problem(found: DetailProblem): DomainError {
  return new DomainError(found.code, found.message, { details: { context: 'body', property: found.property, ...found.extra } })
}

function duplicate(property: string, what: string): DomainError {
  return new DomainError('duplicate', `The ${what} is already registered`, { details: { context: 'body', property } })
}

const railNotFound = () => new DomainError('entity_not_found', 'A rail for the specified type, asset and network cannot be found', { details: { entity: 'rail' } })

/** What is stored of a new external account before it gets its id: everything the API shows, and how to find it again. */
interface Prepared {
  type: ExternalAccountType
  network: string
  asset: string
  method: string
  details: Record<string, unknown>
  /** What identifies it, before it is hashed. */
  identity: string
  /** The duplicate error's property and noun. */
  duplicateOf: [string, string]
  card?: { number: string; securityCode: string; expiryDate: { month: number; year: number }; issuerCountry: string | null }
}

/**
 * External accounts: where a user's money comes from and goes to outside Tessera. Details are validated for
 * real (checksums, issuer ranges, the network's address rules) before anything is stored; a card is verified
 * with its issuer through the card processor, its number sealed under a key of its own, its security code used
 * for that verification only. What an external account may be used for (`features`) is the rail's features,
 * narrowed by the user's capabilities.
 */
export class ExternalAccountsService {
  private readonly db: Db
  private readonly rails: ExternalAccountRails
  private readonly networks: ExternalAccountNetworks
  private readonly capabilities: ExternalAccountCapabilities
  private readonly users: ExternalAccountUsers
  private readonly currencyOf: (country: string) => string | undefined
  private readonly processor: CardProcessor | null
  private readonly bins: readonly BinRange[]
  private readonly settings: ExternalAccountsSettings
  private readonly cardSealer: Sealer
  private readonly fingerprintKey: Buffer
  private readonly verifications: AddressVerifications

  constructor(deps: {
    db: Db
    rails: ExternalAccountRails
    networks: ExternalAccountNetworks
    capabilities: ExternalAccountCapabilities
    users: ExternalAccountUsers
    currencyOf: (country: string) => string | undefined
    /** Null where the deployment has no card processor: cards cannot be linked. */
    processor: CardProcessor | null
    bins: readonly BinRange[]
    settings: ExternalAccountsSettings
    /** The root stable keys derive from (the key ring's derivation root): card fingerprints must never change. */
    sealingKey: string
    /**
     * Seals card numbers: keys of their own, derived from each key of the ring (a leak of another sealed secret's
     * key never opens them).
     */
    cardSealer: Sealer
  }) {
    this.db = deps.db
    this.rails = deps.rails
    this.networks = deps.networks
    this.capabilities = deps.capabilities
    this.users = deps.users
    this.currencyOf = deps.currencyOf
    this.processor = deps.processor
    this.bins = deps.bins
    this.settings = deps.settings
    this.cardSealer = deps.cardSealer
    this.fingerprintKey = derivePurposeKey(deps.sealingKey, 'external-accounts/fingerprint')
    this.verifications = new AddressVerifications({ db: deps.db, networks: deps.networks, verifySignature: verifyMessageSignature })
  }

  async create(principal: Principal, body: CreateExternalAccountBody): Promise<{ externalAccount: ExternalAccount; errors?: { metadata: ErrorBody } }> {
    const ownerId = actingUser(principal)
    const prepared = await this.prepare(principal, body)
    const fingerprint = this.fingerprint(prepared.type, prepared.network, prepared.identity)
    const now = new Date()
    const id = uuidv7(now.getTime())
    auditObject('external-account', id)
    // The same details again are a duplicate, whatever the limits; and a card already linked is not verified again.
    if (await repository.hasLive(this.db, principal.organizationId, ownerId, fingerprint)) throw duplicate(...prepared.duplicateOf)
    // A first count before the issuer is asked: a card that could not be stored is not verified.
    if (prepared.card) await this.checkCardCounts(this.db, principal.organizationId, ownerId, fingerprint)
    if (prepared.card) this.verified(await this.verify(prepared.card, principal.organizationId, id))
    const enabled = await this.capabilities.enabledFor(principal)
    try {
      return await this.db.transaction().execute(async (tx) => {
        if (prepared.card) {
          // Counted again under the user's lock: two links at once cannot both take the last place.
          await repository.lockOwnerCards(tx, principal.organizationId, ownerId)
          await this.checkCardCounts(tx, principal.organizationId, ownerId, fingerprint)
        }
        const row = await repository.insert(tx, {
          organization_id: principal.organizationId,
          id,
          owner_id: ownerId,
          type: prepared.type,
          network: prepared.network,
          asset: prepared.asset,
          method: prepared.method,
          label: body.label,
          status: 'ok',
          reason: null,
          details: prepared.details,
          fingerprint,
          sealed_number: prepared.card ? this.cardSealer.seal(prepared.card.number, this.cardContext(principal.organizationId, id)) : null,
          issuer_country: prepared.card?.issuerCountry ?? null,
          created_at: now,
        })
        if (!row) throw duplicate(...prepared.duplicateOf)
        const metadataError = body.metadata !== undefined
          ? await attachInitialMetadata(tx, { organizationId: principal.organizationId, entityType: 'external-accounts', entityId: id }, body.metadata, now)
          : null
        const externalAccount = this.present(row, enabled)
        await this.announce(tx, EXTERNAL_ACCOUNT_EVENTS.created, row, externalAccount)
        if (prepared.card) await this.scheduleExpiry(tx, row, prepared.card.expiryDate)
        return metadataError ? { externalAccount, errors: { metadata: metadataError.toBody() } } : { externalAccount }
      })
    } catch (error) {
      if (isUniqueViolation(error, 'external_accounts_live_unique')) throw duplicate(...prepared.duplicateOf)
      throw error
    }
  }

  async list(principal: Principal, query: PaginationParams & { type?: ExternalAccountType }): Promise<{ externalAccounts: ExternalAccount[]; window: PageWindow; anchor: string | undefined; hasNext: boolean }> {
    const ownerId = actingUser(principal)
    const window = pageWindow(query)
    const [page, enabled] = await Promise.all([repository.listPage(this.db, principal.organizationId, ownerId, query.type, window), this.capabilities.enabledFor(principal)])
    const verifications = await this.verifications.summaries(this.db, principal.organizationId, page.items)
    return { externalAccounts: page.items.map((row) => this.present(row, enabled, verifications.get(row.id))), window, anchor: page.anchor, hasNext: page.hasNext }
  }

  async get(principal: Principal, externalAccountId: string): Promise<ExternalAccount> {
    const row = await this.findLive(principal, externalAccountId)
    return this.presentOne(this.db, row, await this.capabilities.enabledFor(principal))
  }

  async update(principal: Principal, externalAccountId: string, body: UpdateExternalAccountBody): Promise<ExternalAccount> {
    const ownerId = actingUser(principal)
    if (body.label === undefined) return this.get(principal, externalAccountId)
    const row = await repository.updateLabel(this.db, principal.organizationId, ownerId, externalAccountId, body.label, new Date())
    if (!row) throw notFound('external-account')
    return this.presentOne(this.db, row, await this.capabilities.enabledFor(principal))
  }

  /** Unlinks an external account: it disappears from the API; movements already under way still reach it. */
  async delete(principal: Principal, externalAccountId: string): Promise<void> {
    const ownerId = actingUser(principal)
    const enabled = await this.capabilities.enabledFor(principal)
    await this.db.transaction().execute(async (tx) => {
      const row = await repository.markDeleted(tx, principal.organizationId, ownerId, externalAccountId, new Date())
      if (!row) throw notFound('external-account')
      await this.announce(tx, EXTERNAL_ACCOUNT_EVENTS.deleted, row, await this.presentOne(tx, row, enabled))
    })
  }

  registerJobs(jobs: JobHandlers): void {
    jobs.register(STATUS_CHANGE_JOB, (job) => this.changeStatus(job))
  }

  /**
   * For movements: a payment to or from the external account failed for good with `reason` (the transaction's). A
   * reason that says the card itself cannot be paid (`ACCOUNT_FAILURES`) fails it: the job that does it is enqueued
   * with the caller's executor, so it exists exactly when the movement's failure commits.
   */
  async paymentFailed(executor: Executor, organizationId: string, externalAccountId: string, reason: string): Promise<void> {
    if (!ACCOUNT_FAILURES.has(reason)) return
    await enqueue(executor, { type: STATUS_CHANGE_JOB, organizationId, payload: { externalAccountId, status: 'failed', reason } })
  }

  /** The external account `/core/external-accounts/{entityId}/metadata` names, when it is a live one of the acting user. */
  async metadataOwner(principal: Principal, entityId: string): Promise<string | null> {
    if (principal.userId === null) return null
    const [row] = await repository.findLiveMany(this.db, principal.organizationId, principal.userId, [entityId])
    return row?.id ?? null
  }

  /**
   * The verifications of a crypto external account of the acting user, one per level ever started (`declared`
   * first). Only crypto addresses have verifications: any other external account is 404 `entity_not_found` (entity
   * `external-account`), as an unknown one is.
   */
  async listVerifications(principal: Principal, externalAccountId: string): Promise<Verification[]> {
    return this.verifications.list(await this.findCrypto(principal, externalAccountId))
  }

  /**
   * Starts a verification level of a crypto external account of the acting user (`started: true`); a level
   * started before is returned as it stands (`started: false`). For the routes and for other modules (the travel
   * rule) alike.
   */
  async startVerification(principal: Principal, externalAccountId: string, level: VerificationLevel): Promise<{ verification: Verification; started: boolean }> {
    return this.verifications.start(await this.findCrypto(principal, externalAccountId), level)
  }

  /**
   * Answers a started level with its proof: a self-declaration, validated against the schema the verification
   * serves, or a signature of its message, verified against the address. 404 `entity_not_found` (entity
   * `external-account-verification`) when the level was not started; see `AddressVerifications.answer` for the
   * refusals. A refused proof changes nothing.
   */
  async answerVerification(principal: Principal, externalAccountId: string, level: VerificationLevel, proof: unknown): Promise<Verification> {
    return this.verifications.answer(await this.findCrypto(principal, externalAccountId), level, proof)
  }

  /**
   * For the travel rule: which of `addresses` (as given) belong to a live crypto external account of the user on
   * `network` with a completed verification of any level, comparing the network's canonical spellings. Runs in
   * `executor`, so that it can be read inside the caller's transaction.
   */
  declaredAddresses(executor: Executor, organizationId: string, ownerId: string, network: string, addresses: readonly string[]): Promise<Set<string>> {
    return this.verifications.declaredAddresses(executor, organizationId, ownerId, network, addresses)
  }

  /**
   * For quotes: a live external account of the acting user as a movement would use it — its asset, the networks
   * it can be reached on for the feature, and whether the feature is available to the user now. 404
   * `entity_not_found` (entity `external-account`) when the user has no such account.
   */
  async forMovement(
    principal: Principal,
    externalAccountId: string,
    feature: Feature,
    /**
     * Checks the account before its features are worked out (its type, a card's push support and expiry) and
     * resolves with the capabilities enabled for the user, as the caller's own capability check found them: the
     * user's capabilities are then read once for the whole quote.
     */
    admit: (account: MovementAccount) => Promise<ReadonlySet<string>>,
  ): Promise<MovementAccount & { id: string; ownerId: string; asset: string; network: string; networks: string[]; available: boolean }> {
    const row = await this.findLive(principal, externalAccountId)
    const facts: MovementAccount = {
      type: row.type,
      ...(row.type === 'card'
        ? {
          octSupport: (row.details as { octSupport?: string }).octSupport ?? 'unknown',
          expired: isCardExpired((row.details as { expiryDate: { month: number; year: number } }).expiryDate, new Date()),
        }
        : {}),
    }
    const account = this.present(row, await admit(facts))
    const secondary = (account.details as { secondaryNetworks?: Partial<Record<Feature, string[]>> }).secondaryNetworks?.[feature] ?? []
    return {
      ...facts,
      id: row.id,
      ownerId: row.owner_id,
      asset: row.asset,
      network: row.network,
      networks: [row.network, ...secondary],
      available: account.status === 'ok' && account.features.includes(feature),
    }
  }

  /**
   * For flows: what a rail needs to reach external accounts (deleted or not: a movement under way finishes), each
   * over the network asked, read together. A card number is opened here, for the call, and never returned by
   * the API.
   */
  /** The address of a crypto external account of the organization (its travel-rule counterparty); undefined for any other. */
  async cryptoAddress(organizationId: string, id: string): Promise<string | undefined> {
    const [row] = await repository.findAnyMany(this.db, organizationId, [id])
    return row?.type === 'crypto' ? (row.details as { address?: string }).address : undefined
  }

  async counterparties(organizationId: string, targets: readonly { id: string; network: string }[]): Promise<Map<string, RailCounterparty>> {
    const rows = new Map((await repository.findAnyMany(this.db, organizationId, [...new Set(targets.map((target) => target.id))])).map((row) => [row.id, row]))
    return new Map(
      targets.map((target) => {
        const row = rows.get(target.id)
        if (!row) throw new Error(`External account ${target.id} does not exist`)
        return [`${target.id}|${target.network}`, this.counterpartyOf(row, target.network)]
      }),
    )
  }

  private counterpartyOf(row: ExternalAccountRow, network: string): RailCounterparty {
    const organizationId = row.organization_id
    const details = row.details as Record<string, string> & { expiryDate?: { month: number; year: number } }
    switch (row.type) {
      case 'bank':
        if (row.network === 'fps') return { kind: 'bank', network: 'fps', sortCode: details.sortCode!, accountNumber: details.accountNumber! }
        if (row.network === 'sepa') return { kind: 'bank', network: 'sepa', iban: details.iban!, bic: details.bic! }
        if (network !== 'ach' && network !== 'wire' && network !== 'fednow' && network !== 'rtp') throw new Error(`A US bank account is not reached over ${network}`)
        return { kind: 'bank', network, routingNumber: details.routingNumber!, accountNumber: details.accountNumber!, accountType: details.accountType! }
      case 'card':
        return { kind: 'card', network: row.network, number: this.cardSealer.open(row.sealed_number!, this.cardContext(organizationId, row.id)), expiryDate: details.expiryDate! }
      case 'crypto':
        return { kind: 'crypto', network: row.network, address: details.address!, ...(details.reference !== undefined ? { reference: details.reference } : {}) }
      default:
        throw new Error(`External accounts of type ${row.type} are not reached over a payment rail`)
    }
  }

  private async findLive(principal: Principal, externalAccountId: string): Promise<ExternalAccountRow> {
    const ownerId = actingUser(principal)
    const [row] = isUuid(externalAccountId) ? await repository.findLiveMany(this.db, principal.organizationId, ownerId, [externalAccountId.toLowerCase()]) : []
    if (!row) throw notFound('external-account')
    return row
  }

  /** A live crypto external account of the acting user: the only kind with verifications. */
  private async findCrypto(principal: Principal, externalAccountId: string): Promise<ExternalAccountRow> {
    const row = await this.findLive(principal, externalAccountId)
    if (row.type !== 'crypto') throw notFound('external-account')
    return row
  }

  private async prepare(principal: Principal, body: CreateExternalAccountBody): Promise<Prepared> {
    switch (body.type) {
      case 'card':
        return this.prepareCard(principal, body)
      case 'bank': {
        const rail = this.rail('bank', body.network, body.asset, 'bank-transfer')
        if (body.network === 'ach') {
          const found = checkAch(body)
          if (found) throw problem(found)
          const secondary = this.rails
            .list({ type: ['bank'], asset: [body.asset], method: ['bank-transfer'] })
            .filter((other) => other.network !== 'ach' && other.features.includes('withdraw'))
            .map((other) => other.network)
          return {
            type: 'bank',
            network: 'ach',
            asset: body.asset,
            method: rail.method,
            details: {
              address: body.address,
              routingNumber: body.routingNumber,
              accountNumber: body.accountNumber,
              accountType: body.accountType,
              ...(secondary.length > 0 ? { secondaryNetworks: { withdraw: secondary } } : {}),
            },
            identity: `${body.routingNumber}/${body.accountNumber}`,
            duplicateOf: ['accountNumber', 'bank account'],
          }
        }
        if (body.network === 'fps') {
          const found = checkFps(body)
          if (found) throw problem(found)
          return {
            type: 'bank',
            network: 'fps',
            asset: body.asset,
            method: rail.method,
            details: { accountNumber: body.accountNumber, sortCode: body.sortCode },
            identity: `${body.sortCode}/${body.accountNumber}`,
            duplicateOf: ['accountNumber', 'bank account'],
          }
        }
        const sepa = checkSepa(body)
        if ('code' in sepa) throw problem(sepa)
        return { type: 'bank', network: 'sepa', asset: body.asset, method: rail.method, details: sepa, identity: sepa.iban, duplicateOf: ['iban', 'bank account'] }
      }
      case 'crypto': {
        const rail = this.rail('crypto', body.network, body.asset)
        const check = this.networks.validateAddress(body.network, body.address, body.reference)
        if (!check.isValid) {
          const property = check.error.code === 'address_invalid' ? 'address' : 'reference'
          throw new DomainError('crypto_address_invalid', check.error.message, { details: { context: 'body', property } })
        }
        return {
          type: 'crypto',
          network: body.network,
          asset: body.asset,
          method: rail.method,
          details: { address: body.address, ...(body.reference !== undefined ? { reference: body.reference } : {}) },
          identity: `${this.networks.canonicalAddress(body.network, body.address, body.reference)}/${body.asset}`,
          duplicateOf: ['address', 'crypto address'],
        }
      }
      case 'apm': {
        await this.capabilities.require(principal, body.network)
        const rail = this.rail('apm', body.network, body.asset)
        const valid = body.network === 'paypal' ? PAYPAL_IDENTIFIER.test(body.identifier) : VENMO_IDENTIFIER.test(body.identifier)
        if (!valid) throw new DomainError('request_invalid', 'The request has missing or invalid parameters', { details: { context: 'body', violations: [{ property: 'identifier', rule: 'format' }] } })
        return {
          type: 'apm',
          network: body.network,
          asset: body.asset,
          method: rail.method,
          details: { identifier: body.identifier },
          identity: body.identifier.toLowerCase(),
          duplicateOf: ['identifier', 'payment app account'],
        }
      }
    }
  }

  private async prepareCard(principal: Principal, body: Extract<CreateExternalAccountBody, { type: 'card' }>): Promise<Prepared> {
    if (this.processor === null) throw operationNotAllowed('External account type \'card\' is not configured for this deployment', ['permission-denied'])
    await this.capabilities.require(principal, 'cards')
    const found = checkCard(body.number, body.expiryDate, new Date())
    if (found) throw problem(found)
    const range = findBinRange(this.bins, body.number)
    if (!range) throw operationNotAllowed('The card is not supported: its issuer is not known', ['card-unsupported'])
    const residence = await this.users.residence(principal)
    if (range.country !== undefined && residence !== null && range.country !== residence) {
      throw operationNotAllowed('The card issuer country does not match the user country of residence', ['card-issuer-country-mismatch'])
    }
    const issuerCountry = range.country ?? residence
    const asset = issuerCountry === null ? undefined : this.currencyOf(issuerCountry)
    if (asset === undefined) throw railNotFound()
    const method = `${range.type}-card`
    if (this.rails.list({ type: ['card'], network: [range.scheme], asset: [asset], method: [method] }).length === 0) {
      if (range.type === 'credit') throw new DomainError('card_type_not_allowed', 'The card type is not allowed', { details: { type: 'credit' } })
      throw railNotFound()
    }
    return {
      type: 'card',
      network: range.scheme,
      asset,
      method,
      details: { type: range.type, last4Digits: body.number.slice(-4), expiryDate: body.expiryDate, octSupport: range.octSupport },
      identity: body.number,
      duplicateOf: ['number', 'card'],
      card: { number: body.number, securityCode: body.securityCode, expiryDate: body.expiryDate, issuerCountry },
    }
  }

  /** A card expires once its expiry month has passed: the job that says so is due then. */
  private async scheduleExpiry(tx: Tx, row: ExternalAccountRow, expiryDate: { month: number; year: number }): Promise<void> {
    const expiresAt = cardExpiresAt(expiryDate)
    // Timestamps end with the year 9999: a card valid through December 9999 does not expire here.
    if (expiresAt.getUTCFullYear() > 9999) return
    await enqueue(tx, {
      type: STATUS_CHANGE_JOB,
      organizationId: row.organization_id,
      payload: { externalAccountId: row.id, status: 'expired', reason: 'card-expired' },
      runAt: expiresAt,
    })
  }

  /**
   * The status change job: a live external account that is `ok` moves to the job's status, and
   * `core.external-account.status-changed` carries it as `GET /core/external-accounts/{id}` then shows it, in the same
   * database transaction. An account deleted, already moved (a second run), or whose owner is gone, stays as it is.
   */
  private async changeStatus(job: JobRow): Promise<void> {
    const organizationId = job.organization_id!
    const { externalAccountId, status, reason } = job.payload as { externalAccountId: string; status: 'expired' | 'failed'; reason: StatusReason }
    const [row] = await repository.findAnyMany(this.db, organizationId, [externalAccountId])
    if (!row || row.deleted_at !== null || row.status !== 'ok') return
    if (status === 'expired') {
      const expiresAt = cardExpiresAt((row.details as { expiryDate: { month: number; year: number } }).expiryDate)
      if (expiresAt.getTime() > Date.now()) throw new JobDeferral(expiresAt)
    }
    // Features are the owner's capabilities', read as a request of theirs reads them: before the transaction.
    let enabled: ReadonlySet<string>
    try {
      enabled = await this.capabilities.enabledFor(ownerOf(row))
    } catch (error) {
      if (error instanceof DomainError && error.code === 'entity_not_found') return
      throw error
    }
    await this.db.transaction().execute(async (tx) => {
      const changed = await repository.changeStatus(tx, organizationId, externalAccountId, { from: 'ok', to: status, reason, at: new Date() })
      if (!changed) return
      await this.announce(tx, EXTERNAL_ACCOUNT_EVENTS.statusChanged, changed, await this.presentOne(tx, changed, enabled))
    })
  }

  private async verify(card: NonNullable<Prepared['card']>, organizationId: string, id: string): Promise<CardVerification> {
    try {
      return await this.processor!.verify(card, { organizationId, key: `external-account:${id}:verify` })
    } catch (error) {
      if (!(error instanceof CardProcessorUnavailableError)) throw error
      throw new DomainError('service_unavailable', 'The card could not be verified with its issuer now; try again later', { retryable: true, retryAfterSeconds: 30, cause: error })
    }
  }

  /** The issuer's refusal, as the reference answers a card that cannot be linked. */
  private verified(verification: CardVerification): void {
    if (verification.status === 'approved') return
    if (verification.reason === 'card-permanently-declined-by-bank') throw operationNotAllowed('The card was permanently declined', ['card-permanently-declined'])
    if (verification.reason === 'card-unsupported') throw operationNotAllowed('The card is not supported', ['card-unsupported'])
    throw operationNotAllowed('The card was declined', ['card-declined'])
  }

  private async checkCardCounts(db: Executor, organizationId: string, ownerId: string, fingerprint: string): Promise<void> {
    const counts = await repository.cardCounts(db, organizationId, ownerId)
    const failure = (requirements: string[], restrictions: string[]) =>
      new DomainError('user_capability_failure', 'The user has capability constraints', { details: { capability: { code: 'cards', requirements, restrictions } } })
    if (counts.live >= this.settings.maxLiveCards) throw failure(['user-must-delete-card'], [])
    if (counts.distinct >= this.settings.maxDistinctCards && !(await repository.hasFingerprint(db, organizationId, ownerId, fingerprint))) {
      throw failure([], ['user-unique-card-limit-reached'])
    }
  }

  private rail(type: string, network: string, asset: string, method?: string): { method: string; features: readonly string[] } {
    const [rail] = this.rails.list({ type: [type], network: [network], asset: [asset], ...(method ? { method: [method] } : {}) })
    if (!rail) throw railNotFound()
    return rail
  }

  private fingerprint(type: string, network: string, identity: string): string {
    // Cards are the same card whatever scheme label they got; other accounts are the same on their network (and
    // a crypto address, for its asset: the same address may be linked for ETH and for USDC).
    const scope = type === 'card' ? 'card' : `${type}/${network}`
    return createHmac('sha256', this.fingerprintKey).update(`${scope}\u0000${identity}`).digest('base64url')
  }

  private cardContext(organizationId: string, id: string): readonly string[] {
    return cardNumberContext(organizationId, id)
  }

  /** One external account as the API shows it, with its verifications. */
  private async presentOne(db: Executor, row: ExternalAccountRow, enabled: ReadonlySet<string>): Promise<ExternalAccount> {
    const verifications = await this.verifications.summaries(db, row.organization_id, [row])
    return this.present(row, enabled, verifications.get(row.id))
  }

  /**
   * The API's view: features from the rail, narrowed by the user's capabilities (and push-to-card support); a
   * crypto address with the compact form of its verifications (none when not given: a new one has none).
   */
  private present(row: ExternalAccountRow, enabled: ReadonlySet<string>, verifications: VerificationSummary[] = []): ExternalAccount {
    const [rail] = this.rails.list({ type: [row.type], network: [row.network], asset: [row.asset], method: [row.method] })
    const allowed = FEATURE_CAPABILITIES[row.type](row.network)
    const details = row.details as Record<string, unknown>
    const features = (['deposit', 'withdraw'] as const).filter((feature) => {
      if (!rail?.features.includes(feature) || !enabled.has(allowed[feature])) return false
      if (row.type === 'bank' && feature === 'deposit') return PULL_NETWORKS.includes(row.network)
      if (row.type === 'card' && feature === 'withdraw') return details.octSupport === 'supported'
      return true
    })
    return {
      id: row.id,
      ownerId: row.owner_id,
      type: row.type,
      status: row.status,
      ...(row.reason !== null ? { statusDetails: { reason: row.reason as never } } : {}),
      label: row.label,
      asset: row.asset,
      network: row.network,
      features: features.toReversed(),
      details: details as ExternalAccount['details'],
      ...(row.type === 'crypto' ? { verifications } : {}),
      createdAt: row.created_at.toISOString(),
      updatedAt: row.updated_at.toISOString(),
    }
  }

  private async announce(tx: Tx, type: string, row: ExternalAccountRow, externalAccount: ExternalAccount): Promise<void> {
    await recordEvent(tx, {
      organizationId: row.organization_id,
      type,
      subject: { type: 'external-account', id: row.id },
      userId: row.owner_id,
      data: { externalAccount },
      occurredAt: row.updated_at,
    })
  }
}
