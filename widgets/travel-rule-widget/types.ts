/** The JSON shapes the travel-rule widget reads from Tessera's API and from the travel-rule node. */

export type Flow = 'deposit-form' | 'withdrawal-form'

export type { WidgetError, WidgetOptions } from '../shared/types.ts'

export interface Violation {
  property?: string
  rule?: string
  ruleParams?: Record<string, unknown>
}

export interface Customer {
  name: string
  type: 'natural' | 'legal'
}

/** `session.data.parameters`: how the widget reaches the travel-rule node, what it asks, and about which movement. */
export interface SessionParameters {
  init: { authToken: string; nodeUrl: string }
  options: {
    proofs?: {
      fallbacks?: string[]
      reuseProof?: boolean
      deminimis?: { currency?: string; proofTypes?: string[]; threshold?: number }
    }
    theme?: Record<string, unknown>
  } & Record<string, unknown>
  transaction: {
    amountDecimal: number
    asset: string
    network: string
    customer: Customer
    source?: string[]
    destination?: string
    /** A price of the asset, when the session gives one (the travel-rule network's widgets take it): `price` per unit, in `currency`. */
    assetPrice?: { price?: number; currency?: string }
    requestForInformation: { id: string }
  } & Record<string, unknown>
}

export interface SessionData {
  provider: string
  parameters: SessionParameters
}

export type RequestStatus = 'pending' | 'ok' | 'expired' | 'failed'

export interface RequestForInformation {
  id: string
  type: string
  status: RequestStatus
  data?: Record<string, unknown>
  context: { direction: 'deposit' | 'withdrawal'; party: 'originator' | 'beneficiary'; network: string; asset: string; amount: string; addresses: string[] }
  statusDetails?: { reason: string }
  expiresAt: string
  createdAt: string
  updatedAt: string
}

/** `GET /widgets/travel-rule/sessions/current` */
export interface CurrentSession {
  session: { flow: Flow; data: SessionData; expiresAt: string; domain?: string }
  requestForInformation: RequestForInformation
  messageToSign: string
}

/** The node's `GET /addresses/{network}/{address}` */
export interface AddressLookup {
  network: string
  address: string
  vasp: { did: string; name: string } | null
}

export type Counterparty = { type: 'self' } | { type: 'natural'; firstName: string; lastName: string } | { type: 'legal'; name: string }

export type Proof = { type: 'self-declaration'; confirmed: boolean } | { type: string; attestation: string; proof: string; publicKey?: string }

/** The node's `POST /transfers/validate` body. */
export interface ValidateRequest {
  direction: 'deposit' | 'withdrawal'
  network: string
  asset: string
  amountDecimal: number
  address: string
  customer: Customer
  counterparty: Counterparty
  proof?: Proof
}

/** The node's description of the transfer: the `data` the request for information is answered with. */
export interface TransferPayload extends Record<string, unknown> {
  valid: boolean
  errors: string[]
  status: string
}
