import type { Principal, WidgetBinding } from '../../http/principal.ts'
import { notFound, operationNotAllowed } from '../../lib/errors.ts'
import type { Quote } from '../quotes/index.ts'
import type { CreatePaymentWidgetSessionBody, PaymentWidgetFlow } from './widgets.schemas.ts'

/** What a widget session's token may do, per flow: only what its page calls. */
const PAYMENT_SCOPES: Record<PaymentWidgetFlow, readonly string[]> = {
  authorize: ['core.transactions:create', 'core.transactions:read'],
  'select-for-deposit': ['core.external-accounts:read', 'core.external-accounts:create'],
  'select-for-withdrawal': ['core.external-accounts:read', 'core.external-accounts:create'],
}

/** Wallet payments the widget does not take yet (spec §6.1): sessions that ask for them are refused. */
const WALLET_REQUIREMENTS = ['authorize:apple-pay', 'authorize:google-pay']
const WALLET_METHODS = ['apple-pay', 'google-pay']

/** Signs a widget session's token (the auth module's token signer): one user, one widget binding, narrowed scopes. */
export interface SessionSigner {
  sign(input: { clientId: string; organizationId: string; scopes: string[]; ttlSeconds: number; userId: string; widget: WidgetBinding }): Promise<string>
}

export interface WidgetQuotes {
  find(principal: Principal, quoteId: string): Promise<Quote | null>
  isUsable(principal: Principal, quoteId: string, at: Date): Promise<boolean>
}

export interface WidgetSettings {
  publicUrl: string
  sessionTtlSeconds: number
  pollIntervalMs: number
  maxPollAttempts: number
  /** Whether this deployment can take card payments (a card processor is configured): the payment widget needs one. */
  paymentsEnabled: boolean
}

/**
 * Widget sessions: a short-lived token for one user and one flow (and, to authorize, one quote), and the page
 * that runs it (`session.url`, served by Tessera). The client's server creates the session; the widget in the
 * user's browser then acts with the session's token alone, so the client's own credentials never reach the page.
 */
export class WidgetsService {
  private readonly signer: SessionSigner
  private readonly quotes: WidgetQuotes
  private readonly settings: WidgetSettings

  constructor(deps: { signer: SessionSigner; quotes: WidgetQuotes; settings: WidgetSettings }) {
    this.signer = deps.signer
    this.quotes = deps.quotes
    this.settings = deps.settings
  }

  /** The page of the payment widget (the frame the SDK loads). */
  get paymentWidgetUrl(): string {
    return `${this.settings.publicUrl}/hosted/payment-widget/`
  }

  async createPaymentSession(principal: Principal, body: CreatePaymentWidgetSessionBody): Promise<{ flow: PaymentWidgetFlow; url: string; token: string; data?: Record<string, unknown> }> {
    if (principal.userId === null) throw notFound('user')
    if (!this.settings.paymentsEnabled) throw operationNotAllowed('The payment widget is not enabled for your organization', ['permission-denied'])
    const data = (body.data ?? {}) as Record<string, unknown>
    const requirements = Array.isArray(data.requirements) ? (data.requirements as string[]) : []
    const methods = Array.isArray(data.paymentMethods) ? (data.paymentMethods as { type?: unknown }[]).map((method) => method?.type) : []
    if (requirements.some((name) => WALLET_REQUIREMENTS.includes(name)) || methods.some((type) => WALLET_METHODS.includes(String(type)))) {
      throw operationNotAllowed('Apple Pay and Google Pay are not supported yet', ['permission-denied'])
    }
    let quoteId: string | undefined
    if (body.flow === 'authorize') {
      quoteId = body.data.quoteId.toLowerCase()
      // An expired or executed quote cannot be authorized: the widget would only fail.
      if (!(await this.quotes.isUsable(principal, quoteId, new Date()))) throw notFound('quote', { context: 'body', property: 'data.quoteId' })
    }
    const domain = typeof data.domain === 'string' ? data.domain.toLowerCase() : undefined
    const token = await this.signer.sign({
      clientId: principal.clientId,
      organizationId: principal.organizationId,
      // Never more than the client's own token holds.
      scopes: PAYMENT_SCOPES[body.flow].filter((scope) => principal.scopes.has(scope)),
      ttlSeconds: this.settings.sessionTtlSeconds,
      userId: principal.userId,
      widget: { kind: 'payment', flow: body.flow, ...(quoteId !== undefined ? { quoteId } : {}), ...(domain !== undefined ? { domain } : {}) },
    })
    const echoed = { ...(quoteId !== undefined ? { quoteId } : {}), ...(domain !== undefined ? { domain } : {}) }
    return { flow: body.flow, url: this.paymentWidgetUrl, token, ...(Object.keys(echoed).length > 0 ? { data: echoed } : {}) }
  }

  /** The session the calling widget runs, from its token: 404 `entity_not_found` (entity `session`) for any other token. */
  async currentPaymentSession(principal: Principal) {
    const widget = principal.widget
    if (widget?.kind !== 'payment') throw notFound('session')
    const quote = widget.quoteId !== undefined ? await this.quotes.find(principal, widget.quoteId) : null
    return {
      session: {
        flow: widget.flow as PaymentWidgetFlow,
        data: { ...(widget.quoteId !== undefined ? { quoteId: widget.quoteId } : {}), ...(widget.domain !== undefined ? { domain: widget.domain } : {}) },
        expiresAt: new Date(widget.expiresAt * 1000).toISOString(),
      },
      ...(quote ? { quote } : {}),
      settings: {
        pollIntervalMs: this.settings.pollIntervalMs,
        maxPollAttempts: this.settings.maxPollAttempts,
        returnUrl: `${this.settings.publicUrl}/hosted/payment-widget/3ds-return`,
      },
    }
  }
}
