import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { CountryDefinition, CountryRestrictionsFile } from './countries.schemas.ts'
import { applyRestrictions, checkCatalogue, CountriesService } from './countries.service.ts'

const catalogue: CountryDefinition[] = [
  {
    code: 'FR',
    name: 'France',
    asset: 'EUR',
    subdivisions: [
      { code: 'FR-75C', name: 'Paris', parent: 'FR-IDF' },
      { code: 'FR-IDF', name: 'Île-de-France' },
      { code: 'FR-NOR', name: 'Normandie' },
    ],
  },
  { code: 'US', name: 'United States of America', asset: 'USD', subdivisions: [{ code: 'US-CA', name: 'California' }, { code: 'US-NY', name: 'New York' }] },
  { code: 'VE', name: 'Venezuela', asset: 'VES', subdivisions: [{ code: 'VE-A', name: 'Distrito Capital' }] },
]
const none: CountryRestrictionsFile = { countries: [], subdivisions: [] }
const byCode = <T extends { code: string }>(items: readonly T[], code: string): T => items.find((item) => item.code === code)!

describe('country restrictions', () => {
  test('without a policy nothing is restricted', () => {
    for (const country of applyRestrictions(catalogue, none)) {
      assert.deepEqual(country.restrictions, [])
      for (const subdivision of country.subdivisions) assert.deepEqual(subdivision.restrictions, [])
    }
  })

  test('a country restricted for residence restricts each subdivision; other scopes stay with the country', () => {
    const countries = applyRestrictions(catalogue, {
      countries: [
        { code: 'VE', restrictions: [{ scope: 'residence' }, { scope: 'phone' }, { scope: 'citizenship' }, { scope: 'geolocation' }] },
        { code: 'US', restrictions: [{ scope: 'phone' }] },
      ],
      subdivisions: [],
    })
    const ve = byCode(countries, 'VE')
    assert.deepEqual(ve.restrictions, [{ scope: 'citizenship' }, { scope: 'geolocation' }, { scope: 'phone' }, { scope: 'residence' }])
    assert.deepEqual(ve.subdivisions, [{ code: 'VE-A', name: 'Distrito Capital', restrictions: [{ scope: 'residence' }] }])
    const us = byCode(countries, 'US')
    assert.deepEqual(us.restrictions, [{ scope: 'phone' }])
    assert.ok(us.subdivisions.every((s) => s.restrictions.length === 0))
  })

  test('a subdivision restricted for residence restricts the subdivisions within it, not its country', () => {
    const countries = applyRestrictions(catalogue, { countries: [], subdivisions: [{ code: 'FR-IDF', restrictions: [{ scope: 'residence' }] }] })
    const fr = byCode(countries, 'FR')
    assert.deepEqual(fr.restrictions, [])
    assert.deepEqual(byCode(fr.subdivisions, 'FR-IDF').restrictions, [{ scope: 'residence' }])
    assert.deepEqual(byCode(fr.subdivisions, 'FR-75C').restrictions, [{ scope: 'residence' }])
    assert.deepEqual(byCode(fr.subdivisions, 'FR-NOR').restrictions, [])
    const paris = applyRestrictions(catalogue, { countries: [], subdivisions: [{ code: 'FR-75C', restrictions: [{ scope: 'residence' }] }] })
    assert.deepEqual(byCode(byCode(paris, 'FR').subdivisions, 'FR-IDF').restrictions, [], 'a parent does not take its children’s restrictions')
  })

  test('the served shape carries no parent and no operator note', () => {
    const countries = applyRestrictions(catalogue, { countries: [{ code: 'US', restrictions: [{ scope: 'phone' }], note: 'why' }], subdivisions: [] })
    assert.deepEqual(Object.keys(byCode(countries, 'US')), ['code', 'name', 'asset', 'restrictions', 'subdivisions'])
    assert.deepEqual(Object.keys(byCode(byCode(countries, 'FR').subdivisions, 'FR-75C')), ['code', 'name', 'restrictions'])
  })

  test('unknown codes, repeated entries and repeated scopes are named', () => {
    assert.throws(
      () =>
        applyRestrictions(catalogue, {
          countries: [{ code: 'ZZ', restrictions: [{ scope: 'phone' }] }, { code: 'YY', restrictions: [{ scope: 'phone' }] }],
          subdivisions: [{ code: 'US-ZZ', restrictions: [{ scope: 'residence' }] }],
        }),
      (error: Error) => /country-restrictions\.json/.test(error.message) && /unknown country codes: ZZ, YY/.test(error.message) && /unknown subdivision codes: US-ZZ/.test(error.message),
    )
    assert.throws(
      () => applyRestrictions(catalogue, { countries: [{ code: 'US', restrictions: [{ scope: 'phone' }] }, { code: 'US', restrictions: [{ scope: 'residence' }] }], subdivisions: [] }),
      /US: listed twice/,
    )
    assert.throws(
      () => applyRestrictions(catalogue, { countries: [{ code: 'US', restrictions: [{ scope: 'phone' }, { scope: 'phone' }] }], subdivisions: [] }),
      /US: scope phone listed twice/,
    )
  })
})

describe('country catalogue checks', () => {
  test('the catalogue above is sound', () => {
    assert.doesNotThrow(() => checkCatalogue(catalogue))
  })

  test('duplicates, misplaced subdivisions, foreign parents and cycles are named', () => {
    const broken: CountryDefinition[] = [
      { code: 'US', name: 'A', asset: 'USD', subdivisions: [{ code: 'US-CA', name: 'C' }, { code: 'US-CA', name: 'C' }, { code: 'GB-MAN', name: 'M' }] },
      { code: 'US', name: 'B', asset: 'USD', subdivisions: [] },
      { code: 'FR', name: 'F', asset: 'EUR', subdivisions: [{ code: 'FR-01', name: 'x', parent: 'US-CA' }, { code: 'FR-02', name: 'y', parent: 'FR-03' }, { code: 'FR-03', name: 'z', parent: 'FR-02' }] },
    ]
    assert.throws(
      () => checkCatalogue(broken),
      (error: Error) =>
        [/US-CA: defined twice/, /GB-MAN: listed under US/, /US: defined twice/, /FR-01: its parent US-CA is not a subdivision of FR/, /FR-02: its parents form a cycle/].every((re) =>
          re.test(error.message),
        ),
    )
  })

  test('a residence is closed when its country or subdivision is restricted for residence', () => {
    const policy = { countries: [{ code: 'US', restrictions: [{ scope: 'phone' as const }] }], subdivisions: [{ code: 'FR-IDF', restrictions: [{ scope: 'residence' as const }] }] }
    const service = new CountriesService(catalogue, policy)
    assert.equal(service.closedToResidents({ country: 'FR', subdivision: 'FR-IDF' }), true)
    assert.equal(service.closedToResidents({ country: 'FR' }), false)
    assert.equal(service.closedToResidents({ country: 'US' }), false, 'a phone restriction does not close residence')
  })

  test('the service looks countries up by exact code and serves bodies serialized once', () => {
    const service = new CountriesService(catalogue, none)
    assert.equal((JSON.parse(service.getBody('US').toString()) as { country: { name: string } }).country.name, 'United States of America')
    assert.throws(() => service.getBody('us'), { code: 'entity_not_found' })
    assert.equal(service.getBody('FR'), service.getBody('FR'), 'the same bytes every time')
    assert.equal((JSON.parse(service.listBody().toString()) as { countries: unknown[] }).countries.length, catalogue.length)
  })
})
