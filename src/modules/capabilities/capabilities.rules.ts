// What a user may do, derived from facts about them: pure, so that every rule is a unit test.

export const CAPABILITY_CODES = [
  'crypto-withdrawals',
  'card-withdrawals',
  'bank-withdrawals',
  'apple-pay-withdrawals',
  'paypal-withdrawals',
  'venmo-withdrawals',
  'crypto-deposits',
  'bank-deposits',
  'deposits',
  'receives',
  'sends',
  'trades',
  'cards',
  'apple-pay',
  'paypal',
  'venmo',
  'unique-account-number-viban',
] as const
export type CapabilityCode = (typeof CAPABILITY_CODES)[number]

/** The KYC processes a capability can require, as the KYC overview names them. */
export const REQUIRABLE_PROCESSES = [
  'profile',
  'address',
  'phone',
  'identity',
  'proofOfAddress',
  'customerDueDiligence',
  'enhancedDueDiligence',
  'cryptoRiskAssessment',
  'selfCategorizationStatement',
  'taxDetails',
] as const
export type RequirableProcess = (typeof REQUIRABLE_PROCESSES)[number]

export type ProcessStatus = 'ok' | 'failed' | 'running' | 'pending' | 'exempt'

/** One capability of the catalogue (reference-data/capabilities.json). */
export interface CapabilityDefinition {
  code: CapabilityCode
  name: string
  requires: RequirableProcess[]
  requiresWhenResidentIn?: Record<string, RequirableProcess[]>
  termsOfService?: RequirableTerms[]
  userTypes?: Array<'individual' | 'business'>
  disabled?: boolean
}

/** Everything the rules look at, gathered by the service from the users, KYC, countries and terms modules. */
export interface CapabilityFacts {
  userType: 'individual' | 'business'
  residence: { country: string; subdivision?: string } | null
  /** Whether the deployment's country restrictions refuse residents of the user's country, or of its subdivision. */
  residenceRefused: { country: boolean; subdivision: boolean }
  /** Whether the country of the user's registered phone number is refused (phone restriction scope). */
  phoneCountryRefused: boolean
  /** Status of every KYC process, by the overview's names; processes not listed count as `pending`. */
  kyc: Partial<Record<RequirableProcess | 'screening' | 'risk', ProcessStatus>>
  acceptedTermsOfService: ReadonlySet<string>
}

export type Requirement =
  | 'user-must-submit-crypto-risk-assessment-form'
  | 'user-must-submit-self-categorization-form'
  | 'user-must-submit-residential-address'
  | 'user-must-submit-customer-due-diligence'
  | 'user-must-submit-enhanced-due-diligence'
  | 'user-must-submit-full-name'
  | 'user-must-submit-identity'
  | 'user-must-submit-phone-number'
  | 'user-must-submit-proof-of-address'
  | 'user-must-submit-tax-details'
  | 'user-must-accept-unique-account-number-viban-terms-of-service'

export type Restriction =
  | 'crypto-risk-assessment-form-not-valid'
  | 'phone-country-not-supported'
  | 'self-categorization-statement-form-not-valid'
  | 'temporarily-disabled'
  | 'user-residential-address-not-valid'
  | 'user-country-not-supported'
  | 'user-enhanced-due-diligence-not-valid'
  | 'user-identity-not-valid'
  | 'user-proof-of-address-not-valid'
  | 'user-screening-running'
  | 'user-state-not-supported'
  | 'user-status-not-valid'
  | 'user-type-not-supported'

export interface Capability {
  code: CapabilityCode
  name: string
  /** False when at least one restriction is active: nothing the user submits lifts it. */
  enabled: boolean
  /** What the user still has to do before the capability can be used. */
  requirements: Requirement[]
  restrictions: Restriction[]
}

const REQUIREMENT_OF: Record<RequirableProcess, Requirement> = {
  profile: 'user-must-submit-full-name',
  address: 'user-must-submit-residential-address',
  phone: 'user-must-submit-phone-number',
  identity: 'user-must-submit-identity',
  proofOfAddress: 'user-must-submit-proof-of-address',
  customerDueDiligence: 'user-must-submit-customer-due-diligence',
  enhancedDueDiligence: 'user-must-submit-enhanced-due-diligence',
  cryptoRiskAssessment: 'user-must-submit-crypto-risk-assessment-form',
  selfCategorizationStatement: 'user-must-submit-self-categorization-form',
  taxDetails: 'user-must-submit-tax-details',
}

/** A failed process the user cannot fix by submitting again; processes absent here fail with `user-status-not-valid`. */
const RESTRICTION_OF_FAILED: Partial<Record<RequirableProcess, Restriction>> = {
  address: 'user-residential-address-not-valid',
  identity: 'user-identity-not-valid',
  proofOfAddress: 'user-proof-of-address-not-valid',
  enhancedDueDiligence: 'user-enhanced-due-diligence-not-valid',
  cryptoRiskAssessment: 'crypto-risk-assessment-form-not-valid',
  selfCategorizationStatement: 'self-categorization-statement-form-not-valid',
}

/** Terms of service a capability can require: those the API has a requirement code for. */
export const TERMS_REQUIREMENT = {
  'unique-account-number-viban': 'user-must-accept-unique-account-number-viban-terms-of-service',
} as const satisfies Record<string, Requirement>
export type RequirableTerms = keyof typeof TERMS_REQUIREMENT

/** The processes a capability needs for this user: its own, plus those the user's country of residence adds. */
export function requiredProcesses(definition: CapabilityDefinition, facts: CapabilityFacts): RequirableProcess[] {
  const extra = facts.residence ? (definition.requiresWhenResidentIn?.[facts.residence.country] ?? []) : []
  return [...new Set([...definition.requires, ...extra])]
}

export function evaluateCapability(definition: CapabilityDefinition, facts: CapabilityFacts): Capability {
  const requirements = new Set<Requirement>()
  const restrictions = new Set<Restriction>()
  const status = (process: RequirableProcess | 'screening' | 'risk'): ProcessStatus => facts.kyc[process] ?? 'pending'

  if (definition.disabled) restrictions.add('temporarily-disabled')
  if (definition.userTypes && !definition.userTypes.includes(facts.userType)) restrictions.add('user-type-not-supported')
  if (facts.residenceRefused.country) restrictions.add('user-country-not-supported')
  else if (facts.residenceRefused.subdivision) restrictions.add('user-state-not-supported')
  if (facts.phoneCountryRefused) restrictions.add('phone-country-not-supported')
  if (status('screening') === 'running') restrictions.add('user-screening-running')
  if (status('screening') === 'failed' || status('risk') === 'failed') restrictions.add('user-status-not-valid')

  for (const process of requiredProcesses(definition, facts)) {
    switch (status(process)) {
      case 'ok':
      case 'exempt':
        break
      case 'failed':
        restrictions.add(RESTRICTION_OF_FAILED[process] ?? 'user-status-not-valid')
        break
      case 'pending':
      case 'running':
        // Submitted and under review still counts as missing: the capability cannot be used yet.
        requirements.add(REQUIREMENT_OF[process])
        break
    }
  }
  for (const terms of definition.termsOfService ?? []) {
    if (!facts.acceptedTermsOfService.has(terms)) requirements.add(TERMS_REQUIREMENT[terms])
  }

  return {
    code: definition.code,
    name: definition.name,
    enabled: restrictions.size === 0,
    requirements: [...requirements],
    restrictions: [...restrictions],
  }
}

/** Whether the user may exercise the capability now: enabled and nothing left to submit. */
export function isUsable(capability: Capability): boolean {
  return capability.enabled && capability.requirements.length === 0
}
