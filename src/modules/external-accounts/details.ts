import { electronicFormatIBAN, isSEPACountry, isValidBIC, isValidIBAN } from 'ibantools'
import { isValidRoutingNumber, isValidUkAccount } from '../../lib/bank-numbers.ts'

/**
 * The rules of external account details, pure: card numbers (Luhn, issuer ranges, expiry), bank numbers (ABA
 * routing checksum, UK modulus checks, IBAN and BIC checksums) and US addresses. Each answers the problem it
 * found, named as the API reports it, or nothing.
 */

export interface DetailProblem {
  code: 'number_invalid' | 'date_invalid' | 'postal_code_invalid' | 'country_not_supported'
  property: string
  message: string
  extra?: Record<string, unknown>
}

/** The Luhn (mod 10) check every payment card number carries in its last digit. */
export function passesLuhn(digits: string): boolean {
  if (!/^[0-9]+$/.test(digits)) return false
  let sum = 0
  let double = false
  for (let i = digits.length - 1; i >= 0; i--) {
    let digit = digits.charCodeAt(i) - 48
    if (double) {
      digit *= 2
      if (digit > 9) digit -= 9
    }
    sum += digit
    double = !double
  }
  return sum % 10 === 0
}

/**
 * A card is valid through the last day of its expiry month: it is expired once that month has passed (in UTC,
 * so that no user sees a card refused a day early).
 */
export function isCardExpired(expiry: { month: number; year: number }, now: Date): boolean {
  return now.getTime() >= cardExpiresAt(expiry).getTime()
}

/** The instant a card expires: the first of the month after its expiry month, 00:00 UTC. */
export function cardExpiresAt(expiry: { month: number; year: number }): Date {
  return new Date(Date.UTC(expiry.year, expiry.month, 1))
}

export interface BinRange {
  prefix: string
  scheme: string
  type: 'debit' | 'credit'
  octSupport: 'supported' | 'unsupported' | 'unknown'
  /** The issuer's country; none for a sandbox range issued wherever the user lives. */
  country?: string
}

/** The issuer range of a card number: the longest matching prefix, or undefined. */
export function findBinRange(ranges: readonly BinRange[], number: string): BinRange | undefined {
  let best: BinRange | undefined
  for (const range of ranges) {
    if (number.startsWith(range.prefix) && (best === undefined || range.prefix.length > best.prefix.length)) best = range
  }
  return best
}

export function checkCard(number: string, expiry: { month: number; year: number }, now: Date): DetailProblem | undefined {
  if (!passesLuhn(number)) return { code: 'number_invalid', property: 'number', message: 'The card number is invalid' }
  if (isCardExpired(expiry, now)) {
    return {
      code: 'date_invalid',
      property: 'expiryDate',
      message: 'The date must be at least now',
      extra: { rule: 'difference-less-than-or-equal-to-threshold', threshold: { limit: 0, unit: 'milliseconds' } },
    }
  }
  return undefined
}

export interface AchDetails {
  routingNumber: string
  accountNumber: string
  address: { country: string; subdivision: string; postalCode: string }
}

/** ACH: a US bank (routing number with its 3-7-1 checksum) and a US address with a ZIP code. */
export function checkAch(details: AchDetails): DetailProblem | undefined {
  if (!isValidRoutingNumber(details.routingNumber)) return { code: 'number_invalid', property: 'routingNumber', message: 'The routing number is invalid' }
  if (details.address.country !== 'US') return { code: 'country_not_supported', property: 'address.country', message: 'The country is not supported' }
  if (!/^[0-9]{5}(-[0-9]{4})?$/.test(details.address.postalCode)) return { code: 'postal_code_invalid', property: 'address.postalCode', message: 'The postal code is invalid' }
  return undefined
}

/** Faster Payments: a sort code and account number that pass the UK modulus checks (Vocalink's rules). */
export function checkFps(details: { sortCode: string; accountNumber: string }): DetailProblem | undefined {
  if (!isValidUkAccount(details.sortCode, details.accountNumber)) {
    return { code: 'number_invalid', property: 'accountNumber', message: 'The sort code and account number do not form a valid UK bank account' }
  }
  return undefined
}

/** A SEPA account in its electronic form (no spaces, upper case), or a problem: the IBAN's and the BIC's checksums and formats. */
export function checkSepa(details: { iban: string; bic: string }): { iban: string; bic: string } | DetailProblem {
  const iban = electronicFormatIBAN(details.iban) ?? ''
  if (!isValidIBAN(iban)) return { code: 'number_invalid', property: 'iban', message: 'The IBAN is invalid' }
  if (!isSEPACountry(iban.slice(0, 2))) return { code: 'country_not_supported', property: 'iban', message: 'The IBAN is of a country outside the SEPA area' }
  const bic = details.bic.toUpperCase()
  if (!isValidBIC(bic)) return { code: 'number_invalid', property: 'bic', message: 'The BIC is invalid' }
  return { iban, bic }
}
