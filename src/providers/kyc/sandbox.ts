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

const same = (a: string | undefined, b: string) => a !== undefined && a.trim().toLowerCase() === b.toLowerCase()

export class SandboxKycProvider implements KycProvider {
  readonly name = 'sandbox'

  async checkIdentity(check: IdentityCheck): Promise<IdentityOutcome> {
    const { person } = check
    if (same(person.familyName, SANDBOX_REJECTED_FAMILY_NAME)) {
      return check.submission === 'document-submission'
        ? { approved: false, reason: 'provider-verification-rejected', providerReasons: ['document-unreadable'] }
        : { approved: false, reason: 'data-mismatch' }
    }
    if (check.submission === 'electronic-verification') return { approved: true }
    // A document number derived from the person, so that the same input reads the same document.
    const digest = createHash('sha256').update(`${person.givenName}|${person.familyName ?? ''}|${person.birthdate ?? ''}`).digest('hex')
    return {
      approved: true,
      document: { type: 'passport', number: digest.slice(0, 9).toUpperCase(), country: person.citizenship ?? person.address?.country ?? 'GB' },
      person,
    }
  }

  async checkProofOfAddress(check: ProofOfAddressCheck): Promise<ProofOfAddressOutcome> {
    if (same(check.person.address.line1, SANDBOX_REJECTED_ADDRESS_LINE1)) return { approved: false, reason: 'address-mismatch' }
    const { givenName, familyName, address } = check.person
    return { approved: true, person: familyName === undefined ? { givenName, address } : { givenName, familyName, address } }
  }

  async screen(person: PersonData): Promise<ScreeningOutcome> {
    return { approved: !same(person.familyName, SANDBOX_SANCTIONED_FAMILY_NAME) }
  }
}
