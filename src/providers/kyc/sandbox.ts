import { createHash } from 'node:crypto'
import type { IdentityCheck, IdentityOutcome, KycProvider, PersonData, ProofOfAddressCheck, ProofOfAddressOutcome, ScreeningOutcome } from './kyc-provider.ts'

/**
 * The sandbox KYC provider: outcomes follow from the input alone, so that a test can choose them
 * (documented in docs/kyc.md):
 * - identity fails when the family name is `Rejected`;
 * - proof of address fails when the first address line is `1 Rejected Street`;
 * - screening rejects a person whose family name is `Sanctioned`.
 * Anything else is approved.
 */
export const SANDBOX_REJECTED_FAMILY_NAME = 'Rejected'
export const SANDBOX_REJECTED_ADDRESS_LINE1 = '1 Rejected Street'
export const SANDBOX_SANCTIONED_FAMILY_NAME = 'Sanctioned'

/**
 * Test phone numbers: ranges regulators keep for fiction and tests, never assigned to anyone. In the sandbox they
 * are valid numbers of their country (even where the numbering plan says otherwise) and any number of users may
 * verify the same one (documented in docs/sandbox.md).
 */
export const SANDBOX_TEST_PHONE_NUMBERS: readonly { country: string; pattern: RegExp; range: string }[] = [
  // Ofcom's drama numbers.
  { country: 'GB', pattern: /^\+447700900\d{3}$/, range: '+44 7700 900000 to +44 7700 900999' },
  // NANP's fictional 555 numbers, with any area code.
  { country: 'US', pattern: /^\+1[2-9]\d{2}55501\d{2}$/, range: '+1 NXX 555 0100 to +1 NXX 555 0199' },
  // ARCEP's numbers for fiction.
  { country: 'FR', pattern: /^\+3363998\d{4}$/, range: '+33 6 39 98 00 00 to +33 6 39 98 99 99' },
]

const same = (a: string | undefined, b: string) => a !== undefined && a.trim().toLowerCase() === b.toLowerCase()

export class SandboxKycProvider implements KycProvider {
  readonly name = 'sandbox'

  async checkIdentity(check: IdentityCheck): Promise<IdentityOutcome> {
    const { person } = check
    const rejected = same(person.familyName, SANDBOX_REJECTED_FAMILY_NAME)
    if (check.submission === 'electronic-verification') return rejected ? { approved: false, reason: 'data-mismatch' } : { approved: true }
    // A document number derived from the person, so that the same input reads the same document. A rejected
    // document is read all the same: what it shows comes with the rejection.
    const digest = createHash('sha256').update(`${person.givenName}|${person.familyName ?? ''}|${person.birthdate ?? ''}`).digest('hex')
    const read = {
      document: { type: 'passport' as const, number: digest.slice(0, 9).toUpperCase(), country: person.citizenship ?? person.address?.country ?? 'GB' },
      person,
    }
    return rejected ? { approved: false, reason: 'provider-verification-rejected', providerReasons: ['document-rejected'], ...read } : { approved: true, ...read }
  }

  async checkProofOfAddress(check: ProofOfAddressCheck): Promise<ProofOfAddressOutcome> {
    if (same(check.person.address.line1, SANDBOX_REJECTED_ADDRESS_LINE1)) return { approved: false, reason: 'address-mismatch' }
    const { givenName, familyName, address } = check.person
    return { approved: true, person: familyName === undefined ? { givenName, address } : { givenName, familyName, address } }
  }

  async screen(person: PersonData): Promise<ScreeningOutcome> {
    return { approved: !same(person.familyName, SANDBOX_SANCTIONED_FAMILY_NAME) }
  }

  isTestPhoneNumber(number: string, country: string): boolean {
    return SANDBOX_TEST_PHONE_NUMBERS.some((range) => range.country === country && range.pattern.test(number))
  }
}
