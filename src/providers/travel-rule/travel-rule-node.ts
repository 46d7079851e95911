/**
 * The travel-rule network: where a regulated service exchanges what it knows of the parties of a crypto movement
 * with the other side (another VASP, or nobody for a self-hosted wallet) and where those declarations are screened.
 * Tessera asks it to assess the answer to each request for information before accepting it, and hands the travel-rule
 * widget a token for the node the user's browser talks to. A production adapter (a travel-rule provider's API)
 * implements this interface; the sandbox simulator (sandbox.ts) stands in for it, its test values in docs/sandbox.md.
 */

export interface TravelRuleTransfer {
  organizationId: string
  /** Tessera's id of the request for information: the transfer's reference at the node. */
  reference: string
  direction: 'deposit' | 'withdrawal'
  network: string
  asset: string
  amount: string
  /** The addresses of the other end (a deposit's senders, a withdrawal's destination). */
  addresses: string[]
  /** Whether the other party is the user themself. */
  counterparty: 'self' | 'other'
  /** The other party's names as the answer gave them. */
  names: string[]
}

export type TransferAssessment = { status: 'accepted' } | { status: 'refused'; reason: string }

/** A known service at the node's directory that hosts an address (an exchange, a custodian). */
export interface DirectoryEntry {
  did: string
  name: string
}

/** The node cannot be reached or did not answer: try again later. */
export class TravelRuleNodeUnavailableError extends Error {
  constructor(message = 'The travel-rule node cannot be reached') {
    super(message)
    this.name = 'TravelRuleNodeUnavailableError'
  }
}

export interface TravelRuleNode {
  /** The provider's name, as widget sessions report it (`session.data.provider`). */
  readonly provider: string
  /** Where the widget's page reaches the node. */
  readonly nodeUrl: string
  /** Screens a declaration: accepted, or refused (the party is sanctioned, the other VASP rejected it). */
  assess(transfer: TravelRuleTransfer): Promise<TransferAssessment>
  /** A short-lived token with which the user's browser (the widget) talks to the node for this organization's user. */
  customerToken(input: { organizationId: string; userId: string; ttlSeconds: number }): Promise<string>
  /** The service that hosts an address, if the node's directory knows it. */
  lookup(network: string, address: string): Promise<DirectoryEntry | null>
}
