/** The JSON shapes the payment widget reads from Tessera's API (a subset of the OpenAPI schemas). */

export type Flow = 'authorize' | 'select-for-deposit' | 'select-for-withdrawal'

export type { WidgetError, WidgetOptions } from '../shared/types.ts'

export interface Endpoint {
  asset: string
  amount: string
  rate: string
  node: { type: string; id?: string; network?: string; confirmationUrl?: string } & Record<string, unknown>
}

export interface Fee {
  type: string
  code: string
  asset: string
  amount: string
  percentage?: string
}

export interface Denomination {
  asset: string
  amount: string
  rate: string
  target: 'origin' | 'destination'
}

export interface Quote {
  id: string
  origin: Endpoint
  destination: Endpoint
  denomination: Denomination
  fees: Fee[]
  requirements: string[]
  expiresAt: string
}

export type TransactionStatus = 'processing' | 'on-hold' | 'completed' | 'failed'

export interface Transaction {
  id: string
  type: string
  status: TransactionStatus
  statusDetails?: { reason?: string }
  origin: Endpoint
  destination: Endpoint
  denomination: Denomination
  fees: Fee[]
  quotedAt: string
  createdAt: string
  updatedAt: string
  completedAt?: string
}

export interface CardDetails {
  type?: 'credit' | 'debit'
  last4Digits: string
  expiryDate: { month: number; year: number }
  octSupport: 'unknown' | 'supported' | 'unsupported'
}

export interface ExternalAccount {
  id: string
  ownerId: string
  type: string
  status: 'processing' | 'ok' | 'expired' | 'failed' | 'restricted' | 'blocked'
  statusDetails?: { reason: string }
  label: string
  asset: string
  network: string
  features: ('withdraw' | 'deposit')[]
  details: CardDetails | Record<string, unknown>
  createdAt: string
  updatedAt: string
}

export interface SessionSettings {
  pollIntervalMs: number
  maxPollAttempts: number
  returnUrl: string
}

/** `GET /widgets/payment/sessions/current` */
export interface CurrentSessionResponse {
  session: { flow: Flow; data?: { quoteId?: string; domain?: string } & Record<string, unknown>; expiresAt?: string }
  quote?: Quote
  settings: SessionSettings
}
