import BigNumber from 'bignumber.js'
import type { Db, QuoteRow, Tx } from '../../db/schema.ts'
import type { Principal } from '../../http/principal.ts'
import { DomainError, notFound, operationNotAllowed } from '../../lib/errors.ts'
import { isUuid, uuidv7 } from '../../lib/ids.ts'
import { formatAmount } from '../ledger/index.ts'
import type { UsdQuote } from '../../providers/prices/price-feed.ts'
import { displayRate, inverseRate, price, PricingError, roundTarget, withSpread, type FeeRule } from './pricing.ts'
import * as repository from './quotes.repository.ts'
import type { CreateQuoteBody, Quote, TransactionRulesFile } from './quotes.schemas.ts'

/** What a quote between two accounts is: an exchange of two assets, or a move of one asset. */
export type QuoteKind = 'trade' | 'transfer'

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
  require(principal: Principal, code: 'trades'): Promise<ReadonlySet<string>>
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
 * Quotes: the price of a movement, fixed for a short time. A quote between two of the user's accounts is a
 * trade (two assets, at the feed's mid less the spread) or a transfer (one asset, rate 1); fees come from the
 * schedule in reference-data/transaction-rules.json. Nothing moves and nothing is held until it is executed
 * (`POST /core/transactions`), which uses it once.
 */
export class QuotesService {
  private readonly db: Db
  private readonly accounts: QuoteAccounts
  private readonly assets: QuoteAssets
  private readonly capabilities: QuoteCapabilities
  private readonly prices: QuotePrices
  private readonly settings: QuoteSettings

  constructor(deps: { db: Db; accounts: QuoteAccounts; assets: QuoteAssets; capabilities: QuoteCapabilities; prices: QuotePrices; settings: QuoteSettings }) {
    this.db = deps.db
    this.accounts = deps.accounts
    this.assets = deps.assets
    this.capabilities = deps.capabilities
    this.prices = deps.prices
    this.settings = deps.settings
  }

  async create(principal: Principal, body: CreateQuoteBody): Promise<Quote> {
    const ownerId = actingUser(principal)
    const ttl = this.ttlOf(body.ttl)
    const [origin, destination] = await this.accountsOf(principal, body.origin, body.destination)
    if (origin.id === destination.id) throw new DomainError('transaction_node_invalid', 'The origin and the destination are the same account')
    const kind: QuoteKind = origin.asset === destination.asset ? 'transfer' : 'trade'

    const denomination = { asset: body.denomination.asset, amount: body.denomination.amount, target: body.denomination.target ?? 'origin' }
    const denominationDecimals = this.assets.decimalsOf(denomination.asset)
    if (denominationDecimals === undefined) throw notFound('asset', { context: 'body', property: 'denomination.asset' })
    const amount = new BigNumber(denomination.amount)
    if (denomination.amount.replace('.', '').replace(/^0+/, '').length > 38) throw amountInvalid('The amount has too many digits', 'format')
    if ((amount.decimalPlaces() ?? 0) > denominationDecimals) {
      throw amountInvalid(`The amount has more decimal places than ${denomination.asset} allows (${denominationDecimals})`, 'decimal-places', { decimals: denominationDecimals })
    }

    const enabled = kind === 'trade' ? await this.capabilities.require(principal, 'trades') : undefined
    await this.checkFeatures(principal, kind, origin.asset, destination.asset, enabled)

    const usd = await this.usdQuotes([origin.asset, destination.asset, denomination.asset])
    const mid = (from: string, to: string) => (from === to ? '1' : new Decimal(usd.get(from)!.mid).div(usd.get(to)!.mid).toFixed())
    const originDecimals = this.assets.decimalsOf(origin.asset)!
    const destinationDecimals = this.assets.decimalsOf(destination.asset)!
    const targetAsset = denomination.target === 'origin' ? origin.asset : destination.asset
    const targetDecimals = denomination.target === 'origin' ? originDecimals : destinationDecimals
    const denominationRate = displayRate(mid(denomination.asset, targetAsset))
    const targetAmount = denomination.asset === targetAsset ? amount.toFixed() : roundTarget(denomination.amount, mid(denomination.asset, targetAsset), denomination.target, targetDecimals)
    if (new BigNumber(targetAmount).isZero()) throw amountInvalid('The amount is too small to be paid or received in the asset', 'minimum-limit-not-met')

    const rate = kind === 'transfer' ? '1' : withSpread(mid(origin.asset, destination.asset), this.settings.spread)
    const fees = this.feeRules(kind, usd.get(origin.asset)!, originDecimals)
    let pricing
    try {
      pricing = price({ target: denomination.target, amount: targetAmount, rate, originDecimals, destinationDecimals, fees })
    } catch (error) {
      if (error instanceof PricingError) throw amountInvalid(error.message, 'minimum-limit-not-met')
      throw error
    }
    this.checkLimits(origin.asset, pricing.originAmount, usd, denomination.asset)
    if (new BigNumber(origin.balance.available).isLessThan(pricing.originAmount)) {
      throw new DomainError('insufficient_balance', 'The origin does not have enough balance to perform the transaction', { details: { context: 'body', property: 'origin' } })
    }

    const now = new Date()
    const row: repository.NewQuote = {
      organization_id: principal.organizationId,
      id: uuidv7(now.getTime()),
      owner_id: ownerId,
      kind,
      origin: { type: 'account', id: origin.id, ownerId: origin.ownerId },
      destination: { type: 'account', id: destination.id, ownerId: destination.ownerId },
      origin_account_id: origin.id,
      destination_account_id: destination.id,
      origin_asset: origin.asset,
      origin_amount: pricing.originAmount,
      origin_rate: kind === 'transfer' ? '1' : inverseRate(rate),
      destination_asset: destination.asset,
      destination_amount: pricing.destinationAmount,
      destination_rate: rate,
      denomination: { asset: denomination.asset, amount: amount.toFixed(), rate: denominationRate, target: denomination.target },
      fees: pricing.fees.map((fee) => ({ ...fee, asset: origin.asset })),
      requirements: [],
      created_at: now,
      expires_at: new Date(now.getTime() + ttl),
    }
    await repository.insert(this.db, row)
    return presentQuote({ ...row, used_at: null })
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

  /** Both ends' accounts, read together; 409 for a node type not executed yet, 404 for an account not the user's. */
  private async accountsOf(principal: Principal, origin: CreateQuoteBody['origin'], destination: CreateQuoteBody['destination']) {
    const ends = [['origin', origin], ['destination', destination]] as const
    for (const [end, node] of ends) {
      if (node.type !== 'account') {
        throw operationNotAllowed(`${end === 'origin' ? 'Origin' : 'Destination'} node type '${node.type}' is not supported yet: quotes move money between accounts`, ['node-type-not-supported'])
      }
    }
    const ids = ends.map(([, node]) => (node as { id: string }).id.toLowerCase())
    const found = new Map((await this.accounts.getMany(principal, ids.filter((id) => isUuid(id)))).map((account) => [account.id, account]))
    const accountOf = (end: 'origin' | 'destination', id: string) => {
      const account = found.get(id)
      if (!account) throw notFound('account', { context: 'body', property: end })
      return account
    }
    return [accountOf('origin', ids[0]!), accountOf('destination', ids[1]!)] as const
  }

  private async checkFeatures(principal: Principal, kind: QuoteKind, originAsset: string, destinationAsset: string, enabled?: ReadonlySet<string>): Promise<void> {
    const assets = await this.assets.forUser(principal, [originAsset, destinationAsset], enabled)
    const missing = (asset: string, feature: string, end: 'origin' | 'destination') => {
      if (assets[asset]?.delisted !== false || !assets[asset]!.features.includes(feature)) {
        throw new DomainError('asset_feature_not_available', `The '${feature}' feature is not available for the ${end} asset`, { details: { context: 'body', property: end, feature } })
      }
    }
    if (kind === 'trade') {
      missing(originAsset, 'sell', 'origin')
      missing(destinationAsset, 'buy', 'destination')
    } else if (assets[originAsset]?.delisted !== false) {
      throw new DomainError('asset_not_supported', 'The asset is not supported', { details: { context: 'body', property: 'origin' } })
    }
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

  /** The schedule's fees of this kind, their fixed parts in the origin asset (at the mid, rounded up). */
  private feeRules(kind: QuoteKind, originUsd: UsdQuote, originDecimals: number): FeeRule[] {
    return this.settings.rules.fees[kind].map((rule) => ({
      type: rule.type,
      code: rule.code,
      ...(rule.percentage !== undefined ? { percentage: rule.percentage } : {}),
      ...(rule.fixedUsd !== undefined ? { fixed: new Decimal(rule.fixedUsd).div(originUsd.mid).decimalPlaces(originDecimals, BigNumber.ROUND_UP).toFixed() } : {}),
    }))
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
