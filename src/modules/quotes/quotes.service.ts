import BigNumber from 'bignumber.js'
import type { Db, QuoteRow, Tx } from '../../db/schema.ts'
import type { Principal } from '../../http/principal.ts'
import { DomainError, notFound, operationNotAllowed } from '../../lib/errors.ts'
import { isUuid, uuidv7 } from '../../lib/ids.ts'
import { auditObject } from '../audit/index.ts'
import { formatAmount } from '../ledger/index.ts'
import type { UsdQuote } from '../../providers/prices/price-feed.ts'
import { displayRate, inverseRate, price, PricingError, roundTarget, withSpread, type FeeRule } from './pricing.ts'
import { DEFAULT_TRAVEL_RULE, needsTravelRule } from '../travel-rule/index.ts'
import * as repository from './quotes.repository.ts'
import type { CreateQuoteBody, Quote, TransactionRulesFile } from './quotes.schemas.ts'

/**
 * What a quote is: between two of the user's accounts, an exchange of two assets (`trade`) or a move of one
 * (`transfer`); from an account to outside Tessera (`withdrawal`: a bank account, a card, a crypto address); from
 * the user's bank account into an account (`deposit`: a bank pull). A withdrawal or deposit may change the asset
 * on the way.
 */
export type QuoteKind = 'trade' | 'transfer' | 'withdrawal' | 'deposit'

type Feature = 'deposit' | 'withdraw'

/** What a movement checks of an external account before its features are worked out. */
interface MovementAccount {
  type: 'bank' | 'card' | 'crypto' | 'apm'
  octSupport?: string
  /** Cards: whether the expiry month has passed. */
  expired?: boolean
}

/** The acting user's external account as a movement would use it (the external accounts module answers). */
export interface QuoteExternalAccount extends MovementAccount {
  id: string
  ownerId: string
  asset: string
  network: string
  /** The networks that reach it for the feature: its own first. */
  networks: string[]
  /** Whether the feature is available to the user now. */
  available: boolean
}

export interface QuoteExternalAccounts {
  /**
   * 404 `entity_not_found` (entity `external-account`) when the user has no such live external account; else
   * `admit` checks it and answers the capabilities enabled for the user, from which its features are worked out.
   */
  forMovement(principal: Principal, externalAccountId: string, feature: Feature, admit: (account: MovementAccount) => Promise<ReadonlySet<string>>): Promise<QuoteExternalAccount>
}

export interface QuoteNetworks {
  validateAddress(code: string, address: string, reference?: string): { isValid: true } | { isValid: false; error: { code: string; message: string } }
  /** Whether a rail of the type moves the asset over the network with the feature. */
  railHas(type: string, network: string, asset: string, feature: Feature): boolean
}

type CapabilityCode = 'trades' | 'bank-withdrawals' | 'card-withdrawals' | 'crypto-withdrawals' | 'bank-deposits' | 'deposits' | 'apple-pay' | 'paypal' | 'venmo'

/** The capability a deposit from an external account needs: bank pulls their own, card payments the deposits from other methods. */
const DEPOSIT_CAPABILITIES = { bank: 'bank-deposits', card: 'deposits' } as const

/** One end of a quote, resolved: its asset, the node as stored, and the user's account when it is one. */
interface End {
  asset: string
  node: Record<string, unknown>
  account?: { id: string; available: string }
  /** The kind of outside party at this end (withdrawal fees depend on it). */
  external?: 'bank' | 'card' | 'crypto'
  network?: string
  /** The capabilities enabled for the user, as the end's capability check read them. */
  enabled?: ReadonlySet<string>
}

/** The acting user's open accounts among the ids, as the accounts module shows them; others are left out. */
export interface QuoteAccounts {
  getMany(principal: Principal, accountIds: readonly string[]): Promise<{ id: string; ownerId: string; asset: string; balance: { available: string } }[]>
}

export interface QuoteAssets {
  decimalsOf(code: string): number | undefined
  /** The features of assets for the acting user (narrowed by where they live, their capabilities, cooldowns). */
  forUser(principal: Principal, codes: readonly string[], enabledCapabilities?: ReadonlySet<string>): Promise<Record<string, { features: readonly string[]; delisted: boolean }>>
}

export interface QuoteCapabilities {
  /** Throws 409 `user_capability_failure` unless the acting user may use the capability now; resolves with the capabilities enabled for them. */
  require(principal: Principal, code: CapabilityCode): Promise<ReadonlySet<string>>
}

export interface QuotePrices {
  /** The US dollar quote of a listed asset; null where there is none. */
  usdQuote(code: string): Promise<UsdQuote | null>
}

export interface QuoteSettings {
  defaultTtlMs: number
  maxTtlMs: number
  /** The longest quote a request may ask for is `maxTtlMs`; the shortest is this. */
  minTtlMs: number
  spread: string
  rules: TransactionRulesFile
}

export const MIN_QUOTE_TTL_MS = 1_000

/** Whether a withdrawal's destination is declared by the user (a verified crypto external account of theirs). */
export interface QuoteTravelRule {
  declared(principal: Principal, destination: { network: string; address?: string; externalAccountId?: string }): Promise<boolean>
}

/** Cross rates keep 40 places before they are rounded for display: a satoshi-sized price stays exact enough. */
const Decimal = BigNumber.clone({ DECIMAL_PLACES: 40, ROUNDING_MODE: BigNumber.ROUND_HALF_EVEN })

function actingUser(principal: Principal): string {
  if (principal.userId === null) throw notFound('user')
  return principal.userId
}

function amountInvalid(message: string, rule: string, extra: Record<string, unknown> = {}): DomainError {
  return new DomainError('transaction_amount_invalid', message, { details: { context: 'body', property: 'denomination', rule, ...extra } })
}

/** A quote as the API shows it. */
export function presentQuote(row: QuoteRow): Quote {
  return {
    id: row.id,
    origin: { asset: row.origin_asset, amount: formatAmount(row.origin_amount), rate: row.origin_rate, node: row.origin as Quote['origin']['node'] },
    destination: {
      asset: row.destination_asset,
      amount: formatAmount(row.destination_amount),
      rate: row.destination_rate,
      node: row.destination as Quote['destination']['node'],
    },
    denomination: row.denomination,
    fees: row.fees,
    requirements: row.requirements as Quote['requirements'],
    expiresAt: row.expires_at.toISOString(),
  }
}

/**
 * Quotes: the price of a movement, fixed for a short time. Between two of the user's accounts a quote is a trade
 * (two assets, at the feed's mid less the spread) or a transfer (one asset, rate 1); from an account to an
 * external account or a crypto address, a withdrawal; from a linked bank account, a deposit (a bank pull). Fees
 * come from the schedule in reference-data/transaction-rules.json. Nothing moves and nothing is held until it is
 * executed (`POST /core/transactions`), which uses it once.
 */
export class QuotesService {
  private readonly db: Db
  private readonly accounts: QuoteAccounts
  private readonly assets: QuoteAssets
  private readonly capabilities: QuoteCapabilities
  private readonly prices: QuotePrices
  private readonly settings: QuoteSettings
  private readonly externalAccounts: QuoteExternalAccounts
  private readonly networks: QuoteNetworks
  private readonly executes: ReadonlySet<string>
  private readonly travelRule: QuoteTravelRule

  constructor(deps: {
    /** The travel rule: whether a crypto withdrawal's destination is declared (below the threshold it does not matter). */
    travelRule: QuoteTravelRule
    db: Db
    accounts: QuoteAccounts
    externalAccounts: QuoteExternalAccounts
    networks: QuoteNetworks
    assets: QuoteAssets
    capabilities: QuoteCapabilities
    prices: QuotePrices
    settings: QuoteSettings
    /**
     * The kinds of movement this deployment can execute: `trade`, `transfer`, `withdrawal` and `deposit:bank` (a
     * bank pull) need a payment rail, `deposit:card` the card processor.
     */
    executes: ReadonlySet<string>
  }) {
    this.db = deps.db
    this.accounts = deps.accounts
    this.externalAccounts = deps.externalAccounts
    this.networks = deps.networks
    this.executes = deps.executes
    this.travelRule = deps.travelRule
    this.assets = deps.assets
    this.capabilities = deps.capabilities
    this.prices = deps.prices
    this.settings = deps.settings
  }

  async create(principal: Principal, body: CreateQuoteBody): Promise<Quote> {
    const ownerId = actingUser(principal)
    const ttl = this.ttlOf(body.ttl)
    const { kind, origin, destination } = await this.endsOf(principal, body.origin, body.destination)
    // Deposits are a rail's (bank pulls) or the card processor's (card payments): each may be missing.
    if (!this.executes.has(kind === 'deposit' ? `deposit:${origin.external}` : kind)) {
      const [end, node] = kind === 'deposit' ? ['Origin', body.origin] : ['Destination', body.destination]
      throw operationNotAllowed(`${end} node type '${node.type}' is not configured for this deployment`, ['permission-denied'])
    }
    const exchange = origin.asset !== destination.asset

    const denomination = { asset: body.denomination.asset, amount: body.denomination.amount, target: body.denomination.target ?? 'origin' }
    const denominationDecimals = this.assets.decimalsOf(denomination.asset)
    if (denominationDecimals === undefined) throw notFound('asset', { context: 'body', property: 'denomination.asset' })
    const amount = new BigNumber(denomination.amount)
    if (denomination.amount.replace('.', '').replace(/^0+/, '').length > 38) throw amountInvalid('The amount has too many digits', 'format')
    if ((amount.decimalPlaces() ?? 0) > denominationDecimals) {
      throw amountInvalid(`The amount has more decimal places than ${denomination.asset} allows (${denominationDecimals})`, 'decimal-places', { decimals: denominationDecimals })
    }

    // Exchanging one asset for another is a trade, whatever the ends.
    const enabled = kind === 'trade' || exchange ? await this.capabilities.require(principal, 'trades') : (origin.enabled ?? destination.enabled)
    await this.checkFeatures(principal, kind, origin.asset, destination.asset, enabled)

    const usd = await this.usdQuotes([origin.asset, destination.asset, denomination.asset, ...(destination.network ? this.networkFeeAssets(destination.network) : [])])
    const mid = (from: string, to: string) => (from === to ? '1' : new Decimal(usd.get(from)!.mid).div(usd.get(to)!.mid).toFixed())
    const originDecimals = this.assets.decimalsOf(origin.asset)!
    const destinationDecimals = this.assets.decimalsOf(destination.asset)!
    const targetAsset = denomination.target === 'origin' ? origin.asset : destination.asset
    const targetDecimals = denomination.target === 'origin' ? originDecimals : destinationDecimals
    const denominationRate = displayRate(mid(denomination.asset, targetAsset))
    const targetAmount = denomination.asset === targetAsset ? amount.toFixed() : roundTarget(denomination.amount, mid(denomination.asset, targetAsset), denomination.target, targetDecimals)
    if (new BigNumber(targetAmount).isZero()) throw amountInvalid('The amount is too small to be paid or received in the asset', 'minimum-limit-not-met')

    const rate = exchange ? withSpread(mid(origin.asset, destination.asset), this.settings.spread) : '1'
    const fees = this.feeRules(kind, exchange, kind === 'deposit' ? origin : destination, usd, origin.asset, originDecimals)
    // A card payment is authorized by the cardholder with their issuer (3-D Secure) when it is executed.
    const requirements: string[] = kind === 'deposit' && origin.external === 'card' ? ['authorize:3ds'] : []
    let pricing
    try {
      pricing = price({ target: denomination.target, amount: targetAmount, rate, originDecimals, destinationDecimals, fees })
    } catch (error) {
      if (error instanceof PricingError) throw amountInvalid(error.message, 'minimum-limit-not-met')
      throw error
    }
    this.checkLimits(origin.asset, pricing.originAmount, usd, denomination.asset)
    if (kind === 'withdrawal' && destination.external === 'crypto' && (await this.needsTravelRule(principal, origin.asset, pricing.originAmount, usd, destination))) requirements.push('travel-rule')
    if (origin.account && new BigNumber(origin.account.available).isLessThan(pricing.originAmount)) {
      throw new DomainError('insufficient_balance', 'The origin does not have enough balance to perform the transaction', { details: { context: 'body', property: 'origin' } })
    }

    const now = new Date()
    const id = uuidv7(now.getTime())
    auditObject('quote', id)
    const row: repository.NewQuote = {
      organization_id: principal.organizationId,
      id,
      owner_id: ownerId,
      kind,
      origin: origin.node,
      destination: destination.node,
      origin_account_id: origin.account?.id ?? null,
      destination_account_id: destination.account?.id ?? null,
      origin_asset: origin.asset,
      origin_amount: pricing.originAmount,
      origin_rate: exchange ? inverseRate(rate) : '1',
      destination_asset: destination.asset,
      destination_amount: pricing.destinationAmount,
      destination_rate: rate,
      denomination: { asset: denomination.asset, amount: amount.toFixed(), rate: denominationRate, target: denomination.target },
      fees: pricing.fees.map((fee) => ({ ...fee, asset: origin.asset })),
      requirements,
      created_at: now,
      expires_at: new Date(now.getTime() + ttl),
    }
    await repository.insert(this.db, row)
    return presentQuote({ ...row, used_at: null })
  }

  /** The acting user's quote as the API shows it, executed or expired as well (the payment widget shows it); null when there is none. */
  async find(principal: Principal, quoteId: string): Promise<Quote | null> {
    if (principal.userId === null || !isUuid(quoteId)) return null
    const row = await repository.findOwned(this.db, principal.organizationId, principal.userId, quoteId.toLowerCase())
    return row ? presentQuote(row) : null
  }

  /** Whether the acting user's quote can still be executed: it exists, was not used, and has not expired. */
  async isUsable(principal: Principal, quoteId: string, at: Date): Promise<boolean> {
    if (principal.userId === null || !isUuid(quoteId)) return false
    const row = await repository.findOwned(this.db, principal.organizationId, principal.userId, quoteId.toLowerCase())
    return row !== undefined && row.used_at === null && row.expires_at > at
  }

  /**
   * Takes the acting user's quote for execution, in the caller's transaction: once only, and not after it
   * expired. 404 `entity_not_found` (entity `quote`) otherwise, as for a quote that never existed.
   */
  async use(tx: Tx, principal: Principal, quoteId: string, at: Date): Promise<QuoteRow & { kind: QuoteKind }> {
    const ownerId = actingUser(principal)
    if (!isUuid(quoteId)) throw notFound('quote')
    const row = await repository.use(tx, principal.organizationId, ownerId, quoteId.toLowerCase(), at)
    if (row) return row as QuoteRow & { kind: QuoteKind }
    const existing = await repository.findOwned(tx, principal.organizationId, ownerId, quoteId.toLowerCase())
    if (!existing) throw notFound('quote')
    throw new DomainError('entity_not_found', existing.used_at !== null ? 'The quote was already executed' : 'The quote has expired', {
      details: { entity: 'quote', reasons: [existing.used_at !== null ? 'quote-already-used' : 'quote-expired'] },
    })
  }

  private ttlOf(requested: number | undefined): number {
    if (requested === undefined) return this.settings.defaultTtlMs
    const threshold = (rule: string, limit: number) =>
      new DomainError('number_invalid', `The ttl must be ${rule === 'greater-than-or-equal-to-threshold' ? 'at least' : 'at most'} ${limit} milliseconds`, {
        details: { context: 'body', property: 'ttl', rule, threshold: { limit } },
      })
    if (requested < this.settings.minTtlMs) throw threshold('greater-than-or-equal-to-threshold', this.settings.minTtlMs)
    if (requested > this.settings.maxTtlMs) throw threshold('less-than-or-equal-to-threshold', this.settings.maxTtlMs)
    return requested
  }

  /**
   * What each end of the quote is, and so the kind of movement: two of the user's accounts (a trade or a
   * transfer), an account to an external account or a crypto address (a withdrawal), or a bank account the user
   * linked to one of their accounts (a deposit, pulled from the bank). Other pairs are refused with the
   * reference's errors: 404 for a node that is not the user's, 409 for one that cannot be used so.
   */
  private async endsOf(principal: Principal, origin: CreateQuoteBody['origin'], destination: CreateQuoteBody['destination']): Promise<{ kind: QuoteKind; origin: End; destination: End }> {
    if (origin.type === 'apm') throw await this.apmRefusal(principal, 'Origin', origin.method)
    if (destination.type === 'apm') throw await this.apmRefusal(principal, 'Destination', destination.method)
    const accountIds = [origin, destination].flatMap((node) => (node.type === 'account' && isUuid(node.id) ? [node.id.toLowerCase()] : []))
    const found = new Map((await this.accounts.getMany(principal, accountIds)).map((account) => [account.id, account]))
    const accountEnd = (end: 'origin' | 'destination', id: string): End => {
      const account = found.get(id.toLowerCase())
      if (!account) throw notFound('account', { context: 'body', property: end })
      return { asset: account.asset, node: { type: 'account', id: account.id, ownerId: account.ownerId }, account: { id: account.id, available: account.balance.available } }
    }

    if (origin.type === 'account') {
      const from = accountEnd('origin', origin.id)
      if (destination.type === 'account') {
        const to = accountEnd('destination', destination.id)
        if (from.account!.id === to.account!.id) throw new DomainError('transaction_node_invalid', 'The origin and the destination are the same account')
        return { kind: from.asset === to.asset ? 'transfer' : 'trade', origin: from, destination: to }
      }
      if (destination.type === 'crypto-address') {
        const enabled = await this.capabilities.require(principal, 'crypto-withdrawals')
        return { kind: 'withdrawal', origin: from, destination: { ...this.cryptoAddressEnd(destination), enabled } }
      }
      return { kind: 'withdrawal', origin: from, destination: await this.externalEnd(principal, 'destination', destination, 'withdraw') }
    }
    // The origin is an external account: money pulled from the user's bank account into one of their accounts.
    if (destination.type !== 'account') throw new DomainError('transaction_node_invalid', 'The destination of a deposit from an external account must be an account')
    const from = await this.externalEnd(principal, 'origin', origin, 'deposit')
    return { kind: 'deposit', origin: from, destination: accountEnd('destination', destination.id) }
  }

  /** Payment apps are not offered yet: the capability answers first (they are disabled in the shipped catalogue). */
  private async apmRefusal(principal: Principal, end: string, method: 'apple-pay' | 'paypal' | 'venmo'): Promise<DomainError> {
    await this.capabilities.require(principal, method)
    return operationNotAllowed(`${end} node type 'apm' is not supported yet`, ['node-type-not-supported'])
  }

  private async externalEnd(principal: Principal, end: 'origin' | 'destination', node: { id: string; network?: string }, feature: Feature): Promise<End> {
    let enabled: ReadonlySet<string> | undefined
    const admit = async (account: MovementAccount): Promise<ReadonlySet<string>> => {
      if (account.type === 'apm') throw operationNotAllowed(`External accounts of type 'apm' are not supported yet`, ['node-type-not-supported'])
      // Crypto arrives by itself at the account's deposit address: nothing can be pulled from an address.
      if (feature === 'deposit' && account.type === 'crypto') throw new DomainError('transaction_node_invalid', 'Crypto deposits are sent to the account\'s deposit address; an address cannot be pulled from')
      if (account.type === 'card') {
        // A withdrawal needs the issuer to take push payments; a deposit is a payment the cardholder authorizes.
        if (feature === 'withdraw' && account.octSupport !== 'supported') throw operationNotAllowed('The card does not take withdrawals', ['card-withdrawals-unsupported'])
        if (account.expired) throw new DomainError('transaction_node_invalid', `The ${end} card has expired`)
      }
      enabled = await this.capabilities.require(principal, feature === 'withdraw' ? `${account.type}-withdrawals` : DEPOSIT_CAPABILITIES[account.type as keyof typeof DEPOSIT_CAPABILITIES])
      return enabled
    }
    let external: QuoteExternalAccount
    try {
      external = await this.externalAccounts.forMovement(principal, node.id, feature, admit)
    } catch (error) {
      if (error instanceof DomainError && error.code === 'entity_not_found' && (error.details as { entity?: string } | undefined)?.entity === 'external-account') {
        throw notFound('external-account', { context: 'body', property: end })
      }
      throw error
    }
    const network = node.network ?? external.network
    if (!external.networks.includes(network)) throw new DomainError('transaction_node_invalid', `The ${end} external account does not support the specified network`)
    if (!external.available) throw new DomainError('transaction_node_invalid', `The ${end} external account lacks '${feature}' feature`)
    return {
      asset: external.asset,
      node: { type: 'external-account', id: external.id, ownerId: external.ownerId, network },
      // `admit` refused payment apps.
      external: external.type as NonNullable<End['external']>,
      network,
      ...(enabled ? { enabled } : {}),
    }
  }

  private cryptoAddressEnd(node: Extract<CreateQuoteBody['destination'], { type: 'crypto-address' }>): End {
    if (!this.networks.railHas('crypto', node.network, node.asset, 'withdraw')) {
      throw new DomainError('transaction_node_invalid', `The asset ${node.asset} cannot be withdrawn on the network ${node.network}`)
    }
    const check = this.networks.validateAddress(node.network, node.address, node.reference)
    if (!check.isValid) {
      const property = check.error.code === 'address_invalid' ? 'destination.address' : 'destination.reference'
      throw new DomainError('crypto_address_invalid', check.error.message, { details: { context: 'body', property } })
    }
    return {
      asset: node.asset,
      node: { type: 'crypto-address', network: node.network, address: node.address, ...(node.reference !== undefined ? { reference: node.reference } : {}) },
      external: 'crypto',
      network: node.network,
    }
  }

  /**
   * The assets' features for the user: an exchange needs `sell` of the origin asset and `buy` of the destination's;
   * a withdrawal needs `withdraw` of the asset that leaves, a deposit `deposit` of the asset that arrives.
   */
  private async checkFeatures(principal: Principal, kind: QuoteKind, originAsset: string, destinationAsset: string, enabled?: ReadonlySet<string>): Promise<void> {
    const assets = await this.assets.forUser(principal, [originAsset, destinationAsset], enabled)
    const missing = (asset: string, feature: string, end: 'origin' | 'destination') => {
      if (assets[asset]?.delisted !== false || !assets[asset]!.features.includes(feature)) {
        throw new DomainError('asset_feature_not_available', `The '${feature}' feature is not available for the ${end} asset`, { details: { context: 'body', property: end, feature } })
      }
    }
    if (originAsset !== destinationAsset) {
      missing(originAsset, 'sell', 'origin')
      missing(destinationAsset, 'buy', 'destination')
    } else if (assets[originAsset]?.delisted !== false) {
      throw new DomainError('asset_not_supported', 'The asset is not supported', { details: { context: 'body', property: 'origin' } })
    }
    if (kind === 'withdrawal') missing(destinationAsset, 'withdraw', 'destination')
    if (kind === 'deposit') missing(originAsset, 'deposit', 'origin')
  }

  private async usdQuotes(codes: readonly string[]): Promise<Map<string, UsdQuote>> {
    const unique = [...new Set(codes)]
    const quotes = await Promise.all(unique.map((code) => this.prices.usdQuote(code)))
    const result = new Map<string, UsdQuote>()
    unique.forEach((code, i) => {
      const quote = quotes[i]
      if (!quote) {
        const property = code === codes[2] ? 'denomination.asset' : code === codes[0] ? 'origin' : 'destination'
        throw new DomainError('asset_not_supported', `The asset ${code} has no price`, { details: { context: 'body', property } })
      }
      result.set(code, quote)
    })
    return result
  }

  /**
   * The schedule's fees of the movement, their fixed parts in the origin asset (at the mid, rounded up): an
   * exchange's fees when the asset changes, the fees of the kind of movement (by the outside party's type for
   * withdrawals and deposits), and a crypto withdrawal's network fee, priced in the network's own asset.
   */
  private feeRules(kind: QuoteKind, exchange: boolean, outside: End, usd: ReadonlyMap<string, UsdQuote>, originAsset: string, originDecimals: number): FeeRule[] {
    const { fees } = this.settings.rules
    const schedule = [
      ...(kind === 'trade' || exchange ? fees.trade : []),
      ...(kind === 'transfer' ? fees.transfer : []),
      ...(kind === 'withdrawal' && outside.external ? (fees.withdrawal?.[outside.external] ?? []) : []),
      ...(kind === 'deposit' && (outside.external === 'bank' || outside.external === 'card') ? (fees.deposit?.[outside.external] ?? []) : []),
    ]
    const inOrigin = (amount: string, asset: string) =>
      new Decimal(amount).times(usd.get(asset)!.mid).div(usd.get(originAsset)!.mid).decimalPlaces(originDecimals, BigNumber.ROUND_UP).toFixed()
    const rules: FeeRule[] = schedule.map((rule) => ({
      type: rule.type,
      code: rule.code,
      ...(rule.percentage !== undefined ? { percentage: rule.percentage } : {}),
      ...(rule.fixedUsd !== undefined ? { fixed: new Decimal(rule.fixedUsd).div(usd.get(originAsset)!.mid).decimalPlaces(originDecimals, BigNumber.ROUND_UP).toFixed() } : {}),
    }))
    const networkFee = kind === 'withdrawal' && outside.external === 'crypto' && outside.network ? this.settings.rules.networkFees?.[outside.network] : undefined
    if (networkFee) rules.push({ type: 'network', code: 'network-fee', fixed: inOrigin(networkFee.amount, networkFee.asset) })
    return rules
  }

  /** The asset a network's fee is priced in, when the schedule names one. */
  private networkFeeAssets(network: string): string[] {
    const fee = this.settings.rules.networkFees?.[network]
    return fee ? [fee.asset] : []
  }

  /**
   * The travel rule (docs/travel-rule.md): a crypto withdrawal whose origin amount is worth, at the mid, at least the
   * threshold of the asset that leaves, to a destination the user has not declared, must describe its beneficiary.
   */
  private async needsTravelRule(principal: Principal, originAsset: string, originAmount: string, usd: Map<string, UsdQuote>, destination: End): Promise<boolean> {
    const rules = this.settings.rules.travelRule ?? DEFAULT_TRAVEL_RULE
    const valueUsd = new BigNumber(originAmount).times(usd.get(originAsset)!.mid).toFixed()
    const asset = destination.asset
    if (!needsTravelRule(rules, { asset, valueUsd, counterpartyDeclared: false })) return false
    const node = destination.node as { type: string; id?: string; address?: string }
    const declared = await this.travelRule.declared(principal, {
      network: destination.network!,
      ...(node.type === 'external-account' ? { externalAccountId: node.id! } : { address: node.address! }),
    })
    return !declared
  }

  /** The origin amount, valued in US dollars at the mid, within the limits of its asset; limits are reported in the denomination asset. */
  private checkLimits(originAsset: string, originAmount: string, usd: Map<string, UsdQuote>, denominationAsset: string): void {
    const limits = this.settings.rules.limits.assets[originAsset] ?? this.settings.rules.limits.default
    const value = new BigNumber(originAmount).times(usd.get(originAsset)!.mid)
    const decimals = this.assets.decimalsOf(denominationAsset)!
    const inDenomination = (usdAmount: string, rounding: BigNumber.RoundingMode) =>
      new Decimal(usdAmount).div(usd.get(denominationAsset)!.mid).decimalPlaces(decimals, rounding).toFixed()
    if (value.isLessThan(limits.minimumUsd)) {
      throw amountInvalid('The amount minimum limit was not met', 'minimum-limit-not-met', { limit: { minimumAmount: inDenomination(limits.minimumUsd, BigNumber.ROUND_UP), asset: denominationAsset } })
    }
    if (value.isGreaterThan(limits.maximumUsd)) {
      throw amountInvalid('The amount maximum limit was exceeded', 'maximum-limit-exceeded', { limit: { maximumAmount: inDenomination(limits.maximumUsd, BigNumber.ROUND_DOWN), asset: denominationAsset } })
    }
  }
}
