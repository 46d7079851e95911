import type { Db, Executor } from '../../db/schema.ts'
import type { Principal } from '../../http/principal.ts'
import { DomainError, notFound, requestInvalid } from '../../lib/errors.ts'
import { isUuid, uuidv7 } from '../../lib/ids.ts'
import { OutboundAddressRefused, publicAddresses, type Resolver } from '../../lib/outbound-address.ts'
import type { Sealer } from '../../lib/sealing.ts'
import { webhookSecretContext } from './webhooks.sealed.ts'
import { newWebhookSecret, webhookHeaders, webhookMessageId, webhookSigningKey } from '../../lib/webhook-signatures.ts'
import type { KeyObject } from 'node:crypto'
import { hasActiveJob, JobDeferral, wakeJobs, enqueue, type JobHandlers } from '../../jobs/queue.ts'
import { auditObject } from '../audit/index.ts'
import { dispatchedEventsSince, eventsByIds, eventsToDeliver, lastDeliverySeq, markDispatched, recordEvent, streamAfter, streamBacklog, undispatchedEvents, type EventToDeliver, type StreamedEvent } from '../events/index.ts'
import { ENDPOINT_DISABLED_EVENT, EVENT_CATALOGUE, EVENT_TYPES, eventEnvelope } from './catalogue.ts'
import type { DeliveryOutcome } from './delivery-client.ts'
import { signPortalToken, verifyPortalToken, type PortalGrant } from './portal-tokens.ts'
import { afterFailedAttempt } from './retry-schedule.ts'
import * as repository from './webhooks.repository.ts'
import type { AttemptRow, EndpointRow, MessageRow, MessageState, NewMessage } from './webhooks.repository.ts'
import type { WebhookMetrics } from './webhooks.metrics.ts'

export const DISPATCH_JOB = 'webhooks.dispatch'
export const DELIVERY_JOB = 'webhooks.deliver'

/** A test event's subject: test events are never replayed. */
const TEST_SUBJECT = 'webhook-test'
const MAX_URL_LENGTH = 2048
const MAX_DESCRIPTION_LENGTH = 500
/** A replay queues at most this many messages at once; the portal says so. */
export const MAX_REPLAY = 10_000
/** How far back a replay may reach. */
export const REPLAY_WINDOW_MS = 30 * 86_400_000

export interface WebhookSenderPort {
  send(request: { url: string; headers: Record<string, string>; body: string; signal?: AbortSignal }): Promise<DeliveryOutcome>
}

export interface WebhooksSettings {
  publicUrl: string
  /** Sandbox: endpoints may be on loopback and private networks. Production: public addresses only. */
  allowPrivateAddresses: boolean
  /** Delays after each failed attempt (retry-schedule.ts). */
  retryDelaysMs: readonly number[]
  portalLinkTtlSeconds: number
  /** How long a rotated-out secret keeps signing beside the new one, unless the rotation names another. */
  secretGraceSeconds: number
  maxEndpointsPerOrganization: number
  /** How often the dispatcher looks at the outbox when it found nothing to dispatch. */
  dispatchIntervalMs: number
  /** Events one dispatcher transaction takes. */
  dispatchBatchSize: number
  /** Messages an endpoint's delivery job sends before it records them and looks again. */
  deliveryBatchSize: number
  /** How long one run of an endpoint's delivery job goes on before it gives its worker slot back. */
  deliveryRunMs: number
  /** How long an endpoint with nothing to send waits before it looks again (the dispatcher wakes it sooner). */
  idleLookMs: number
}

export interface EndpointView {
  id: string
  url: string
  description: string
  eventTypes: string[]
  status: 'enabled' | 'disabled'
  disabledAt?: string
  disabledReason?: 'manual' | 'delivery-failing'
  secretRotatedAt?: string
  previousSecretExpiresAt?: string
  createdAt: string
  updatedAt: string
}

export interface MessageView {
  id: string
  endpointId: string
  eventId: string
  eventType: string
  webhookId: string
  origin: 'event' | 'resend' | 'replay' | 'test'
  status: 'pending' | 'delivered' | 'failed'
  attempts: number
  nextAttemptAt?: string
  createdAt: string
  finishedAt?: string
}

export interface AttemptView {
  id: string
  endpointId: string
  messageId: string
  eventId: string
  attempt: number
  url: string
  succeeded: boolean
  responseStatus?: number
  durationMs: number
  responseExcerpt: string
  error?: string
  errorMessage?: string
  createdAt: string
}

export interface EndpointInput {
  url: string
  description?: string
  eventTypes?: string[]
}

export interface EndpointChanges {
  url?: string
  description?: string
  eventTypes?: string[]
  enabled?: boolean
}

const iso = (value: Date | null | undefined): string | undefined => (value ? new Date(value).toISOString() : undefined)

export function endpointView(row: EndpointRow): EndpointView {
  const view: EndpointView = {
    id: row.id,
    url: row.url,
    description: row.description,
    eventTypes: row.event_types,
    status: row.disabled_at === null ? 'enabled' : 'disabled',
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  }
  if (row.disabled_at !== null) view.disabledAt = iso(row.disabled_at)!
  if (row.disabled_reason !== null) view.disabledReason = row.disabled_reason as 'manual' | 'delivery-failing'
  if (row.secret_rotated_at !== null) view.secretRotatedAt = iso(row.secret_rotated_at)!
  if (row.previous_secret_expires_at !== null && row.previous_secret_expires_at.getTime() > Date.now()) view.previousSecretExpiresAt = iso(row.previous_secret_expires_at)!
  return view
}

export function messageView(row: MessageState): MessageView {
  const view: MessageView = {
    id: row.id,
    endpointId: row.endpoint_id,
    eventId: row.event_id,
    eventType: row.event_type,
    webhookId: webhookMessageId(row.event_id),
    origin: row.origin as MessageView['origin'],
    status: row.status,
    // A delivery moves the endpoint's mark and leaves the row as it was: its last attempt is the one that succeeded.
    attempts: row.attempts + (row.status === 'delivered' ? 1 : 0),
    createdAt: row.created_at.toISOString(),
  }
  if (row.status === 'pending') view.nextAttemptAt = row.next_attempt_at.toISOString()
  if (row.failed_at !== null) view.finishedAt = iso(row.failed_at)!
  return view
}

/** A stream event waiting for an endpoint, as a message (the next one carries the failed attempts and the retry time). */
function streamMessageView(endpoint: EndpointRow, event: StreamedEvent, next: boolean): MessageView {
  const retryAt = next && endpoint.stream_retry_at !== null ? endpoint.stream_retry_at : null
  return {
    id: event.id,
    endpointId: endpoint.id,
    eventId: event.id,
    eventType: event.type,
    webhookId: webhookMessageId(event.id),
    origin: 'event',
    status: 'pending',
    attempts: next ? endpoint.stream_attempts : 0,
    nextAttemptAt: (retryAt ?? new Date()).toISOString(),
    createdAt: event.occurredAt.toISOString(),
  }
}

/** A delivered message, from the attempt that delivered it. */
function deliveredView(row: AttemptRow): MessageView {
  return {
    id: row.message_id,
    endpointId: row.endpoint_id,
    eventId: row.event_id,
    eventType: row.event_type,
    webhookId: webhookMessageId(row.event_id),
    origin: row.origin as MessageView['origin'],
    status: 'delivered',
    attempts: row.attempt,
    createdAt: row.created_at.toISOString(),
    finishedAt: row.created_at.toISOString(),
  }
}

export function attemptView(row: AttemptRow): AttemptView {
  const view: AttemptView = {
    id: row.id,
    endpointId: row.endpoint_id,
    messageId: row.message_id,
    eventId: row.event_id,
    attempt: row.attempt,
    url: row.url,
    succeeded: row.succeeded,
    durationMs: row.duration_ms,
    responseExcerpt: row.response_excerpt,
    createdAt: row.created_at.toISOString(),
  }
  if (row.response_status !== null) view.responseStatus = row.response_status
  if (row.error !== null) view.error = row.error
  if (row.error_message !== null) view.errorMessage = row.error_message
  return view
}

function portalRefusal(problem: 'malformed' | 'signature' | 'expired', what: 'link' | 'session'): DomainError {
  if (what === 'link') {
    return problem === 'expired'
      ? new DomainError('signature_expired', 'This management link has expired; request a new one')
      : new DomainError('signature_invalid', 'This management link is not valid')
  }
  return problem === 'expired'
    ? new DomainError('token_expired', 'The portal session has expired; open a new management link')
    : new DomainError('token_invalid', 'The portal session is not valid; open a new management link')
}

/**
 * Webhooks: the endpoints an organization registers, the delivery of its events to them, and the management link
 * that opens the portal where it manages them.
 *
 * Delivery runs on the job runner. One dispatcher job moves committed events from the outbox into per-endpoint
 * queues (`webhook_messages`), under a lock that makes the queue order the commit order. Each endpoint has one
 * delivery job, alive as long as the endpoint: it sends the head of its queue, in order, and waits on a failure
 * (retry schedule) so that nothing overtakes a message. Sending is at least once: a message is marked delivered after
 * its answer, so a crash in between sends it again with the same `webhook-id`.
 */
export class WebhooksService {
  private readonly db: Db
  private readonly sealer: Sealer
  private readonly portalKey: Buffer
  private readonly sender: WebhookSenderPort
  private readonly settings: WebhooksSettings
  private readonly resolver: Resolver | undefined
  private readonly metrics: WebhookMetrics | null
  private readonly poke: () => void
  /** Events recently sent, with their data, by id (see `eventsToSend`). */
  private readonly recentEvents = new Map<string, { organizationId: string; event: EventToDeliver }>()

  constructor(deps: {
    db: Db
    sealer: Sealer
    portalKey: Buffer
    sender: WebhookSenderPort
    settings: WebhooksSettings
    /** How host names are resolved when an endpoint is checked (the system's resolver by default). */
    resolver?: Resolver
    metrics?: WebhookMetrics
    /** Tells this process's worker that jobs became due. */
    poke?: () => void
  }) {
    this.db = deps.db
    this.sealer = deps.sealer
    this.portalKey = deps.portalKey
    this.sender = deps.sender
    this.settings = deps.settings
    this.resolver = deps.resolver
    this.metrics = deps.metrics ?? null
    this.poke = deps.poke ?? (() => {})
  }

  // ---- The management link and the portal session -------------------------------------------------------------

  async createManagementLink(principal: Principal): Promise<{ url: string; expiresAt: string }> {
    const now = new Date()
    const expiresAt = new Date(now.getTime() + this.settings.portalLinkTtlSeconds * 1000)
    const linkId = uuidv7()
    auditObject('webhook-management-link', linkId)
    await repository.insertPortalLink(this.db, { organization_id: principal.organizationId, id: linkId, client_id: principal.clientId, expires_at: expiresAt, created_at: now })
    const token = signPortalToken(this.portalKey, { kind: 'link', linkId, organizationId: principal.organizationId, expiresAt })
    // In the fragment: browsers never send it, so the link stays out of servers' and proxies' logs.
    return { url: `${this.settings.publicUrl}/hosted/webhooks/#link=${token}`, expiresAt: expiresAt.toISOString() }
  }

  /** Opens the portal with a management link, once: answers the session the portal page then works with. */
  async openPortal(link: string): Promise<{ token: string; expiresAt: string }> {
    const checked = verifyPortalToken(this.portalKey, link, 'link', new Date())
    if ('problem' in checked) throw portalRefusal(checked.problem, 'link')
    const { linkId, organizationId, expiresAt } = checked.ok
    if (!(await repository.openPortalLink(this.db, organizationId, linkId, new Date()))) {
      throw new DomainError('link_already_used', 'This management link was already opened; request a new one')
    }
    return { token: signPortalToken(this.portalKey, { kind: 'session', linkId, organizationId, expiresAt }), expiresAt: expiresAt.toISOString() }
  }

  /** The organization a portal session's token (`Authorization: Bearer …`) works for. */
  authenticatePortal(authorization: string | undefined): PortalGrant {
    const match = /^Bearer ([A-Za-z0-9_.-]{1,1024})$/.exec(authorization ?? '')
    if (!match) throw portalRefusal('malformed', 'session')
    const checked = verifyPortalToken(this.portalKey, match[1]!, 'session', new Date())
    if ('problem' in checked) throw portalRefusal(checked.problem, 'session')
    return checked.ok
  }

  // ---- Endpoints -------------------------------------------------------------------------------------------------

  eventTypes(): typeof EVENT_CATALOGUE {
    return EVENT_CATALOGUE
  }

  async listEndpoints(organizationId: string): Promise<EndpointView[]> {
    return (await repository.listEndpoints(this.db, organizationId)).map(endpointView)
  }

  async getEndpoint(organizationId: string, id: string): Promise<EndpointView> {
    return endpointView(await this.endpoint(this.db, organizationId, id))
  }

  async createEndpoint(organizationId: string, input: EndpointInput): Promise<EndpointView> {
    const url = await this.checkUrl(input.url)
    const eventTypes = this.checkEventTypes(input.eventTypes ?? [])
    const description = this.checkDescription(input.description ?? '')
    const now = new Date()
    const id = uuidv7()
    auditObject('webhook-endpoint', id)
    const row: EndpointRow = {
      organization_id: organizationId,
      id,
      url,
      description,
      event_types: eventTypes,
      disabled_at: null,
      disabled_reason: null,
      secret_sealed: this.sealSecret(organizationId, id, 'current', newWebhookSecret()),
      previous_secret_sealed: null,
      previous_secret_expires_at: null,
      secret_rotated_at: null,
      // Set under the dispatcher's lock below: the endpoint receives what is dispatched from now on.
      stream_seq: '0',
      stream_attempts: 0,
      stream_retry_at: null,
      delivered_seq: '0',
      created_at: now,
      updated_at: now,
    }
    await this.db.transaction().execute(async (tx) => {
      // Serialized per organization by the count under its endpoints' lock-free check: a race may pass the limit by
      // one endpoint, which is harmless (the limit keeps the portal and the dispatcher's fan-out bounded).
      if ((await repository.countEndpoints(tx, organizationId)) >= this.settings.maxEndpointsPerOrganization) {
        throw new DomainError('webhook_endpoints_limit_exceeded', `An organization may have at most ${this.settings.maxEndpointsPerOrganization} webhook endpoints`, {
          details: { threshold: { unit: 'endpoints', limit: String(this.settings.maxEndpointsPerOrganization) } },
        })
      }
      await repository.lockDispatcher(tx, true)
      row.stream_seq = await lastDeliverySeq(tx)
      await repository.insertEndpoint(tx, row)
      // The endpoint's delivery job lives as long as the endpoint; it waits idle until the dispatcher wakes it.
      await enqueue(tx, { type: DELIVERY_JOB, organizationId, payload: { endpointId: id }, runAt: new Date(now.getTime() + this.settings.idleLookMs) })
    })
    return endpointView(row)
  }

  async updateEndpoint(organizationId: string, id: string, changes: EndpointChanges): Promise<EndpointView> {
    const url = changes.url === undefined ? undefined : await this.checkUrl(changes.url)
    const eventTypes = changes.eventTypes === undefined ? undefined : this.checkEventTypes(changes.eventTypes)
    const description = changes.description === undefined ? undefined : this.checkDescription(changes.description)
    const updated = await this.db.transaction().execute(async (tx) => {
      const current = await this.endpoint(tx, organizationId, id, true)
      const now = new Date()
      const enable = changes.enabled === true && current.disabled_at !== null
      const disable = changes.enabled === false && current.disabled_at === null
      const row = await repository.updateEndpoint(tx, organizationId, id, {
        ...(url === undefined ? {} : { url }),
        ...(description === undefined ? {} : { description }),
        ...(eventTypes === undefined ? {} : { event_types: eventTypes }),
        ...(enable ? { disabled_at: null, disabled_reason: null } : {}),
        ...(disable ? { disabled_at: now, disabled_reason: 'manual' } : {}),
        updated_at: now,
      })
      // Enabled again: what waited in its queue goes out now.
      if (enable) await this.wakeDelivery(tx, organizationId, [id])
      return row!
    })
    this.poke()
    return endpointView(updated)
  }

  async deleteEndpoint(organizationId: string, id: string): Promise<void> {
    // Its messages and attempts go with it; its delivery job finds no endpoint and ends.
    const deleted = await this.db.transaction().execute((tx) => repository.deleteEndpoint(tx, organizationId, id))
    if (!deleted) throw notFound('webhook-endpoint')
  }

  /** The endpoint's signing secret, and the previous one while it still signs. */
  async revealSecret(organizationId: string, id: string): Promise<{ secret: string; previousSecret?: string; previousSecretExpiresAt?: string }> {
    const row = await this.endpoint(this.db, organizationId, id)
    const secrets = this.secretsOf(row, new Date())
    return secrets.length > 1
      ? { secret: secrets[0]!, previousSecret: secrets[1]!, previousSecretExpiresAt: row.previous_secret_expires_at!.toISOString() }
      : { secret: secrets[0]! }
  }

  /**
   * Replaces the signing secret. The secret replaced keeps signing beside the new one for `graceSeconds` (the
   * deployment's default when not given; 0 stops it at once), so that receivers can switch without losing messages.
   */
  async rotateSecret(organizationId: string, id: string, graceSeconds?: number): Promise<{ secret: string; previousSecret?: string; previousSecretExpiresAt?: string }> {
    const grace = graceSeconds ?? this.settings.secretGraceSeconds
    await this.db.transaction().execute(async (tx) => {
      const row = await this.endpoint(tx, organizationId, id, true)
      const now = new Date()
      const current = this.sealer.open(row.secret_sealed, this.secretContext(organizationId, id, 'current'))
      await repository.updateEndpoint(tx, organizationId, id, {
        secret_sealed: this.sealSecret(organizationId, id, 'current', newWebhookSecret()),
        previous_secret_sealed: grace > 0 ? this.sealSecret(organizationId, id, 'previous', current) : null,
        previous_secret_expires_at: grace > 0 ? new Date(now.getTime() + grace * 1000) : null,
        secret_rotated_at: now,
        updated_at: now,
      })
    })
    return this.revealSecret(organizationId, id)
  }

  // ---- Messages and attempts ---------------------------------------------------------------------------------------

  /**
   * An endpoint's messages, newest first: those waiting (its queue, then the stream's events after its position),
   * those delivered (each recorded by its successful attempt) and those that failed for good.
   */
  async listMessages(organizationId: string, endpointId: string, filter: { status?: string; limit: number }): Promise<MessageView[]> {
    const endpoint = await this.endpoint(this.db, organizationId, endpointId)
    const wants = (status: string) => filter.status === undefined || filter.status === status
    const views: MessageView[] = []
    if (wants('pending') || wants('failed')) {
      const status = filter.status === 'pending' || filter.status === 'failed' ? filter.status : undefined
      views.push(...(await repository.listQueued(this.db, organizationId, endpointId, status, filter.limit)).map(messageView))
    }
    if (wants('pending')) {
      const waiting = await streamAfter(this.db, organizationId, endpoint.stream_seq, endpoint.event_types.length > 0 ? endpoint.event_types : null, filter.limit)
      views.push(...waiting.map((event, index) => streamMessageView(endpoint, event, index === 0)))
    }
    if (wants('delivered')) views.push(...(await repository.listDelivered(this.db, organizationId, endpointId, filter.limit)).map(deliveredView))
    return views.sort((a, b) => (a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : 0)).slice(0, filter.limit)
  }

  /** Attempts, newest first: of an endpoint, of a message, or of an event to every endpoint. */
  async listAttempts(organizationId: string, filter: { endpointId?: string; eventId?: string; messageId?: string; limit: number }): Promise<AttemptView[]> {
    if (filter.endpointId !== undefined) await this.endpoint(this.db, organizationId, filter.endpointId)
    return (await repository.listAttempts(this.db, organizationId, filter)).map(attemptView)
  }

  /** Sends one message's event to its endpoint again, after what is queued there now. */
  async resend(organizationId: string, endpointId: string, messageId: string): Promise<MessageView> {
    const message = await repository.findMessage(this.db, organizationId, endpointId, messageId)
    const event = message ? { id: message.event_id, type: message.event_type } : await this.streamedEvent(organizationId, endpointId, messageId)
    if (!event) throw notFound('webhook-message')
    const [queued] = await this.queue(organizationId, endpointId, [event], 'resend')
    return queued!
  }

  /** A message of the stream is known by its event's id: any event of the catalogue the endpoint receives. */
  private async streamedEvent(organizationId: string, endpointId: string, eventId: string): Promise<{ id: string; type: string } | undefined> {
    const endpoint = await this.endpoint(this.db, organizationId, endpointId)
    const [event] = await eventsByIds(this.db, organizationId, [eventId])
    const receives = event !== undefined && EVENT_TYPES.has(event.type) && event.subjectType !== TEST_SUBJECT && (endpoint.event_types.length === 0 || endpoint.event_types.includes(event.type))
    return receives ? { id: event.id, type: event.type } : undefined
  }

  /**
   * Queues again, for one endpoint, every event of the catalogue it subscribes to that happened from `since` on
   * (at most `MAX_REPLAY`, oldest first): for a receiver that lost data, or an endpoint that was disabled.
   */
  async replay(organizationId: string, endpointId: string, since: Date): Promise<{ queued: number; since: string; until?: string }> {
    const now = Date.now()
    if (since.getTime() < now - REPLAY_WINDOW_MS || since.getTime() > now) {
      throw requestInvalid('body', [{ property: 'since', rule: 'range', ruleParams: { maximumAgeDays: REPLAY_WINDOW_MS / 86_400_000 } }])
    }
    const endpoint = await this.endpoint(this.db, organizationId, endpointId)
    const types = endpoint.event_types.length > 0 ? endpoint.event_types : [...EVENT_TYPES]
    const events = await dispatchedEventsSince(this.db, { organizationId, since, types, excludeSubjectType: TEST_SUBJECT, limit: MAX_REPLAY })
    if (events.length > 0) await this.queue(organizationId, endpointId, events, 'replay')
    const result: { queued: number; since: string; until?: string } = { queued: events.length, since: since.toISOString() }
    // A replay that stopped at its limit says where, so that the next one can go on from there.
    if (events.length === MAX_REPLAY) result.until = events.at(-1)!.occurredAt.toISOString()
    return result
  }

  /** Queues a test event of a catalogue type (its example data) for one endpoint only. */
  async sendTest(organizationId: string, endpointId: string, type: string): Promise<MessageView> {
    const entry = EVENT_CATALOGUE.find((candidate) => candidate.type === type)
    if (!entry) throw requestInvalid('body', [{ property: 'type', rule: 'enum', ruleParams: { allowedValues: [...EVENT_TYPES] } }])
    await this.endpoint(this.db, organizationId, endpointId)
    const queued = await this.db.transaction().execute(async (tx) => {
      const now = new Date()
      const eventId = await recordEvent(tx, { organizationId, type, subject: { type: TEST_SUBJECT, id: endpointId }, data: entry.example, occurredAt: now, dispatchedAt: now })
      return this.queueIn(tx, organizationId, endpointId, [{ id: eventId, type }], 'test')
    })
    this.poke()
    return queued[0]!
  }

  private async queue(organizationId: string, endpointId: string, events: readonly { id: string; type: string }[], origin: MessageView['origin']): Promise<MessageView[]> {
    const queued = await this.db.transaction().execute((tx) => this.queueIn(tx, organizationId, endpointId, events, origin))
    this.poke()
    return queued
  }

  private async queueIn(tx: Executor, organizationId: string, endpointId: string, events: readonly { id: string; type: string }[], origin: MessageView['origin']): Promise<MessageView[]> {
    await repository.lockDispatcher(tx, true)
    await this.endpoint(tx, organizationId, endpointId)
    const now = new Date()
    const rows: NewMessage[] = events.map((event) => ({ organization_id: organizationId, id: uuidv7(), endpoint_id: endpointId, event_id: event.id, event_type: event.type }))
    await repository.insertMessages(tx, rows, origin, now)
    await this.wakeDelivery(tx, organizationId, [endpointId])
    return rows.map((row) => messageView({ ...row, seq: '', origin, attempts: 0, next_attempt_at: now, failed_at: null, created_at: now, status: 'pending' }))
  }

  // ---- Background work ---------------------------------------------------------------------------------------------

  registerJobs(jobs: JobHandlers): void {
    jobs.register(DISPATCH_JOB, async () => {
      throw await this.runDispatcher()
    })
    jobs.register(DELIVERY_JOB, async (job, { signal }) => {
      const endpointId = (job.payload as { endpointId?: unknown }).endpointId
      if (typeof endpointId !== 'string' || job.organization_id === null) return
      const next = await this.deliverEndpoint(job.organization_id, endpointId, signal)
      if (next) throw next
    })
  }

  /** Makes sure a dispatcher job exists (at start: a new deployment, or one whose job was removed). */
  async ensureDispatcher(): Promise<void> {
    if (await hasActiveJob(this.db, DISPATCH_JOB, null, 'role', 'dispatcher')) return
    // Two processes starting together may both add one: the second waits on the first's lock, harmlessly.
    await enqueue(this.db, { type: DISPATCH_JOB, payload: { role: 'dispatcher' } })
  }

  /**
   * The dispatcher job: dispatches until the outbox is empty, then waits for the next look. It never fails (its
   * failures are logged by the worker and retried), so the job lives for ever.
   */
  private async runDispatcher(): Promise<JobDeferral> {
    try {
      for (let batches = 0; batches < 100; batches++) {
        const { dispatched, locked } = await this.dispatch()
        if (!locked || dispatched < this.settings.dispatchBatchSize) break
      }
      return new JobDeferral(new Date(Date.now() + this.settings.dispatchIntervalMs))
    } catch (error) {
      return new JobDeferral(new Date(Date.now() + Math.max(this.settings.dispatchIntervalMs, 1000)), `dispatching webhook events failed: ${error instanceof Error ? error.message : String(error)}`)
    }
  }

  /**
   * Moves one batch of committed events from the outbox into the queues of the endpoints that subscribe to them,
   * and wakes those endpoints' delivery jobs. Events of types outside the catalogue are marked dispatched unqueued.
   */
  async dispatch(): Promise<{ dispatched: number; queued: number; locked: boolean }> {
    const result = await this.db.transaction().execute(async (tx) => {
      if (!(await repository.lockDispatcher(tx, false))) return { dispatched: 0, queued: 0, locked: false }
      const events = await undispatchedEvents(tx, this.settings.dispatchBatchSize)
      if (events.length === 0) return { dispatched: 0, queued: 0, locked: true }
      const now = new Date()
      const deliverable = events.filter((event) => EVENT_TYPES.has(event.type))
      const organizations = [...new Set(deliverable.map((event) => event.organizationId))]
      const endpoints = await repository.endpointsOf(tx, organizations)
      const byOrganization = new Map<string, typeof endpoints>()
      for (const endpoint of endpoints) {
        const list = byOrganization.get(endpoint.organization_id)
        if (list) list.push(endpoint)
        else byOrganization.set(endpoint.organization_id, [endpoint])
      }
      // An event is numbered in the stream when an endpoint of its organization receives its type; each endpoint then
      // reads the stream from its position: one write an event, whatever the number of endpoints.
      const streamed: string[] = []
      const woken = new Map<string, Set<string>>()
      for (const event of deliverable) {
        const receivers = (byOrganization.get(event.organizationId) ?? []).filter((endpoint) => endpoint.event_types.length === 0 || endpoint.event_types.includes(event.type))
        if (receivers.length === 0) continue
        streamed.push(event.id)
        for (const endpoint of receivers) if (endpoint.disabled_at === null) woken.set(endpoint.organization_id, (woken.get(endpoint.organization_id) ?? new Set()).add(endpoint.id))
      }
      await markDispatched(tx, events.map((event) => event.id), now, streamed)
      for (const [organizationId, ids] of woken) await this.wakeDelivery(tx, organizationId, [...ids])
      return { dispatched: events.length, queued: streamed.length, locked: true }
    })
    if (result.queued > 0) this.poke()
    return result
  }

  /** Makes the endpoints' delivery jobs due now; gives one a job if it has none (it would otherwise never send). */
  private async wakeDelivery(tx: Executor, organizationId: string, endpointIds: readonly string[]): Promise<void> {
    const woken = await wakeJobs(tx, DELIVERY_JOB, organizationId, 'endpointId', endpointIds)
    if (woken === endpointIds.length) return
    for (const endpointId of endpointIds) {
      if (!(await hasActiveJob(tx, DELIVERY_JOB, organizationId, 'endpointId', endpointId))) {
        await enqueue(tx, { type: DELIVERY_JOB, organizationId, payload: { endpointId } })
      }
    }
  }

  /**
   * One run of an endpoint's delivery job: sends the head of its queue in order until the queue is empty, a message
   * fails (it waits for its retry, holding the others back), or the run has gone on long enough. Answers when to look
   * again, or nothing when the endpoint no longer exists (the job ends).
   */
  async deliverEndpoint(organizationId: string, endpointId: string, signal?: AbortSignal): Promise<JobDeferral | undefined> {
    const started = Date.now()
    const idle = () => new JobDeferral(new Date(Date.now() + this.settings.idleLookMs))
    try {
      for (;;) {
        const endpoint = await repository.findEndpoint(this.db, organizationId, endpointId)
        if (!endpoint) return undefined
        if (endpoint.disabled_at !== null) return idle()
        const keys = this.secretsOf(endpoint, new Date()).map(webhookSigningKey)
        let wait: JobDeferral | undefined
        // Its queue first (resends, replays, tests), then the stream from its position.
        const queued = await repository.pendingHead(this.db, organizationId, endpointId, endpoint.delivered_seq, this.settings.deliveryBatchSize)
        if (queued.length > 0) {
          const events = await this.eventsToSend(organizationId, queued.map((m) => m.event_id))
          wait = await this.sendInOrder(
            endpoint,
            queued.map((message) => ({ message, event: events.get(message.event_id) })),
            keys,
            signal,
            (delivered) => repository.recordDelivered(this.db, organizationId, endpointId, delivered.at(-1)!.message.seq, attemptRows(endpoint, delivered)),
            (message, outcome, at, hopeless) => this.recordFailure(endpoint, message, outcome, at, hopeless),
          )
        } else {
          if (endpoint.stream_retry_at !== null && endpoint.stream_retry_at.getTime() > Date.now()) return new JobDeferral(endpoint.stream_retry_at)
          const types = endpoint.event_types.length > 0 ? endpoint.event_types : null
          const streamed = await streamAfter(this.db, organizationId, endpoint.stream_seq, types, this.settings.deliveryBatchSize)
          if (streamed.length === 0) return idle()
          const events = await this.eventsToSend(organizationId, streamed.map((event) => event.id))
          const now = new Date()
          wait = await this.sendInOrder(
            endpoint,
            streamed.map((event, index) => ({ message: streamMessage(endpoint, event, index === 0, now), event: events.get(event.id) })),
            keys,
            signal,
            (delivered) => repository.recordStreamDelivered(this.db, organizationId, endpointId, delivered.at(-1)!.message.seq, attemptRows(endpoint, delivered)),
            (message, outcome, at) => this.recordStreamFailure(endpoint, message, outcome, at),
          )
        }
        if (wait) return wait
        if (signal?.aborted) return new JobDeferral(new Date())
        // A long queue: give the worker slot back now and then, and come back at once.
        if (Date.now() - started >= this.settings.deliveryRunMs) return new JobDeferral(new Date())
      }
    } catch (error) {
      return new JobDeferral(new Date(Date.now() + 5_000), `delivering webhooks to endpoint ${endpointId} failed: ${error instanceof Error ? error.message : String(error)}`)
    }
  }

  /**
   * Sends messages in order until one fails (its failure is recorded and says when to look again) or all went.
   * Successes are recorded in the background, several in one statement, while the next messages go out; what waits is
   * recorded at once when an answer is slow, so that little is ever left unrecorded.
   */
  private async sendInOrder(
    endpoint: EndpointRow,
    outgoing: readonly { message: MessageRow; event: EventToDeliver | undefined }[],
    keys: readonly KeyObject[],
    signal: AbortSignal | undefined,
    record: (delivered: readonly Delivered[]) => Promise<void>,
    fail: (message: MessageRow, outcome: DeliveryOutcome, at: Date, hopeless: boolean) => Promise<JobDeferral>,
  ): Promise<JobDeferral | undefined> {
    const recorder = new DeliveredRecorder(record)
    try {
      for (const { message, event } of outgoing) {
        if (message.next_attempt_at.getTime() > Date.now()) return new JobDeferral(message.next_attempt_at)
        if (signal?.aborted) return undefined
        const at = new Date()
        const outcome: DeliveryOutcome = event ? await this.send(endpoint, event, keys, signal) : EVENT_MISSING
        this.metrics?.observe(outcome)
        if (outcome.ok) {
          recorder.add({ message, outcome, at })
          continue
        }
        await recorder.finish()
        return await fail(message, outcome, at, !event)
      }
      return undefined
    } finally {
      await recorder.finish()
    }
  }

  /**
   * The events to send, with their data. Every endpoint of an organization reads the same events at about the same
   * time: their data (which never changes) is kept here a while, read from the database once for all of them.
   */
  private async eventsToSend(organizationId: string, ids: readonly string[]): Promise<Map<string, EventToDeliver>> {
    const found = new Map<string, EventToDeliver>()
    const missing: string[] = []
    for (const id of new Set(ids)) {
      const cached = this.recentEvents.get(id)
      if (cached && cached.organizationId === organizationId) found.set(id, cached.event)
      else missing.push(id)
    }
    if (missing.length > 0) {
      for (const event of await eventsToDeliver(this.db, organizationId, missing)) {
        found.set(event.id, event)
        this.recentEvents.set(event.id, { organizationId, event })
      }
      // Oldest first out (a Map keeps insertion order).
      for (const id of this.recentEvents.keys()) {
        if (this.recentEvents.size <= RECENT_EVENTS) break
        this.recentEvents.delete(id)
      }
    }
    return found
  }

  private send(endpoint: EndpointRow, event: EventToDeliver, secrets: readonly KeyObject[], signal?: AbortSignal): Promise<DeliveryOutcome> {
    const body = eventEnvelope(event)
    const headers = webhookHeaders({ id: webhookMessageId(event.id), timestamp: Math.floor(Date.now() / 1000), body }, secrets)
    return this.sender.send({ url: endpoint.url, headers, body, ...(signal ? { signal } : {}) })
  }

  /** Records a failed attempt; schedules the retry, or fails the message and disables the endpoint. */
  private async recordFailure(endpoint: EndpointRow, message: MessageRow, outcome: DeliveryOutcome, at: Date, hopeless: boolean): Promise<JobDeferral> {
    const attempt = message.attempts + 1
    const next = hopeless ? { exhausted: true as const } : afterFailedAttempt(attempt, this.settings.retryDelaysMs, new Date())
    await this.db.transaction().execute(async (tx) => {
      await repository.insertAttempts(tx, [attemptRow(endpoint, message, outcome, at)])
      if ('retryAt' in next) {
        await repository.recordFailedAttempt(tx, message, attempt, { retryAt: next.retryAt })
        return
      }
      await repository.recordFailedAttempt(tx, message, attempt, { failedAt: new Date() })
      if (!hopeless) await this.disableFailing(tx, endpoint)
    })
    return 'retryAt' in next ? new JobDeferral(next.retryAt) : new JobDeferral(new Date())
  }

  /** Records a failed attempt of the stream's next event; schedules the retry, or fails it and disables the endpoint. */
  private async recordStreamFailure(endpoint: EndpointRow, message: MessageRow, outcome: DeliveryOutcome, at: Date): Promise<JobDeferral> {
    const attempt = message.attempts + 1
    const next = afterFailedAttempt(attempt, this.settings.retryDelaysMs, new Date())
    await this.db.transaction().execute(async (tx) => {
      await repository.insertAttempts(tx, [attemptRow(endpoint, message, outcome, at)])
      if ('retryAt' in next) {
        await repository.recordStreamRetry(tx, endpoint.organization_id, endpoint.id, attempt, next.retryAt)
        return
      }
      const { organization_id, id, endpoint_id, event_id, event_type } = message
      await repository.recordStreamFailed(tx, { organization_id, id, endpoint_id, event_id, event_type, attempts: attempt, failed_at: new Date() }, message.seq)
      await this.disableFailing(tx, endpoint)
    })
    return 'retryAt' in next ? new JobDeferral(next.retryAt) : new JobDeferral(new Date())
  }

  /**
   * A message failed every attempt: the endpoint stops receiving until someone enables it again, and says so to the
   * organization's other endpoints. What waits for it (its queue, the stream after its position) waits.
   */
  private async disableFailing(tx: Executor, endpoint: EndpointRow): Promise<void> {
    const now = new Date()
    const disabled = await repository.updateEndpoint(tx, endpoint.organization_id, endpoint.id, { disabled_at: now, disabled_reason: 'delivery-failing', updated_at: now })
    await recordEvent(tx, {
      organizationId: endpoint.organization_id,
      type: ENDPOINT_DISABLED_EVENT,
      subject: { type: 'webhook-endpoint', id: endpoint.id },
      data: { endpoint: endpointView(disabled!) },
    })
    this.metrics?.endpointDisabled()
  }

  // ---- Operators (the CLI) -----------------------------------------------------------------------------------------

  /** The organization of an endpoint, by its id alone; `entity_not_found` when there is none. */
  async organizationOfEndpoint(endpointId: string): Promise<string> {
    const organizationId = isUuid(endpointId) ? await repository.organizationOfEndpoint(this.db, endpointId) : undefined
    if (organizationId === undefined) throw notFound('webhook-endpoint')
    return organizationId
  }

  /** Messages waiting in every enabled endpoint's queue and stream, and when the oldest of them was queued or occurred. */
  async queueDepth(): Promise<{ pending: number; oldest: Date | null }> {
    const queued = await repository.queuedDepth(this.db)
    const positions = (await repository.streamPositions(this.db)).map((row) => ({ organizationId: row.organization_id, afterSeq: row.stream_seq, types: row.event_types }))
    const streamed = await streamBacklog(this.db, positions)
    const oldest = [queued.oldest, streamed.oldest].filter((at): at is Date => at !== null).sort((a, b) => a.getTime() - b.getTime())[0] ?? null
    return { pending: queued.pending + streamed.pending, oldest }
  }

  // ---- Helpers -----------------------------------------------------------------------------------------------------

  private async endpoint(executor: Executor, organizationId: string, id: string, lock = false): Promise<EndpointRow> {
    const row = await repository.findEndpoint(executor, organizationId, id, { lock })
    if (!row) throw notFound('webhook-endpoint')
    return row
  }

  private secretContext(organizationId: string, endpointId: string, which: 'current' | 'previous'): string[] {
    return webhookSecretContext(organizationId, endpointId, which)
  }

  private sealSecret(organizationId: string, endpointId: string, which: 'current' | 'previous', secret: string): string {
    return this.sealer.seal(secret, this.secretContext(organizationId, endpointId, which))
  }

  /** The secrets that sign a message now: the current one, and the previous one during its grace period. */
  private secretsOf(row: EndpointRow, now: Date): string[] {
    const secrets = [this.sealer.open(row.secret_sealed, this.secretContext(row.organization_id, row.id, 'current'))]
    if (row.previous_secret_sealed !== null && row.previous_secret_expires_at !== null && row.previous_secret_expires_at.getTime() > now.getTime()) {
      secrets.push(this.sealer.open(row.previous_secret_sealed, this.secretContext(row.organization_id, row.id, 'previous')))
    }
    return secrets
  }

  private async checkUrl(text: string): Promise<string> {
    const refuse = (rule: string, ruleParams?: Record<string, unknown>) => requestInvalid('body', [{ property: 'url', rule, ...(ruleParams ? { ruleParams } : {}) }])
    let url: URL
    try {
      url = new URL(text)
    } catch {
      throw refuse('format', { format: 'uri' })
    }
    if (text.length > MAX_URL_LENGTH) throw refuse('maxLength', { limit: MAX_URL_LENGTH })
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw refuse('protocol', { allowedValues: ['https', 'http'] })
    if (url.username !== '' || url.password !== '') throw refuse('credentials')
    if (url.hash !== '') throw refuse('fragment')
    if (!this.settings.allowPrivateAddresses) {
      // Checked again at every delivery: a name may resolve elsewhere later.
      try {
        await publicAddresses(url.hostname, this.resolver)
      } catch (error) {
        if (error instanceof OutboundAddressRefused) throw refuse('publicAddress')
        throw error
      }
    }
    return url.href
  }

  private checkEventTypes(types: readonly string[]): string[] {
    const unknown = types.filter((type) => !EVENT_TYPES.has(type))
    if (unknown.length > 0) throw requestInvalid('body', [{ property: 'eventTypes', rule: 'enum', ruleParams: { allowedValues: [...EVENT_TYPES], invalidValues: unknown } }])
    return [...new Set(types)]
  }

  private checkDescription(description: string): string {
    if (description.length > MAX_DESCRIPTION_LENGTH) throw requestInvalid('body', [{ property: 'description', rule: 'maxLength', ruleParams: { limit: MAX_DESCRIPTION_LENGTH } }])
    return description
  }
}

interface Delivered {
  message: MessageRow
  outcome: DeliveryOutcome
  at: Date
}

/** The outcome of a message whose event cannot be read (it cannot happen while events are kept): failed for good. */
const EVENT_MISSING = { ok: false, status: null, durationMs: 0, excerpt: '', error: 'event-missing', message: 'The event of this message no longer exists' } as unknown as DeliveryOutcome

/** How many events `eventsToSend` keeps (about a kilobyte each). */
const RECENT_EVENTS = 5_000

/** Successes recorded in one statement at most (more wait for the next). */
const RECORD_BATCH = 50
/** An answer slower than this has what waits recorded meanwhile. */
const RECORD_WHEN_SLOW_MS = 200

/**
 * Records delivered messages in the background, one statement at a time, in order: when `RECORD_BATCH` gathered,
 * when nothing was added for `RECORD_WHEN_SLOW_MS` (a slow answer), and at `finish`, which waits until all are recorded (and
 * throws if a write failed: the job retries, and the messages not recorded are sent again, as at-least-once allows).
 */
class DeliveredRecorder {
  private readonly write: (delivered: readonly Delivered[]) => Promise<void>
  private buffer: Delivered[] = []
  private running: Promise<void> | null = null
  private failure: unknown = null

  private lastAdded = 0
  // One timer for the recorder's life, not one a send: what waits longer than RECORD_WHEN_SLOW_MS is written.
  private readonly timer: NodeJS.Timeout

  constructor(write: (delivered: readonly Delivered[]) => Promise<void>) {
    this.write = write
    this.timer = setInterval(() => {
      if (performance.now() - this.lastAdded >= RECORD_WHEN_SLOW_MS) this.flush(1)
    }, RECORD_WHEN_SLOW_MS)
    this.timer.unref()
  }

  add(delivered: Delivered): void {
    this.buffer.push(delivered)
    this.lastAdded = performance.now()
    if (this.buffer.length >= RECORD_BATCH) this.flush(RECORD_BATCH)
  }

  async finish(): Promise<void> {
    clearInterval(this.timer)
    for (;;) {
      this.flush(1)
      if (!this.running) break
      await this.running
    }
    if (this.failure !== null) {
      const failure = this.failure
      this.failure = null
      throw failure
    }
  }

  /** Writes what waits, in statements of `RECORD_BATCH`, while at least `least` wait (a partial batch waits for more). */
  private flush(least: number): void {
    if (this.buffer.length >= least) this.running ??= this.drain(least)
  }

  private async drain(least: number): Promise<void> {
    try {
      while (this.buffer.length >= least && this.buffer.length > 0 && this.failure === null) {
        const batch = this.buffer.splice(0, RECORD_BATCH)
        await this.write(batch)
      }
    } catch (error) {
      this.failure = error
      this.buffer = []
    } finally {
      this.running = null
    }
  }
}

function attemptRows(endpoint: EndpointRow, delivered: readonly Delivered[]): AttemptRow[] {
  return delivered.map(({ message, outcome, at }) => attemptRow(endpoint, message, outcome, at))
}

/** A stream event as the message it is for an endpoint: its id is the event's; only the next one has failed attempts. */
function streamMessage(endpoint: EndpointRow, event: StreamedEvent, next: boolean, now: Date): MessageRow {
  return {
    organization_id: endpoint.organization_id,
    id: event.id,
    endpoint_id: endpoint.id,
    event_id: event.id,
    event_type: event.type,
    origin: 'event',
    attempts: next ? endpoint.stream_attempts : 0,
    next_attempt_at: now,
    failed_at: null,
    created_at: event.occurredAt,
    seq: event.seq,
  }
}

function attemptRow(endpoint: EndpointRow, message: MessageRow, outcome: DeliveryOutcome, at: Date): AttemptRow {
  return {
    organization_id: endpoint.organization_id,
    id: uuidv7(at.getTime()),
    endpoint_id: endpoint.id,
    message_id: message.id,
    event_id: message.event_id,
    event_type: message.event_type,
    origin: message.origin,
    attempt: message.attempts + 1,
    url: endpoint.url,
    succeeded: outcome.ok,
    response_status: outcome.status,
    duration_ms: outcome.durationMs,
    response_excerpt: outcome.excerpt,
    error: outcome.error,
    error_message: outcome.message,
    created_at: at,
  }
}
