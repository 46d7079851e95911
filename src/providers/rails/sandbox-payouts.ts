import { createHash } from 'node:crypto'
import BigNumber from 'bignumber.js'
import type { Insertable } from 'kysely'
import type { Db, SandboxRailOrderRow, SandboxRailOrdersTable } from '../../db/schema.ts'
import { isUuid, uuidv7 } from '../../lib/ids.ts'
import { RailUnavailableError, type PaymentRail, type RailCounterparty, type RailFailureReason, type RailOrder, type RailOutcome, type RailReceipt } from './payouts.ts'
import { findByOrderIds, listOrders, recordOrders } from './sandbox-payouts.repository.ts'

/** What a test value selects instead of completion: a refusal at submission, or a failure at settlement. */
export interface SandboxRailTestOutcome {
  status: 'rejected' | 'failed'
  reason: RailFailureReason
}

export interface SandboxRailTestValues {
  /** ACH and FPS by the account number's last four digits, SEPA by the IBAN's; above the maximum is refused first. */
  bank: { maximumAmount: string; byLastFourDigits: Readonly<Record<string, SandboxRailTestOutcome>> }
  /** Push-to-card payouts by the whole card number; above the maximum is refused first. */
  card: { maximumAmount: string; byNumber: Readonly<Record<string, SandboxRailTestOutcome>> }
  crypto: {
    /** By the address's last four hex characters, in any case. */
    ethereum: { byLastFourHexDigits: Readonly<Record<string, SandboxRailTestOutcome>> }
    /** By the whole address, in any case (bech32 is case-insensitive). */
    bitcoin: { byAddress: Readonly<Record<string, SandboxRailTestOutcome>> }
  }
}

const rejected = (reason: RailFailureReason): SandboxRailTestOutcome => ({ status: 'rejected', reason })
const failed = (reason: RailFailureReason): SandboxRailTestOutcome => ({ status: 'failed', reason })

/**
 * The values that select an outcome other than completion, decided when the order is submitted. One table, so that
 * docs/sandbox.md, the tests and the simulator cannot disagree. Every number and address here passes its network's
 * own checks (Luhn, bech32), so each one also gets through Tessera's validation of external accounts.
 */
export const SANDBOX_RAIL_TEST_VALUES: SandboxRailTestValues = {
  bank: {
    maximumAmount: '50000',
    byLastFourDigits: {
      // A returned payment: the receiving bank could not match the name to the account.
      '0002': failed('bank-account-holder-name-mismatch'),
      '0003': rejected('beneficiary-country-restricted'),
      '0004': failed('unspecified-error'),
      // For a collection: the debited account had no funds.
      '0005': failed('insufficient-funds'),
    },
  },
  card: {
    maximumAmount: '5000',
    byNumber: {
      '4000000000000127': failed('card-declined-by-bank'),
      '4000000000000135': failed('card-expired'),
      '4000000000000143': rejected('card-permanently-declined-by-bank'),
      '4000000000000150': failed('card-unsupported'),
    },
  },
  crypto: {
    ethereum: { byLastFourHexDigits: { dead: rejected('screening-verification-failed'), '0bad': failed('unspecified-error') } },
    bitcoin: {
      byAddress: {
        // Testnet P2WPKH addresses of the witness programs 0x00 × 20 and 0x01 × 20: nobody holds their keys.
        tb1qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq0l98cr: rejected('screening-verification-failed'),
        tb1qqyqszqgpqyqszqgpqyqszqgpqyqszqgpw0yxjz: failed('unspecified-error'),
      },
    },
  },
}

/** Crypto networks whose transaction hashes are written `0x`-prefixed. */
const EVM_NETWORKS: ReadonlySet<string> = new Set(['ethereum'])

export interface SandboxPaymentRailOptions {
  db: Db
  /** How long an accepted order stays pending before its outcome is final (`SANDBOX_RAIL_SETTLE_MS`). */
  settleAfterMs: number
  now?: () => Date
}

/**
 * The sandbox's outbound payment rail: takes payouts and collections as a partner bank, a card processor or a
 * custody platform would, and settles them after `settleAfterMs`, each with the outcome its test values select
 * (SANDBOX_RAIL_TEST_VALUES; anything else completes). Its record of the orders lives in the database, so a
 * restarted process finds every order it took, and a key sent again is the order it already holds.
 */
export class SandboxPaymentRail implements PaymentRail {
  readonly cryptoExecution = 'simulated' as const
  private readonly db: Db
  private readonly settleAfterMs: number
  private readonly now: () => Date

  constructor(options: SandboxPaymentRailOptions) {
    if (!Number.isSafeInteger(options.settleAfterMs) || options.settleAfterMs < 0) {
      throw new Error(`The sandbox rail's settlement delay must be a whole number of milliseconds, 0 or more (got ${options.settleAfterMs})`)
    }
    this.db = options.db
    this.settleAfterMs = options.settleAfterMs
    this.now = options.now ?? (() => new Date())
  }

  async submit(orders: readonly RailOrder[]): Promise<RailReceipt[]> {
    for (const order of orders) assertValidOrder(order)
    if (orders.length === 0) return []
    const now = this.now()
    // A key twice in one batch is one order submitted twice: one row, counted twice.
    const submissions = new Map<string, Insertable<SandboxRailOrdersTable>>()
    for (const order of orders) {
      const submission = submissions.get(order.key)
      if (submission) submission.received += 1
      else submissions.set(order.key, this.newOrder(order, now))
    }
    const recorded = await reach(() => recordOrders(this.db, [...submissions.values()]))
    const byKey = new Map(recorded.map((row) => [row.key, row]))
    return orders.map((order) => receiptOf(byKey.get(order.key)!))
  }

  async outcomes(orderIds: readonly string[]): Promise<Map<string, RailOutcome>> {
    // Not a uuid is not an order id of this rail; asking the database would only fail on the cast.
    const lookedUp = [...new Set(orderIds.map((id) => id.toLowerCase()))].filter(isUuid)
    const rows = lookedUp.length === 0 ? [] : await reach(() => findByOrderIds(this.db, lookedUp))
    const byId = new Map(rows.map((row) => [row.order_id, row]))
    const now = this.now()
    const outcomes = new Map<string, RailOutcome>()
    for (const orderId of orderIds) {
      const row = byId.get(orderId.toLowerCase())
      if (!row) throw new Error(`The sandbox rail has no order ${orderId}`)
      outcomes.set(orderId, outcomeAt(row, now))
    }
    return outcomes
  }

  private newOrder(order: RailOrder, now: Date): Insertable<SandboxRailOrdersTable> {
    const selected = testOutcomeOf(order)
    return {
      key: order.key,
      order_id: uuidv7(now.getTime()),
      organization_id: order.organizationId,
      direction: order.direction,
      kind: order.counterparty.kind,
      network: order.counterparty.network,
      asset: order.asset,
      amount: order.amount,
      counterparty: JSON.stringify(storedCounterparty(order.counterparty)),
      reference: order.reference,
      status: selected?.status ?? 'completed',
      reason: selected?.reason ?? null,
      network_reference: selected ? null : networkReference(order),
      received: 1,
      received_at: now,
      // A refusal is final at once; an accepted order is in flight until the rail settles it.
      settles_at: selected?.status === 'rejected' ? now : new Date(now.getTime() + this.settleAfterMs),
    }
  }
}

/** An order as the rail received it, for tests and operators: what was sent, how often, and what it became. */
export interface ReceivedRailOrder {
  key: string
  orderId: string
  status: SandboxRailOrderRow['status']
  reason: string | null
  /** How many times the key was submitted. */
  received: number
  amount: string
  asset: string
  kind: string
  network: string
  direction: SandboxRailOrderRow['direction']
}

/** Every order the sandbox rail received (of one organization, if given), oldest first. */
export async function receivedOrders(db: Db, organizationId?: string): Promise<ReceivedRailOrder[]> {
  const rows = await listOrders(db, organizationId)
  return rows.map((row) => ({
    key: row.key,
    orderId: row.order_id,
    status: row.status,
    reason: row.reason,
    received: row.received,
    amount: row.amount,
    asset: row.asset,
    kind: row.kind,
    network: row.network,
    direction: row.direction,
  }))
}

// The rail's own store failing is the rail being unreachable: the caller retries, as it would a partner's outage.
async function reach<T>(query: () => Promise<T>): Promise<T> {
  try {
    return await query()
  } catch (error) {
    throw new RailUnavailableError('The sandbox rail cannot reach its database', { cause: error })
  }
}

function receiptOf(row: SandboxRailOrderRow): RailReceipt {
  if (row.status === 'rejected') return { key: row.key, status: 'rejected', reason: row.reason as RailFailureReason }
  return { key: row.key, status: 'accepted', orderId: row.order_id }
}

function outcomeAt(row: SandboxRailOrderRow, now: Date): RailOutcome {
  if (now < row.settles_at) return { status: 'pending', retryAt: row.settles_at }
  if (row.status === 'completed') return { status: 'completed', ...(row.network_reference !== null && { networkReference: row.network_reference }) }
  return { status: 'failed', reason: row.reason as RailFailureReason }
}

// ---------------------------------------------------------------------------------------------------------------
// Deciding an order's outcome from its test values.

function testOutcomeOf(order: RailOrder): SandboxRailTestOutcome | undefined {
  const { counterparty } = order
  const values = SANDBOX_RAIL_TEST_VALUES
  switch (counterparty.kind) {
    case 'bank':
      if (new BigNumber(order.amount).gt(values.bank.maximumAmount)) return rejected('provider-maximum-limit-exceeded')
      return testValue(values.bank.byLastFourDigits, bankAccountIdentifier(counterparty).slice(-4))
    case 'card':
      if (new BigNumber(order.amount).gt(values.card.maximumAmount)) return rejected('provider-maximum-limit-exceeded')
      return testValue(values.card.byNumber, counterparty.number)
    case 'crypto': {
      const address = counterparty.address.toLowerCase()
      if (counterparty.network === 'ethereum') return testValue(values.crypto.ethereum.byLastFourHexDigits, address.slice(-4))
      if (counterparty.network === 'bitcoin') return testValue(values.crypto.bitcoin.byAddress, address)
      return undefined
    }
  }
}

// An own-property lookup: an address that happens to spell `constructor` must not find Object's.
function testValue(table: Readonly<Record<string, SandboxRailTestOutcome>>, key: string): SandboxRailTestOutcome | undefined {
  return Object.hasOwn(table, key) ? table[key] : undefined
}

/** The number that identifies a bank account on its network, in electronic form. */
function bankAccountIdentifier(counterparty: Extract<RailCounterparty, { kind: 'bank' }>): string {
  return counterparty.network === 'sepa' ? counterparty.iban.replace(/\s+/g, '').toUpperCase() : counterparty.accountNumber
}

/** A card's number never reaches the rail's record: its last four digits say which card it was. */
function storedCounterparty(counterparty: RailCounterparty): Record<string, unknown> {
  if (counterparty.kind !== 'card') return counterparty
  const { kind, network, number, expiryDate } = counterparty
  return { kind, network, last4Digits: number.slice(-4), expiryDate: { month: expiryDate.month, year: expiryDate.year } }
}

/** The trace a completed order carries, derived from its key so that a test can predict it. */
function networkReference(order: RailOrder): string {
  const digest = createHash('sha256').update(order.key).digest('hex')
  switch (order.counterparty.kind) {
    case 'crypto':
      return EVM_NETWORKS.has(order.counterparty.network) ? `0x${digest}` : digest
    case 'bank':
      return `SBX${digest.slice(0, 12).toUpperCase()}`
    case 'card':
      // A six-digit approval code; the bias of 256 bits reduced modulo 10^6 is far below anything a test sees.
      return (BigInt(`0x${digest}`) % 1_000_000n).toString().padStart(6, '0')
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Orders come from Tessera's own flows: one that breaks these rules is a bug there, never a user's input.

const DECIMAL_AMOUNT = /^(0|[1-9][0-9]*)(\.[0-9]+)?$/
const CARD_NUMBER = /^[0-9]{12,19}$/

function assertValidOrder(order: RailOrder): void {
  const problem = orderProblem(order)
  // The key names the order; the order itself may hold a card number, so it is never quoted.
  if (problem !== undefined) throw new Error(`Sandbox rail order ${JSON.stringify(order.key)}: ${problem}`)
}

function orderProblem(order: RailOrder): string | undefined {
  if (!isText(order.key)) return 'the key is empty'
  if (typeof order.organizationId !== 'string' || !isUuid(order.organizationId)) return 'the organization id is not a uuid'
  if (order.direction !== 'payout' && order.direction !== 'collection') return `unknown direction ${String(order.direction)}`
  if (!isText(order.asset)) return 'the asset is empty'
  if (typeof order.amount !== 'string' || !DECIMAL_AMOUNT.test(order.amount) || new BigNumber(order.amount).isZero()) {
    return 'the amount is not a positive decimal string'
  }
  if (typeof order.reference !== 'string') return 'the reference is not a string'
  return counterpartyProblem(order.counterparty, order.direction)
}

function counterpartyProblem(counterparty: RailCounterparty, direction: RailOrder['direction']): string | undefined {
  // Money is pulled from a bank account only (a direct debit); a card or an address can only be paid.
  if (counterparty.kind !== 'bank' && direction === 'collection') return `a collection cannot pull from a ${counterparty.kind} counterparty`
  switch (counterparty.kind) {
    case 'bank':
      switch (counterparty.network) {
        case 'ach':
        case 'wire':
        case 'fednow':
        case 'rtp':
          return isText(counterparty.routingNumber) && isText(counterparty.accountNumber) ? undefined : 'a US account needs a routing and an account number'
        case 'fps':
          return isText(counterparty.sortCode) && isText(counterparty.accountNumber) ? undefined : 'a UK account needs a sort code and an account number'
        case 'sepa':
          return isText(counterparty.iban) ? undefined : 'a SEPA account needs an IBAN'
        default:
          return `unknown bank network ${String((counterparty as { network: unknown }).network)}`
      }
    case 'card':
      if (!isText(counterparty.network) || typeof counterparty.number !== 'string' || !CARD_NUMBER.test(counterparty.number)) {
        return 'a card needs a network and a number of 12 to 19 digits'
      }
      return isExpiryDate(counterparty.expiryDate) ? undefined : 'a card needs an expiry month and year'
    case 'crypto':
      return isText(counterparty.network) && isText(counterparty.address) ? undefined : 'a crypto counterparty needs a network and an address'
    default:
      return `unknown counterparty kind ${String((counterparty as { kind: unknown }).kind)}`
  }
}

function isExpiryDate(value: { month: number; year: number } | undefined): boolean {
  return value !== undefined && Number.isInteger(value.month) && value.month >= 1 && value.month <= 12 && Number.isInteger(value.year)
}

function isText(value: unknown): value is string {
  return typeof value === 'string' && value !== ''
}
