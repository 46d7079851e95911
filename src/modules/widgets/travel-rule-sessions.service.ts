import type { RequestForInformationRow } from '../../db/schema.ts'
import type { Principal } from '../../http/principal.ts'
import { notFound, operationNotAllowed } from '../../lib/errors.ts'
import type { TravelRuleNode } from '../../providers/travel-rule/travel-rule-node.ts'
import type { Quote } from '../quotes/index.ts'
import { presentRequest, type RequestContext, type RequestsForInformationService } from '../travel-rule/index.ts'
import type { SessionSigner } from './widgets.service.ts'
import type { CreateTravelRuleWidgetSessionBody, TravelRuleWidgetFlow } from './travel-rule-sessions.schemas.ts'

/** What the hosted page calls: its session, and the answer to its request. */
const SESSION_SCOPES = ['core.transactions.requests-for-information:read', 'core.transactions.requests-for-information:update']

export interface TravelRuleWidgetPorts {
  quotes: {
    find(principal: Principal, quoteId: string): Promise<Quote | null>
    isUsable(principal: Principal, quoteId: string, at: Date): Promise<boolean>
  }
  /** The crypto address of a withdrawal's destination node (a bare address, or a crypto external account's). */
  destinationAddress(principal: Principal, node: Record<string, unknown>): Promise<string | undefined>
  /** The asset's price in US dollars at the mid now, or null (the widget tells which proofs the value needs). */
  priceUsd(asset: string): Promise<string | null>
  /** The user, as the travel-rule network describes a customer. */
  customer(principal: Principal): Promise<{ name: string; type: 'natural' | 'legal' }>
}

export interface TravelRuleWidgetSettings {
  publicUrl: string
  sessionTtlSeconds: number
  /** Below this value in US dollars a self-declaration proves the user's own wallet. */
  selfDeclarationMaximumUsd: string
}

/** The message a user signs with an address's key to prove that it is theirs, for one request. */
export function messageToSign(row: RequestForInformationRow): string {
  const context = row.context as unknown as RequestContext
  const address = context.addresses[0] ?? ''
  return `I confirm that I control the address ${address} on ${context.network}. Request ${row.id}.`
}

/**
 * Travel-rule widget sessions: a short-lived token for one user and one request for information — a held deposit's,
 * or the one a withdrawal form answers for a quote before it is executed — and the page that collects the other
 * party's description and the user's proofs (served by Tessera, talking to the travel-rule node at `nodeUrl`).
 */
export class TravelRuleWidgetSessionsService {
  private readonly signer: SessionSigner
  private readonly requests: RequestsForInformationService
  private readonly node: TravelRuleNode | null
  private readonly ports: TravelRuleWidgetPorts
  private readonly settings: TravelRuleWidgetSettings

  constructor(deps: { signer: SessionSigner; requests: RequestsForInformationService; node: TravelRuleNode | null; ports: TravelRuleWidgetPorts; settings: TravelRuleWidgetSettings }) {
    this.signer = deps.signer
    this.requests = deps.requests
    this.node = deps.node
    this.ports = deps.ports
    this.settings = deps.settings
  }

  get pageUrl(): string {
    return `${this.settings.publicUrl}/hosted/travel-rule-widget/`
  }

  async create(principal: Principal, body: CreateTravelRuleWidgetSessionBody) {
    if (principal.userId === null) throw notFound('user')
    if (!this.node) throw operationNotAllowed('The travel-rule widget is not enabled for your organization', ['permission-denied'])
    const data = body.data as Record<string, unknown>
    let request: RequestForInformationRow
    if (body.flow === 'deposit-form') {
      const { requestForInformationId, transactionId } = data as { requestForInformationId?: string; transactionId?: string }
      if (requestForInformationId === undefined && transactionId === undefined) throw notFound('request-for-information', { context: 'body', property: 'data.requestForInformationId' })
      request = await this.requests.forDepositForm(principal, { ...(requestForInformationId !== undefined ? { requestForInformationId } : { transactionId: transactionId! }) })
    } else {
      const quoteId = (data.quoteId as string).toLowerCase()
      const quote = await this.ports.quotes.find(principal, quoteId)
      if (!quote || !(await this.ports.quotes.isUsable(principal, quoteId, new Date()))) throw notFound('quote', { context: 'body', property: 'data.quoteId' })
      if (!(quote.requirements as string[]).includes('travel-rule')) throw operationNotAllowed('The quote does not require travel rule', ['quote-missing-travel-rule-requirement'])
      const destination = quote.destination.node as Record<string, unknown>
      const address = await this.ports.destinationAddress(principal, destination)
      request = await this.requests.forWithdrawalForm(principal, {
        id: quoteId,
        expiresAt: new Date(quote.expiresAt),
        context: {
          direction: 'withdrawal',
          party: 'beneficiary',
          network: String(destination.network),
          asset: quote.destination.asset,
          amount: quote.destination.amount,
          addresses: address !== undefined ? [address] : [],
        },
      })
    }
    const domain = typeof data.domain === 'string' ? data.domain.toLowerCase() : undefined
    const token = await this.signer.sign({
      clientId: principal.clientId,
      organizationId: principal.organizationId,
      scopes: SESSION_SCOPES.filter((scope) => principal.scopes.has(scope)),
      ttlSeconds: this.settings.sessionTtlSeconds,
      userId: principal.userId,
      widget: {
        kind: 'travel-rule',
        flow: body.flow,
        requestForInformationId: request.id,
        ...(body.flow === 'withdrawal-form' ? { quoteId: (data.quoteId as string).toLowerCase() } : {}),
        ...(domain !== undefined ? { domain } : {}),
      },
    })
    return { flow: body.flow, url: this.pageUrl, token, data: await this.sessionData(principal, request, body.options?.theme) }
  }

  /** The session the calling widget runs, from its token: 404 `entity_not_found` (entity `session`) for any other token. */
  async current(principal: Principal) {
    const widget = principal.widget
    if (widget?.kind !== 'travel-rule' || widget.requestForInformationId === undefined) throw notFound('session')
    const request = await this.requests.bound(principal, widget.requestForInformationId)
    return {
      session: {
        flow: widget.flow as TravelRuleWidgetFlow,
        data: await this.sessionData(principal, request),
        expiresAt: new Date(widget.expiresAt * 1000).toISOString(),
        // The page checks its host against it, as the payment widget does.
        ...(widget.domain !== undefined ? { domain: widget.domain } : {}),
      },
      requestForInformation: presentRequest(request),
      messageToSign: messageToSign(request),
    }
  }

  /** Answers the session's request with what the widget collected (see RequestsForInformationService.answer). */
  async answer(principal: Principal, data: Record<string, unknown>) {
    const widget = principal.widget
    if (widget?.kind !== 'travel-rule' || widget.requestForInformationId === undefined) throw notFound('session')
    return { requestForInformation: await this.requests.answerBound(principal, widget.requestForInformationId, data) }
  }

  private async sessionData(principal: Principal, request: RequestForInformationRow, theme?: Record<string, unknown>) {
    const context = request.context as unknown as RequestContext
    const node = this.node!
    const price = await this.ports.priceUsd(context.asset)
    return {
      provider: node.provider,
      parameters: {
        init: {
          authToken: await node.customerToken({ organizationId: principal.organizationId, userId: principal.userId!, ttlSeconds: this.settings.sessionTtlSeconds }),
          nodeUrl: node.nodeUrl,
        },
        options: {
          proofs: {
            fallbacks: ['self-declaration'],
            reuseProof: true,
            deminimis: { currency: 'USD', proofTypes: ['self-declaration'], threshold: Number(this.settings.selfDeclarationMaximumUsd) },
          },
          ...(theme !== undefined ? { theme } : {}),
        },
        transaction: {
          amountDecimal: Number(context.amount),
          asset: context.asset,
          network: context.network,
          customer: await this.ports.customer(principal),
          ...(price !== null ? { assetPrice: { price: Number(price), currency: 'USD' } } : {}),
          ...(context.direction === 'deposit' ? { source: context.addresses } : { destination: context.addresses[0] ?? '' }),
          requestForInformation: { id: request.id },
        },
      },
    }
  }
}
