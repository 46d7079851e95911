import { createHmac } from 'node:crypto'
import { composeIBAN, electronicFormatIBAN, isValidIBAN } from 'ibantools'
import { validateAccountDetails } from 'uk-modulus-check'

/**
 * Bank account numbers, for deposit methods and for the senders the sandbox bank rail makes up: IBANs with their
 * ISO 13616 check digits, UK sort code and account number pairs that pass the Vocalink modulus checks, US routing
 * numbers with the ABA checksum and account numbers. Candidates come from a key, so the same key (a deposit
 * method's account) always gets the same numbers; `attempt` moves to the next candidate when one is already taken.
 */

/** `length` decimal digits from the key, for one attempt of one purpose. */
export function derivedDigits(key: Uint8Array, purpose: string, attempt: number, length: number): string {
  const digest = createHmac('sha256', key).update(`${purpose}\u0000${attempt}`).digest()
  // 256 bits reduced modulo 10^length (length ≤ 30): the bias is below 2^-150, nothing a number could show.
  return (BigInt(`0x${digest.toString('hex')}`) % 10n ** BigInt(length)).toString().padStart(length, '0')
}

// ---------------------------------------------------------------------------------------------------------------
// IBAN (ISO 13616): the check digits make the whole number ≡ 1 (mod 97).

/** The IBAN of a BBAN in a country, check digits computed; undefined when the BBAN does not fit the country. */
export function ibanOf(countryCode: string, bban: string): string | undefined {
  const iban = composeIBAN({ countryCode, bban })
  return iban !== null && isValidIBAN(iban) ? iban : undefined
}

/** An IBAN as written on paper or typed (spaces, lower case) in its electronic form; undefined when invalid. */
export function normalizeIban(value: string): string | undefined {
  const iban = electronicFormatIBAN(value)
  return iban !== null && isValidIBAN(iban) ? iban : undefined
}

/** A candidate IBAN at a bank whose BBAN is `bankCode` followed by `accountDigits` digits (e.g. NL: 4 + 10). */
export function candidateIban(key: Uint8Array, attempt: number, bank: { countryCode: string; bankCode: string; accountDigits: number }): string {
  const iban = ibanOf(bank.countryCode, `${bank.bankCode}${derivedDigits(key, 'iban', attempt, bank.accountDigits)}`)
  if (iban === undefined) throw new Error(`The bank code ${bank.bankCode} does not make ${bank.countryCode} IBANs`)
  return iban
}

// ---------------------------------------------------------------------------------------------------------------
// ABA routing numbers: nine digits whose weighted sum 3-7-1-3-7-1-3-7-1 is a multiple of 10.

const ABA_WEIGHTS = [3, 7, 1, 3, 7, 1, 3, 7, 1] as const

export function isValidRoutingNumber(value: string): boolean {
  if (!/^[0-9]{9}$/.test(value)) return false
  let sum = 0
  for (let i = 0; i < 9; i++) sum += Number(value[i]) * ABA_WEIGHTS[i]!
  return sum % 10 === 0
}

/** The ninth digit that completes eight digits into a routing number. */
export function routingCheckDigit(first8: string): string {
  if (!/^[0-9]{8}$/.test(first8)) throw new Error('A routing number starts with eight digits')
  let sum = 0
  for (let i = 0; i < 8; i++) sum += Number(first8[i]) * ABA_WEIGHTS[i]!
  return String((10 - (sum % 10)) % 10)
}

/** A US account number: `length` digits (4 to 17 on the rails), never starting with zero. */
export function candidateUsAccountNumber(key: Uint8Array, attempt: number, length = 12): string {
  const digits = derivedDigits(key, 'us-account', attempt, length)
  return `${(Number(digits[0]) % 9) + 1}${digits.slice(1)}`
}

// ---------------------------------------------------------------------------------------------------------------
// UK: an eight-digit account number valid with its sort code under the Vocalink modulus checks.

export function isValidUkAccount(sortCode: string, accountNumber: string): boolean {
  return /^[0-9]{6}$/.test(sortCode) && /^[0-9]{8}$/.test(accountNumber) && validateAccountDetails(sortCode, accountNumber)
}

// About one number in ten passes a modulus check; 500 draws all failing would take a broken sort code.
const MAX_MODULUS_DRAWS = 500

/** The first account number from this attempt on that passes the modulus check with the sort code. */
export function candidateUkAccountNumber(key: Uint8Array, attempt: number, sortCode: string): string {
  for (let draw = 0; draw < MAX_MODULUS_DRAWS; draw++) {
    const accountNumber = derivedDigits(key, 'uk-account', attempt * MAX_MODULUS_DRAWS + draw, 8)
    if (/^0+$/.test(accountNumber)) continue
    if (isValidUkAccount(sortCode, accountNumber)) return accountNumber
  }
  throw new Error(`No account number passes the modulus check with sort code ${sortCode}`)
}

// ---------------------------------------------------------------------------------------------------------------
// Payment references: what the payer writes in the transfer's description.

// Crockford's base32 without I, L, O, U: nothing a payer can misread or mistype.
const REFERENCE_ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ'

/** `prefix` and ten characters (50 bits): short enough for FPS's 18-character reference field. */
export function candidatePaymentReference(key: Uint8Array, attempt: number, prefix: string): string {
  const digest = createHmac('sha256', key).update(`payment-reference\u0000${attempt}`).digest()
  let reference = prefix
  for (let i = 0; i < 10; i++) reference += REFERENCE_ALPHABET[digest[i]! & 31]
  return reference
}
