import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { bearer, ENGINES, startApp, useApp } from './helpers.ts'
import { CountriesFile, CountryRestrictionsFile } from '../src/modules/reference/countries.schemas.ts'
import { CountriesService } from '../src/modules/reference/countries.service.ts'
import { loadReferenceData } from '../src/modules/reference/reference-data.ts'

interface Restriction {
  scope: string
}
interface Country {
  code: string
  name: string
  asset: string
  restrictions: Restriction[]
  subdivisions: { code: string; name: string; restrictions: Restriction[] }[]
}

const ALL_SCOPES = [{ scope: 'citizenship' }, { scope: 'geolocation' }, { scope: 'phone' }, { scope: 'residence' }]
const RESIDENCE = [{ scope: 'residence' }]
const shipped = JSON.parse(fs.readFileSync(path.resolve(import.meta.dirname, '../reference-data/countries.json'), 'utf8')) as { countries: { code: string }[] }

for (const engine of ENGINES) {
  describe(`countries [${engine}]`, () => {
    const suite = useApp(engine)

    const get = (url: string, headers: Record<string, string> = bearer(suite.token)) => suite.ctx.request({ method: 'GET', url, headers })

    test('lists every ISO 3166-1 country with its name, currency and current subdivisions', async () => {
      const response = await get('/core/countries')
      assert.equal(response.status, 200)
      const { countries } = response.json<{ countries: Country[] }>()
      assert.equal(countries.length, 249)
      assert.deepEqual(countries.map((c) => c.code), shipped.countries.map((c) => c.code))
      assert.deepEqual(countries.map((c) => c.code), [...new Set(countries.map((c) => c.code))].sort(), 'sorted, each once')
      for (const country of countries) {
        assert.match(country.code, /^[A-Z]{2}$/)
        assert.ok(country.name.length > 0, country.code)
        assert.match(country.asset, /^[A-Z]{3}$/, country.code)
        for (const subdivision of country.subdivisions) assert.ok(subdivision.code.startsWith(`${country.code}-`), subdivision.code)
      }
      assert.ok(!countries.some((c) => c.code === 'XK'), 'Kosovo has no ISO 3166-1 code')
      const byCode = new Map(countries.map((c) => [c.code, c]))
      const subdivisionCodes = (code: string) => byCode.get(code)!.subdivisions.map((s) => s.code)
      for (const code of ['GB-MAN', 'GB-LND', 'GB-BAS', 'GB-ENG', 'GB-SCT']) assert.ok(subdivisionCodes('GB').includes(code), code)
      for (const code of ['US-CA', 'US-NY', 'US-DC']) assert.ok(subdivisionCodes('US').includes(code), code)
      // Current codes, not withdrawn ones: France's regions of 2016, Northamptonshire split in 2021, Indian union territories merged in 2020.
      assert.ok(subdivisionCodes('FR').includes('FR-NAQ') && !subdivisionCodes('FR').includes('FR-B'), 'France')
      assert.ok(subdivisionCodes('GB').includes('GB-NNH') && !subdivisionCodes('GB').includes('GB-NTH'), 'Northamptonshire')
      assert.ok(subdivisionCodes('IN').includes('IN-DH') && !subdivisionCodes('IN').includes('IN-DN'), 'India')
      assert.deepEqual(
        ['GB', 'US', 'DE', 'JP', 'CH', 'HR', 'BG', 'SV', 'CW', 'VE', 'AQ'].map((code) => byCode.get(code)!.asset),
        ['GBP', 'USD', 'EUR', 'JPY', 'CHF', 'EUR', 'EUR', 'USD', 'XCG', 'VES', 'USD'],
      )
    })

    test('gets one country by its alpha-2 code', async () => {
      const response = await get('/core/countries/GB')
      assert.equal(response.status, 200)
      const { country } = response.json<{ country: Country }>()
      assert.equal(country.code, 'GB')
      assert.equal(country.name, 'United Kingdom')
      assert.equal(country.asset, 'GBP')
      assert.deepEqual(country.restrictions, [])
      assert.deepEqual(
        country.subdivisions.find((s) => s.code === 'GB-LND'),
        { code: 'GB-LND', name: 'London, City of', restrictions: [] },
      )
      const list = (await get('/core/countries')).json<{ countries: Country[] }>().countries
      assert.deepEqual(country, list.find((c) => c.code === 'GB'))
      assert.equal((await get('/core/countries/US')).json<{ country: Country }>().country.name, 'United States of America')
    })

    test('codes are upper-case alpha-2: others are 400, unknown ones 404', async () => {
      for (const code of ['gb', 'Gb', 'GBR', 'G', 'G1', '826', 'GB-MAN']) {
        const response = await get(`/core/countries/${code}`)
        assert.equal(response.status, 400, code)
        assert.equal(response.json().code, 'request_invalid', code)
      }
      for (const code of ['ZZ', 'XK', 'AN']) {
        const response = await get(`/core/countries/${code}`)
        assert.equal(response.status, 404, code)
        assert.deepEqual(response.json(), { code: 'entity_not_found', message: 'The country cannot be found', details: { entity: 'country' } })
      }
    })

    test('serves the configured restrictions: sanctioned countries and occupied regions', async () => {
      for (const code of ['CU', 'IR', 'KP', 'SY']) {
        const { country } = (await get(`/core/countries/${code}`)).json<{ country: Country }>()
        assert.deepEqual(country.restrictions, ALL_SCOPES, code)
        assert.ok(country.subdivisions.length > 0 && country.subdivisions.every((s) => s.restrictions.length === 1 && s.restrictions[0]!.scope === 'residence'), code)
      }
      const { country: ukraine } = (await get('/core/countries/UA')).json<{ country: Country }>()
      assert.deepEqual(ukraine.restrictions, [])
      const restricted = ukraine.subdivisions.filter((s) => s.restrictions.length > 0)
      assert.deepEqual(restricted.map((s) => s.code), ['UA-09', 'UA-14', 'UA-40', 'UA-43'])
      assert.ok(restricted.every((s) => JSON.stringify(s.restrictions) === JSON.stringify(RESIDENCE)))
      const { countries } = (await get('/core/countries')).json<{ countries: Country[] }>()
      assert.deepEqual(countries.filter((c) => c.restrictions.length > 0).map((c) => c.code), ['CU', 'IR', 'KP', 'SY'])
    })

    test('users may read countries; a request without a suite.token may not', async () => {
      const user = await suite.ctx.createUser(suite.token)
      assert.equal((await get('/core/countries', bearer(suite.token, user.id))).status, 200)
      assert.equal((await get('/core/countries/GB', bearer(suite.token, user.id))).status, 200)
      assert.equal((await get('/core/countries', {})).status, 401)
      assert.equal((await get('/core/countries/GB', {})).status, 401)
    })
  })
}

describe('countries from operator files', () => {
  let dir: string
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-countries-'))
  })
  after(() => fs.rmSync(dir, { recursive: true, force: true }))
  const write = (file: string, content: unknown) => fs.writeFileSync(path.join(dir, file), typeof content === 'string' ? content : JSON.stringify(content))
  const clear = () => {
    for (const file of fs.readdirSync(dir)) fs.rmSync(path.join(dir, file))
  }

  test('an operator restrictions file replaces the shipped policy', async () => {
    clear()
    write('country-restrictions.json', {
      countries: [{ code: 'US', restrictions: [{ scope: 'residence' }, { scope: 'phone' }] }],
      subdivisions: [{ code: 'GB-ENG', restrictions: [{ scope: 'residence' }] }, { code: 'FR-IDF', restrictions: [{ scope: 'residence' }] }],
    })
    const ctx = await startApp('pglite', { REFERENCE_DATA_DIR: dir })
    try {
      const token = await ctx.token()
      const country = async (code: string) => (await ctx.request({ method: 'GET', url: `/core/countries/${code}`, headers: bearer(token) })).json<{ country: Country }>().country
      assert.deepEqual((await country('KP')).restrictions, [], 'the shipped policy is gone')
      const us = await country('US')
      assert.deepEqual(us.restrictions, [{ scope: 'phone' }, { scope: 'residence' }])
      assert.ok(us.subdivisions.every((s) => s.restrictions.length === 1))
      const gb = await country('GB')
      assert.deepEqual(gb.restrictions, [])
      assert.deepEqual(gb.subdivisions.filter((s) => s.restrictions.length > 0).map((s) => s.code), ['GB-ENG'])
      const fr = await country('FR')
      const paris = fr.subdivisions.find((s) => s.code === 'FR-75C')!
      assert.deepEqual(paris.restrictions, RESIDENCE, 'a subdivision within a restricted one is restricted')
      assert.deepEqual(fr.subdivisions.find((s) => s.code === 'FR-NOR')!.restrictions, [])
    } finally {
      await ctx.close()
    }
  })

  test('an operator catalogue replaces the shipped countries', async () => {
    clear()
    write('countries.json', { countries: [{ code: 'XK', name: 'Kosovo', asset: 'EUR', subdivisions: [] }] })
    write('country-restrictions.json', { countries: [], subdivisions: [] })
    const ctx = await startApp('pglite', { REFERENCE_DATA_DIR: dir })
    try {
      const token = await ctx.token()
      const response = await ctx.request({ method: 'GET', url: '/core/countries', headers: bearer(token) })
      assert.deepEqual(response.json(), { countries: [{ code: 'XK', name: 'Kosovo', asset: 'EUR', restrictions: [], subdivisions: [] }] })
    } finally {
      await ctx.close()
    }
  })

  test('a broken file stops the start, naming the file or the codes', async () => {
    clear()
    write('country-restrictions.json', { countries: [{ code: 'ZZ', restrictions: [{ scope: 'phone' }] }, { code: 'QQ', restrictions: [{ scope: 'phone' }] }], subdivisions: [] })
    await assert.rejects(startApp('pglite', { REFERENCE_DATA_DIR: dir }), /unknown country codes: ZZ, QQ/)
    write('country-restrictions.json', { countries: [{ code: 'KP', restrictions: [{ scope: 'travel' }] }], subdivisions: [] })
    await assert.rejects(startApp('pglite', { REFERENCE_DATA_DIR: dir }), /country-restrictions\.json is invalid/)
  })

  test('each kind of mistake is caught and named', () => {
    // What buildApp does with the files, without starting a server for each case.
    const load = () =>
      new CountriesService(
        loadReferenceData<CountriesFile>('countries.json', CountriesFile, dir).countries,
        loadReferenceData<CountryRestrictionsFile>('country-restrictions.json', CountryRestrictionsFile, dir),
      )
    const cases: [string, unknown, RegExp][] = [
      ['country-restrictions.json', { countries: [], subdivisions: [{ code: 'UA-99', restrictions: [{ scope: 'residence' }] }] }, /unknown subdivision codes: UA-99/],
      ['country-restrictions.json', { countries: [], subdivisions: [{ code: 'UA-43', restrictions: [{ scope: 'phone' }] }] }, /country-restrictions\.json is invalid/],
      ['country-restrictions.json', { countries: [{ code: 'kp', restrictions: [{ scope: 'phone' }] }], subdivisions: [] }, /country-restrictions\.json is invalid/],
      ['country-restrictions.json', { countries: [{ code: 'KP', restrictions: [] }], subdivisions: [] }, /country-restrictions\.json is invalid/],
      ['country-restrictions.json', { countries: [{ code: 'KP', restrictions: [{ scope: 'phone' }] }, { code: 'KP', restrictions: [{ scope: 'residence' }] }], subdivisions: [] }, /KP: listed twice/],
      ['country-restrictions.json', '{ "countries": [', /country-restrictions\.json cannot be read/],
      ['countries.json', { countries: [{ code: 'GB', name: 'United Kingdom', asset: 'pounds', subdivisions: [] }] }, /countries\.json is invalid/],
      ['countries.json', { countries: [{ code: 'GB', name: 'United Kingdom', asset: 'GBP', subdivisions: [{ code: 'US-CA', name: 'California' }] }] }, /US-CA: listed under GB/],
    ]
    for (const [file, content, error] of cases) {
      clear()
      write(file, content)
      assert.throws(load, error, String(error))
    }
    // An operator catalogue without a country the shipped policy restricts needs a policy of its own.
    clear()
    write('countries.json', { countries: [{ code: 'GB', name: 'United Kingdom', asset: 'GBP', subdivisions: [] }] })
    assert.throws(load, /unknown country codes: CU, IR, KP, SY/)
    clear()
    assert.doesNotThrow(load, 'the shipped files')
  })
})
