import { notFound } from '../../lib/errors.ts'
import {
  COUNTRY_RESTRICTION_SCOPES,
  type Country,
  type CountryDefinition,
  type CountryRestrictionScope,
  type CountryRestrictionsFile,
  type Subdivision,
  type SubdivisionRestrictionScope,
} from './countries.schemas.ts'
import { ReferenceDataError } from './reference-data.ts'

function problemsError(title: string, problems: readonly string[]): ReferenceDataError {
  return new ReferenceDataError(`${title}:\n${problems.map((p) => `  - ${p}`).join('\n')}`)
}

/** Codes, subdivisions and parents that the rest relies on: each code once, each parent in its country. */
export function checkCatalogue(definitions: readonly CountryDefinition[]): void {
  const problems: string[] = []
  const countries = new Set<string>()
  for (const country of definitions) {
    if (countries.has(country.code)) problems.push(`${country.code}: defined twice`)
    countries.add(country.code)
    const codes = new Set<string>()
    for (const subdivision of country.subdivisions) {
      if (!subdivision.code.startsWith(`${country.code}-`)) problems.push(`${subdivision.code}: listed under ${country.code}`)
      if (codes.has(subdivision.code)) problems.push(`${subdivision.code}: defined twice`)
      codes.add(subdivision.code)
    }
    const parents = new Map(country.subdivisions.map((s) => [s.code, s.parent]))
    for (const subdivision of country.subdivisions) {
      if (subdivision.parent === undefined) continue
      if (!parents.has(subdivision.parent)) {
        problems.push(`${subdivision.code}: its parent ${subdivision.parent} is not a subdivision of ${country.code}`)
        continue
      }
      const seen = new Set([subdivision.code])
      for (let parent: string | undefined = subdivision.parent; parent !== undefined; parent = parents.get(parent)) {
        if (seen.has(parent)) {
          problems.push(`${subdivision.code}: its parents form a cycle`)
          break
        }
        seen.add(parent)
      }
    }
  }
  if (problems.length > 0) throw problemsError('Invalid countries (countries.json)', problems)
}

/**
 * The countries as served: each with the operator's restrictions. A country closed to residents closes each of
 * its subdivisions to them, and a subdivision closed to residents closes the subdivisions within it.
 */
export function applyRestrictions(definitions: readonly CountryDefinition[], policy: CountryRestrictionsFile): Country[] {
  const problems: string[] = []
  const countryScopes = new Map<string, Set<CountryRestrictionScope>>()
  const subdivisionScopes = new Map<string, Set<SubdivisionRestrictionScope>>()
  const knownCountries = new Set(definitions.map((c) => c.code))
  const knownSubdivisions = new Set(definitions.flatMap((c) => c.subdivisions.map((s) => s.code)))

  const collect = <S extends string>(entries: readonly { code: string; restrictions: readonly { scope: S }[] }[], target: Map<string, Set<S>>) => {
    for (const entry of entries) {
      if (target.has(entry.code)) problems.push(`${entry.code}: listed twice`)
      const scopes = target.get(entry.code) ?? new Set<S>()
      for (const { scope } of entry.restrictions) {
        if (scopes.has(scope)) problems.push(`${entry.code}: scope ${scope} listed twice`)
        scopes.add(scope)
      }
      target.set(entry.code, scopes)
    }
  }
  collect(policy.countries, countryScopes)
  collect(policy.subdivisions, subdivisionScopes)
  const unknownCountries = [...countryScopes.keys()].filter((code) => !knownCountries.has(code))
  if (unknownCountries.length > 0) problems.push(`unknown country codes: ${unknownCountries.join(', ')}`)
  const unknownSubdivisions = [...subdivisionScopes.keys()].filter((code) => !knownSubdivisions.has(code))
  if (unknownSubdivisions.length > 0) problems.push(`unknown subdivision codes: ${unknownSubdivisions.join(', ')}`)
  if (problems.length > 0) throw problemsError('Invalid country restrictions (country-restrictions.json)', problems)

  return definitions.map((definition) => {
    const scopes = countryScopes.get(definition.code) ?? new Set()
    const parents = new Map(definition.subdivisions.map((s) => [s.code, s.parent]))
    const closedToResidents = (code: string): boolean => {
      for (let current: string | undefined = code; current !== undefined; current = parents.get(current)) {
        if (subdivisionScopes.get(current)?.has('residence')) return true
      }
      return scopes.has('residence')
    }
    const subdivisions: Subdivision[] = definition.subdivisions.map(({ code, name }) => ({
      code,
      name,
      restrictions: closedToResidents(code) ? [{ scope: 'residence' }] : [],
    }))
    return {
      code: definition.code,
      name: definition.name,
      asset: definition.asset,
      restrictions: COUNTRY_RESTRICTION_SCOPES.filter((scope) => scopes.has(scope)).map((scope) => ({ scope })),
      subdivisions,
    }
  })
}

/** The country catalogue with the operator's restrictions, built once at start: requests only look it up. */
export class CountriesService {
  /**
   * The response bodies, serialized once and encoded as UTF-8 bytes: a country never changes while the process runs,
   * and a body sent as bytes is not encoded again for every answer (the largest country's is 13 kB).
   */
  private readonly listJson: Buffer
  private readonly jsonByCode: ReadonlyMap<string, Buffer>
  /** Countries and subdivisions whose residents may not be served. */
  private readonly closedResidences: ReadonlySet<string>
  private readonly scopesByCountry: ReadonlyMap<string, ReadonlySet<string>>
  private readonly subdivisionCodes: ReadonlySet<string>
  private readonly currencies: ReadonlyMap<string, string>

  constructor(definitions: readonly CountryDefinition[], policy: CountryRestrictionsFile) {
    checkCatalogue(definitions)
    const countries: Country[] = applyRestrictions(definitions, policy)
    this.listJson = Buffer.from(JSON.stringify({ countries }))
    this.jsonByCode = new Map(countries.map((country) => [country.code, Buffer.from(JSON.stringify({ country }))]))
    const closed = (entry: { restrictions: readonly { scope: string }[] }) => entry.restrictions.some((r) => r.scope === 'residence')
    this.scopesByCountry = new Map(countries.map((c) => [c.code, new Set(c.restrictions.map((r) => r.scope))]))
    this.subdivisionCodes = new Set(countries.flatMap((c) => c.subdivisions.map((s) => s.code)))
    this.currencies = new Map(countries.map((c) => [c.code, c.asset]))
    this.closedResidences = new Set([
      ...countries.filter(closed).map((c) => c.code),
      ...countries.flatMap((c) => c.subdivisions.filter(closed).map((s) => s.code)),
    ])
  }

  /** Whether people living there may not be served, by the restrictions this deployment applies. */
  closedToResidents(residence: { country: string; subdivision?: string }): boolean {
    return this.closedResidences.has(residence.country) || (residence.subdivision !== undefined && this.closedResidences.has(residence.subdivision))
  }

  /** Whether the country is in the catalogue and, for `scope`, not restricted (e.g. `phone`, `citizenship`). */
  supports(code: string, scope?: CountryRestrictionScope): boolean {
    const scopes = this.scopesByCountry.get(code)
    return scopes !== undefined && (scope === undefined || !scopes.has(scope))
  }

  /** The asset code of the country's currency; undefined for a country not in the catalogue. */
  currencyOf(code: string): string | undefined {
    return this.currencies.get(code)
  }

  hasSubdivision(code: string): boolean {
    return this.subdivisionCodes.has(code)
  }

  /** `{"countries": […]}`, ready to send. */
  listBody(): Buffer {
    return this.listJson
  }

  /** `{"country": …}`, ready to send; 404 for a code not in the catalogue. */
  getBody(code: string): Buffer {
    const body = this.jsonByCode.get(code)
    if (body === undefined) throw notFound('country')
    return body
  }
}
