import { normalizeIban } from '../../lib/bank-numbers.ts'
import type { BankRecipient } from '../../providers/rails/rails.ts'

/**
 * The lookup keys of deposit destinations: one spelling per destination, so that however a payer writes an
 * address or a bank number, it finds the deposit method it names. Addresses are assumed valid for their network.
 */

/** The network a deposit method is kept under: the US rails share one bank account. */
export function methodNetwork(network: string): string {
  return network === 'ach' || network === 'wire' || network === 'fednow' || network === 'rtp' ? 'us' : network
}

/** The lookup key of a crypto destination: its one spelling (see the reference module). */
export { canonicalAddress as cryptoDestination } from '../reference/index.ts'

/** The lookup key of a bank destination; undefined for an IBAN whose check digits are wrong. */
export function bankDestination(destination: BankRecipient): string | undefined {
  switch (destination.network) {
    case 'sepa':
      return normalizeIban(destination.iban)
    case 'fps':
      return `${destination.sortCode}/${destination.accountNumber}`
    default:
      return destination.accountNumber
  }
}
