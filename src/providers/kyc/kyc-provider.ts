/**
 * Who checks identity documents, proofs of address and sanctions lists for the `service-verified` model. A
 * production adapter (an identity-verification vendor) implements the same interface as the sandbox simulator.
 * Calls may be slow and go over the network: callers make them outside any database transaction.
 */

export interface PostalAddress {
  country: string
  subdivision?: string
  city?: string
  line1?: string
  line2?: string
  postalCode?: string
}

/** An uploaded file handed to the provider as evidence. */
export interface EvidenceFile {
  id: string
  context: string
  contentType: string
}

export interface PersonData {
  givenName: string
  familyName?: string
  birthdate?: string
  citizenship?: string
  gender?: 'female' | 'male'
  address?: PostalAddress
}

export interface IdentityCheck {
  submission: 'document-submission' | 'electronic-verification'
  person: PersonData
  files: readonly EvidenceFile[]
}

export interface IdentityOutcome {
  approved: boolean
  reason?: 'data-mismatch' | 'duplicate' | 'underage' | 'provider-verification-rejected'
  /** What the provider read from the document (document submissions). */
  document?: { type: 'driving-license' | 'id-card' | 'passport' | 'residence-permit'; number: string; country: string; expiresAt?: string }
  person?: PersonData
  providerReasons?: string[]
}

export interface ProofOfAddressCheck {
  submission: 'document-submission' | 'electronic-verification'
  person: PersonData & { address: PostalAddress }
  files: readonly EvidenceFile[]
}

export interface ProofOfAddressOutcome {
  approved: boolean
  reason?: 'address-mismatch' | 'name-mismatch' | 'provider-verification-rejected'
  person?: { givenName: string; familyName?: string; address: PostalAddress }
  providerReasons?: string[]
}

export interface ScreeningOutcome {
  /** False when the person matches a sanctions or politically-exposed-persons list. */
  approved: boolean
}

export interface KycProvider {
  /** Reported as `output.provider`. */
  readonly name: string
  checkIdentity(check: IdentityCheck): Promise<IdentityOutcome>
  checkProofOfAddress(check: ProofOfAddressCheck): Promise<ProofOfAddressOutcome>
  screen(person: PersonData): Promise<ScreeningOutcome>
  /**
   * Simulators only: whether `number` (E.164) is one of the documented test numbers of `country`, which are valid
   * whatever the numbering plan says and which any number of users may verify. Production adapters leave it out.
   */
  isTestPhoneNumber?(number: string, country: string): boolean
}
