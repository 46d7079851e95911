/**
 * KYC widget sessions through the HTTP API (src/modules/widgets/kyc-sessions.*): creating them (processes given or
 * by default, the 409 reasons, validation), what their token may do (its user, its processes, document submissions
 * only, nothing else), the current session the hosted page reads, and the hosted page itself. Every response is
 * checked against the generated OpenAPI document by `ctx.request`.
 */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { bearer, ENGINES, individualUser, testConfig, uploadedFile, useApp, type TestContext, type TestResponse } from './helpers.ts'
import { assertError } from './money.ts'
import { loadOrCreateSecrets } from '../src/lib/data-dir.ts'

const SESSIONS = '/widgets/kyc/sessions'
const CURRENT = '/widgets/kyc/sessions/current'
const ALL = ['profile', 'identity', 'proof-of-address']
const PAST = '2024-01-02T03:04:05.000Z'

interface Session {
  flow: string
  url: string
  token: string
  data: { processes: string[] }
}

interface ProcessView {
  code: string
  status: string
  type?: string
  verification?: { model: string; rules?: Record<string, unknown> }
  input?: Record<string, unknown>
  output?: Record<string, unknown>
}

interface CurrentSession {
  session: { flow: string; data: { processes: string[] }; expiresAt: string }
  processes: Record<string, ProcessView>
  uploads: Record<string, { category: string; allowedContentTypes: string[]; minFileSize: number; maxFileSize: number; media: { context: string; required: boolean }[] }>
}

/** The claims of a JWT, read without checking anything (the service checks them). */
function claimsOf(token: string): Record<string, unknown> {
  const [, payload] = token.split('.')
  assert.ok(payload, 'a JWT')
  return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>
}

const scopesOf = (token: string) => String(claimsOf(token).scope).split(' ').filter((scope) => scope !== '').sort()

/** A British resident whose profile is complete (name, birth date, citizenship, address). */
function completeProfile(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return individualUser({
    fullName: 'Ada Lovelace',
    birthdate: '1990-05-17',
    address: { country: 'GB', subdivision: 'GB-MAN', city: 'Manchester', line1: '1 Deansgate', postalCode: 'M3 1AZ' },
    ...overrides,
  })
}

for (const engine of ENGINES) {
  describe(`KYC widget sessions [${engine}]`, () => {
    const suite = useApp(engine)
    const ctx = (): TestContext => suite.ctx

    const createSession = (userId: string | undefined, body: unknown, token = suite.token) =>
      ctx().request({ method: 'POST', url: SESSIONS, headers: bearer(token, userId), payload: body as Record<string, unknown> })

    async function session(userId: string, body: Record<string, unknown> = { flow: 'verify' }, token = suite.token): Promise<Session> {
      const response = await createSession(userId, body, token)
      assert.equal(response.status, 201, response.body)
      return response.json<{ session: Session }>().session
    }

    const current = (token: string, userId?: string) => ctx().request({ method: 'GET', url: CURRENT, headers: bearer(token, userId) })
    const newUser = async (body: Record<string, unknown> = individualUser()) => (await ctx().createUser(suite.token, body)).id

    /** The user's processes as the client reads them. */
    async function overview(userId: string): Promise<Record<string, ProcessView>> {
      const response = await ctx().request({ method: 'GET', url: '/core/kyc', headers: bearer(suite.token, userId) })
      assert.equal(response.status, 200, response.body)
      return response.json<{ processes: Record<string, ProcessView> }>().processes
    }

    const patch = (token: string, process: string, payload: unknown, userId?: string) =>
      ctx().request({ method: 'PATCH', url: `/core/kyc/processes/${process}`, headers: bearer(token, userId), payload: payload as Record<string, unknown> })

    /** Uploads the files a document process takes, with `token`, and submits them as the hosted widget does. */
    async function submitDocuments(token: string, userId: string, process: 'identity' | 'proof-of-address', viaSession = true): Promise<TestResponse> {
      const media =
        process === 'identity'
          ? [
              { context: 'photo-document-front', fileId: await uploadedFile(ctx(), token, userId) },
              { context: 'photo-selfie', fileId: await uploadedFile(ctx(), token, userId) },
            ]
          : [{ context: 'address-proof', fileId: await uploadedFile(ctx(), token, userId, { category: 'document', contentType: 'application/pdf' }) }]
      return patch(token, process, { type: 'document-submission', input: { media } }, viaSession ? undefined : userId)
    }

    /** The client attests the process itself (partner-verified). */
    async function attest(userId: string, process: 'identity' | 'proof-of-address'): Promise<void> {
      const body =
        process === 'identity'
          ? { type: 'electronic-verification', input: { data: { givenName: 'Ada', familyName: 'Lovelace', birthdate: '1990-05-17', citizenshipCountry: 'GB' } }, output: { provider: 'Acme KYC', verifiedAt: PAST } }
          : { type: 'electronic-verification', input: { data: { givenName: 'Ada', address: { country: 'GB', line1: '1 Deansgate' } } }, output: { provider: 'Acme KYC', verifiedAt: PAST } }
      const response = await patch(suite.token, process, body, userId)
      assert.equal(response.status, 200, response.body)
    }

    // --- Creating sessions -----------------------------------------------------------------------------------------

    describe('POST /widgets/kyc/sessions', () => {
      test('verify with processes: the session, its page, a token bound to the user and to those processes', async () => {
        const userId = await newUser(completeProfile())
        const response = await createSession(userId, { flow: 'verify', processes: ['identity', 'proof-of-address'] })
        assert.equal(response.status, 201, response.body)
        const created = response.json<{ session: Session }>().session
        assert.deepEqual(Object.keys(created).sort(), ['data', 'flow', 'token', 'url'])
        assert.equal(created.flow, 'verify')
        assert.equal(created.url, `${ctx().config.publicUrl}/hosted/kyc-widget/`)
        assert.deepEqual(created.data, { processes: ['identity', 'proof-of-address'] })

        const claims = claimsOf(created.token)
        assert.equal(claims.user_id, userId)
        assert.deepEqual(claims.widget, { kind: 'kyc', flow: 'verify', processes: ['identity', 'proof-of-address'] })
        assert.deepEqual(scopesOf(created.token), ['core.files:create', 'core.kyc.identity:update', 'core.kyc.proof-of-address:update', 'core.kyc:read'])
        assert.equal(claims.client_id, ctx().client.clientId)
        assert.equal(claims.organization_id, ctx().client.organizationId)
        assert.equal(Number(claims.exp) - Number(claims.iat), ctx().config.widgetSessionTtlSeconds)

        // Always walked in the order profile, identity, proof of address, whatever the order asked.
        const reordered = await session(userId, { flow: 'verify', processes: ['proof-of-address', 'profile'] })
        assert.deepEqual(reordered.data.processes, ['profile', 'proof-of-address'])
        assert.deepEqual(scopesOf(reordered.token), ['core.files:create', 'core.kyc.profile:update', 'core.kyc.proof-of-address:update', 'core.kyc:read'])
        const profileOnly = await session(userId, { flow: 'verify', processes: ['profile'] })
        assert.deepEqual(scopesOf(profileOnly.token), ['core.kyc.profile:update', 'core.kyc:read'])
      })

      test('without processes: those the user still has to submit, down to none', async () => {
        // A new user declared no name, birth date or full address: everything is left.
        const newcomer = await newUser()
        assert.deepEqual((await session(newcomer)).data.processes, ALL)

        const userId = await newUser(completeProfile())
        const first = await session(userId)
        assert.deepEqual(first.data.processes, ['identity', 'proof-of-address'])
        assert.equal((await submitDocuments(first.token, userId, 'identity')).status, 200)
        assert.deepEqual((await session(userId)).data.processes, ['proof-of-address'])

        // A rejected check is submitted again.
        const rejected = await newUser(completeProfile({ fullName: 'Ada Rejected' }))
        const rejectedSession = await session(rejected)
        const failed = await submitDocuments(rejectedSession.token, rejected, 'identity')
        assert.equal(failed.status, 200, failed.body)
        assert.equal(failed.json<{ identity: ProcessView }>().identity.status, 'failed')
        assert.deepEqual((await session(rejected)).data.processes, ['identity', 'proof-of-address'])

        // Nothing left: an empty session whose token may only read it.
        assert.equal((await submitDocuments(first.token, userId, 'proof-of-address')).status, 200)
        const done = await session(userId)
        assert.deepEqual(done.data.processes, [])
        assert.deepEqual(scopesOf(done.token), ['core.kyc:read'])
        const read = (await current(done.token)).json<CurrentSession>()
        assert.deepEqual(read.processes, {})
        assert.deepEqual(read.uploads, {})
        // Processes the user is done with may still be named: the widget shows them as done.
        assert.deepEqual((await session(userId, { flow: 'verify', processes: ['identity'] })).data.processes, ['identity'])
      })

      test('409 incomplete-profile: documents need a complete profile, or the profile in the same session', async () => {
        const userId = await newUser()
        for (const processes of [['identity'], ['proof-of-address'], ['identity', 'proof-of-address']]) {
          const response = await createSession(userId, { flow: 'verify', processes })
          assert.deepEqual(assertError(response, 409, 'operation_not_allowed'), { reasons: ['incomplete-profile'] }, processes.join())
          assert.match(response.json<{ message: string }>().message, new RegExp(`User cannot submit '${processes[0]}' due to incomplete process dependencies`))
        }
        assert.deepEqual((await session(userId, { flow: 'verify', processes: ['profile', 'identity'] })).data.processes, ['profile', 'identity'])
      })

      test('409 service-verified-identity-required (and proof of address): the client verified it itself', async () => {
        const userId = await newUser(completeProfile())
        await attest(userId, 'identity')
        const identity = await createSession(userId, { flow: 'verify', processes: ['identity', 'proof-of-address'] })
        assert.deepEqual(assertError(identity, 409, 'operation_not_allowed'), { reasons: ['service-verified-identity-required'] })
        assert.equal(identity.json<{ message: string }>().message, "Service-verified 'identity' is required to perform this operation")
        // By default the widget leaves it alone.
        assert.deepEqual((await session(userId)).data.processes, ['proof-of-address'])

        await attest(userId, 'proof-of-address')
        const proof = await createSession(userId, { flow: 'verify', processes: ['proof-of-address'] })
        assert.deepEqual(assertError(proof, 409, 'operation_not_allowed'), { reasons: ['service-verified-proof-of-address-required'] })
        assert.deepEqual((await session(userId)).data.processes, [])
      })

      test('bad bodies are 400 request_invalid with their violations', async () => {
        const userId = await newUser()
        const invalid: [string, unknown, string, string][] = [
          ['an unknown flow', { flow: 'onboard' }, 'flow', 'const'],
          ['no flow', { processes: ['profile'] }, 'flow', 'required'],
          ['no processes in the list', { flow: 'verify', processes: [] }, 'processes', 'minItems'],
          ['a process twice', { flow: 'verify', processes: ['identity', 'identity'] }, 'processes', 'uniqueItems'],
          ['a process the widget does not handle', { flow: 'verify', processes: ['phone'] }, 'processes[0]', 'enum'],
          ['processes that are not a list', { flow: 'verify', processes: 'identity' }, 'processes', 'type'],
          ['processes under data (the payment widget\'s shape)', { flow: 'verify', data: { processes: ['identity'] } }, 'data', 'additionalProperties'],
        ]
        for (const [label, body, property, rule] of invalid) {
          const details = assertError(await createSession(userId, body), 400, 'request_invalid') as { context: string; violations: { property: string; rule: string }[] }
          assert.equal(details.context, 'body', label)
          assert.ok(details.violations.some((violation) => violation.property === property && violation.rule === rule), `${label}: ${JSON.stringify(details.violations)}`)
        }
        const notJson = await ctx().request({ method: 'POST', url: SESSIONS, headers: { ...bearer(suite.token, userId), 'content-type': 'application/json' }, payload: '{"flow":' })
        assertError(notJson, 400, 'request_invalid')
      })

      test('scope widgets.kyc.sessions:create, an individual user to act for; the session never holds more than the client', async () => {
        const userId = await newUser(completeProfile())
        const without = await ctx().token(ctx().client, 'core.users:act-on-behalf-of core.kyc:read core.kyc.identity:update')
        assertError(await createSession(userId, { flow: 'verify' }, without), 403, 'token_insufficient_scopes')
        assertError(await createSession(undefined, { flow: 'verify' }), 403, 'subject_not_allowed')
        const business = (await ctx().createUser(suite.token, { type: 'business', email: `biz-${Date.now()}@example.com`, country: 'GB', legalEntityType: 'private-limited-company', termsOfService: 'general-gb-fca' })).id
        assertError(await createSession(business, { flow: 'verify' }), 403, 'subject_not_allowed')
        assertError(await createSession('0190a8c1-0000-7000-8000-000000000000', { flow: 'verify' }), 404, 'entity_not_found')

        // Narrowed to what the client's token holds: here it cannot read, so neither can the widget.
        const narrow = await ctx().token(ctx().client, 'widgets.kyc.sessions:create core.users:act-on-behalf-of core.kyc.identity:update')
        const created = await session(userId, { flow: 'verify', processes: ['identity'] }, narrow)
        assert.deepEqual(scopesOf(created.token), ['core.kyc.identity:update'])
        assertError(await current(created.token), 403, 'token_insufficient_scopes')

        // A session's own token cannot open another session.
        const own = await session(userId)
        assertError(await createSession(undefined, { flow: 'verify' }, own.token), 403, 'token_insufficient_scopes')
        assertError(await createSession(userId, { flow: 'verify' }, own.token), 403, 'token_insufficient_scopes')
      })
    })

    // --- The session's token ---------------------------------------------------------------------------------------

    describe('the session token', () => {
      test('GET /widgets/kyc/sessions/current: the session, its processes as they are, and what their documents take', async () => {
        const userId = await newUser()
        const created = await session(userId)
        const response = await current(created.token)
        assert.equal(response.status, 200, response.body)
        const body = response.json<CurrentSession>()
        assert.deepEqual(body.session.data, { processes: ALL })
        assert.equal(body.session.flow, 'verify')
        assert.equal(new Date(body.session.expiresAt).getTime() / 1000, claimsOf(created.token).exp)
        assert.deepEqual(Object.keys(body.processes).sort(), [...ALL].sort())
        const client = await overview(userId)
        assert.deepEqual(body.processes.profile, client.profile)
        assert.deepEqual(body.processes.identity, client.identity)
        assert.deepEqual(body.processes['proof-of-address'], client.proofOfAddress)
        assert.ok(body.processes.profile!.verification?.rules, 'the profile says which fields it needs')
        assert.deepEqual(body.uploads.identity, {
          category: 'image',
          allowedContentTypes: ['image/jpeg', 'image/png'],
          minFileSize: 1024,
          maxFileSize: 10485760,
          media: [{ context: 'photo-document-front', required: true }, { context: 'photo-document-back', required: false }, { context: 'photo-selfie', required: true }],
        })
        assert.deepEqual(body.uploads['proof-of-address'], {
          category: 'document',
          allowedContentTypes: ['application/pdf', 'image/jpeg', 'image/png'],
          minFileSize: 1024,
          maxFileSize: 10485760,
          media: [{ context: 'address-proof', required: true }],
        })
        // X-On-Behalf-Of naming its own user: the same.
        assert.equal((await current(created.token, userId)).status, 200)

        // Only the session's processes are shown.
        const narrow = await session(await newUser(completeProfile()), { flow: 'verify', processes: ['proof-of-address'] })
        const narrowBody = (await current(narrow.token)).json<CurrentSession>()
        assert.deepEqual(Object.keys(narrowBody.processes), ['proof-of-address'])
        assert.deepEqual(Object.keys(narrowBody.uploads), ['proof-of-address'])
      })

      test('only a KYC session\'s token reaches the current session', async () => {
        const userId = await newUser()
        assert.equal((assertError(await current(suite.token, userId), 404, 'entity_not_found') as { entity: string }).entity, 'session')
        assertError(await current(suite.token), 403, 'subject_not_allowed')
        assertError(await ctx().request({ method: 'GET', url: CURRENT }), 401, 'token_invalid')
        assertError(await current('not-a-token'), 401, 'token_invalid')
        const payment = await ctx().request({ method: 'POST', url: '/widgets/payment/sessions', headers: bearer(suite.token, userId), payload: { flow: 'select-for-deposit' } })
        assert.equal(payment.status, 201, payment.body)
        assertError(await current(payment.json<{ session: Session }>().session.token), 403, 'token_insufficient_scopes')
      })

      test('the widget\'s walk: profile, then documents uploaded and submitted, with the session token alone', async () => {
        const userId = await newUser()
        const { token } = await session(userId)
        const profile = await patch(token, 'profile', { input: { fullName: 'Grace Hopper', birthdate: '1985-12-09', address: { city: 'Leeds', line1: '2 Park Row', postalCode: 'LS1 5HD' } } })
        assert.equal(profile.status, 200, profile.body)
        assert.equal(profile.json<{ profile: ProcessView }>().profile.status, 'ok')

        const identity = await submitDocuments(token, userId, 'identity')
        assert.equal(identity.status, 200, identity.body)
        const identityView = identity.json<{ identity: ProcessView }>().identity
        assert.equal(identityView.status, 'ok')
        assert.equal(identityView.type, 'document-submission')
        const proof = await submitDocuments(token, userId, 'proof-of-address')
        assert.equal(proof.status, 200, proof.body)
        assert.equal(proof.json<{ proofOfAddress: ProcessView }>().proofOfAddress.status, 'ok')

        const processes = await overview(userId)
        assert.equal(processes.profile!.status, 'ok')
        assert.equal(processes.identity!.status, 'ok')
        assert.equal(processes.identity!.verification?.model, 'service-verified')
        assert.equal(processes.proofOfAddress!.status, 'ok')
        assert.equal(processes.screening!.status, 'ok', 'screening ran once profile and identity were ok')
        const events = await ctx().database.db.selectFrom('outbox_events').select('type').where('user_id', '=', userId).where('type', 'like', 'core.kyc.%').execute()
        for (const type of ['core.kyc.profile.status-changed', 'core.kyc.identity.status-changed', 'core.kyc.proof-of-address.status-changed']) {
          assert.ok(events.some((event) => event.type === type), type)
        }
        // The files it uploaded are the user's.
        const files = await ctx().database.db.selectFrom('files').select(['user_id']).where('organization_id', '=', ctx().client.organizationId).where('user_id', '=', userId).execute()
        assert.equal(files.length, 3)
      })

      test('only the session\'s processes: another process is refused (403), nothing changes', async () => {
        const userId = await newUser(completeProfile())
        const { token } = await session(userId, { flow: 'verify', processes: ['identity'] })
        const before = await overview(userId)
        assertError(await patch(token, 'profile', { input: { fullName: 'Someone Else' } }), 403, 'token_insufficient_scopes')
        assertError(await submitDocumentsRefused(token, userId, 'proof-of-address'), 403, 'token_insufficient_scopes')
        for (const [process, body] of [
          ['address', { input: { address: { city: 'York' } } }],
          ['email', { input: { email: 'other@example.com' } }],
          ['phone', { input: { phone: '+447400123456', country: 'GB' } }],
          ['customer-due-diligence', { input: { answers: { employment: { status: 'employed' } } } }],
        ] as const) {
          assertError(await patch(token, process, body), 403, 'token_insufficient_scopes')
        }
        assert.deepEqual(await overview(userId), before)
      })

      /** A proof-of-address submission with a file the client uploaded: what a session without that process sends. */
      async function submitDocumentsRefused(token: string, userId: string, process: 'proof-of-address'): Promise<TestResponse> {
        const fileId = await uploadedFile(ctx(), suite.token, userId, { category: 'document', contentType: 'application/pdf' })
        return patch(token, process, { type: 'document-submission', input: { media: [{ context: 'address-proof', fileId }] } })
      }

      test('documents for the service to check only: attesting (output) or electronic data is refused (409 permission-denied)', async () => {
        const userId = await newUser(completeProfile())
        const { token } = await session(userId)
        const fileId = await uploadedFile(ctx(), token, userId)
        const attempts: [string, Record<string, unknown>][] = [
          [
            'identity',
            {
              type: 'document-submission',
              input: { media: [{ context: 'photo-document-front', fileId }] },
              output: { provider: 'Me', document: { type: 'passport', number: 'X1', country: 'GB' }, person: { givenName: 'Ada', birthdate: '1990-05-17' }, verifiedAt: PAST },
            },
          ],
          ['identity', { type: 'electronic-verification', input: { data: { givenName: 'Ada', familyName: 'Lovelace', birthdate: '1990-05-17', citizenshipCountry: 'GB' } } }],
          ['identity', { type: 'electronic-verification', input: { data: { givenName: 'Ada', birthdate: '1990-05-17', citizenshipCountry: 'GB' } }, output: { provider: 'Me', verifiedAt: PAST } }],
          ['proof-of-address', { type: 'electronic-verification', input: { data: { givenName: 'Ada', address: { country: 'GB', line1: '1 Deansgate' } } }, output: { provider: 'Me', verifiedAt: PAST } }],
        ]
        for (const [process, body] of attempts) {
          assert.deepEqual(assertError(await patch(token, process, body), 409, 'operation_not_allowed'), { reasons: ['permission-denied'] }, `${process} ${JSON.stringify(body).slice(0, 60)}`)
        }
        const processes = await overview(userId)
        assert.equal(processes.identity!.status, 'pending')
        assert.equal(processes.proofOfAddress!.status, 'pending')
      })

      test('its own user only: another user or organization, their files and processes, are not found', async () => {
        const userId = await newUser(completeProfile())
        const stranger = await newUser(completeProfile())
        const { token } = await session(userId)
        const strangerBefore = await overview(stranger)

        // X-On-Behalf-Of naming anyone else: that user does not exist for the session.
        assert.equal((assertError(await current(token, stranger), 404, 'entity_not_found') as { entity: string }).entity, 'user')
        assertError(await patch(token, 'identity', { type: 'document-submission', input: { media: [{ context: 'photo-document-front', fileId: '0190a8c1-0000-7000-8000-000000000000' }] } }, stranger), 404, 'entity_not_found')
        assertError(await ctx().request({ method: 'POST', url: '/core/files', headers: bearer(token, stranger), payload: { category: 'image', contentType: 'image/png' } }), 404, 'entity_not_found')

        // Another user's file, or another organization's, is not one the session can submit.
        const strangersFile = await uploadedFile(ctx(), suite.token, stranger)
        const otherToken = await ctx().token(await ctx().newClient())
        const foreigner = (await ctx().createUser(otherToken, completeProfile())).id
        const foreignFile = await uploadedFile(ctx(), otherToken, foreigner)
        for (const fileId of [strangersFile, foreignFile]) {
          const response = await patch(token, 'identity', { type: 'document-submission', input: { media: [{ context: 'photo-document-front', fileId }, { context: 'photo-selfie', fileId }] } })
          assert.equal((assertError(response, 404, 'entity_not_found') as { entity: string }).entity, 'file')
        }
        assertError(await current(token, foreigner), 404, 'entity_not_found')
        assert.deepEqual(await overview(stranger), strangerBefore)
        assert.equal((await overview(userId)).identity!.status, 'pending')
      })

      test('refused on every other route (403), whatever its scopes', async () => {
        const userId = await newUser(completeProfile())
        const { token } = await session(userId)
        const fileId = await uploadedFile(ctx(), token, userId)
        const refused: [string, string, Record<string, unknown>?][] = [
          ['GET', '/core/kyc'],
          ['GET', '/core/users/me'],
          ['GET', '/core/files/settings'],
          ['GET', `/core/files/${fileId}`],
          ['GET', '/core/accounts'],
          ['GET', '/core/capabilities'],
          ['POST', '/widgets/payment/sessions', { flow: 'select-for-deposit' }],
          ['PUT', '/core/users/me/metadata', { tier: 'gold' }],
        ]
        for (const [method, url, payload] of refused) {
          const response = await ctx().request({ method: method as 'GET', url, headers: bearer(token), ...(payload ? { payload } : {}) })
          assertError(response, 403, 'token_insufficient_scopes')
        }
        // The payment widget's page reads its session with any widget token: a KYC session is not one.
        assert.equal((assertError(await ctx().request({ method: 'GET', url: '/widgets/payment/sessions/current', headers: bearer(token) }), 404, 'entity_not_found') as { entity: string }).entity, 'session')
      })

      test('a session of a revoked client stops working; a tampered token is refused', async () => {
        const other = await ctx().newClient('*', ctx().client.organizationId)
        const otherToken = await ctx().token(other)
        const userId = (await ctx().createUser(otherToken, completeProfile())).id
        const { token } = await session(userId, { flow: 'verify' }, otherToken)
        assert.equal((await current(token)).status, 200)
        await ctx().services.clients.revoke(other.clientId)
        assertError(await current(token), 401, 'token_revoked')
        assertError(await patch(token, 'profile', { input: { fullName: 'Ada Byron' } }), 401, 'token_revoked')

        const mine = await session(userId)
        const [header, payload, signature] = mine.token.split('.') as [string, string, string]
        const claims = { ...JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')), widget: { kind: 'kyc', flow: 'verify', processes: [...ALL, 'phone'] } }
        assertError(await current(`${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${signature}`), 401, 'token_invalid')
      })
    })

    // --- The hosted page -----------------------------------------------------------------------------------------------

    describe('hosted page and bundle', () => {
      test('GET /hosted/kyc-widget/: the page, scripts and styles from itself only, framed by any origin in sandbox', async () => {
        const page = await ctx().app.inject({ method: 'GET', url: '/hosted/kyc-widget/' })
        assert.equal(page.statusCode, 200, page.body)
        assert.match(String(page.headers['content-type']), /^text\/html/)
        const csp = String(page.headers['content-security-policy'])
        for (const directive of ["default-src 'none'", "script-src 'self'", "style-src 'self'", 'frame-ancestors *', "frame-src 'none'"]) assert.ok(csp.includes(directive), `${directive} in ${csp}`)
        assert.match(page.body, /<script type="module" src="\/hosted\/assets\/kyc-widget\.js"><\/script>/)
        assert.match(page.body, /<link rel="stylesheet" href="\/hosted\/assets\/kyc-widget\.css">/)
        assert.ok(page.body.includes(`<meta name="tessera-api-base" content="${ctx().config.publicUrl}">`))

        for (const [file, type] of [['kyc-widget.js', /^text\/javascript/], ['kyc-widget.css', /^text\/css/]] as const) {
          const asset = await ctx().app.inject({ method: 'GET', url: `/hosted/assets/${file}` })
          assert.equal(asset.statusCode, 200, file)
          assert.match(String(asset.headers['content-type']), type)
          assert.ok(asset.body.length > 500, `${file}: a real bundle`)
          assert.ok(!/https?:\/\/(?!localhost)[a-z]/i.test(asset.body.replace(/http:\/\/www\.w3\.org\/[^"']*/g, '')), `${file} loads nothing from elsewhere`)
        }
      })
    })
  })

  describe(`KYC widget sessions with ALLOWED_ORIGINS and a short TTL [${engine}]`, () => {
    const suite = useApp(engine, { ALLOWED_ORIGINS: 'https://shop.example', WIDGET_SESSION_TTL_SECONDS: '60' })

    test('the page may be framed by the allowed origins only; the session lasts WIDGET_SESSION_TTL_SECONDS', async () => {
      const page = await suite.ctx.app.inject({ method: 'GET', url: '/hosted/kyc-widget/' })
      const csp = String(page.headers['content-security-policy'])
      assert.ok(csp.includes('frame-ancestors https://shop.example'), csp)
      assert.ok(!csp.includes('frame-ancestors *'), csp)
      const userId = (await suite.ctx.createUser(suite.token)).id
      const response = await suite.ctx.request({ method: 'POST', url: SESSIONS, headers: bearer(suite.token, userId), payload: { flow: 'verify' } })
      assert.equal(response.status, 201, response.body)
      const claims = claimsOf(response.json<{ session: Session }>().session.token)
      assert.equal(Number(claims.exp) - Number(claims.iat), 60)
    })
  })

  describe(`KYC widget sessions in production [${engine}]`, () => {
    const suite = useApp(engine, {
      TESSERA_ENV: 'production',
      TOKEN_SIGNING_KEY: loadOrCreateSecrets(null, testConfig()).tokenSigningKey,
      SEALING_KEY: Buffer.alloc(32, 3).toString('base64'),
      PRICE_FEED: 'simulated',
    })

    test('without a KYC provider the widget is not enabled: 409 operation_not_allowed (permission-denied)', async () => {
      const userId = (await suite.ctx.createUser(suite.token, completeProfile())).id
      for (const body of [{ flow: 'verify' }, { flow: 'verify', processes: ['profile'] }]) {
        const response = await suite.ctx.request({ method: 'POST', url: SESSIONS, headers: bearer(suite.token, userId), payload: body })
        assert.deepEqual(assertError(response, 409, 'operation_not_allowed'), { reasons: ['permission-denied'] })
        assert.equal(response.json<{ message: string }>().message, 'The KYC widget is not enabled for your organization')
      }
    })
  })
}
