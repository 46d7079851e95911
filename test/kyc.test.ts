import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { createAjv } from '@jsonforms/core'
import { eventsAbout } from '../src/modules/events/outbox.ts'
import { KycService } from '../src/modules/kyc/kyc.service.ts'
import { SELF_CATEGORIZATION_FORM_ID } from '../src/modules/kyc/self-categorization.ts'
import type { KycProvider } from '../src/providers/kyc/kyc-provider.ts'
import { bearer, ENGINES, individualUser, uploadedFile, useApp, type TestResponse } from './helpers.ts'

type Json = Record<string, unknown>
interface Process {
  code: string
  status: string
  type?: string
  verification: { model: string; method: string; dependencies: string[]; submittable?: boolean; triggers?: string[] }
  input?: Json
  output?: Json
  hint?: { type: string; formId: string; schema: Json; uiSchema: { type: string; elements: { label: string }[] } }
}
interface Overview {
  summary: { status: string; reason: string }
  processes: Record<string, Process>
}

const COMPLETE_PROFILE = {
  fullName: 'John Doe',
  birthdate: '1987-01-01',
  address: { country: 'GB', subdivision: 'GB-MAN', city: 'Manchester', line1: '1 High Street', postalCode: 'M4 1AA' },
}
const GB_MOBILE = '+447400123456'
let nextMobile = 100_000 + Math.floor(Math.random() * 800_000)
/** A valid GB mobile number no other test verifies. */
const uniqueMobile = () => `+447400${nextMobile++}`
const PAST = '2024-01-01T00:00:00.000Z'
const RESTRICTED_OK = {
  'invested-less-than-10-percent': 'yes',
  'invested-percentage': '5',
  'invest-less-than-10-percent': 'yes',
  'invest-percentage': '9.99',
  'investor-type-confirmation': true,
}

function assertRefused(response: TestResponse, status: number, code: string, reason?: string) {
  assert.equal(response.status, status, response.body)
  const body = response.json<{ code: string; details?: { reasons?: string[] } }>()
  assert.equal(body.code, code, response.body)
  if (reason !== undefined) assert.deepEqual(body.details?.reasons, [reason])
}

for (const engine of ENGINES) {
  describe(`KYC [${engine}]`, () => {
    const suite = useApp(engine)

    const newUser = async (overrides: Json = {}) => (await suite.ctx.createUser(suite.token, individualUser(overrides))).id
    const overview = async (userId: string, query = '', headers: Record<string, string> = {}) => {
      const response = await suite.ctx.request({ method: 'GET', url: `/core/kyc${query}`, headers: { ...bearer(suite.token, userId), ...headers } })
      assert.equal(response.status, 200, response.body)
      return response.json<Overview>()
    }
    const patch = (process: string, userId: string, payload: unknown, headers: Record<string, string> = {}, token = suite.token) =>
      suite.ctx.request({ method: 'PATCH', url: `/core/kyc/processes/${process}`, headers: { ...bearer(token, userId), ...headers }, payload: payload as Json })
    const ok = async (process: string, key: string, userId: string, payload: unknown, headers: Record<string, string> = {}) => {
      const response = await patch(process, userId, payload, headers)
      assert.equal(response.status, 200, response.body)
      return response.json<Record<string, Process>>()[key]!
    }
    /** The KYC events about the user (the user's own, `core.user.*`, are not this suite's). */
    const events = async (userId: string) =>
      (await eventsAbout(suite.ctx.database.db, suite.ctx.client.organizationId, { type: 'user', id: userId }))
        .filter((e) => e.type.startsWith('core.kyc.'))
        .map((e) => ({ type: e.type, data: e.data }))
    const statusEvents = async (userId: string, process: string) =>
      (await events(userId)).filter((e) => e.type === `core.kyc.${process}.status-changed`).map((e) => e.data.status)
    /** Stands in for time passing: what a process stored, rewritten. */
    const rewriteOutput = async (userId: string, code: string, change: (output: Json) => Json) => {
      const db = suite.ctx.database.db
      const row = await db.selectFrom('kyc_processes').select('output').where('user_id', '=', userId).where('code', '=', code).executeTakeFirstOrThrow()
      await db.updateTable('kyc_processes').set({ output: JSON.stringify(change(row.output as Json)) }).where('user_id', '=', userId).where('code', '=', code).execute()
    }
    const rewriteState = async (userId: string, code: string, state: Json) => {
      await suite.ctx.database.db.updateTable('kyc_processes').set({ state: JSON.stringify(state) }).where('user_id', '=', userId).where('code', '=', code).execute()
    }
    /** The 24 hours between two attempts of the crypto risk assessment, over. */
    const pastRetryWait = (userId: string) =>
      rewriteOutput(userId, 'crypto-risk-assessment', (output) => ({ ...output, attempts: { ...(output.attempts as Json), retryAt: PAST } }))

    describe('overview', () => {
      test('a new user starts from what its creation declared; every process is listed with its verification', async () => {
        const sparse = await overview(await newUser())
        assert.deepEqual(sparse.summary, { status: 'pending', reason: 'none' })
        assert.deepEqual(Object.keys(sparse.processes), [
          'profile', 'address', 'email', 'phone', 'identity', 'proofOfAddress', 'customerDueDiligence', 'enhancedDueDiligence',
          'cryptoRiskAssessment', 'selfCategorizationStatement', 'taxDetails', 'screening', 'risk',
        ])
        const p = sparse.processes
        assert.equal(p.profile!.status, 'pending')
        assert.deepEqual(p.profile!.input, { primaryCitizenship: 'GB', address: { country: 'GB', subdivision: 'GB-MAN' } })
        const rules = (p.profile!.verification as unknown as { rules: Record<string, { presence: string; editable: boolean }> }).rules
        assert.deepEqual(rules.fullName, { presence: 'required', editable: true })
        assert.deepEqual(rules.otherCitizenships, { presence: 'optional', editable: true })
        assert.equal(p.address!.status, 'pending')
        assert.equal(p.email!.status, 'pending')
        assert.match(String(p.email!.input!.email), /@example\.com$/)
        assert.deepEqual({ status: p.phone!.status, input: p.phone!.input }, { status: 'pending', input: undefined })
        assert.deepEqual({ type: p.identity!.type, submittable: p.identity!.verification.submittable }, { type: 'none', submittable: true })
        assert.deepEqual(p.identity!.verification.dependencies, ['phone', 'profile'])
        assert.equal(p.enhancedDueDiligence!.status, 'exempt')
        assert.equal(p.selfCategorizationStatement!.status, 'pending')
        assert.equal(p.screening!.verification.method, 'automatic')
        assert.deepEqual(p.screening!.verification.triggers, ['profile', 'identity'])
        assert.equal(p.selfCategorizationStatement!.hint, undefined, 'hints only when asked for')

        const complete = await overview(await newUser({ ...COMPLETE_PROFILE, phone: { number: GB_MOBILE, country: 'GB' } }))
        assert.equal(complete.processes.profile!.status, 'ok')
        assert.equal(complete.processes.address!.status, 'ok')
        assert.deepEqual(complete.processes.phone!.input, { phone: GB_MOBILE, country: 'GB' })
        assert.equal(complete.processes.phone!.status, 'pending', 'a phone given at creation is registered, not verified')
      })

      test('detailed processes carry their hint, whichever way the list is written', async () => {
        const userId = await newUser()
        for (const query of ['?detailed=selfCategorizationStatement,taxDetails', '?detailed=selfCategorizationStatement&detailed=taxDetails', '?detailed[]=selfCategorizationStatement&detailed[]=taxDetails']) {
          const { processes } = await overview(userId, query)
          assert.equal(processes.selfCategorizationStatement!.hint?.formId, SELF_CATEGORIZATION_FORM_ID, query)
          assert.equal(processes.taxDetails!.hint?.type, 'form', query)
          assert.equal(processes.cryptoRiskAssessment!.hint, undefined, query)
        }
        const unknown = await suite.ctx.request({ method: 'GET', url: '/core/kyc?detailed=passport', headers: bearer(suite.token, userId) })
        assertRefused(unknown, 400, 'request_invalid')
      })

      test('Accept-Language selects the form language, English when not available; Content-Language tells which', async () => {
        const userId = await newUser()
        const get = (language?: string) =>
          suite.ctx.request({ method: 'GET', url: '/core/kyc?detailed=selfCategorizationStatement', headers: { ...bearer(suite.token, userId), ...(language ? { 'accept-language': language } : {}) } })
        const french = await get('fr-FR, en;q=0.5')
        assert.equal(french.headers['content-language'], 'fr')
        assert.equal(french.json<Overview>().processes.selfCategorizationStatement!.hint!.uiSchema.elements[0]!.label, 'Catégorie d’investisseur')
        const german = await get('de-DE')
        assert.equal(german.headers['content-language'], 'en')
        assert.equal(german.json<Overview>().processes.selfCategorizationStatement!.hint!.uiSchema.elements[0]!.label, 'Investor categorization')
        assert.equal((await get()).headers['content-language'], 'en')
        const malformed = await get('!!')
        assertRefused(malformed, 409, 'locale_invalid')
        assert.deepEqual(malformed.json<{ details: Json }>().details, { context: 'headers', property: 'accept-language' })
      })

      test('reading needs core.kyc:read', async () => {
        const userId = await newUser()
        const narrow = await suite.ctx.newClient('core.users:act-on-behalf-of core.kyc.phone:update', suite.ctx.client.organizationId)
        const response = await suite.ctx.request({ method: 'GET', url: '/core/kyc', headers: bearer(await suite.ctx.token(narrow), userId) })
        assertRefused(response, 403, 'token_insufficient_scopes')
        assert.ok(response.json<{ details: { security: { schemeScopes: string[] }[] } }>().details.security[0]!.schemeScopes.includes('core.kyc:read'))
      })

      test("another organization's client cannot read the user's KYC", async () => {
        const userId = await newUser()
        const otherToken = await suite.ctx.token(await suite.ctx.newClient())
        assertRefused(await suite.ctx.request({ method: 'GET', url: '/core/kyc', headers: bearer(otherToken, userId) }), 404, 'entity_not_found')
      })
    })

    describe('phone (specification §3)', () => {
      test('PATCH with input only: pending, the phone registered unverified (normalized to E.164)', async () => {
        const userId = await newUser()
        const phone = await ok('phone', 'phone', userId, { input: { phone: GB_MOBILE, country: 'GB' } })
        assert.deepEqual({ status: phone.status, input: phone.input, output: phone.output }, { status: 'pending', input: { phone: GB_MOBILE, country: 'GB' }, output: undefined })
        assert.deepEqual(await statusEvents(userId, 'phone'), [], 'pending to pending is no status change')
        const user = await suite.ctx.request({ method: 'GET', url: '/core/users/me', headers: bearer(suite.token, userId) })
        assert.deepEqual(user.json<{ user: Json }>().user.phone, { number: GB_MOBILE, country: 'GB' })
      })

      test('PATCH with input and output.verifiedAt: ok, verified at once', async () => {
        const userId = await newUser()
        const phone = await ok('phone', 'phone', userId, { input: { phone: uniqueMobile(), country: 'GB' }, output: { verifiedAt: '2024-01-01T00:00:00Z' } })
        assert.equal(phone.status, 'ok')
        assert.deepEqual(phone.output, { verifiedAt: PAST })
        assert.deepEqual(await events(userId), [{ type: 'core.kyc.phone.status-changed', data: { status: 'ok', userId } }])
      })

      test('PATCH with output.verifiedAt in a later call verifies the pending registration', async () => {
        const userId = await newUser()
        await ok('phone', 'phone', userId, { input: { phone: '+33612345678', country: 'FR' } })
        const phone = await ok('phone', 'phone', userId, { output: { verifiedAt: PAST } })
        assert.deepEqual({ status: phone.status, input: phone.input, output: phone.output }, { status: 'ok', input: { phone: '+33612345678', country: 'FR' }, output: { verifiedAt: PAST } })
        assert.deepEqual(await statusEvents(userId, 'phone'), ['ok'])
      })

      test('a phone given at user creation is the pending registration a later verification verifies', async () => {
        const userId = await newUser({ phone: { number: uniqueMobile(), country: 'GB' } })
        assert.equal((await ok('phone', 'phone', userId, { output: { verifiedAt: PAST } })).status, 'ok')
      })

      test('output.verifiedAt alone, with nothing registered, is refused and changes nothing', async () => {
        const userId = await newUser()
        assertRefused(await patch('phone', userId, { output: { verifiedAt: PAST } }), 409, 'operation_not_allowed', 'kyc-process-update-not-allowed')
        assert.equal((await overview(userId)).processes.phone!.status, 'pending')
        assert.deepEqual(await events(userId), [])
      })

      test('a verified phone is final', async () => {
        const userId = await newUser()
        const number = uniqueMobile()
        await ok('phone', 'phone', userId, { input: { phone: number, country: 'GB' }, output: { verifiedAt: PAST } })
        assertRefused(await patch('phone', userId, { input: { phone: uniqueMobile(), country: 'GB' } }), 409, 'operation_not_allowed', 'phone-already-verified')
        assertRefused(await patch('phone', userId, { output: { verifiedAt: PAST } }), 409, 'operation_not_allowed', 'phone-already-verified')
        assert.deepEqual(await statusEvents(userId, 'phone'), ['ok'])
        assert.deepEqual((await overview(userId)).processes.phone!.input, { phone: number, country: 'GB' })
      })

      test('numbers are validated for their country; bad input changes nothing', async () => {
        const userId = await newUser()
        assertRefused(await patch('phone', userId, { input: { phone: GB_MOBILE, country: 'FR' } }), 409, 'phone_invalid')
        assertRefused(await patch('phone', userId, { input: { phone: '+4412', country: 'GB' } }), 409, 'phone_invalid')
        const country = await patch('phone', userId, { input: { phone: GB_MOBILE, country: 'ZZ' } })
        assertRefused(country, 409, 'country_not_supported')
        assert.deepEqual(country.json<{ details: Json }>().details, { context: 'body', property: 'input.country' })
        const future = await patch('phone', userId, { input: { phone: GB_MOBILE, country: 'GB' }, output: { verifiedAt: '2999-01-01T00:00:00Z' } })
        assertRefused(future, 409, 'date_invalid')
        for (const [payload, property, rule] of [
          [{ input: { phone: '07400123456', country: 'GB' } }, 'input.phone', 'pattern'],
          [{ input: { phone: GB_MOBILE } }, 'input.country', 'required'],
          [{ input: { phone: GB_MOBILE, country: 'GB' }, extra: 1 }, 'extra', 'additionalProperties'],
          [{}, '', 'minProperties'],
          [{ output: { verifiedAt: 'yesterday' } }, 'output.verifiedAt', 'format'],
        ] as const) {
          const response = await patch('phone', userId, payload)
          assertRefused(response, 400, 'request_invalid')
          const violations = response.json<{ details: { violations: { property: string; rule: string }[] } }>().details.violations
          assert.ok(violations.some((v) => v.property === property && v.rule === rule), `${JSON.stringify(payload)}: ${JSON.stringify(violations)}`)
        }
        const huge = await patch('phone', userId, { input: { phone: GB_MOBILE, country: 'GB', padding: 'x'.repeat(1_100_000) } })
        assertRefused(huge, 413, 'content_too_large')
        const current = (await overview(userId)).processes.phone!
        assert.deepEqual({ status: current.status, input: current.input }, { status: 'pending', input: undefined })
        assert.deepEqual(await events(userId), [])
      })

      test('a number verified by one user cannot be registered or verified by another', async () => {
        const first = await newUser()
        const second = await newUser()
        const phoneOfFirst = uniqueMobile()
        await ok('phone', 'phone', second, { input: { phone: phoneOfFirst, country: 'GB' } })
        await ok('phone', 'phone', first, { input: { phone: phoneOfFirst, country: 'GB' }, output: { verifiedAt: PAST } })
        assertRefused(await patch('phone', second, { output: { verifiedAt: PAST } }), 409, 'phone_already_exists')
        const third = await newUser()
        assertRefused(await patch('phone', third, { input: { phone: phoneOfFirst, country: 'GB' } }), 409, 'phone_already_exists')
        assert.equal((await overview(second)).processes.phone!.status, 'pending')
        // Another organization's users are not affected.
        const otherToken = await suite.ctx.token(await suite.ctx.newClient())
        const foreign = (await suite.ctx.createUser(otherToken, individualUser())).id
        const response = await patch('phone', foreign, { input: { phone: phoneOfFirst, country: 'GB' }, output: { verifiedAt: PAST } }, {}, otherToken)
        assert.equal(response.status, 200, response.body)
      })

      test('the sandbox test numbers are valid and verify for any number of users', async () => {
        const first = await newUser()
        const second = await newUser()
        for (const userId of [first, second]) {
          const phone = await ok('phone', 'phone', userId, { input: { phone: '+447700900123', country: 'GB' }, output: { verifiedAt: PAST } })
          assert.deepEqual({ status: phone.status, input: phone.input }, { status: 'ok', input: { phone: '+447700900123', country: 'GB' } })
        }
        // Registered first, verified later; the ranges of the United States and France too.
        const third = await newUser()
        await ok('phone', 'phone', third, { input: { phone: '+33639981234', country: 'FR' } })
        assert.equal((await ok('phone', 'phone', third, { output: { verifiedAt: PAST } })).status, 'ok')
        assert.equal((await ok('phone', 'phone', await newUser(), { input: { phone: '+12015550123', country: 'US' }, output: { verifiedAt: PAST } })).status, 'ok')
        // A test number of another country, or next to the range, is checked as any number.
        assertRefused(await patch('phone', await newUser(), { input: { phone: '+447700900123', country: 'FR' } }), 409, 'phone_invalid')
        assertRefused(await patch('phone', await newUser(), { input: { phone: '+447700901123', country: 'GB' } }), 409, 'phone_invalid')
      })

      test('two users verifying the same number at once: exactly one wins', async () => {
        const number = uniqueMobile()
        const users = await Promise.all([newUser(), newUser(), newUser()])
        const responses = await Promise.all(users.map((userId) => patch('phone', userId, { input: { phone: number, country: 'GB' }, output: { verifiedAt: PAST } })))
        assert.deepEqual(responses.map((r) => r.status).sort(), [200, 409, 409], responses.map((r) => r.body).join('\n'))
        for (const response of responses.filter((r) => r.status === 409)) assert.equal(response.json().code, 'phone_already_exists')
        const verified = await Promise.all(users.map(async (userId) => (await overview(userId)).processes.phone!.status))
        assert.deepEqual(verified.filter((s) => s === 'ok').length, 1)
      })

      test("another organization's client cannot update the user's phone", async () => {
        const userId = await newUser()
        const otherToken = await suite.ctx.token(await suite.ctx.newClient())
        assertRefused(await patch('phone', userId, { input: { phone: GB_MOBILE, country: 'GB' } }, {}, otherToken), 404, 'entity_not_found')
        assert.equal((await overview(userId)).processes.phone!.input, undefined)
        assert.deepEqual(await events(userId), [])
      })
    })

    describe('email', () => {
      test('register → pending (the user takes the email), verify → ok, then final', async () => {
        const userId = await newUser()
        const email = `new-${Date.now()}@example.com`
        const registered = await ok('email', 'email', userId, { input: { email } })
        assert.deepEqual({ status: registered.status, input: registered.input }, { status: 'pending', input: { email } })
        const user = await suite.ctx.request({ method: 'GET', url: '/core/users/me', headers: bearer(suite.token, userId) })
        assert.equal(user.json<{ user: Json }>().user.email, email)
        const verified = await ok('email', 'email', userId, { output: { verifiedAt: PAST } })
        assert.deepEqual({ status: verified.status, output: verified.output }, { status: 'ok', output: { verifiedAt: PAST } })
        assertRefused(await patch('email', userId, { input: { email: `other-${Date.now()}@example.com` } }), 409, 'operation_not_allowed', 'email-already-verified')
        assert.deepEqual(await statusEvents(userId, 'email'), ['ok'])
      })

      test('input with output.verifiedAt is verified at once; an email of another user is refused', async () => {
        const userId = await newUser()
        const taken = `taken-${Date.now()}@example.com`
        await newUser({ email: taken })
        assertRefused(await patch('email', userId, { input: { email: taken.toUpperCase() } }), 409, 'email_already_exists')
        assert.equal((await overview(userId)).processes.email!.status, 'pending')
        const email = `mine-${Date.now()}@example.com`
        assert.equal((await ok('email', 'email', userId, { input: { email }, output: { verifiedAt: PAST } })).status, 'ok')
        assertRefused(await patch('email', userId, { input: { email: 'not-an-email' } }), 400, 'request_invalid')
      })
    })

    describe('self-categorization statement (specification §2.7, §3)', () => {
      const answer = (userId: string, answers: Json, extra: Json = {}, headers: Record<string, string> = {}) =>
        patch('self-categorization-statement', userId, { input: { formId: SELF_CATEGORIZATION_FORM_ID, answers, ...extra } }, headers)

      test('from empty to approved over HTTP: the hint stays while questions remain, answers validate with a client ajv', async () => {
        const userId = await newUser()
        const { processes } = await overview(userId, '?detailed=selfCategorizationStatement')
        const hint = processes.selfCategorizationStatement!.hint!
        assert.deepEqual(Object.keys(hint.schema.properties as Json), ['investor', 'investor-profile'])
        const client = createAjv()
        const firstAnswers = { investor: { type: 'restricted_investor' } }
        assert.equal(client.validate(hint.schema, firstAnswers), true)

        const first = await answer(userId, firstAnswers)
        assert.equal(first.status, 200, first.body)
        const partial = first.json<{ selfCategorizationStatement: Process }>().selfCategorizationStatement
        assert.equal(partial.status, 'pending')
        assert.deepEqual(partial.input, { formId: SELF_CATEGORIZATION_FORM_ID, answers: firstAnswers })
        assert.deepEqual(Object.keys(partial.hint!.schema.properties as Json), ['investor-profile'])
        assert.equal(first.headers['content-language'], 'en')

        const secondAnswers = { 'investor-profile': RESTRICTED_OK }
        assert.equal(client.validate(partial.hint!.schema, secondAnswers), true)
        const done = await answer(userId, secondAnswers)
        assert.equal(done.status, 200, done.body)
        const statement = done.json<{ selfCategorizationStatement: Process }>().selfCategorizationStatement
        assert.equal(statement.status, 'ok')
        assert.equal(statement.hint, undefined)
        assert.deepEqual(statement.input, { formId: SELF_CATEGORIZATION_FORM_ID, answers: { ...firstAnswers, ...secondAnswers } })
        const output = statement.output as { result: string; attempts: Json; expiresAt: string; verifiedAt: string }
        assert.deepEqual({ result: output.result, attempts: output.attempts }, { result: 'approved', attempts: { used: 1, maximum: 30 } })
        assert.ok(Date.parse(output.expiresAt) > Date.parse(output.verifiedAt) + 364 * 86_400_000)
        assert.deepEqual(await statusEvents(userId, 'self-categorization-statement'), ['ok'])

        assertRefused(await answer(userId, firstAnswers), 409, 'operation_not_allowed', 'form-already-completed')
        assert.deepEqual(await statusEvents(userId, 'self-categorization-statement'), ['ok'])
        assert.equal((await overview(userId, '?detailed=selfCategorizationStatement')).processes.selfCategorizationStatement!.hint, undefined)
      })

      test('a rejected statement counts the attempt and may be given again from the start', async () => {
        const userId = await newUser()
        await answer(userId, { investor: { type: 'restricted_investor' } })
        const rejected = await answer(userId, { 'investor-profile': { ...RESTRICTED_OK, 'invest-less-than-10-percent': 'no', 'invest-percentage': undefined } })
        assert.equal(rejected.status, 200, rejected.body)
        // As the reference shows it: still pending (attempts remain), the rejection in the output, no answers kept.
        const again = rejected.json<{ selfCategorizationStatement: Process }>().selfCategorizationStatement
        assert.equal(again.status, 'pending')
        assert.equal(again.input, undefined)
        assert.deepEqual(again.output, { result: 'rejected', attempts: { used: 1, maximum: 30 }, verifiedAt: again.output!.verifiedAt })
        assert.deepEqual(Object.keys(again.hint!.schema.properties as Json), ['investor', 'investor-profile'], 'a new attempt starts from the whole form')

        const retry = (await answer(userId, { 'investor-profile': RESTRICTED_OK })).json<{ selfCategorizationStatement: Process }>().selfCategorizationStatement
        assert.deepEqual({ status: retry.status, output: retry.output }, { status: 'pending', output: again.output }, 'the last outcome stays on view while the next attempt is answered')
        const approved = (await answer(userId, { investor: { type: 'high_net_worth_investor' } })).json<{ selfCategorizationStatement: Process }>().selfCategorizationStatement
        assert.equal(approved.status, 'ok')
        assert.deepEqual(approved.output!.attempts, { used: 2, maximum: 30 })
        assert.deepEqual(await statusEvents(userId, 'self-categorization-statement'), ['ok'], 'a rejection that leaves attempts changes no status')
      })

      test('invalid answers, a second category at once or another form version are 400 and change nothing', async () => {
        const userId = await newUser()
        await answer(userId, { investor: { type: 'restricted_investor' } })
        const cases: [Json, Json, string, string][] = [
          [{ 'investor-profile': { ...RESTRICTED_OK, 'invested-less-than-10-percent': 'no' } }, {}, 'input.answers.investor-profile.invested-percentage', 'not'],
          [{ 'investor-profile': { ...RESTRICTED_OK, 'invest-percentage': undefined } }, {}, 'input.answers.investor-profile.invest-percentage', 'required'],
          [{ 'investor-profile': { ...RESTRICTED_OK, 'invested-percentage': '10.001' } }, {}, 'input.answers.investor-profile.invested-percentage', 'pattern'],
          [{ 'investor-profile': { ...RESTRICTED_OK, 'investor-type-confirmation': false } }, {}, 'input.answers.investor-profile.investor-type-confirmation', 'const'],
          [{ investor: { type: 'high_net_worth_investor' } }, {}, 'input.answers.investor', 'additionalProperties'],
          [{ investor: { type: 'restricted_investor' }, 'investor-profile': RESTRICTED_OK }, {}, 'input.answers', 'maxProperties'],
          [{ 'investor-profile': RESTRICTED_OK }, { formId: '00000000-0000-4000-8000-000000000000' }, 'input.formId', 'const'],
        ]
        for (const [answers, extra, property, rule] of cases) {
          const response = await answer(userId, JSON.parse(JSON.stringify(answers)) as Json, extra)
          assertRefused(response, 400, 'request_invalid')
          const violations = response.json<{ details: { violations: { property: string; rule: string }[] } }>().details.violations
          assert.ok(violations.some((v) => v.property === property && v.rule === rule), `${property} ${rule}: ${JSON.stringify(violations)}`)
        }
        const statement = (await overview(userId)).processes.selfCategorizationStatement!
        assert.deepEqual({ status: statement.status, answers: statement.input!.answers }, { status: 'pending', answers: { investor: { type: 'restricted_investor' } } })
        assert.deepEqual(await statusEvents(userId, 'self-categorization-statement'), [])
      })

      test('both categories answered at once by concurrent requests: both kept, reviewed once', async () => {
        const userId = await newUser()
        const responses = await Promise.all([answer(userId, { investor: { type: 'restricted_investor' } }), answer(userId, { 'investor-profile': RESTRICTED_OK })])
        assert.deepEqual(responses.map((r) => r.status), [200, 200], responses.map((r) => r.body).join('\n'))
        const statement = (await overview(userId)).processes.selfCategorizationStatement!
        assert.equal(statement.status, 'ok')
        assert.deepEqual(statement.output!.attempts, { used: 1, maximum: 30 })
        assert.deepEqual(await statusEvents(userId, 'self-categorization-statement'), ['ok'])
      })

      test('residents of GB must give it; residents elsewhere are exempt and updates are refused', async () => {
        const british = await newUser()
        const french = await newUser({ primaryCitizenship: 'FR', address: { country: 'FR' }, termsOfService: 'general-lt-fcs' })
        assert.equal((await overview(british)).processes.selfCategorizationStatement!.status, 'pending')
        const exempt = (await overview(french, '?detailed=selfCategorizationStatement')).processes.selfCategorizationStatement!
        assert.equal(exempt.status, 'exempt')
        assert.equal(exempt.hint, undefined)
        assertRefused(await answer(french, { investor: { type: 'restricted_investor' } }), 409, 'operation_not_allowed', 'kyc-process-status-exempt')
        assert.deepEqual(await events(french), [])
      })

      test('the client may attest the outcome with the last answers', async () => {
        const userId = await newUser()
        assertRefused(
          await answer(userId, { investor: { type: 'restricted_investor' } }, { }, {}).then(async () =>
            patch('self-categorization-statement', userId, { input: { answers: { 'investor-profile': RESTRICTED_OK } }, output: { result: 'approved', attempts: { used: 1, maximum: 3 }, expiresAt: '2999-01-01T00:00:00Z', verifiedAt: '2999-01-01T00:00:00Z' } }),
          ),
          409,
          'date_invalid',
        )
        const attested = await ok('self-categorization-statement', 'selfCategorizationStatement', userId, {
          input: { answers: { 'investor-profile': RESTRICTED_OK } },
          output: { result: 'approved', attempts: { used: 1, maximum: 3 }, expiresAt: '2999-01-01T00:00:00Z', verifiedAt: PAST },
        })
        assert.deepEqual({ status: attested.status, model: attested.verification.model }, { status: 'ok', model: 'partner-verified' })
        assert.deepEqual(attested.output, { result: 'approved', attempts: { used: 1, maximum: 3 }, expiresAt: '2999-01-01T00:00:00.000Z', verifiedAt: PAST })
      })
    })

    describe('profile and address', () => {
      test('completing the profile makes profile and address ok, and the user record follows', async () => {
        const userId = await newUser()
        const profile = await ok('profile', 'profile', userId, { input: { fullName: 'Jane Roe', birthdate: '1990-05-17', address: { city: 'Manchester', line1: '2 High Street' } } })
        assert.equal(profile.status, 'pending', 'no postal code yet')
        const address = await ok('address', 'address', userId, { input: { address: { postalCode: 'M4 1AA' } } })
        assert.equal(address.status, 'ok')
        assert.deepEqual(address.input, { address: { country: 'GB', subdivision: 'GB-MAN', city: 'Manchester', line1: '2 High Street', postalCode: 'M4 1AA' } })
        const { processes } = await overview(userId)
        assert.equal(processes.profile!.status, 'ok')
        assert.deepEqual(await statusEvents(userId, 'profile'), ['ok'])
        assert.deepEqual(await statusEvents(userId, 'address'), ['ok'])
        const user = (await suite.ctx.request({ method: 'GET', url: '/core/users/me', headers: bearer(suite.token, userId) })).json<{ user: Json }>().user
        assert.deepEqual({ fullName: user.fullName, birthdate: user.birthdate }, { fullName: 'Jane Roe', birthdate: '1990-05-17' })
      })

      test('business rules: age, citizenship, subdivision of the residence country, no PO boxes', async () => {
        const userId = await newUser()
        assertRefused(await patch('profile', userId, { input: { birthdate: new Date().toISOString().slice(0, 10) } }), 409, 'date_invalid')
        assertRefused(await patch('profile', userId, { input: { primaryCitizenship: 'ZZ' } }), 409, 'country_not_supported')
        assertRefused(await patch('address', userId, { input: { address: { subdivision: 'FR-75' } } }), 409, 'subdivision_not_supported')
        assertRefused(await patch('address', userId, { input: { address: { line1: 'PO Box 123' } } }), 409, 'po_boxes_not_allowed')
        assertRefused(await patch('address', userId, { input: { address: { country: 'FR' } } }), 400, 'request_invalid')
        assert.deepEqual(await events(userId), [])
      })

      test('citizenshipCountry is the former name of primaryCitizenship; both given must agree', async () => {
        const userId = await newUser()
        const profile = await ok('profile', 'profile', userId, { input: { citizenshipCountry: 'FR' } })
        assert.equal(profile.input!.primaryCitizenship, 'FR')
        const rules = (profile.verification as unknown as { rules: Record<string, unknown> }).rules
        assert.deepEqual(rules.citizenshipCountry, rules.primaryCitizenship)
        const user = (await suite.ctx.request({ method: 'GET', url: '/core/users/me', headers: bearer(suite.token, userId) })).json<{ user: Json }>().user
        assert.deepEqual({ primaryCitizenship: user.primaryCitizenship, citizenshipCountry: user.citizenshipCountry }, { primaryCitizenship: 'FR', citizenshipCountry: 'FR' })
        assert.equal((await ok('profile', 'profile', userId, { input: { citizenshipCountry: 'GB', primaryCitizenship: 'GB' } })).input!.primaryCitizenship, 'GB')
        const disagree = await patch('profile', userId, { input: { citizenshipCountry: 'FR', primaryCitizenship: 'GB' } })
        assertRefused(disagree, 400, 'request_invalid')
        assert.deepEqual(disagree.json<{ details: { violations: unknown[] } }>().details.violations, [{ property: 'input.citizenshipCountry', rule: 'const', ruleParams: { allowedValue: 'GB' } }])
        const unsupported = await patch('profile', userId, { input: { citizenshipCountry: 'ZZ' } })
        assertRefused(unsupported, 409, 'country_not_supported')
        assert.deepEqual(unsupported.json<{ details: Json }>().details, { context: 'body', property: 'input.citizenshipCountry' })
        assert.equal((await overview(userId)).processes.profile!.input!.primaryCitizenship, 'GB')
      })

      test('the deprecated profile form: a hint while pending, answered with details alone, validated as the hint says', async () => {
        const userId = await newUser()
        assert.equal((await overview(userId)).processes.profile!.hint, undefined, 'hints only when asked for')
        const french = await suite.ctx.request({ method: 'GET', url: '/core/kyc?detailed=profile', headers: { ...bearer(suite.token, userId), 'accept-language': 'fr' } })
        const hint = french.json<Overview>().processes.profile!.hint!
        assert.equal(hint.type, 'form')
        assert.match(hint.formId, /^[0-9a-f-]{36}$/)
        assert.deepEqual(hint.uiSchema.elements.map((e) => e.label), ['Informations personnelles', 'Adresse de résidence'])
        assert.deepEqual(hint.schema.required, ['fullName', 'birthdate', 'address'], 'what the profile still lacks')
        assert.deepEqual((hint.schema.properties as { address: { required: string[] } }).address.required, ['city', 'line1', 'postalCode'])
        assert.equal((hint.schema.properties as Json).subdivision, undefined)

        const details = { fullName: 'Jane Roe', birthdate: '1990-05-17', address: { city: 'Manchester', line1: '2 High Street', postalCode: 'M4 1AA' } }
        const client = createAjv()
        assert.equal(client.validate(hint.schema, details), true)
        assert.equal(client.validate(hint.schema, { fullName: 'Jane Roe' }), false)
        const partial = await patch('profile', userId, { input: { details: { fullName: 'Jane Roe' } } })
        assertRefused(partial, 400, 'request_invalid')
        assert.ok(partial.json<{ details: { violations: { property: string; rule: string }[] } }>().details.violations.some((v) => v.property === 'input.details.birthdate' && v.rule === 'required'))
        const alone = await patch('profile', userId, { input: { details, fullName: 'Jane Roe' } })
        assertRefused(alone, 400, 'request_invalid')
        const underage = await patch('profile', userId, { input: { details: { ...details, birthdate: new Date().toISOString().slice(0, 10) } } })
        assertRefused(underage, 409, 'date_invalid')
        assert.equal(underage.json<{ details: Json }>().details.property, 'input.details.birthdate')
        assert.equal((await overview(userId)).processes.profile!.status, 'pending', 'refused answers change nothing')

        const answered = await patch('profile', userId, { input: { details } }, { 'accept-language': 'fr' })
        assert.equal(answered.status, 200, answered.body)
        const profile = answered.json<{ profile: Process }>().profile
        assert.equal(profile.status, 'ok')
        assert.equal(profile.hint, undefined, 'no hint once complete')
        assert.deepEqual(profile.input, { fullName: 'Jane Roe', birthdate: '1990-05-17', primaryCitizenship: 'GB', address: { country: 'GB', subdivision: 'GB-MAN', ...details.address } })
        assert.equal(answered.headers['content-language'], 'fr')
        assert.deepEqual(await statusEvents(userId, 'profile'), ['ok'])
      })

      test('the region of residence changes only on a partner-verified proof of address; otherwise the profile ignores it, with a warning', async () => {
        const userId = await newUser(COMPLETE_PROFILE)
        const overviewRules = async () => ((await overview(userId)).processes.profile!.verification as unknown as { rules: { address: { rules: Json } } }).rules.address.rules
        assert.deepEqual((await overviewRules()).subdivision, { presence: 'optional', editable: false })
        const updated = await patch('profile', userId, { input: { fullName: 'John Q Doe', address: { subdivision: 'GB-LND', city: 'London' } } })
        assert.equal(updated.status, 200, updated.body)
        const { profile, warnings } = updated.json<{ profile: Process; warnings: Json }>()
        assert.deepEqual(warnings, {
          input: [
            {
              code: 'verification_rule_violated',
              message: "Field 'input.address.subdivision' was ignored as it is not editable",
              details: { property: 'input.address.subdivision', rule: 'editable' },
            },
          ],
        })
        assert.deepEqual({ name: profile.input!.fullName, address: profile.input!.address }, { name: 'John Q Doe', address: { ...COMPLETE_PROFILE.address, city: 'London' } })
        const same = (await patch('profile', userId, { input: { address: { subdivision: 'GB-MAN' } } })).json<Json>()
        assert.equal(same.warnings, undefined, 'the region it already has changes nothing')

        const refused = await patch('address', userId, { input: { address: { subdivision: 'GB-LND' } } })
        assertRefused(refused, 409, 'operation_not_allowed', 'subdivision-update-non-authoritative-proof-of-address')
        assert.equal(refused.json().message, "Partner-verified 'proof-of-address' is required to update subdivision")

        const fileId = await uploadedFile(suite.ctx, suite.token, userId, { category: 'document', contentType: 'application/pdf' })
        const person = { givenName: 'John', familyName: 'Doe', address: { ...COMPLETE_PROFILE.address, city: 'London', subdivision: 'GB-LND' } }
        await ok('proof-of-address', 'proofOfAddress', userId, { type: 'document-submission', input: { media: [{ context: 'address-proof', fileId }] }, output: { provider: 'sumsub', person, verifiedAt: PAST } })
        assert.deepEqual((await overviewRules()).subdivision, { presence: 'optional', editable: true })
        const moved = await ok('address', 'address', userId, { input: { address: { subdivision: 'GB-LND' } } })
        assert.equal((moved.input!.address as Json).subdivision, 'GB-LND')

        // In the United States the state of residence is set once.
        const american = await newUser({ primaryCitizenship: 'US', address: { country: 'US', subdivision: 'US-CA' }, termsOfService: 'general-us-hq' })
        assertRefused(await patch('address', american, { input: { address: { subdivision: 'US-NY' } } }), 409, 'operation_not_allowed', 'subdivision-update-restricted-by-residence-country')
        // A region not yet declared may be.
        const undeclared = await newUser({ address: { country: 'GB' } })
        assert.equal(((await ok('address', 'address', undeclared, { input: { address: { subdivision: 'GB-LND' } } })).input!.address as Json).subdivision, 'GB-LND')
      })
    })

    describe('identity and proof of address (service-verified through the sandbox provider)', () => {
      const electronicIdentity = (familyName: string) => ({
        type: 'electronic-verification',
        input: { data: { givenName: 'John', familyName, birthdate: '1987-01-01', citizenshipCountry: 'GB' } },
      })

      test('an approved check is running, then ok; a rejected one fails and may be submitted again; ok is final', async () => {
        const userId = await newUser()
        const rejected = await ok('identity', 'identity', userId, electronicIdentity('Rejected'))
        assert.deepEqual({ status: rejected.status, type: rejected.type, model: rejected.verification.model }, { status: 'failed', type: 'electronic-verification', model: 'service-verified' })
        assert.equal(rejected.output!.reason, 'data-mismatch')
        assert.equal(rejected.output!.provider, 'sandbox')
        const approved = await ok('identity', 'identity', userId, electronicIdentity('Doe'))
        assert.equal(approved.status, 'ok')
        assert.deepEqual(await statusEvents(userId, 'identity'), ['running', 'failed', 'running', 'ok'])
        assertRefused(await patch('identity', userId, electronicIdentity('Doe')), 409, 'operation_not_allowed', 'kyc-process-update-not-allowed')
      })

      test('proof of address fails for the documented test address', async () => {
        const userId = await newUser()
        const body = (line1: string) => ({ type: 'electronic-verification', input: { data: { givenName: 'John', familyName: 'Doe', address: { country: 'GB', city: 'Manchester', line1, postalCode: 'M4 1AA' } } } })
        const failed = await ok('proof-of-address', 'proofOfAddress', userId, body('1 Rejected Street'))
        assert.deepEqual({ status: failed.status, reason: failed.output!.reason }, { status: 'failed', reason: 'address-mismatch' })
        assert.equal((await ok('proof-of-address', 'proofOfAddress', userId, body('1 High Street'))).status, 'ok')
      })

      test('a document submission is checked with the uploaded files and the declared profile', async () => {
        const userId = await newUser(COMPLETE_PROFILE)
        const fileId = await uploadedFile(suite.ctx, suite.token, userId)
        const identity = await ok('identity', 'identity', userId, { type: 'document-submission', input: { media: [{ context: 'photo-document-front', fileId }] } })
        assert.deepEqual({ status: identity.status, type: identity.type, model: identity.verification.model }, { status: 'ok', type: 'document-submission', model: 'service-verified' })
        assert.deepEqual(identity.input, { media: [{ context: 'photo-document-front', fileId }] })
        const output = identity.output as { provider: string; document: { type: string; country: string }; person: Json; verifiedAt: string }
        assert.deepEqual({ provider: output.provider, type: output.document.type, country: output.document.country }, { provider: 'sandbox', type: 'passport', country: 'GB' })
        assert.deepEqual(output.person, { givenName: 'John', familyName: 'Doe', birthdate: '1987-01-01', address: COMPLETE_PROFILE.address })

        const rejected = await newUser({ ...COMPLETE_PROFILE, fullName: 'John Rejected' })
        const rejectedFile = await uploadedFile(suite.ctx, suite.token, rejected)
        const failed = await ok('identity', 'identity', rejected, { type: 'document-submission', input: { media: [{ context: 'photo-document-front', fileId: rejectedFile }] } })
        assert.deepEqual({ status: failed.status, reason: failed.output!.reason }, { status: 'failed', reason: 'provider-verification-rejected' })
        // What the document shows comes with the rejection (the reference's output always has it).
        assert.equal((failed.output!.document as Json).type, 'passport')
        assert.deepEqual(failed.output!.person, { givenName: 'John', familyName: 'Rejected', birthdate: '1987-01-01', address: COMPLETE_PROFILE.address })
      })

      test('an identity document that shows the declared address proves it: proof of address from identity', async () => {
        const userId = await newUser(COMPLETE_PROFILE)
        const fileId = await uploadedFile(suite.ctx, suite.token, userId)
        const output = {
          provider: 'veriff',
          document: { type: 'driving-license', number: 'DOE99801017JD9AB', country: 'GB' },
          person: { givenName: 'John', familyName: 'Doe', birthdate: '1987-01-01', address: { ...COMPLETE_PROFILE.address, line1: '1  high street', postalCode: 'm41aa' } },
          verifiedAt: PAST,
        }
        await ok('identity', 'identity', userId, { type: 'document-submission', input: { media: [{ context: 'photo-document-front', fileId }] }, output })
        const poa = (await overview(userId)).processes.proofOfAddress!
        assert.deepEqual(
          { status: poa.status, type: poa.type, verification: poa.verification, input: poa.input, output: poa.output },
          {
            status: 'ok',
            type: 'from-identity',
            verification: { model: 'partner-verified', method: 'automatic', triggers: ['identity'], dependencies: ['phone', 'profile'], submittable: false },
            input: undefined,
            output: { provider: 'veriff', person: { givenName: 'John', familyName: 'Doe', address: output.person.address }, verifiedAt: PAST },
          },
        )
        assert.deepEqual(await statusEvents(userId, 'proof-of-address'), ['ok'])
        assertRefused(await patch('proof-of-address', userId, { type: 'electronic-verification', input: { data: { givenName: 'John', familyName: 'Doe', address: COMPLETE_PROFILE.address } } }), 409, 'operation_not_allowed', 'kyc-process-update-not-allowed')

        // Another address, none on the document, or a passport (which shows no address): still to be given.
        const passport = { type: 'passport', number: '7700225VH', country: 'GB' }
        for (const [person, document] of [
          [{ ...output.person, address: { ...COMPLETE_PROFILE.address, line1: '9 Other Road' } }, output.document],
          [{ givenName: 'John', familyName: 'Doe', birthdate: '1987-01-01' }, output.document],
          [output.person, passport],
        ] as const) {
          const other = await newUser(COMPLETE_PROFILE)
          const file = await uploadedFile(suite.ctx, suite.token, other)
          await ok('identity', 'identity', other, { type: 'document-submission', input: { media: [{ context: 'photo-document-front', fileId: file }] }, output: { ...output, document, person } })
          const pending = (await overview(other)).processes.proofOfAddress!
          assert.deepEqual({ status: pending.status, type: pending.type }, { status: 'pending', type: 'none' })
        }
      })

      test('files must be uploaded, by the same user; the declared profile must be complete', async () => {
        const userId = await newUser(COMPLETE_PROFILE)
        const media = (fileId: string) => ({ type: 'document-submission', input: { media: [{ context: 'photo-document-front', fileId }] } })
        const pending = await uploadedFile(suite.ctx, suite.token, userId, { upload: false })
        assertRefused(await patch('identity', userId, media(pending)), 409, 'file_invalid')
        const unknown = await patch('identity', userId, media('0190a8c1-0000-7000-8000-000000000001'))
        assertRefused(unknown, 404, 'entity_not_found')
        assert.equal(unknown.json<{ details: Json }>().details.entity, 'file')
        const otherUser = await newUser()
        const othersFile = await uploadedFile(suite.ctx, suite.token, otherUser)
        assertRefused(await patch('identity', userId, media(othersFile)), 404, 'entity_not_found')
        const otherToken = await suite.ctx.token(await suite.ctx.newClient())
        const foreignUser = (await suite.ctx.createUser(otherToken, individualUser())).id
        const foreignFile = await uploadedFile(suite.ctx, otherToken, foreignUser)
        assertRefused(await patch('identity', userId, media(foreignFile)), 404, 'entity_not_found')

        const undeclared = await newUser()
        const file = await uploadedFile(suite.ctx, suite.token, undeclared)
        const missing = await patch('identity', undeclared, media(file))
        assertRefused(missing, 409, 'operation_not_allowed')
        assert.deepEqual(missing.json<{ details: { reasons: string[] } }>().details.reasons, ['missing-name', 'missing-birthdate'])
        const incomplete = await patch('proof-of-address', undeclared, { type: 'document-submission', input: { media: [{ context: 'address-proof', fileId: file }] } })
        assert.deepEqual(incomplete.json<{ details: { reasons: string[] } }>().details.reasons, ['missing-name', 'incomplete-address'])

        assert.equal((await overview(userId)).processes.identity!.status, 'pending')
        assert.deepEqual(await events(userId), [])
        assert.deepEqual(await events(undeclared), [])
      })

      test('proof of address by document: the declared address is checked', async () => {
        const userId = await newUser(COMPLETE_PROFILE)
        const fileId = await uploadedFile(suite.ctx, suite.token, userId, { category: 'document', contentType: 'application/pdf' })
        const poa = await ok('proof-of-address', 'proofOfAddress', userId, { type: 'document-submission', input: { media: [{ context: 'address-proof', fileId }] } })
        assert.equal(poa.status, 'ok')
        assert.deepEqual(poa.output!.person, { givenName: 'John', familyName: 'Doe', address: COMPLETE_PROFILE.address })

        const rejected = await newUser({ ...COMPLETE_PROFILE, address: { ...COMPLETE_PROFILE.address, line1: '1 Rejected Street' } })
        const rejectedFile = await uploadedFile(suite.ctx, suite.token, rejected)
        const failed = await ok('proof-of-address', 'proofOfAddress', rejected, { type: 'document-submission', input: { media: [{ context: 'address-proof', fileId: rejectedFile }] } })
        assert.deepEqual({ status: failed.status, reason: failed.output!.reason }, { status: 'failed', reason: 'address-mismatch' })
        assert.deepEqual(await statusEvents(rejected, 'proof-of-address'), ['running', 'failed'])
      })

      test('a partner-verified document submission stores what the client found', async () => {
        const userId = await newUser()
        const fileId = await uploadedFile(suite.ctx, suite.token, userId)
        const output = {
          provider: 'veriff',
          document: { type: 'passport', number: '7700225VH', country: 'GB', expiresAt: '2099-03-13' },
          person: { givenName: 'John', familyName: 'Doe', birthdate: '1987-01-01', gender: 'male' },
          verifiedAt: PAST,
        }
        assertRefused(await patch('identity', userId, { type: 'document-submission', input: { media: [{ context: 'photo-selfie', fileId }] }, output: { ...output, document: { ...output.document, expiresAt: '2001-01-01' } } }), 409, 'date_invalid')
        const identity = await ok('identity', 'identity', userId, { type: 'document-submission', input: { media: [{ context: 'photo-selfie', fileId }] }, output })
        assert.deepEqual({ status: identity.status, model: identity.verification.model, output: identity.output }, { status: 'ok', model: 'partner-verified', output })
      })

      test('when the provider cannot answer, the check goes back to pending and the client gets 503', async () => {
        const unreachable: KycProvider = {
          name: 'unreachable',
          checkIdentity: async () => {
            throw new Error('connect ECONNREFUSED')
          },
          checkProofOfAddress: async () => {
            throw new Error('connect ECONNREFUSED')
          },
          screen: async () => ({ approved: true }),
        }
        const { ctx } = suite
        const kyc = new KycService({ db: ctx.database.db, users: ctx.services.users, countries: ctx.services.countries, provider: unreachable, files: null })
        const userId = await newUser()
        const principal = { organizationId: ctx.client.organizationId, clientId: ctx.client.clientId, scopes: new Set<string>(), subject: 'user:individual' as const, userId }
        await assert.rejects(
          kyc.updateIdentity(principal, { type: 'electronic-verification', input: { data: { givenName: 'John', familyName: 'Doe', birthdate: '1987-01-01', citizenshipCountry: 'GB' } } }),
          (error: { code?: string; retryable?: boolean; retryAfterSeconds?: number }) => error.code === 'service_unavailable' && error.retryable === true && error.retryAfterSeconds === 30,
        )
        const identity = (await overview(userId)).processes.identity!
        assert.deepEqual({ status: identity.status, submittable: identity.verification.submittable }, { status: 'pending', submittable: true })
        assert.deepEqual(await statusEvents(userId, 'identity'), ['running', 'pending'])
        assert.equal((await ok('identity', 'identity', userId, electronicIdentity('Doe'))).status, 'ok', 'the next submission goes through')
      })

      test('a partner attestation makes it ok at once', async () => {
        const userId = await newUser()
        const identity = await ok('identity', 'identity', userId, { ...electronicIdentity('Doe'), output: { provider: 'veriff', verifiedAt: PAST } })
        assert.deepEqual({ status: identity.status, model: identity.verification.model, output: identity.output }, { status: 'ok', model: 'partner-verified', output: { provider: 'veriff', verifiedAt: PAST } })
        assert.deepEqual(await statusEvents(userId, 'identity'), ['ok'])
      })
    })

    describe('due diligence, crypto risk assessment and tax details', () => {
      const cdd = (deposits: string) => [
        { intent: { 'expected-activities': ['cryptocurrency_investing'] } },
        { 'financial-information': { 'source-of-funds': 'salary', 'annual-income-range': '40000-60000-GBP', 'expected-annual-deposits-range': deposits } },
        { employment: { status: 'employed' } },
      ]

      test('a high due diligence score requires enhanced due diligence', async () => {
        const low = await newUser()
        let last: Process | undefined
        for (const answers of cdd('0-5000-GBP')) last = await ok('customer-due-diligence', 'customerDueDiligence', low, { input: { answers } })
        assert.deepEqual({ status: last!.status, score: last!.output!.score }, { status: 'ok', score: 'low' })
        assert.equal((await overview(low)).processes.enhancedDueDiligence!.status, 'exempt')
        const lowFile = await uploadedFile(suite.ctx, suite.token, low, { category: 'document', contentType: 'application/pdf' })
        assertRefused(await patch('enhanced-due-diligence', low, { input: { media: [{ context: 'source-of-funds-proof', fileId: lowFile }] } }), 409, 'operation_not_allowed', 'kyc-process-status-exempt')

        const high = await newUser()
        for (const answers of cdd('100000-plus-GBP')) last = await ok('customer-due-diligence', 'customerDueDiligence', high, { input: { answers } })
        assert.equal(last!.output!.score, 'high')
        assert.equal((await overview(high)).processes.enhancedDueDiligence!.status, 'pending')
        assert.deepEqual(await statusEvents(high, 'enhanced-due-diligence'), ['pending'])
        assertRefused(await patch('customer-due-diligence', high, { input: { answers: cdd('0-5000-GBP')[0] } }), 409, 'operation_not_allowed', 'form-already-completed')

        const proof = await uploadedFile(suite.ctx, suite.token, high, { category: 'document', contentType: 'application/pdf' })
        const attached = await ok('enhanced-due-diligence', 'enhancedDueDiligence', high, { input: { media: [{ context: 'source-of-funds-proof', fileId: proof }] } })
        assert.deepEqual({ status: attached.status, input: attached.input }, { status: 'pending', input: { media: [{ context: 'source-of-funds-proof', fileId: proof }] } })
        const verified = await ok('enhanced-due-diligence', 'enhancedDueDiligence', high, { input: { media: [{ context: 'source-of-funds-proof', fileId: proof }] }, output: { verifiedAt: PAST } })
        assert.deepEqual({ status: verified.status, output: verified.output }, { status: 'ok', output: { verifiedAt: PAST } })
        assert.deepEqual(await statusEvents(high, 'enhanced-due-diligence'), ['pending', 'ok'])
        assertRefused(await patch('enhanced-due-diligence', high, { input: { media: [{ context: 'source-of-funds-proof', fileId: proof }] } }), 409, 'operation_not_allowed', 'kyc-process-update-not-allowed')
      })

      test('the crypto risk assessment approves understanding answers and allows 5 attempts', async () => {
        const userId = await newUser()
        const answers = (right: boolean) => [
          { 'loss-tolerance': { 'acceptable-loss': right ? 'full_loss_possible' : 'no_loss' } },
          { 'volatility-understanding': { 'expected-price-behaviour': 'highly_volatile' } },
          { 'regulatory-protection': { 'compensation-coverage': 'no_coverage' } },
          { 'complexity-acknowledgement': { 'product-mechanics': 'complex_and_risky' } },
        ]
        let last: Process | undefined
        for (let attempt = 1; attempt <= 4; attempt++) {
          for (const a of answers(false)) last = await ok('crypto-risk-assessment', 'cryptoRiskAssessment', userId, { input: { answers: a } })
          // Rejected with attempts left: pending again, and the next attempt waits 24 hours (`attempts.retryAt`).
          const { retryAt, ...attempts } = last!.output!.attempts as { retryAt: string }
          assert.deepEqual({ status: last!.status, result: last!.output!.result, attempts }, { status: 'pending', result: 'rejected', attempts: { used: attempt, maximum: 5 } })
          assert.equal(Date.parse(retryAt), Date.parse(String(last!.output!.verifiedAt)) + 24 * 3_600_000)
          const early = await patch('crypto-risk-assessment', userId, { input: { answers: answers(true)[0] } })
          assertRefused(early, 409, 'operation_not_allowed', 'kyc-process-update-not-allowed')
          assert.equal(early.json<{ details: { retryAt: string } }>().details.retryAt, retryAt)
          await pastRetryWait(userId)
        }
        for (const a of answers(false)) last = await ok('crypto-risk-assessment', 'cryptoRiskAssessment', userId, { input: { answers: a } })
        // The last attempt rejected: failed for good, and the user is offboarded within 30 days.
        const output = last!.output as { result: string; attempts: Json; offboard: { endsAt: string }; verifiedAt: string }
        assert.deepEqual({ status: last!.status, result: output.result, attempts: output.attempts }, { status: 'failed', result: 'rejected', attempts: { used: 5, maximum: 5 } })
        assert.deepEqual(output.offboard, { endsAt: new Date(Date.parse(output.verifiedAt) + 30 * 86_400_000).toISOString() })
        assert.deepEqual(await statusEvents(userId, 'crypto-risk-assessment'), ['failed'])
        assertRefused(await patch('crypto-risk-assessment', userId, { input: { answers: answers(true)[0] } }), 409, 'operation_not_allowed', 'kyc-process-update-not-allowed')
        assert.deepEqual((await overview(userId)).summary, { status: 'blocked', reason: 'crypto-risk-assessment-failed' })
        // Once its period is over, the offboarding is complete.
        await rewriteOutput(userId, 'crypto-risk-assessment', (o) => ({ ...o, offboard: { endsAt: PAST } }))
        assert.deepEqual((await overview(userId)).processes.cryptoRiskAssessment!.output!.offboard, { endsAt: PAST, completedAt: PAST })
      })

      test('a self-categorization statement rejected on its last attempt fails and offboards the user', async () => {
        const userId = await newUser()
        await ok('self-categorization-statement', 'selfCategorizationStatement', userId, { input: { answers: { investor: { type: 'restricted_investor' } } } })
        await rewriteState(userId, 'self-categorization-statement', { answered: ['investor'], attemptsUsed: 29 })
        const last = await ok('self-categorization-statement', 'selfCategorizationStatement', userId, {
          input: { answers: { 'investor-profile': { ...RESTRICTED_OK, 'invested-percentage': '50' } } },
        })
        const output = last.output as { attempts: Json; offboard: { endsAt: string }; verifiedAt: string }
        assert.deepEqual({ status: last.status, attempts: output.attempts }, { status: 'failed', attempts: { used: 30, maximum: 30 } })
        assert.equal(Date.parse(output.offboard.endsAt), Date.parse(output.verifiedAt) + 30 * 86_400_000)
        assert.deepEqual((await overview(userId)).summary, { status: 'blocked', reason: 'self-categorization-statement-failed' })
      })

      test('tax details are approved once complete', async () => {
        const userId = await newUser()
        const first = await ok('tax-details', 'taxDetails', userId, { input: { taxResidency: { countries: ['GB'] } } })
        assert.equal(first.status, 'pending')
        assert.deepEqual(Object.keys(first.hint!.schema.properties as Json), ['taxIdentification'])
        const invalid = await patch('tax-details', userId, { input: { taxIdentification: { documents: [{ country: 'GB', type: 'tin' }], certify: true } } })
        assertRefused(invalid, 400, 'request_invalid')
        const done = await ok('tax-details', 'taxDetails', userId, { input: { taxIdentification: { documents: [{ country: 'GB', type: 'tin', number: '6405444702' }], certify: true } } })
        assert.deepEqual({ status: done.status, result: done.output!.result }, { status: 'ok', result: 'approved' })
        assert.deepEqual(done.input, { taxResidency: { countries: ['GB'] }, taxIdentification: { documents: [{ country: 'GB', type: 'tin', number: '6405444702' }], certify: true } })
      })
    })

    describe('summary', () => {
      async function completeEverything(userId: string, familyName = 'Doe') {
        await ok('phone', 'phone', userId, { input: { phone: uniqueMobile(), country: 'GB' }, output: { verifiedAt: PAST } })
        await ok('email', 'email', userId, { output: { verifiedAt: PAST } })
        await ok('identity', 'identity', userId, { type: 'electronic-verification', input: { data: { givenName: 'John', familyName, birthdate: '1987-01-01', citizenshipCountry: 'GB' } } })
        await ok('proof-of-address', 'proofOfAddress', userId, { type: 'electronic-verification', input: { data: { givenName: 'John', familyName, address: COMPLETE_PROFILE.address } } })
        for (const answers of [
          { intent: { 'expected-activities': ['cryptocurrency_investing'] } },
          { 'financial-information': { 'source-of-funds': 'salary', 'annual-income-range': '40000-60000-GBP', 'expected-annual-deposits-range': '0-5000-GBP' } },
          { employment: { status: 'employed' } },
        ]) await ok('customer-due-diligence', 'customerDueDiligence', userId, { input: { answers } })
        for (const answers of [
          { 'loss-tolerance': { 'acceptable-loss': 'full_loss_possible' } },
          { 'volatility-understanding': { 'expected-price-behaviour': 'highly_volatile' } },
          { 'regulatory-protection': { 'compensation-coverage': 'no_coverage' } },
          { 'complexity-acknowledgement': { 'product-mechanics': 'complex_and_risky' } },
        ]) await ok('crypto-risk-assessment', 'cryptoRiskAssessment', userId, { input: { answers } })
        await ok('self-categorization-statement', 'selfCategorizationStatement', userId, { input: { answers: { investor: { type: 'high_net_worth_investor' } } } })
        await ok('self-categorization-statement', 'selfCategorizationStatement', userId, { input: { answers: { 'investor-profile': RESTRICTED_OK } } })
        await ok('tax-details', 'taxDetails', userId, { input: { taxResidency: { countries: ['GB'] } } })
        await ok('tax-details', 'taxDetails', userId, { input: { taxIdentification: { documents: [{ country: 'GB', type: 'tin', number: '6405444702' }], certify: true } } })
      }

      test('every process done: screening and risk run, the summary is ok, and the capability view agrees', async () => {
        const userId = await newUser({ ...COMPLETE_PROFILE, fullName: 'John Doe' })
        await completeEverything(userId)
        const { summary, processes } = await overview(userId)
        assert.deepEqual(
          Object.fromEntries(Object.entries(processes).map(([key, p]) => [key, p.status])),
          {
            profile: 'ok', address: 'ok', email: 'ok', phone: 'ok', identity: 'ok', proofOfAddress: 'ok', customerDueDiligence: 'ok',
            enhancedDueDiligence: 'exempt', cryptoRiskAssessment: 'ok', selfCategorizationStatement: 'ok', taxDetails: 'ok', screening: 'ok', risk: 'ok',
          },
        )
        assert.deepEqual(processes.screening!.output, { result: 'approved' })
        assert.deepEqual(summary, { status: 'ok', reason: 'none' })

        const statuses = await suite.ctx.services.kyc.statusesFor(suite.ctx.client.organizationId, userId)
        assert.deepEqual(statuses.phone, { status: 'ok', country: 'GB' })
        assert.deepEqual(statuses.address, { status: 'ok', residenceCountry: 'GB' })
        assert.equal(statuses['self-categorization-statement'].result, 'approved')
        assert.equal(statuses['self-categorization-statement'].investorType, 'high_net_worth_investor')
        assert.equal(statuses['customer-due-diligence'].score, 'low')
        assert.equal(statuses.risk.status, 'ok')
      })

      test('a sanctioned name is blocked by screening', async () => {
        const userId = await newUser({ ...COMPLETE_PROFILE, fullName: 'John Sanctioned' })
        await completeEverything(userId, 'Sanctioned')
        const { summary, processes } = await overview(userId)
        assert.equal(processes.screening!.status, 'failed')
        assert.deepEqual(summary, { status: 'blocked', reason: 'screening-rejected' })
        assert.deepEqual(await statusEvents(userId, 'screening'), ['failed'])
      })

      test('a user living where residents may not be served is restricted', async () => {
        const userId = await newUser({ primaryCitizenship: 'UA', address: { country: 'UA', subdivision: 'UA-09' }, termsOfService: 'general-bs-scb' })
        assert.deepEqual((await overview(userId)).summary, { status: 'restricted', reason: 'residence-country-restricted' })
        const elsewhere = await newUser({ primaryCitizenship: 'UA', address: { country: 'UA', subdivision: 'UA-30' }, termsOfService: 'general-bs-scb' })
        assert.deepEqual((await overview(elsewhere)).summary, { status: 'pending', reason: 'none' })
        assertRefused(await patch('phone', elsewhere, { input: { phone: '+5352345678', country: 'CU' } }), 409, 'country_not_supported')
      })

      test('statusesFor is 404 for another organization', async () => {
        const userId = await newUser()
        await assert.rejects(suite.ctx.services.kyc.statusesFor('0190a8c1-0000-7000-8000-00000000abcd', userId), { code: 'entity_not_found' })
      })
    })
  })
}
