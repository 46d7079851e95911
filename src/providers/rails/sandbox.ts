import { randomBytes } from 'node:crypto'
import { candidateIban, candidateUkAccountNumber, candidateUsAccountNumber } from '../../lib/bank-numbers.ts'
import { uuidv7 } from '../../lib/ids.ts'
import type { BankNetwork, BankRail, BankRemitter, ChainRail, IncomingBankPayment, IncomingChainTransfer, PaymentHandler } from './rails.ts'

// Where made-up senders bank: sandbox values apart from the deposit bank's, so a made-up sender never equals a
// recipient. The sort code is the Vocalink specification's standard MOD11 example.
const REMITTER_SEPA = { countryCode: 'NL', bankCode: 'TSRB', accountDigits: 10, bic: 'TSRBNL20' }
const REMITTER_SORT_CODE = '107999'
const REMITTER_ROUTING_NUMBER = '220000000'

/** A sender as a tester describes them: a name, and whichever details of their network they choose. */
export type RequestedRemitter = { name: string } & Record<string, string | undefined>

// A simulated payment happened nowhere else: the simulator gives it its identity, as a rail or a chain would.
const simulatedId = () => `simulated-deposit:${uuidv7()}`

/** Hands a simulated payment over at once: the sender hears the deployment's refusal, if any. */
class Delivery<P> {
  private handle: PaymentHandler<P> | null = null

  set(handle: PaymentHandler<P>): void {
    this.handle = handle
  }

  async deliver(payment: P): Promise<P> {
    if (!this.handle) throw new Error('The sandbox rail has nowhere to deliver payments')
    await this.handle(payment)
    return payment
  }
}

/**
 * The sandbox bank rail: sends the payments a tester asks for (the sandbox test helpers), from the sender they
 * describe, completed as a bank would report them: numbers at a sandbox bank for what is not given, ACH's usual
 * codes.
 */
export class SandboxBankRail implements BankRail {
  private readonly delivery = new Delivery<IncomingBankPayment>()

  onPayment(handle: PaymentHandler<IncomingBankPayment>): void {
    this.delivery.set(handle)
  }

  /** The sender of a payment over the network, as the rail will report them. */
  remitter(network: BankNetwork, requested: RequestedRemitter): BankRemitter {
    const { name } = requested
    switch (network) {
      case 'sepa':
        return { name, bic: requested.bic ?? REMITTER_SEPA.bic, iban: requested.iban ?? candidateIban(randomBytes(32), 0, REMITTER_SEPA) }
      case 'fps': {
        const sortCode = requested.sortCode ?? REMITTER_SORT_CODE
        return { name, sortCode, accountNumber: requested.accountNumber ?? candidateUkAccountNumber(randomBytes(32), 0, sortCode) }
      }
      // A wire carries what the sender wrote, and nothing is made up.
      case 'wire':
        return { name, ...Object.fromEntries(Object.entries(requested).filter((entry): entry is [string, string] => entry[0] !== 'name' && entry[1] !== undefined)) }
      default: {
        const remitter = {
          name,
          accountNumber: requested.accountNumber ?? candidateUsAccountNumber(randomBytes(32), 0, 10),
          routingNumber: requested.routingNumber ?? REMITTER_ROUTING_NUMBER,
        }
        if (network !== 'ach') return remitter
        return { ...remitter, secCode: requested.secCode ?? 'WEB', transactionType: requested.transactionType ?? 'Push', serviceType: requested.serviceType ?? 'SameDay' }
      }
    }
  }

  /** Sends a payment; resolves once the deployment took it, rejects as it refused it. */
  send(payment: Omit<IncomingBankPayment, 'id'>): Promise<IncomingBankPayment> {
    return this.delivery.deliver({ id: simulatedId(), ...payment })
  }
}

/** The sandbox chain rail: sends the transfers a tester asks for (the sandbox test helpers). */
export class SandboxChainRail implements ChainRail {
  private readonly delivery = new Delivery<IncomingChainTransfer>()

  onTransfer(handle: PaymentHandler<IncomingChainTransfer>): void {
    this.delivery.set(handle)
  }

  /** Sends a transfer; resolves once the deployment took it, rejects as it refused it. */
  send(transfer: Omit<IncomingChainTransfer, 'id'>): Promise<IncomingChainTransfer> {
    return this.delivery.deliver({ id: simulatedId(), ...transfer })
  }
}
