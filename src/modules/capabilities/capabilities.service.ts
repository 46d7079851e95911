import type { Principal } from '../../http/principal.ts'
import { DomainError } from '../../lib/errors.ts'
import {
  CAPABILITY_CODES,
  evaluateCapability,
  isUsable,
  type Capability,
  type CapabilityCode,
  type CapabilityDefinition,
  type CapabilityFacts,
  type ProcessStatus,
} from './capabilities.rules.ts'

type Residence = { country: string; subdivision?: string }
type KycStatuses = Record<string, { status: ProcessStatus; country?: unknown }>

/** What the capabilities need from the modules that own the facts. */
export interface CapabilitySources {
  /** The acting user's type and residence; throws 404 when the user does not exist. */
  user(principal: Principal): Promise<{ type: 'individual' | 'business'; residence: Residence | null }>
  /** KYC process statuses, and the country of the registered phone number if any. */
  kyc(organizationId: string, userId: string, userType: 'individual' | 'business'): Promise<{ statuses: CapabilityFacts['kyc']; phoneCountry: string | null }>
  acceptedTermsOfService(organizationId: string, userId: string): Promise<ReadonlySet<string>>
  countries: { closedToResidents(residence: Residence): boolean; supports(code: string, scope: 'phone'): boolean }
}

export class CapabilitiesService {
  private readonly definitions: ReadonlyMap<CapabilityCode, CapabilityDefinition>
  private readonly sources: CapabilitySources

  constructor(definitions: readonly CapabilityDefinition[], sources: CapabilitySources) {
    this.sources = sources
    const duplicates = definitions.filter((d, i) => definitions.findIndex((other) => other.code === d.code) !== i)
    if (duplicates.length > 0) throw new Error(`capabilities.json defines ${duplicates.map((d) => d.code).join(', ')} more than once`)
    // Capabilities the catalogue does not define are offered to nobody.
    this.definitions = new Map(
      CAPABILITY_CODES.map((code) => [code, definitions.find((d) => d.code === code) ?? { code, name: code, requires: [], disabled: true }]),
    )
  }

  async list(principal: Principal): Promise<Capability[]> {
    const facts = await this.factsOf(principal)
    return [...this.definitions.values()].map((definition) => evaluateCapability(definition, facts))
  }

  async get(principal: Principal, code: CapabilityCode): Promise<Capability> {
    return evaluateCapability(this.definitions.get(code)!, await this.factsOf(principal))
  }

  /** The codes of the capabilities not restricted for the acting user. */
  async enabledFor(principal: Principal): Promise<ReadonlySet<CapabilityCode>> {
    return new Set((await this.list(principal)).filter((capability) => capability.enabled).map((capability) => capability.code))
  }

  /** For modules about to act for a user: 409 `user_capability_failure` unless the capability is usable now. */
  /**
   * Resolves with the codes of the capabilities enabled for the user (what narrows their assets' features), from
   * the same one reading of their facts, so that a caller needing both reads them once.
   */
  async require(principal: Principal, code: CapabilityCode): Promise<ReadonlySet<CapabilityCode>> {
    const capabilities = await this.list(principal)
    const capability = capabilities.find((candidate) => candidate.code === code)!
    if (!isUsable(capability)) {
      throw new DomainError('user_capability_failure', 'The user has capability constraints', {
        details: { capability: { code, requirements: capability.requirements, restrictions: capability.restrictions } },
      })
    }
    return new Set(capabilities.filter((candidate) => candidate.enabled).map((candidate) => candidate.code))
  }

  private async factsOf(principal: Principal): Promise<CapabilityFacts> {
    const user = await this.sources.user(principal)
    const userId = principal.userId!
    const [kyc, acceptedTermsOfService] = await Promise.all([
      this.sources.kyc(principal.organizationId, userId, user.type),
      this.sources.acceptedTermsOfService(principal.organizationId, userId),
    ])
    const { countries } = this.sources
    const countryRefused = user.residence !== null && countries.closedToResidents({ country: user.residence.country })
    return {
      userType: user.type,
      residence: user.residence,
      residenceRefused: {
        country: countryRefused,
        subdivision: !countryRefused && user.residence !== null && countries.closedToResidents(user.residence),
      },
      phoneCountryRefused: kyc.phoneCountry !== null && !countries.supports(kyc.phoneCountry, 'phone'),
      kyc: kyc.statuses,
      acceptedTermsOfService,
    }
  }
}

/**
 * Adapts the modules that own the facts. KYC statuses come keyed by process code (`proof-of-address`) and are
 * keyed here by the overview's names (`proofOfAddress`). Business users have no KYC processes (KYB is separate
 * and not offered yet), so every process counts as still to be submitted for them.
 */
export function capabilitySourcesOf(deps: {
  users: { getMe(principal: Principal): Promise<{ type: 'individual' | 'business'; address?: { country: string; subdivision?: string } }> }
  kyc: { statusesFor(organizationId: string, userId: string): Promise<KycStatuses> }
  processKeys: Readonly<Record<string, string>>
  termsOfService: { acceptedTermsOfService(organizationId: string, userId: string): Promise<ReadonlySet<string>> }
  countries: CapabilitySources['countries']
}): CapabilitySources {
  return {
    async user(principal) {
      const user = await deps.users.getMe(principal)
      const country = user.address?.country
      return { type: user.type, residence: country ? { country, ...(user.address?.subdivision ? { subdivision: user.address.subdivision } : {}) } : null }
    },
    async kyc(organizationId, userId, userType) {
      if (userType === 'business') return { statuses: {}, phoneCountry: null }
      const statuses = await deps.kyc.statusesFor(organizationId, userId)
      const byKey: CapabilityFacts['kyc'] = {}
      for (const [code, { status }] of Object.entries(statuses)) {
        const key = deps.processKeys[code]
        if (key) (byKey as Record<string, ProcessStatus>)[key] = status
      }
      const phoneCountry = statuses.phone?.country
      return { statuses: byKey, phoneCountry: typeof phoneCountry === 'string' ? phoneCountry : null }
    },
    acceptedTermsOfService: (organizationId, userId) => deps.termsOfService.acceptedTermsOfService(organizationId, userId),
    countries: deps.countries,
  }
}
