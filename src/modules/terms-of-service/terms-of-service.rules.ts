import { DomainError } from '../../lib/errors.ts'
import { ReferenceDataError } from '../reference/index.ts'
import type { ListTermsOfServiceQuery, TermsOfServiceDefinition } from './terms-of-service.schemas.ts'

/** A timestamp of a day that exists: the date parser would move 31 February to March. */
function isRealTimestamp(value: string): boolean {
  const time = Date.parse(value)
  return !Number.isNaN(time) && new Date(time).toISOString().slice(0, 10) === value.slice(0, 10)
}

/** Each code once, and of the type its code names (`general-…` terms are `general`). */
export function checkCatalogue(definitions: readonly TermsOfServiceDefinition[]): void {
  const problems: string[] = []
  const seen = new Set<string>()
  for (const terms of definitions) {
    if (seen.has(terms.code)) problems.push(`${terms.code}: defined twice`)
    seen.add(terms.code)
    if (!terms.code.startsWith(`${terms.type}-`)) problems.push(`${terms.code}: its type must be the one its code starts with (not ${terms.type})`)
    if (!isRealTimestamp(terms.modifiedAt)) problems.push(`${terms.code}: modifiedAt ${terms.modifiedAt} is not a date`)
    if (terms.url !== undefined && !URL.canParse(terms.url)) problems.push(`${terms.code}: url ${terms.url} is not a URL`)
  }
  if (problems.length > 0) {
    throw new ReferenceDataError(`Invalid terms of service (terms-of-service.json):\n${problems.map((p) => `  - ${p}`).join('\n')}`)
  }
}

/** The list filters: omitted `countries` or `userTypes` mean every country or type. */
export function matchesFilters(terms: TermsOfServiceDefinition, filters: ListTermsOfServiceQuery): boolean {
  if (filters.type !== undefined && terms.type !== filters.type) return false
  if (filters.country !== undefined && terms.countries !== undefined && !terms.countries.includes(filters.country)) return false
  if (filters.userType !== undefined && terms.userTypes !== undefined && !terms.userTypes.includes(filters.userType)) return false
  return true
}

export interface Acceptor {
  type: 'individual' | 'business'
  /** Country of residence, when known. */
  country: string | undefined
}

const notApplicable = (message: string) => new DomainError('operation_not_allowed', message, { details: { reasons: ['terms-of-service-not-applicable'] } })

/** Why the user may not accept the terms, or null when they may. */
export function checkApplicable(terms: TermsOfServiceDefinition, user: Acceptor): DomainError | null {
  if (terms.userTypes !== undefined && !terms.userTypes.includes(user.type)) {
    return notApplicable(`The terms of service cannot be accepted by users of type '${user.type}'`)
  }
  if (terms.countries !== undefined && (user.country === undefined || !terms.countries.includes(user.country))) {
    return notApplicable('The terms of service cannot be accepted because they do not apply to the user country of residence')
  }
  return null
}

/**
 * The general terms a new user must accept: those naming their country of residence (the entity that serves that
 * country), else those that name no country; in both cases only terms for their type of user.
 */
export function generalTermsFor(catalogue: readonly TermsOfServiceDefinition[], user: Acceptor): TermsOfServiceDefinition[] {
  const general = catalogue.filter((terms) => terms.type === 'general' && (terms.userTypes === undefined || terms.userTypes.includes(user.type)))
  const national = general.filter((terms) => terms.countries !== undefined && user.country !== undefined && terms.countries.includes(user.country))
  return national.length > 0 ? national : general.filter((terms) => terms.countries === undefined)
}

/** Why a new user may not be created with the general terms `code`, or null when those are the ones to accept. */
export function checkGeneralTerms(catalogue: readonly TermsOfServiceDefinition[], code: string, user: Acceptor): DomainError | null {
  const expected = generalTermsFor(catalogue, user).map((terms) => terms.code)
  if (expected.includes(code as TermsOfServiceDefinition['code'])) return null
  return new DomainError('terms_of_service_mismatch', 'The terms of service passed in the request does not match the one that should have been accepted', {
    details: { context: 'body', property: 'termsOfService', allowedValues: expected },
  })
}
