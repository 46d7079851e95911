import { createHash, randomInt } from 'node:crypto'
import BigNumber from 'bignumber.js'
import type { Db, Executor, StoredFee, Tx } from '../../db/schema.ts'
import type { Principal } from '../../http/principal.ts'
import { DomainError, notFound, operationNotAllowed } from '../../lib/errors.ts'
import type { CompletedMovement, TransactionNode } from '../transactions/index.ts'

/**
 * The sandbox's generated history (docs/sandbox.md#portfolio-history): months of a user's activity, as if they had
 * lived it, so that balance charts, performance and monthly statements have something to show. USD arrives by ACH
 * about every two weeks; BTC and ETH are bought with it a few times a month, sometimes partly sold back; now and
 * then a little BTC is withdrawn to an address. Each movement is priced from the sandbox price feed at its moment,
 * so the history agrees with the price charts, and recorded as the real flows record it: a completed transaction
 * and its ledger postings, dated then, in time order, all in one database transaction (all or nothing). A user with any transaction is refused: the history must be the accounts' beginning, so that the
 * ledger, the positions and their history stay chronological.
 */

const DAY = 86_400_000
const HOUR = 3_600_000
const MINUTE = 60_000
const ASSETS = ['USD', 'BTC', 'ETH'] as const
/** A test-chain (Bitcoin testnet) address nobody is known to hold: where generated withdrawals go. */
const HISTORY_WITHDRAWAL_ADDRESS = 'tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx'
const WITHDRAWAL_NETWORK = 'bitcoin'
const DEPOSIT_NETWORK = 'ach'

/** Rates carry 12 significant digits, as quotes give them. */
const RATE_DIGITS = 12
const Decimal = BigNumber.clone({ DECIMAL_PLACES: 40, ROUNDING_MODE: BigNumber.ROUND_HALF_EVEN })
const up = (value: BigNumber, decimals: number) => value.decimalPlaces(decimals, BigNumber.ROUND_UP)
const down = (value: BigNumber, decimals: number) => value.decimalPlaces(decimals, BigNumber.ROUND_DOWN)
const displayRate = (value: BigNumber.Value) => new Decimal(value).precision(RATE_DIGITS, BigNumber.ROUND_HALF_EVEN).toFixed()

/** A fee of the schedule (reference-data/transaction-rules.json). */
export interface HistoryFeeRule {
  type: StoredFee['type']
  code: string
  percentage?: string
  fixedUsd?: string
}

export interface HistoryRules {
  /** Taken off the market mid of every trade's rate (QUOTE_SPREAD). */
  spread: string
  /** The fees of trades and of crypto withdrawals, and what a withdrawal pays each chain. */
  tradeFees: readonly HistoryFeeRule[]
  cryptoWithdrawalFees: readonly HistoryFeeRule[]
  networkFees: Readonly<Record<string, { asset: string; amount: string }>>
}

export type HistorySystemAccount = { kind: 'clearing'; network: string; asset: string } | { kind: 'liquidity' | 'fees'; asset: string }

export interface HistoryPosting {
  organizationId: string
  type: string
  reference: string
  legs: readonly { accountId: string; amount: string }[]
  data: Record<string, unknown>
}

export interface HistoryLedger {
  /** Call outside any database transaction. */
  systemAccount(organizationId: string, account: HistorySystemAccount): Promise<string>
  postAll(requests: readonly HistoryPosting[], options: { tx: Tx; at: Date }): Promise<unknown>
}

/** A completed transaction as it is stored (the transactions module's `recordCompleted`). */
export type HistoryMovement = CompletedMovement

export interface HistoryTransactions {
  hasTransactions(executor: Executor, organizationId: string, ownerId: string): Promise<boolean>
  recordCompleted(tx: Tx, movement: HistoryMovement): Promise<{ id: string }>
}

export interface HistoryUsers {
  /** Moves the user's creation back (never forward) under the user's lock, in the caller's transaction. */
  backdateCreation(tx: Executor, organizationId: string, userId: string, to: Date): Promise<void>
  /** Forgets the cached user once the change committed. */
  forget(organizationId: string, userId: string): void
}

export interface HistoryAccounts {
  /** Refuses an asset the acting user may not hold; outside any database transaction. */
  assertMayHold(principal: Principal, assets: readonly string[]): Promise<void>
  /** The acting user's default (oldest open) accounts of the assets, opened in `tx` where missing. */
  openDefaults(tx: Tx, principal: Principal, assets: readonly string[]): Promise<{ id: string; asset: string }[]>
}

export interface SandboxHistoryDeps {
  db: Db
  ledger: HistoryLedger
  transactions: HistoryTransactions
  users: HistoryUsers
  accounts: HistoryAccounts
  /** US dollar quotes of the sandbox price feed at a moment. */
  prices: { usdQuote(asset: string, at: Date): Promise<{ mid: string } | null> }
  assets: { decimalsOf(code: string): number | undefined }
  rules: HistoryRules
  now?: () => Date
}

export interface HistoryRequest {
  months?: number
  seed?: number
}

export interface HistorySummary {
  from: string
  to: string
  seed: number
  transactions: number
  accounts: { id: string; asset: string }[]
}

/** mulberry32: a small, fast 32-bit generator; the same seed always draws the same numbers in [0, 1). */
function mulberry32(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}

/** One movement of the plan: what happens, when, with its amounts. */
type Planned =
  | { kind: 'deposit'; at: Date; amount: string }
  | { kind: 'trade'; at: Date; from: string; to: string; originAmount: string; destinationAmount: string; originRate: string; destinationRate: string; fees: StoredFee[] }
  | { kind: 'withdrawal'; at: Date; asset: string; originAmount: string; destinationAmount: string; fees: StoredFee[]; transactionHash: string }

/** The same day of the month `months` earlier, at midnight UTC (the month's last day when it has no such day). */
function monthsBefore(day: Date, months: number): Date {
  const year = day.getUTCFullYear()
  const month = day.getUTCMonth() - months
  const lastDay = new Date(Date.UTC(year, month + 1, 0)).getUTCDate()
  return new Date(Date.UTC(year, month, Math.min(day.getUTCDate(), lastDay)))
}

function historyRefused(): DomainError {
  return operationNotAllowed('History can only be generated for a user without transactions: it must be the beginning of their accounts', ['user-has-transactions'])
}

export class SandboxHistory {
  private readonly db: Db
  private readonly ledger: HistoryLedger
  private readonly transactions: HistoryTransactions
  private readonly users: HistoryUsers
  private readonly accounts: HistoryAccounts
  private readonly prices: SandboxHistoryDeps['prices']
  private readonly assets: SandboxHistoryDeps['assets']
  private readonly rules: HistoryRules
  private readonly now: () => Date

  constructor(deps: SandboxHistoryDeps) {
    this.db = deps.db
    this.ledger = deps.ledger
    this.transactions = deps.transactions
    this.users = deps.users
    this.accounts = deps.accounts
    this.prices = deps.prices
    this.assets = deps.assets
    this.rules = deps.rules
    this.now = deps.now ?? (() => new Date())
  }

  /**
   * Generates `months` of activity for the acting user, ending now. The plan depends on the seed and on the day
   * alone (the prices follow from the day): the activity runs from that day `months` months ago to the end of
   * yesterday (UTC), so the same seed gives the same history all day long. 409 `operation_not_allowed`
   * (`user-has-transactions`) for a user with any transaction, checked again under the user's lock as the first
   * movement is written, so that two calls for one user cannot both write.
   */
  async generate(principal: Principal, request: HistoryRequest): Promise<HistorySummary> {
    const userId = principal.userId
    if (userId === null) throw notFound('user')
    const organizationId = principal.organizationId
    const months = request.months ?? 6
    const seed = request.seed ?? randomInt(0, 2 ** 32)
    if (await this.transactions.hasTransactions(this.db, organizationId, userId)) throw historyRefused()

    const now = this.now()
    const today = new Date(Math.floor(now.getTime() / DAY) * DAY)
    const from = monthsBefore(today, months)
    const plan = await this.plan(mulberry32(seed), from, today, `${seed}`)

    await this.accounts.assertMayHold(principal, ASSETS)
    // Looked up outside the database transactions, as the ledger asks.
    const system = new Map<string, string>()
    const systemAccounts: HistorySystemAccount[] = [
      { kind: 'clearing', network: DEPOSIT_NETWORK, asset: 'USD' },
      { kind: 'clearing', network: WITHDRAWAL_NETWORK, asset: 'BTC' },
      ...ASSETS.flatMap((asset) => [{ kind: 'liquidity' as const, asset }, { kind: 'fees' as const, asset }]),
    ]
    for (const account of systemAccounts) system.set(systemKey(account), await this.ledger.systemAccount(organizationId, account))
    const systemOf = (account: HistorySystemAccount) => system.get(systemKey(account))!

    // One database transaction for the whole history: the user's lock serializes two calls for one user (the later
    // sees the earlier's transactions), and the accounts' ledger locks, held to the end, keep any real movement
    // from slipping between dated ones (it would be counted in months before it happened).
    // The default accounts are opened under that lock too: the later call, refused, opens none.
    const accounts = await this.db.transaction().execute(async (tx) => {
      await this.users.backdateCreation(tx, organizationId, userId, from)
      if (await this.transactions.hasTransactions(tx, organizationId, userId)) throw historyRefused()
      const opened = await this.accounts.openDefaults(tx, principal, ASSETS)
      const accountOf = (asset: string) => opened.find((account) => account.asset === asset)!.id
      for (const planned of plan) {
        const movement = this.movementOf(planned, organizationId, userId, accountOf)
        const { id } = await this.transactions.recordCompleted(tx, movement)
        await this.ledger.postAll(postingsOf(planned, movement, id, systemOf), { tx, at: planned.at })
      }
      return opened
    })
    this.users.forget(organizationId, userId)
    return { from: from.toISOString(), to: now.toISOString(), seed, transactions: plan.length, accounts }
  }

  private decimalsOf(asset: string): number {
    const decimals = this.assets.decimalsOf(asset)
    if (decimals === undefined) throw notFound('asset', { asset })
    return decimals
  }

  private async usdMid(asset: string, at: Date): Promise<BigNumber> {
    const quote = await this.prices.usdQuote(asset, at)
    if (quote === null) throw new DomainError('asset_not_supported', `The asset ${asset} has no price`, { details: { asset } })
    return new Decimal(quote.mid)
  }

  /**
   * The movements, in time order, and their amounts: the balances they leave decide what comes next (nothing is
   * spent that was not there). Every draw comes from `random`, in a fixed order, so the seed decides everything
   * the prices do not.
   */
  private async plan(random: () => number, from: Date, until: Date, tag: string): Promise<Planned[]> {
    const between = (min: number, max: number) => min + random() * (max - min)
    const integer = (min: number, max: number) => Math.floor(between(min, max + 1))
    const balances = new Map<string, BigNumber>(ASSETS.map((asset) => [asset, new BigNumber(0)]))
    const credit = (asset: string, amount: BigNumber.Value) => balances.set(asset, balances.get(asset)!.plus(amount))
    const plan: Planned[] = []
    let nextDeposit = 0
    const days = Math.round((until.getTime() - from.getTime()) / DAY)
    for (let day = 0; day < days; day++) {
      const start = from.getTime() + day * DAY
      const at = (fromHour: number, toHour: number) => new Date(start + Math.floor(between(fromHour * HOUR, toHour * HOUR) / MINUTE) * MINUTE + integer(0, 59) * 1000)
      if (day === nextDeposit) {
        // Pay day: 500 to 3,000 dollars, in steps of 25, every 12 to 16 days.
        const amount = new BigNumber(integer(20, 120) * 25)
        plan.push({ kind: 'deposit', at: at(9, 11), amount: amount.toFixed() })
        credit('USD', amount)
        nextDeposit += integer(12, 16)
      }
      if (random() < 0.12) {
        // A buy: 20 to 60 % of the dollars held, in whole dollars, three or four times a month.
        const asset = random() < 0.6 ? 'BTC' : 'ETH'
        const spend = balances.get('USD')!.times(between(0.2, 0.6)).integerValue(BigNumber.ROUND_DOWN)
        const when = at(12, 17)
        if (spend.isGreaterThanOrEqualTo(50)) {
          const trade = await this.trade('USD', asset, spend, when)
          plan.push(trade)
          credit('USD', new BigNumber(trade.originAmount).negated())
          credit(asset, trade.destinationAmount)
        }
      }
      if (random() < 0.035) {
        // A partial sale back to dollars, about once a month: 10 to 40 % of what is held, to 6 decimals.
        const asset = random() < 0.5 ? 'BTC' : 'ETH'
        const quantity = down(balances.get(asset)!.times(between(0.1, 0.4)), 6)
        const when = at(18, 19)
        if ((await this.usdMid(asset, when)).times(quantity).isGreaterThanOrEqualTo(25)) {
          const trade = await this.trade(asset, 'USD', quantity, when)
          plan.push(trade)
          credit(asset, quantity.negated())
          credit('USD', trade.destinationAmount)
        }
      }
      if (random() < 0.025) {
        // A small withdrawal of BTC, worth 50 to 300 dollars, when it leaves at least as much behind.
        const worth = between(50, 300)
        const when = at(20, 21)
        const amount = down(new Decimal(worth).div(await this.usdMid('BTC', when)), 5)
        if (amount.isGreaterThan(0) && amount.times(2).isLessThanOrEqualTo(balances.get('BTC')!)) {
          const withdrawal = await this.withdrawal('BTC', amount, when, `${tag}:${plan.length}`)
          plan.push(withdrawal)
          credit('BTC', amount.negated())
        }
      }
    }
    return plan
  }

  /** The fees of the schedule on what the origin pays: each its fixed part (dollars in the origin asset, rounded up) and percentage, rounded up. */
  private feesOf(rules: readonly HistoryFeeRule[], origin: BigNumber, asset: string, usdMid: BigNumber): StoredFee[] {
    const decimals = this.decimalsOf(asset)
    return rules.flatMap((rule) => {
      const fixed = rule.fixedUsd === undefined ? new Decimal(0) : up(new Decimal(rule.fixedUsd).div(usdMid), decimals)
      const amount = fixed.plus(up(origin.times(rule.percentage ?? 0).div(100), decimals))
      return amount.isZero() ? [] : [{ type: rule.type, code: rule.code, amount: amount.toFixed(), ...(rule.percentage !== undefined ? { percentage: rule.percentage } : {}), asset }]
    })
  }

  /** A trade priced as a quote prices it: the mid less the spread, the origin paying exactly `amount`, fees included. */
  private async trade(from: string, to: string, amount: BigNumber, at: Date): Promise<Extract<Planned, { kind: 'trade' }>> {
    const [fromUsd, toUsd] = await Promise.all([this.usdMid(from, at), this.usdMid(to, at)])
    const rate = displayRate(fromUsd.div(toUsd).times(new Decimal(1).minus(this.rules.spread)))
    const fees = this.feesOf(this.rules.tradeFees, amount, from, fromUsd)
    const exchanged = fees.reduce((rest, fee) => rest.minus(fee.amount), amount)
    const destination = down(exchanged.times(rate), this.decimalsOf(to))
    return {
      kind: 'trade',
      at,
      from,
      to,
      originAmount: amount.toFixed(),
      destinationAmount: destination.toFixed(),
      originRate: displayRate(new Decimal(1).div(rate)),
      destinationRate: rate,
      fees,
    }
  }

  /** A withdrawal to a crypto address: the origin pays `amount`, the fees (the chain's among them) come out of it. */
  private async withdrawal(asset: string, amount: BigNumber, at: Date, tag: string): Promise<Extract<Planned, { kind: 'withdrawal' }>> {
    const usdMid = await this.usdMid(asset, at)
    const networkFee = this.rules.networkFees[WITHDRAWAL_NETWORK]
    const fees = this.feesOf(this.rules.cryptoWithdrawalFees, amount, asset, usdMid)
    if (networkFee) {
      const feeUsd = await this.usdMid(networkFee.asset, at)
      const fixed = up(new Decimal(networkFee.amount).times(feeUsd).div(usdMid), this.decimalsOf(asset))
      if (!fixed.isZero()) fees.push({ type: 'network', code: 'network-fee', amount: fixed.toFixed(), asset })
    }
    const destination = fees.reduce((rest, fee) => rest.minus(fee.amount), amount)
    return {
      kind: 'withdrawal',
      at,
      asset,
      originAmount: amount.toFixed(),
      destinationAmount: destination.toFixed(),
      fees,
      transactionHash: createHash('sha256').update(`sandbox-history:${tag}`).digest('hex'),
    }
  }

  /** The transaction of a planned movement, as the real flows leave it once completed. */
  private movementOf(planned: Planned, organizationId: string, userId: string, accountOf: (asset: string) => string): HistoryMovement {
    const accountNode = (asset: string): TransactionNode => ({ type: 'account', id: accountOf(asset), ownerId: userId })
    const common = { organizationId, ownerId: userId, at: planned.at }
    switch (planned.kind) {
      case 'deposit':
        return {
          ...common,
          type: 'deposit',
          origin: { asset: 'USD', amount: planned.amount, rate: '1', node: { type: 'bank-address', network: DEPOSIT_NETWORK }, accountId: null },
          destination: { asset: 'USD', amount: planned.amount, rate: '1', node: accountNode('USD'), accountId: accountOf('USD') },
          denomination: { asset: 'USD', amount: planned.amount, rate: '1', target: 'destination' },
          fees: [],
          network: DEPOSIT_NETWORK,
        }
      case 'trade':
        return {
          ...common,
          type: 'trade',
          origin: { asset: planned.from, amount: planned.originAmount, rate: planned.originRate, node: accountNode(planned.from), accountId: accountOf(planned.from) },
          destination: { asset: planned.to, amount: planned.destinationAmount, rate: planned.destinationRate, node: accountNode(planned.to), accountId: accountOf(planned.to) },
          denomination: { asset: planned.from, amount: planned.originAmount, rate: '1', target: 'origin' },
          fees: planned.fees,
          network: null,
        }
      case 'withdrawal':
        return {
          ...common,
          type: 'withdrawal',
          origin: { asset: planned.asset, amount: planned.originAmount, rate: '1', node: accountNode(planned.asset), accountId: accountOf(planned.asset) },
          destination: {
            asset: planned.asset,
            amount: planned.destinationAmount,
            rate: '1',
            node: { type: 'crypto-address', network: WITHDRAWAL_NETWORK, address: HISTORY_WITHDRAWAL_ADDRESS, execution: { mode: 'simulated', transactionHash: planned.transactionHash } },
            accountId: null,
          },
          denomination: { asset: planned.asset, amount: planned.originAmount, rate: '1', target: 'origin' },
          fees: planned.fees,
          network: WITHDRAWAL_NETWORK,
        }
    }
  }
}

function systemKey(account: HistorySystemAccount): string {
  return account.kind === 'clearing' ? `clearing:${account.network}:${account.asset}` : `${account.kind}:${account.asset}`
}

/**
 * The ledger postings of a movement, between the user's accounts and the system accounts as the real flows make
 * them: a deposit is paid by the network's clearing account (deposit flow); a trade's origin pays the liquidity
 * account of its asset and the fees, and the liquidity account of the destination asset pays the destination
 * (trade flow: its capture and its delivery); a withdrawal pays the network's clearing account and the fees
 * (withdrawal flow). Each names its transaction; references are the transaction's id and step, never reused.
 */
function postingsOf(planned: Planned, movement: HistoryMovement, transactionId: string, system: (account: HistorySystemAccount) => string): HistoryPosting[] {
  const organizationId = movement.organizationId
  const data = { transactionId }
  const posting = (step: string, legs: HistoryPosting['legs']): HistoryPosting => ({ organizationId, type: movement.type, reference: `${transactionId}:history:${step}`, legs, data })
  const feeLegs = (asset: string) => {
    const fee = movement.fees.reduce((sum, item) => sum.plus(item.amount), new BigNumber(0))
    return { fee, legs: fee.isGreaterThan(0) ? [{ accountId: system({ kind: 'fees', asset }), amount: fee.toFixed() }] : [] }
  }
  const { origin, destination } = movement
  switch (planned.kind) {
    case 'deposit':
      return [posting('settle', [
        { accountId: system({ kind: 'clearing', network: DEPOSIT_NETWORK, asset: destination.asset }), amount: `-${destination.amount}` },
        { accountId: destination.accountId!, amount: destination.amount },
      ])]
    case 'trade': {
      const { fee, legs } = feeLegs(origin.asset)
      return [
        posting('capture', [
          { accountId: origin.accountId!, amount: `-${origin.amount}` },
          { accountId: system({ kind: 'liquidity', asset: origin.asset }), amount: new BigNumber(origin.amount).minus(fee).toFixed() },
          ...legs,
        ]),
        posting('deliver', [
          { accountId: system({ kind: 'liquidity', asset: destination.asset }), amount: `-${destination.amount}` },
          { accountId: destination.accountId!, amount: destination.amount },
        ]),
      ]
    }
    case 'withdrawal': {
      const { fee, legs } = feeLegs(origin.asset)
      return [posting('capture', [
        { accountId: origin.accountId!, amount: `-${origin.amount}` },
        { accountId: system({ kind: 'clearing', network: WITHDRAWAL_NETWORK, asset: destination.asset }), amount: new BigNumber(origin.amount).minus(fee).toFixed() },
        ...legs,
      ])]
    }
  }
}
