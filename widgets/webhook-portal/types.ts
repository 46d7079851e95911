/** The shapes of the webhook portal's API (src/modules/webhooks/webhooks.schemas.ts), as the page reads them. */
export type { WidgetError } from '../shared/types.ts'

export interface PortalSession {
  token: string
  expiresAt: string
}

export interface EventType {
  type: string
  description: string
  /** False for a type of the catalogue this deployment never sends. */
  sent: boolean
  example: Record<string, unknown>
}

export type EndpointStatus = 'enabled' | 'disabled'

export interface Endpoint {
  id: string
  url: string
  description: string
  /** Empty: every type. */
  eventTypes: string[]
  status: EndpointStatus
  disabledAt?: string
  disabledReason?: 'manual' | 'delivery-failing'
  secretRotatedAt?: string
  previousSecretExpiresAt?: string
  createdAt: string
  updatedAt: string
}

export interface EndpointInput {
  url: string
  description: string
  eventTypes: string[]
}

export interface Secrets {
  secret: string
  previousSecret?: string
  previousSecretExpiresAt?: string
}

export type MessageStatus = 'pending' | 'delivered' | 'failed'

export interface Message {
  id: string
  endpointId: string
  eventId: string
  eventType: string
  webhookId: string
  origin: 'event' | 'resend' | 'replay' | 'test'
  status: MessageStatus
  attempts: number
  nextAttemptAt?: string
  createdAt: string
  finishedAt?: string
}

export interface Attempt {
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

export interface Replay {
  queued: number
  since: string
  until?: string
}
