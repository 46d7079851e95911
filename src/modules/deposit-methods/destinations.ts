import { isValidXAddress, xAddressToClassicAddress } from 'ripple-address-codec'
import { normalizeIban } from '../../lib/bank-numbers.ts'
import type { BankRecipient } from '../../providers/rails/rails.ts'
import type { AddressFamily } from '../reference/index.ts'

/**
 * The lookup keys of deposit destinations: one spelling per destination, so that however a payer writes an
 * address or a bank number, it finds the deposit method it names. Addresses are assumed valid for their network.
 */

/** The network a deposit method is kept under: the US rails share one bank account. */
export function methodNetwork(network: string): string {
  return network === 'ach' || network === 'wire' || network === 'fednow' || network === 'rtp' ? 'us' : network
}

const BECH32_PREFIX = /^(bc|tb|ltc|tltc)1/i

export function cryptoDestination(family: AddressFamily, address: string, reference?: string): string {
  switch (family) {
    case 'ethereum':
      // The EIP-55 checksum is only a spelling: every case of the same hex names the same account.
      return address.toLowerCase()
    case 'bitcoin':
    case 'litecoin':
      // Bech32 is case-insensitive (all upper case is valid, e.g. in QR codes); base58 is not.
      return BECH32_PREFIX.test(address) ? address.toLowerCase() : address
    case 'solana':
      return address
    case 'xrp-ledger': {
      // An X-address carries the destination tag inside it; it names the same destination as classic + tag.
      if (isValidXAddress(address)) {
        const { classicAddress, tag } = xAddressToClassicAddress(address)
        return tag === false ? classicAddress : `${classicAddress}#${tag}`
      }
      return reference === undefined ? address : `${address}#${Number(reference)}`
    }
  }
}

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
