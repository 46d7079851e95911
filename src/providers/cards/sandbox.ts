import { randomUUID } from 'node:crypto'
import BigNumber from 'bignumber.js'
import type { Db, SandboxCardPaymentRow } from '../../db/schema.ts'
import type {
  CardAuthorization,
  CardCapture,
  CardDeclineReason,
  CardPaymentFailureReason,
  CardPaymentRequest,
  CardProcessor,
  CardToVerify,
  CardVerification,
} from './card-processor.ts'
import * as repository from './sandbox-payments.repository.ts'

/**
 * Test card numbers whose verification the sandbox issuer refuses, and why (docs/sandbox.md). Every other number
 * of the BIN table verifies. Chosen apart from the numbers that select withdrawal and payment outcomes, so that
 * those cards can be linked first.
 */
export const SANDBOX_VERIFICATION_DECLINES: Readonly<Record<string, CardDeclineReason>> = {
  '4000000000000002': 'card-declined-by-bank',
  '4000000000000069': 'card-expired',
  '4000000000000036': 'card-permanently-declined-by-bank',
  '4000000000000044': 'card-unauthorized',
  '4000000000000010': 'card-unsupported',
  '4000000000000119': 'unspecified-error',
}

/** The security code the sandbox issuer says does not match the card (any other code matches). */
export const SANDBOX_WRONG_SECURITY_CODE = '000'

/** Test cards that link, and whose payments (card deposits) the sandbox issuer declines at authorization. */
export const SANDBOX_PAYMENT_DECLINES: Readonly<Record<string, CardPaymentFailureReason>> = {
  '4000000000000200': 'card-declined-by-bank',
  '4000000000000218': 'card-expired',
  '4000000000000226': 'card-permanently-declined-by-bank',
  '4000000000000234': 'card-unauthorized',
  '4000000000000242': 'card-unsupported',
  '4000000000000259': 'insufficient-funds',
  '4000000000000267': 'velocity',
  '4000000000000275': 'unspecified-error',
}

/** A test card whose issuer asks for a 3-D Secure challenge on every payment. */
export const SANDBOX_CHALLENGE_CARD = '4000000000003220'

/** A test card whose payments authorize, and whose capture the issuer then refuses (`card-declined-by-bank`). */
export const SANDBOX_CAPTURE_DECLINE_CARD = '4000000000000283'

/** The payment bounds of the sandbox processor, in the card's currency: outside them, the reasons below. */
export const SANDBOX_PAYMENT_BOUNDS = {
  /** Below it: `amount-limit-exceed`. */
  minimum: '1.00',
  /** Above it: `provider-maximum-limit-exceeded`. */
  maximum: '10000.00',
} as const

/** How long a 3-D Secure challenge waits for the cardholder before it is abandoned (declined). */
export const DEFAULT_CHALLENGE_TTL_MS = 10 * 60_000

type Outcome = 'approve' | 'challenge' | 'capture-decline' | CardPaymentFailureReason

/** What a payment request selects: an amount outside the bounds first, then the test card's own outcome. */
export function sandboxPaymentOutcome(request: Pick<CardPaymentRequest, 'card' | 'amount'>, now: Date): Outcome {
  const amount = new BigNumber(request.amount)
  if (amount.isLessThan(SANDBOX_PAYMENT_BOUNDS.minimum)) return 'amount-limit-exceed'
  if (amount.isGreaterThan(SANDBOX_PAYMENT_BOUNDS.maximum)) return 'provider-maximum-limit-exceeded'
  const { month, year } = request.card.expiryDate
  // A card is valid through the last day of its expiry month (UTC).
  if (year < now.getUTCFullYear() || (year === now.getUTCFullYear() && month < now.getUTCMonth() + 1)) return 'card-expired'
  const number = request.card.number
  if (SANDBOX_PAYMENT_DECLINES[number]) return SANDBOX_PAYMENT_DECLINES[number]
  // A card the issuer refused at linking cannot be linked; were it stored anyway, it is declined the same way.
  if (SANDBOX_VERIFICATION_DECLINES[number]) return SANDBOX_VERIFICATION_DECLINES[number]
  if (number === SANDBOX_CHALLENGE_CARD) return 'challenge'
  if (number === SANDBOX_CAPTURE_DECLINE_CARD) return 'capture-decline'
  return 'approve'
}

/** A challenge's answer, told to whoever waits for the payment (the card deposit flows). */
export interface AuthorizationChange {
  organizationId: string
  reference: string
}

/**
 * The sandbox card processor: deterministic answers from test card numbers and amounts (docs/sandbox.md), kept in
 * the database like an acquirer's books (`sandbox_card_payments`), so that a repeated request is the same payment
 * and a capture happens once, across restarts. Its 3-D Secure challenges are answered on the issuer page Tessera
 * serves itself (sandbox-issuer.routes.ts).
 */
export class SandboxCardProcessor implements CardProcessor {
  private readonly db: Db
  private readonly challengeUrlBase: string
  private readonly challengeTtlMs: number
  private readonly now: () => Date
  private readonly listeners: ((change: AuthorizationChange) => void)[] = []

  constructor(deps: { db: Db; publicUrl: string; challengeTtlMs?: number; now?: () => Date }) {
    this.db = deps.db
    this.challengeUrlBase = `${deps.publicUrl.replace(/\/$/, '')}/sandbox/3ds/`
    this.challengeTtlMs = deps.challengeTtlMs ?? DEFAULT_CHALLENGE_TTL_MS
    this.now = deps.now ?? (() => new Date())
  }

  async verify(card: CardToVerify): Promise<CardVerification> {
    const declined = SANDBOX_VERIFICATION_DECLINES[card.number]
    if (declined) return { status: 'declined', reason: declined }
    if (card.securityCode === SANDBOX_WRONG_SECURITY_CODE) return { status: 'declined', reason: 'card-unauthorized' }
    return { status: 'approved' }
  }

  /** Tells `listener` when a cardholder answers a challenge (the flows then look again at once). */
  onChange(listener: (change: AuthorizationChange) => void): void {
    this.listeners.push(listener)
  }

  async authorize(request: CardPaymentRequest): Promise<CardAuthorization> {
    const now = this.now()
    const outcome = sandboxPaymentOutcome(request, now)
    const status = outcome === 'challenge' ? 'challenge' : outcome === 'approve' || outcome === 'capture-decline' ? 'authorized' : 'declined'
    const row = await repository.recordPayment(this.db, {
      id: randomUUID(),
      organization_id: request.organizationId,
      key: request.key,
      reference: request.reference,
      network: request.card.network,
      last_four: request.card.number.slice(-4),
      asset: request.asset,
      amount: request.amount,
      outcome,
      status,
      reason: status === 'declined' ? outcome : null,
      return_url: request.returnUrl,
      challenge_expires_at: status === 'challenge' ? new Date(now.getTime() + this.challengeTtlMs) : null,
      created_at: now,
      updated_at: now,
    })
    return this.authorizationOf(row)
  }

  async authorizations(organizationId: string, authorizationIds: readonly string[]): Promise<Map<string, CardAuthorization>> {
    const now = this.now()
    const rows = new Map((await repository.findMany(this.db, organizationId, authorizationIds)).map((row) => [row.id, row]))
    const overdue = [...rows.values()].filter((row) => row.status === 'challenge' && row.challenge_expires_at! <= now).map((row) => row.id)
    for (const row of await repository.expireChallenges(this.db, organizationId, overdue, now)) rows.set(row.id, row)
    return new Map([...rows.values()].map((row) => [row.id, this.authorizationOf(row)]))
  }

  async capture(request: { organizationId: string; authorizationId: string; key: string }): Promise<CardCapture> {
    return this.db.transaction().execute(async (tx) => {
      const row = await repository.lock(tx, request.authorizationId, request.organizationId)
      if (!row) return { status: 'declined', reason: 'unspecified-error' }
      // Captured already (under this key or another): the same capture, never a second charge.
      const done = row.operations.find((operation) => operation.kind === 'capture')
      if (done) return { status: 'captured', captureId: done.id }
      if (row.status !== 'authorized') return { status: 'declined', reason: (row.reason as CardPaymentFailureReason | null) ?? 'unspecified-error' }
      const now = this.now()
      if (row.outcome === 'capture-decline') {
        await repository.update(tx, row.id, { status: 'declined', reason: 'card-declined-by-bank', updated_at: now })
        return { status: 'declined', reason: 'card-declined-by-bank' }
      }
      const captureId = randomUUID()
      await repository.update(tx, row.id, {
        status: 'captured',
        captured_amount: row.amount,
        operations: JSON.stringify([...row.operations, { kind: 'capture', key: request.key, id: captureId, amount: row.amount, at: now.toISOString() }]),
        updated_at: now,
      })
      return { status: 'captured', captureId }
    })
  }

  async void(request: { organizationId: string; authorizationId: string; key: string }): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      const row = await repository.lock(tx, request.authorizationId, request.organizationId)
      // Only an authorization still open is released; a captured payment is refunded instead, a declined one holds nothing.
      if (!row || (row.status !== 'authorized' && row.status !== 'challenge')) return
      const now = this.now()
      await repository.update(tx, row.id, {
        status: 'voided',
        operations: JSON.stringify([...row.operations, { kind: 'void', key: request.key, id: randomUUID(), at: now.toISOString() }]),
        updated_at: now,
      })
    })
  }

  async refund(request: { organizationId: string; authorizationId: string; amount: string; key: string }): Promise<{ status: 'refunded'; refundId: string } | { status: 'declined'; reason: 'amount-limit-exceed' | 'unspecified-error' }> {
    return this.db.transaction().execute(async (tx) => {
      const row = await repository.lock(tx, request.authorizationId, request.organizationId)
      if (!row || row.status !== 'captured') return { status: 'declined', reason: 'unspecified-error' }
      const done = row.operations.find((operation) => operation.kind === 'refund' && operation.key === request.key)
      if (done) return { status: 'refunded', refundId: done.id }
      const refunded = new BigNumber(row.refunded_amount).plus(request.amount)
      if (!new BigNumber(request.amount).isGreaterThan(0) || refunded.isGreaterThan(row.captured_amount)) return { status: 'declined', reason: 'amount-limit-exceed' }
      const now = this.now()
      const refundId = randomUUID()
      await repository.update(tx, row.id, {
        refunded_amount: refunded.toFixed(),
        operations: JSON.stringify([...row.operations, { kind: 'refund', key: request.key, id: refundId, amount: request.amount, at: now.toISOString() }]),
        updated_at: now,
      })
      return { status: 'refunded', refundId }
    })
  }

  /** The payment behind a challenge page, while its challenge is open or after (null when there is none). */
  async challenge(id: string): Promise<SandboxCardPaymentRow | null> {
    return (await repository.findById(this.db, id)) ?? null
  }

  /**
   * The cardholder's answer on the issuer page: `pass` authorizes the payment, `fail` declines it
   * (`card-unauthorized`). A challenge already answered or past its time is left as it is. Answers the payment as
   * it now stands.
   */
  async answerChallenge(id: string, answer: 'pass' | 'fail'): Promise<SandboxCardPaymentRow | null> {
    const now = this.now()
    const result = await this.db.transaction().execute(async (tx) => {
      const row = await repository.lock(tx, id)
      if (!row || row.status !== 'challenge') return { row, changed: false }
      if (row.challenge_expires_at! <= now) return { row: await repository.update(tx, id, { status: 'declined', reason: 'card-unauthorized', updated_at: now }), changed: true }
      const changes = answer === 'pass' ? { status: 'authorized' as const } : { status: 'declined' as const, reason: 'card-unauthorized' }
      return { row: await repository.update(tx, id, { ...changes, updated_at: now }), changed: true }
    })
    if (result.row && result.changed) {
      for (const listener of this.listeners) listener({ organizationId: result.row.organization_id, reference: result.row.reference })
    }
    return result.row ?? null
  }

  /** The payments of an organization, as the processor's books show them (tests and operators). */
  payments(organizationId: string): Promise<SandboxCardPaymentRow[]> {
    return repository.listPayments(this.db, organizationId)
  }

  private authorizationOf(row: SandboxCardPaymentRow): CardAuthorization {
    if (row.status === 'challenge') return { status: 'challenge', authorizationId: row.id, challengeUrl: this.challengeUrlBase + row.id, expiresAt: row.challenge_expires_at! }
    if (row.status === 'declined') return { status: 'declined', authorizationId: row.id, reason: row.reason as CardPaymentFailureReason }
    return { status: 'authorized', authorizationId: row.id }
  }
}
