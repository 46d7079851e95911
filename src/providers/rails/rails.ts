/**
 * Bank and chain rails: how money from outside reaches the deployment's deposit methods. A rail reports each
 * payment that arrives at one of them, and Tessera records it as a deposit, which then settles into the account
 * owning the destination. A production adapter (a partner bank's payment notifications, an indexer watching the
 * deposit addresses on a chain) implements the same interfaces as the sandbox simulators.
 *
 * A payment may be reported more than once (a redelivered notification, a re-scanned block): its `id` is the
 * rail's own identity of the payment, so a repeat records nothing new.
 */

/** Where a bank payment was sent: a deposit method's numbers, as the network carries them. */
export type BankRecipient =
  | { network: 'sepa'; iban: string }
  | { network: 'fps'; sortCode: string; accountNumber: string }
  /** The US rails share one bank account; ACH also carries the routing number it was sent to. */
  | { network: 'ach' | 'wire' | 'fednow' | 'rtp'; accountNumber: string; routingNumber?: string }

export type BankNetwork = BankRecipient['network']

/** The sender as the rail describes them: always a name, then the details their network carries. */
export type BankRemitter = { name: string } & Record<string, string>

export interface IncomingBankPayment {
  /** The rail's id of the payment. */
  id: string
  /** The organization whose deposit method the payment names: only its deposit methods are looked up. */
  organizationId: string
  recipient: BankRecipient
  asset: string
  /** A positive decimal string. */
  amount: string
  /** The payment reference the sender wrote, where the network carries one. */
  reference?: string
  remitter: BankRemitter
}

export interface IncomingChainTransfer {
  /** The chain's id of the transfer. */
  id: string
  /** The organization whose deposit address the transfer names: only its deposit methods are looked up. */
  organizationId: string
  network: string
  /** The address it was sent to, in any of its forms. */
  address: string
  /** The destination tag or memo, on networks that use one (XRP Ledger). */
  reference?: string
  asset: string
  /** A positive decimal string. */
  amount: string
  /** The addresses it was sent from (one on account-based chains). */
  senders: string[]
}

/** Takes a reported payment; a payment is delivered once this resolves, and refused if it rejects. */
export type PaymentHandler<P> = (payment: P) => Promise<void>

export interface BankRail {
  /** Where the rail hands the payments that arrive; set once, at start. */
  onPayment(handle: PaymentHandler<IncomingBankPayment>): void
}

export interface ChainRail {
  /** Where the rail hands the transfers that arrive; set once, at start. */
  onTransfer(handle: PaymentHandler<IncomingChainTransfer>): void
}
