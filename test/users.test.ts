import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { bearer, ENGINES, individualUser, USER_IP, useApp } from './helpers.ts'

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

for (const engine of ENGINES) {
  describe(`users [${engine}]`, () => {
    const suite = useApp(engine)

    const create = (body: unknown, headers: Record<string, string> = { 'x-service-user-ip': USER_IP }) =>
      suite.ctx.request({ method: 'POST', url: '/core/users', headers: { ...bearer(suite.token), ...headers }, payload: body as Record<string, unknown> })
    const getMe = (userId: string, accessToken = suite.token) => suite.ctx.request({ method: 'GET', url: '/core/users/me', headers: bearer(accessToken, userId) })
    const storedMetadata = (userId: string) =>
      suite.ctx.database.db.selectFrom('metadata').select(['data', 'etag']).where('entity_type', '=', 'users').where('entity_id', '=', userId).executeTakeFirst()
    /** Proves a rejected request stored nothing: the email is still free. */
    async function assertEmailFree(email: string) {
      assert.equal((await create(individualUser({ email }))).status, 201, `${email} should still be available`)
    }

    test('creates a complete individual user and returns it as stored', async () => {
      const body = individualUser({
        fullName: 'John Doe',
        birthdate: '1987-01-01',
        address: { country: 'GB', subdivision: 'GB-MAN', city: 'Manchester', line1: '1 High Street', line2: 'Northern Quarter', postalCode: 'M4 1AA' },
        phone: { number: '+447400123456', country: 'GB' },
      })
      const response = await create(body)
      assert.equal(response.status, 201)
      const { user, errors } = response.json<{ user: Record<string, unknown>; errors?: unknown }>()
      assert.equal(errors, undefined)
      assert.equal(user.type, 'individual')
      assert.equal(user.email, body.email)
      assert.equal(user.fullName, 'John Doe')
      assert.equal(user.birthdate, '1987-01-01')
      assert.equal(user.primaryCitizenship, 'GB')
      assert.deepEqual(user.address, body.address)
      assert.deepEqual(user.phone, body.phone)
      assert.match(String(user.createdAt), ISO_MS)
      assert.equal(user.createdAt, user.updatedAt)
      assert.deepEqual((await getMe(String(user.id))).json().user, user)
    })

    test('type defaults to individual', async () => {
      const body = individualUser()
      delete body.type
      const response = await create(body)
      assert.equal(response.status, 201, response.body)
      assert.equal(response.json<{ user: { type: string } }>().user.type, 'individual')
    })

    test('accepts the legacy individual shape and answers in the current one', async () => {
      const email = `legacy-${Date.now()}@example.com`
      const response = await create({
        type: 'individual',
        email,
        termsOfService: 'general-us-hq',
        citizenshipCountry: 'US',
        country: 'US',
        subdivision: 'US-CA',
        partnerOnboardedAt: '2024-01-01T00:00:00.000Z',
      })
      assert.equal(response.status, 201, response.body)
      const { user } = response.json<{ user: Record<string, unknown> }>()
      assert.equal(user.primaryCitizenship, 'US')
      assert.equal(user.citizenshipCountry, 'US')
      assert.deepEqual(user.address, { country: 'US', subdivision: 'US-CA' })
      assert.equal(user.partnerOnboardedAt, '2024-01-01T00:00:00.000Z')
    })

    test('creates a business user; acting for it makes the subject user:business', async () => {
      const response = await create({
        type: 'business',
        email: `acme-${Date.now()}@example.com`,
        termsOfService: 'general-gb-fca',
        country: 'GB',
        subdivision: 'GB-MAN',
        legalEntityType: 'private-limited-company',
        metadata: { externalId: 123 },
      })
      assert.equal(response.status, 201, response.body)
      const { user } = response.json<{ user: { id: string; type: string; address: unknown } }>()
      assert.equal(user.type, 'business')
      assert.deepEqual(user.address, { country: 'GB', subdivision: 'GB-MAN' })
      assert.deepEqual((await storedMetadata(user.id))?.data, { externalId: 123 })
      assert.equal((await getMe(user.id)).json<{ user: { type: string } }>().user.type, 'business')
    })

    test('valid metadata is stored with the user, with a 64-hex ETag', async () => {
      const response = await create(individualUser({ metadata: { externalId: 'crm-42', tags: ['vip'] } }))
      assert.equal(response.status, 201)
      const stored = await storedMetadata(response.json<{ user: { id: string } }>().user.id)
      assert.deepEqual(stored?.data, { externalId: 'crm-42', tags: ['vip'] })
      assert.match(String(stored?.etag), /^[0-9a-f]{64}$/)
    })

    test('oversized metadata is reported in errors.metadata and the user is created without it', async () => {
      const response = await create(individualUser({ metadata: { note: 'x'.repeat(1100) } }))
      assert.equal(response.status, 201, response.body)
      const { user, errors } = response.json<{ user: { id: string }; errors: { metadata: { code: string; details: unknown } } }>()
      assert.equal(errors.metadata.code, 'content_too_large')
      assert.deepEqual(errors.metadata.details, { threshold: { unit: 'characters', limit: '1024' } })
      assert.equal(await storedMetadata(user.id), undefined)
      assert.equal((await getMe(user.id)).status, 200)
    })

    test('metadata that is not a non-empty object is reported and does not fail the creation', async () => {
      for (const metadata of ['text', 42, [1, 2], {}, null]) {
        const response = await create(individualUser({ metadata }))
        assert.equal(response.status, 201, `${JSON.stringify(metadata)}: ${response.body}`)
        const { user, errors } = response.json<{ user: { id: string }; errors: { metadata: { code: string } } }>()
        assert.equal(errors.metadata.code, 'request_invalid')
        assert.equal(await storedMetadata(user.id), undefined)
      }
    })

    test('a duplicate email in the organization is 409 email_already_exists, whatever its case', async () => {
      const email = `dup-${Date.now()}@example.com`
      assert.equal((await create(individualUser({ email }))).status, 201)
      const again = await create(individualUser({ email: email.toUpperCase() }))
      assert.equal(again.status, 409)
      assert.equal(again.json().code, 'email_already_exists')
      const business = await create({ type: 'business', email, termsOfService: 'general-gb-fca', country: 'GB', legalEntityType: 'partnership' })
      assert.equal(business.json().code, 'email_already_exists')
    })

    test('the same email may exist in another organization', async () => {
      const email = `shared-${Date.now()}@example.com`
      assert.equal((await create(individualUser({ email }))).status, 201)
      const otherToken = await suite.ctx.token(await suite.ctx.newClient())
      const other = await suite.ctx.request({ method: 'POST', url: '/core/users', headers: { ...bearer(otherToken), 'x-service-user-ip': USER_IP }, payload: individualUser({ email }) })
      assert.equal(other.status, 201)
    })

    test('clients of one organization share its users', async () => {
      const user = await suite.ctx.createUser(suite.token)
      const sibling = await suite.ctx.newClient('*', suite.ctx.client.organizationId)
      assert.equal((await getMe(user.id, await suite.ctx.token(sibling))).status, 200)
    })

    test('the end user IP is required: without it the creation is 409 operation_not_allowed', async () => {
      const body = individualUser()
      const response = await create(body, {})
      assert.equal(response.status, 409)
      assert.deepEqual(response.json(), {
        code: 'operation_not_allowed',
        message: 'Request not allowed due to missing user context',
        details: { reasons: ['missing-user-ip-header'] },
      })
      await assertEmailFree(String(body.email))
    })

    test('malformed user-context headers are 400 with the header named', async () => {
      const cases: [Record<string, string>, string][] = [
        [{ 'x-service-user-ip': 'not-an-ip' }, 'x-service-user-ip'],
        [{ 'x-service-user-ip': USER_IP, 'x-service-user-country': 'gb' }, 'x-service-user-country'],
        [{ 'x-service-user-ip': USER_IP, 'x-service-user-subdivision': 'GB' }, 'x-service-user-subdivision'],
        [{ 'x-service-user-ip': USER_IP, 'x-service-user-agent': ' padded ' }, 'x-service-user-agent'],
      ]
      for (const [headers, property] of cases) {
        const response = await create(individualUser(), headers)
        assert.equal(response.status, 400, response.body)
        const details = response.json<{ details: { context: string; violations: { property: string }[] } }>().details
        assert.equal(details.context, 'headers')
        assert.ok(details.violations.some((v) => v.property === property), JSON.stringify(details))
      }
      assert.equal((await create(individualUser(), { 'x-service-user-ip': '2001:db8::1', 'x-service-user-city': 'San Francisco' })).status, 201)
    })

    test('an underage, implausibly old or future-onboarded user is 409 date_invalid', async () => {
      const today = new Date()
      const tooYoung = `${today.getUTCFullYear() - 17}-01-01`
      for (const [overrides, property] of [
        [{ birthdate: tooYoung }, 'birthdate'],
        [{ birthdate: '1900-01-01' }, 'birthdate'],
      ] as const) {
        const body = individualUser(overrides)
        const response = await create(body)
        assert.equal(response.status, 409, response.body)
        assert.equal(response.json().code, 'date_invalid')
        assert.equal(response.json<{ details: { property: string } }>().details.property, property)
        await assertEmailFree(String(body.email))
      }
      const business = await create({
        type: 'business',
        email: `future-${Date.now()}@example.com`,
        termsOfService: 'general-gb-fca',
        country: 'GB',
        legalEntityType: 'partnership',
        partnerOnboardedAt: new Date(Date.now() + 86_400_000).toISOString(),
      })
      assert.equal(business.status, 409)
      assert.equal(business.json<{ details: { property: string } }>().details.property, 'partnerOnboardedAt')
    })

    test('general terms of service that are not those of the residence are 409 terms_of_service_mismatch, and store nothing', async () => {
      const body = individualUser({ address: { country: 'PT' }, termsOfService: 'general-gb-fca' })
      const response = await create(body)
      assert.equal(response.status, 409, response.body)
      assert.deepEqual(response.json(), {
        code: 'terms_of_service_mismatch',
        message: 'The terms of service passed in the request does not match the one that should have been accepted',
        details: { context: 'body', property: 'termsOfService', allowedValues: ['general-pt-bop'] },
      })
      await assertEmailFree(String(body.email))
    })

    test('malformed bodies are 400 request_invalid naming the property, and store nothing', async () => {
      const email = `invalid-${Date.now()}@example.com`
      const cases: [unknown, string, string][] = [
        [individualUser({ email: 'not-an-email' }), 'email', 'format'],
        [individualUser({ email, termsOfService: 'general-mars' }), 'termsOfService', 'enum'],
        [individualUser({ email, primaryCitizenship: 'gb' }), 'primaryCitizenship', 'pattern'],
        [individualUser({ email, address: {} }), 'address.country', 'required'],
        [individualUser({ email, address: { country: 'GB', subdivision: 'Manchester' } }), 'address.subdivision', 'pattern'],
        [individualUser({ email, fullName: 'Cher' }), 'fullName', 'pattern'],
        [individualUser({ email, birthdate: '01/01/1987' }), 'birthdate', 'format'],
        [individualUser({ email, phone: { number: '07400123456', country: 'GB' } }), 'phone.number', 'pattern'],
        [individualUser({ email, nickname: 'JD' }), 'nickname', 'additionalProperties'],
        [individualUser({ email, address: 'GB' }), 'address', 'type'],
        [{ type: 'individual', email }, 'termsOfService', 'required'],
        [{ type: 'business', email, termsOfService: 'general-gb-fca', country: 'GB' }, 'legalEntityType', 'required'],
        [{ type: 'business', email, termsOfService: 'general-gb-fca', country: 'GB', legalEntityType: 'llc' }, 'legalEntityType', 'enum'],
        [individualUser({ email: 'x'.repeat(250) + '@example.com' }), 'email', 'maxLength'],
      ]
      for (const [body, property, rule] of cases) {
        const response = await create(body)
        assert.equal(response.status, 400, `${property}: ${response.body}`)
        const details = response.json<{ details: { context: string; violations: { property: string; rule: string }[] } }>().details
        assert.equal(details.context, 'body')
        assert.ok(details.violations.some((v) => v.property === property && v.rule === rule), `${property}/${rule}: ${JSON.stringify(details.violations)}`)
      }
      for (const body of [[], 'user', 42, null]) {
        const response = await suite.ctx.request({
          method: 'POST',
          url: '/core/users',
          headers: { ...bearer(suite.token), 'x-service-user-ip': USER_IP, 'content-type': 'application/json' },
          payload: JSON.stringify(body),
        })
        assert.equal(response.status, 400, JSON.stringify(body))
        assert.equal(response.json().code, 'request_invalid')
      }
      await assertEmailFree(email)
    })

    test('deleting the user hides it, records the review, and frees its email', async () => {
      const body = individualUser()
      const user = await suite.ctx.createUser(suite.token, body)
      const noReview = await suite.ctx.request({ method: 'DELETE', url: '/core/users/me', headers: bearer(suite.token, user.id), payload: {} })
      assert.equal(noReview.status, 400)
      assert.equal((await getMe(user.id)).status, 200, 'a rejected deletion changes nothing')

      const removal = await suite.ctx.request({
        method: 'DELETE',
        url: '/core/users/me',
        headers: { ...bearer(suite.token, user.id), 'x-service-user-ip': USER_IP },
        payload: { review: { reason: 'closure-per-user-request', note: 'User asked to close the account' } },
      })
      assert.equal(removal.status, 204)
      assert.equal(removal.body, '')
      const row = await suite.ctx.database.db.selectFrom('users').select(['deleted_at', 'deletion_review']).where('id', '=', user.id).executeTakeFirstOrThrow()
      assert.ok(row.deleted_at instanceof Date)
      assert.equal((row.deletion_review as { reason: string }).reason, 'closure-per-user-request')

      const gone = await getMe(user.id)
      assert.equal(gone.status, 404)
      assert.equal(gone.json().code, 'entity_not_found')
      await assertEmailFree(String(body.email))
    })
  })
}
