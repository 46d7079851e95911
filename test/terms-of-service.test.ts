import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, describe, test } from 'node:test'
import { eventsAbout } from '../src/modules/events/outbox.ts'
import { loadReferenceData, ReferenceDataError } from '../src/modules/reference/reference-data.ts'
import { TermsOfServiceFile } from '../src/modules/terms-of-service/terms-of-service.schemas.ts'
import { TermsOfServiceService } from '../src/modules/terms-of-service/terms-of-service.service.ts'
import { bearer, ENGINES, individualUser, useApp, USER_IP, type TestResponse } from './helpers.ts'

interface Terms {
  code: string
  type: string
  countries?: string[]
  userTypes?: string[]
  modifiedAt: string
  url?: string
  acceptedAt?: string
}

const VIBAN = 'unique-account-number-viban'
const ALL_CODES = ['general-us-hq', 'general-gb-fca', 'general-pt-bop', 'general-lt-fcs', 'general-bs-scb', VIBAN]

const businessUser = (overrides: Record<string, unknown> = {}) => ({
  type: 'business',
  email: `biz-${Math.random().toString(36).slice(2)}@example.com`,
  country: 'GB',
  legalEntityType: 'private-limited-company',
  termsOfService: 'general-gb-fca',
  ...overrides,
})

function assertError(response: TestResponse, status: number, code: string) {
  assert.equal(response.status, status, response.body)
  assert.equal(response.json().code, code, response.body)
}

for (const engine of ENGINES) {
  describe(`terms of service [${engine}]`, () => {
    const suite = useApp(engine)

    const list = (query = '', userId?: string, token = suite.token) =>
      suite.ctx.request({ method: 'GET', url: `/core/terms-of-service${query}`, headers: bearer(token, userId) })
    const get = (code: string, userId?: string) => suite.ctx.request({ method: 'GET', url: `/core/terms-of-service/${code}`, headers: bearer(suite.token, userId) })
    const accept = (code: string, userId: string, headers: Record<string, string> = { 'x-service-user-ip': USER_IP }, token = suite.token) =>
      suite.ctx.request({ method: 'POST', url: `/core/terms-of-service/${code}/accept`, headers: { ...bearer(token, userId), ...headers } })
    const codes = (response: TestResponse) => response.json<{ termsOfService: Terms[] }>().termsOfService.map((t) => t.code)
    const acceptanceRows = (userId: string) =>
      suite.ctx.database.db.selectFrom('terms_of_service_acceptances').selectAll().where('user_id', '=', userId).execute()

    test('lists the catalogue in the reference shape; without a user, nothing is accepted', async () => {
      const response = await list()
      assert.equal(response.status, 200)
      const terms = response.json<{ termsOfService: Terms[] }>().termsOfService
      assert.deepEqual(terms.map((t) => t.code), ALL_CODES)
      assert.deepEqual(terms.find((t) => t.code === VIBAN), {
        code: VIBAN,
        type: 'unique-account-number',
        countries: ['GB', 'PT'],
        userTypes: ['individual'],
        modifiedAt: '2024-12-01T00:00:00.000Z',
      })
      assert.deepEqual(terms.find((t) => t.code === 'general-bs-scb'), { code: 'general-bs-scb', type: 'general', modifiedAt: '2025-02-01T00:00:00.000Z' })
      assert.ok(terms.every((t) => t.acceptedAt === undefined))
    })

    test('filters by type, country of residence and user type; terms without a list apply to all', async () => {
      assert.deepEqual(codes(await list('?type=general')), ALL_CODES.slice(0, 5))
      assert.deepEqual(codes(await list('?type=unique-account-number')), [VIBAN])
      assert.deepEqual(codes(await list('?country=GB')), ['general-gb-fca', 'general-bs-scb', VIBAN])
      assert.deepEqual(codes(await list('?country=FR&type=general')), ['general-lt-fcs', 'general-bs-scb'])
      assert.deepEqual(codes(await list('?userType=business&country=PT')), ['general-pt-bop', 'general-bs-scb'])
      for (const query of ['?type=special', '?country=gb', '?country=GBR', '?userType=robot']) {
        const response = await list(query)
        assertError(response, 400, 'request_invalid')
        assert.equal(response.json<{ details: { context: string } }>().details.context, 'query')
      }
    })

    test('gets terms by code; an unknown code is 404 terms-of-service', async () => {
      for (const code of ALL_CODES) {
        const response = await get(code)
        assert.equal(response.status, 200)
        assert.equal(response.json<{ termsOfService: Terms }>().termsOfService.code, code)
      }
      const unknown = await get('general-mars')
      assertError(unknown, 404, 'entity_not_found')
      assert.deepEqual(unknown.json<{ details: unknown }>().details, { code: 'general-mars', entity: 'terms-of-service' })
      assertError(await get('x'.repeat(65)), 400, 'request_invalid')
    })

    test('a new user has accepted the general terms given at creation, at the creation time', async () => {
      const user = await suite.ctx.createUser(suite.token, individualUser({ termsOfService: 'general-gb-fca' }))
      const terms = (await list('', user.id)).json<{ termsOfService: Terms[] }>().termsOfService
      assert.deepEqual(terms.filter((t) => t.acceptedAt !== undefined).map((t) => t.code), ['general-gb-fca'])
      assert.equal(terms.find((t) => t.code === 'general-gb-fca')!.acceptedAt, user.createdAt)
      assert.equal((await get('general-gb-fca', user.id)).json<{ termsOfService: Terms }>().termsOfService.acceptedAt, user.createdAt)
      assert.equal((await get('general-gb-fca')).json<{ termsOfService: Terms }>().termsOfService.acceptedAt, undefined, 'not for the client itself')
      assert.deepEqual(await suite.ctx.services.termsOfService.acceptedTermsOfService(suite.ctx.client.organizationId, user.id), new Set(['general-gb-fca']))
      const [row] = await acceptanceRows(user.id)
      assert.equal(row?.context.ip, USER_IP, 'the end-user context of the creation is kept')

      const business = await suite.ctx.createUser(suite.token, businessUser({ country: 'US', subdivision: 'US-CA', termsOfService: 'general-us-hq' }))
      assert.deepEqual(await suite.ctx.services.termsOfService.acceptedTermsOfService(suite.ctx.client.organizationId, business.id), new Set(['general-us-hq']))
    })

    test('general terms must be those of the residence: the country\'s own, else those for everywhere (reference terms_of_service_mismatch)', async () => {
      const create = (body: Record<string, unknown>) => suite.ctx.request({ method: 'POST', url: '/core/users', headers: { ...bearer(suite.token), 'x-service-user-ip': USER_IP }, payload: body })
      const before = await suite.ctx.database.db.selectFrom('users').select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow()
      for (const [body, allowed] of [
        [individualUser({ termsOfService: 'general-bs-scb' }), ['general-gb-fca']],
        [individualUser({ termsOfService: 'general-us-hq' }), ['general-gb-fca']],
        [individualUser({ address: { country: 'FR' }, termsOfService: 'general-pt-bop' }), ['general-lt-fcs']],
        [individualUser({ address: { country: 'JP' }, termsOfService: 'general-gb-fca' }), ['general-bs-scb']],
        [{ type: 'individual', email: `legacy-${Date.now()}@example.com`, termsOfService: 'general-gb-fca', citizenshipCountry: 'US', country: 'US' }, ['general-us-hq']],
        [businessUser({ country: 'PT', termsOfService: 'general-lt-fcs' }), ['general-pt-bop']],
      ] as const) {
        const response = await create(body as Record<string, unknown>)
        assertError(response, 409, 'terms_of_service_mismatch')
        assert.deepEqual(response.json(), {
          code: 'terms_of_service_mismatch',
          message: 'The terms of service passed in the request does not match the one that should have been accepted',
          details: { context: 'body', property: 'termsOfService', allowedValues: allowed },
        })
      }
      const after_ = await suite.ctx.database.db.selectFrom('users').select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow()
      assert.equal(Number(after_.n), Number(before.n), 'no user was created')
      const japanese = await suite.ctx.createUser(suite.token, individualUser({ address: { country: 'JP' }, primaryCitizenship: 'JP', termsOfService: 'general-bs-scb' }))
      assert.deepEqual(await suite.ctx.services.termsOfService.acceptedTermsOfService(suite.ctx.client.organizationId, japanese.id), new Set(['general-bs-scb']))
    })

    test('a refused user creation records no acceptance', async () => {
      const body = individualUser()
      await suite.ctx.createUser(suite.token, body)
      const before = await suite.ctx.database.db.selectFrom('terms_of_service_acceptances').select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow()
      const again = await suite.ctx.request({ method: 'POST', url: '/core/users', headers: { ...bearer(suite.token), 'x-service-user-ip': USER_IP }, payload: body })
      assertError(again, 409, 'email_already_exists')
      const after_ = await suite.ctx.database.db.selectFrom('terms_of_service_acceptances').select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow()
      assert.equal(Number(after_.n), Number(before.n))
    })

    test('an individual resident where the terms apply accepts them once, with one event', async () => {
      const user = await suite.ctx.createUser(suite.token, individualUser({ address: { country: 'PT' }, termsOfService: 'general-pt-bop' }))
      const before = Date.now()
      const response = await accept(VIBAN, user.id)
      assert.equal(response.status, 201, response.body)
      const accepted = response.json<{ termsOfService: Terms }>().termsOfService
      assert.equal(accepted.code, VIBAN)
      assert.ok(Date.parse(accepted.acceptedAt!) >= before - 5)
      assert.equal((await get(VIBAN, user.id)).json<{ termsOfService: Terms }>().termsOfService.acceptedAt, accepted.acceptedAt)
      assert.deepEqual(
        await suite.ctx.services.termsOfService.acceptedTermsOfService(suite.ctx.client.organizationId, user.id),
        new Set(['general-pt-bop', VIBAN]),
      )
      const events = (await eventsAbout(suite.ctx.database.db, suite.ctx.client.organizationId, { type: 'terms-of-service', id: VIBAN })).filter((e) => e.user_id === user.id)
      assert.equal(events.length, 1)
      assert.equal(events[0]!.type, 'core.terms-of-service.accepted')
      assert.deepEqual(events[0]!.data, { termsOfService: { code: VIBAN, type: 'unique-account-number', modifiedAt: '2024-12-01T00:00:00.000Z', acceptedAt: accepted.acceptedAt } })

      const again = await accept(VIBAN, user.id)
      assertError(again, 409, 'operation_not_allowed')
      assert.deepEqual(again.json<{ details: unknown }>().details, { reasons: ['terms-of-service-already-accepted'] })
      assert.equal((await get(VIBAN, user.id)).json<{ termsOfService: Terms }>().termsOfService.acceptedAt, accepted.acceptedAt, 'the first acceptance stays')
    })

    test('terms that do not apply to the user type or residence are 409 not applicable and record nothing', async () => {
      const business = await suite.ctx.createUser(suite.token, businessUser())
      const byType = await accept(VIBAN, business.id)
      assertError(byType, 409, 'operation_not_allowed')
      assert.deepEqual(byType.json<{ details: unknown }>().details, { reasons: ['terms-of-service-not-applicable'] })
      assert.match(byType.json<{ message: string }>().message, /type 'business'/)

      const american = await suite.ctx.createUser(suite.token, individualUser({ address: { country: 'US', subdivision: 'US-CA' }, termsOfService: 'general-us-hq' }))
      const byCountry = await accept(VIBAN, american.id)
      assertError(byCountry, 409, 'operation_not_allowed')
      assert.match(byCountry.json<{ message: string }>().message, /country of residence/)
      for (const userId of [business.id, american.id]) assert.equal((await acceptanceRows(userId)).length, 1, 'only the creation acceptance')
    })

    test('accepting needs the end user IP; general terms and unknown codes are 400; nothing is recorded', async () => {
      const user = await suite.ctx.createUser(suite.token)
      const noIp = await accept(VIBAN, user.id, {})
      assertError(noIp, 409, 'operation_not_allowed')
      assert.deepEqual(noIp.json<{ details: unknown }>().details, { reasons: ['missing-user-ip-header'] })
      for (const code of ['general-gb-fca', 'general-mars']) {
        const response = await accept(code, user.id)
        assertError(response, 400, 'request_invalid')
        assert.equal(response.json<{ details: { context: string } }>().details.context, 'params')
      }
      const url = `/core/terms-of-service/${VIBAN}/accept`
      const headers = { ...bearer(suite.token, user.id), 'x-service-user-ip': USER_IP }
      const huge = await suite.ctx.request({ method: 'POST', url, headers: { ...headers, 'content-type': 'application/json' }, payload: JSON.stringify({ note: 'x'.repeat(2_000_000) }) })
      assertError(huge, 413, 'content_too_large')
      const text = await suite.ctx.request({ method: 'POST', url, headers: { ...headers, 'content-type': 'text/plain' }, payload: 'accept' })
      assertError(text, 415, 'content_type_unsupported')
      assertError(await accept(VIBAN, user.id, { 'x-service-user-ip': 'not-an-ip' }), 400, 'request_invalid')
      assert.deepEqual((await acceptanceRows(user.id)).map((r) => r.code), ['general-gb-fca'])
    })

    test('concurrent acceptances: exactly one succeeds', async () => {
      const user = await suite.ctx.createUser(suite.token)
      const results = await Promise.all(Array.from({ length: 6 }, () => accept(VIBAN, user.id)))
      assert.deepEqual(results.map((r) => r.status).sort(), [201, 409, 409, 409, 409, 409])
      const events = (await eventsAbout(suite.ctx.database.db, suite.ctx.client.organizationId, { type: 'terms-of-service', id: VIBAN })).filter((e) => e.user_id === user.id)
      assert.equal(events.length, 1)
    })

    test("another organization cannot accept for, or read the acceptances of, this organization's users", async () => {
      const user = await suite.ctx.createUser(suite.token)
      const otherToken = await suite.ctx.token(await suite.ctx.newClient())
      const response = await accept(VIBAN, user.id, { 'x-service-user-ip': USER_IP }, otherToken)
      assertError(response, 404, 'entity_not_found')
      assert.equal(response.json<{ details: { entity: string } }>().details.entity, 'user')
      assertError(await list('', user.id, otherToken), 404, 'entity_not_found')
      assert.deepEqual((await acceptanceRows(user.id)).map((r) => r.code), ['general-gb-fca'])
      const otherUser = await suite.ctx.createUser(otherToken, individualUser({ address: { country: 'JP' }, termsOfService: 'general-bs-scb' }))
      const theirs = (await list('', otherUser.id, otherToken)).json<{ termsOfService: Terms[] }>().termsOfService
      assert.deepEqual(theirs.filter((t) => t.acceptedAt).map((t) => t.code), ['general-bs-scb'])
    })
  })

  describe(`terms of service from the operator's catalogue [${engine}]`, () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-terms-'))
    after(() => fs.rmSync(dir, { recursive: true, force: true }))
    fs.writeFileSync(
      path.join(dir, 'terms-of-service.json'),
      JSON.stringify({
        termsOfService: [
          { code: 'general-gb-fca', type: 'general', countries: ['GB'], modifiedAt: '2026-01-01T00:00:00Z', url: 'https://legal.example.com/gb' },
          { code: VIBAN, type: 'unique-account-number', userTypes: ['business'], modifiedAt: '2026-02-01T00:00:00.000Z' },
        ],
      }),
    )
    const suite = useApp(engine, { REFERENCE_DATA_DIR: dir })

    test('serves the replacement file: its entries, URLs and applicability rules', async () => {
      const response = await suite.ctx.request({ method: 'GET', url: '/core/terms-of-service', headers: bearer(suite.token) })
      assert.deepEqual(response.json(), {
        termsOfService: [
          { code: 'general-gb-fca', type: 'general', countries: ['GB'], modifiedAt: '2026-01-01T00:00:00.000Z', url: 'https://legal.example.com/gb' },
          { code: VIBAN, type: 'unique-account-number', userTypes: ['business'], modifiedAt: '2026-02-01T00:00:00.000Z' },
        ],
      })
      assertError(await suite.ctx.request({ method: 'GET', url: '/core/terms-of-service/general-us-hq', headers: bearer(suite.token) }), 404, 'entity_not_found')
      // No general terms for residents of the United States here: they cannot be created.
      const american = await suite.ctx.request({ method: 'POST', url: '/core/users', headers: { ...bearer(suite.token), 'x-service-user-ip': USER_IP }, payload: businessUser({ country: 'US', subdivision: 'US-NY' }) })
      assertError(american, 409, 'terms_of_service_mismatch')
      assert.deepEqual(american.json<{ details: { allowedValues: string[] } }>().details.allowedValues, [])
      const business = await suite.ctx.createUser(suite.token, businessUser())
      const accepted = await suite.ctx.request({ method: 'POST', url: `/core/terms-of-service/${VIBAN}/accept`, headers: { ...bearer(suite.token, business.id), 'x-service-user-ip': USER_IP } })
      assert.equal(accepted.status, 201, accepted.body)
    })
  })

}

test('a catalogue that breaks its schema or its rules is refused with the problem named', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-terms-bad-'))
  try {
    const entry = { code: 'general-gb-fca', type: 'general', modifiedAt: '2026-01-01T00:00:00.000Z' }
    const write = (data: unknown) => fs.writeFileSync(path.join(dir, 'terms-of-service.json'), JSON.stringify(data))
    const load = () => loadReferenceData<TermsOfServiceFile>('terms-of-service.json', TermsOfServiceFile, dir).termsOfService
    write({ termsOfService: [{ ...entry, code: 'general-mars' }] })
    assert.throws(load, ReferenceDataError)
    write({ termsOfService: [{ ...entry, countries: ['gb'] }] })
    assert.throws(load, ReferenceDataError)
    write({ termsOfService: [entry, entry] })
    assert.throws(() => new TermsOfServiceService(null as never, load(), { getMe: async () => ({ type: 'individual' }), lockActive: async () => null }), /defined twice/)
    assert.doesNotThrow(() => loadReferenceData<TermsOfServiceFile>('terms-of-service.json', TermsOfServiceFile, null))
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})
