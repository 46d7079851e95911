/**
 * KYC connector ingestions (Veriff, Sumsub) through the API, on every engine: creation and its refusals, the
 * workers' import into the KYC processes and the user's files, every outcome the sandbox providers can give, the
 * providers' callbacks (a forged one is refused and wakes nothing), tenant isolation, and the reference's shapes.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { randomBytes, randomUUID } from 'node:crypto'
import { describe, test } from 'node:test'
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import { sql } from 'kysely'
import { eventsAbout } from '../src/modules/events/outbox.ts'
import { EVENT_CATALOGUE } from '../src/modules/webhooks/catalogue.ts'
import { SANDBOX_SUMSUB_TOKENS, SANDBOX_VERIFF_SESSIONS } from '../src/providers/kyc-connector/sandbox.ts'
import { sumsubDigest } from '../src/providers/kyc-connector/sumsub.ts'
import { veriffSignature } from '../src/providers/kyc-connector/veriff.ts'
import { bearer, ENGINES, individualUser, useApp, type TestContext, type TestResponse } from './helpers.ts'

type Json = Record<string, unknown>

const REFERENCE = path.resolve(import.meta.dirname, '../../shared/reference/kyc-connector-openapi.json')
const SUMSUB_WEBHOOK_SECRET = 'sumsub-webhook-secret-for-tests'
const ALL = ['profile', 'address', 'identity', 'proof-of-address']

/** Checks bodies against the upstream reference's own schemas, not only our generated document. */
function referenceValidator() {
  const document = JSON.parse(fs.readFileSync(REFERENCE, 'utf8')) as { components: { schemas: Json; responses: Record<string, { content: Record<string, { schema: Json }> }> } }
  const ajv = new Ajv2020({ strict: false, allErrors: true })
  addFormats.default(ajv)
  ajv.addSchema({ $id: 'reference.json', components: { schemas: document.components.schemas, responses: document.components.responses } })
  const rewrite = (schema: Json) => JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"reference.json#/components/')) as Json
  const check = (label: string, schema: Json, value: unknown) => {
    const validate = ajv.compile(rewrite(schema))
    assert.ok(validate(value), `${label} does not match the reference: ${ajv.errorsText(validate.errors)}\n${JSON.stringify(value).slice(0, 800)}`)
  }
  return {
    response: (name: string, response: TestResponse) => check(name, document.components.responses[name]!.content['application/json']!.schema, response.json()),
    schema: (name: string, value: unknown) => check(name, { $ref: `#/components/schemas/${name}` }, value),
  }
}

/** A Veriff session id whose last twelve digits choose the sandbox's answer. */
const session = (selector = randomBytes(6).toString('hex')) => `${randomUUID().slice(0, 24)}${selector}`
const token = (suffix = '') => `_act-sbx-jwt-${randomBytes(12).toString('hex')}${suffix}`

interface Ingestion {
  id: string
  userId: string
  status: string
  processes: string[]
  provider: string
  parameters: Json
  result?: Record<string, { status: string; data?: Json; files?: { id: string; context: string; category: string; size: number }[]; error?: { code: string; step?: string; message: string } }>
  startedAt?: string
  finishedAt?: string
}

function assertError(response: TestResponse, status: number, code: string, reason?: string) {
  assert.equal(response.status, status, response.body)
  const body = response.json<{ code: string; details?: { reasons?: string[] } }>()
  assert.equal(body.code, code, response.body)
  if (reason !== undefined) assert.deepEqual(body.details?.reasons, [reason], response.body)
}

for (const engine of ENGINES) {
  describe(`kyc connector ingestions [${engine}]`, () => {
    const suite = useApp(engine, { SUMSUB_WEBHOOK_SECRET, KYC_INGESTION_READINESS_TIMEOUT_SECONDS: '2' })
    const reference = fs.existsSync(REFERENCE) ? referenceValidator() : null

    /** A new organization whose client holds every scope, with a Veriff configuration of two integrations, and a user. */
    async function tenant(options: { configure?: boolean } = {}) {
      const ctx = suite.ctx
      const client = await ctx.newClient()
      const clientToken = await ctx.token(client)
      const integrations = [
        { name: 'all', apiKey: `key-${randomBytes(8).toString('hex')}`, sharedSecretKey: `secret-${randomBytes(12).toString('hex')}`, processes: ALL },
        { name: 'identity-only', apiKey: `key-${randomBytes(8).toString('hex')}`, sharedSecretKey: `secret-${randomBytes(12).toString('hex')}`, processes: ['identity'] },
      ]
      if (options.configure !== false) {
        const put = await ctx.request({ method: 'PUT', url: '/kyc-connector/veriff/config', headers: bearer(clientToken), payload: { integrations } })
        assert.equal(put.status, 200, put.body)
      }
      const user = await ctx.createUser(clientToken, individualUser())
      const headers = bearer(clientToken, user.id)
      return {
        client,
        clientToken,
        integrations,
        userId: user.id,
        headers,
        create: (provider: 'veriff' | 'sumsub', payload: Json, as = headers) => ctx.request({ method: 'POST', url: `/kyc-connector/${provider}/ingestions`, headers: as, payload }),
        get: (provider: 'veriff' | 'sumsub', id: string, as = headers) => ctx.request({ method: 'GET', url: `/kyc-connector/${provider}/ingestions/${id}`, headers: as }),
        list: (provider: 'veriff' | 'sumsub', query = '', as = headers) => ctx.request({ method: 'GET', url: `/kyc-connector/${provider}/ingestions${query}`, headers: as }),
      }
    }
    type Tenant = Awaited<ReturnType<typeof tenant>>

    async function created(subject: Tenant, provider: 'veriff' | 'sumsub', payload: Json): Promise<Ingestion> {
      const response = await subject.create(provider, payload)
      assert.equal(response.status, 201, response.body)
      reference?.response(`create-${provider}-ingestion-response`, response)
      const ingestion = response.json<{ ingestion: Ingestion }>().ingestion
      assert.equal(ingestion.status, 'queued')
      assert.equal(ingestion.result, undefined)
      return ingestion
    }

    /** Runs the workers, then reads the ingestion. */
    async function processed(subject: Tenant, provider: 'veriff' | 'sumsub', id: string): Promise<Ingestion> {
      await suite.ctx.services.worker.drain()
      const response = await subject.get(provider, id)
      assert.equal(response.status, 200, response.body)
      reference?.response(`get-${provider}-ingestion-response`, response)
      return response.json<{ ingestion: Ingestion }>().ingestion
    }

    async function kycOf(subject: Tenant): Promise<Record<string, Json>> {
      const response = await suite.ctx.request({ method: 'GET', url: '/core/kyc', headers: subject.headers })
      assert.equal(response.status, 200, response.body)
      return response.json<{ processes: Record<string, Json> }>().processes
    }

    /** Puts the ingestion's job an hour away, as one waiting for the provider's decision. */
    async function park(ctx: TestContext, ingestionId: string) {
      await sql`update jobs set run_at = now() + interval '1 hour' where type = 'kyc-connector.ingestion' and payload->>'ingestionId' = ${ingestionId}`.execute(ctx.database.db)
      return jobOf(ctx, ingestionId)
    }

    async function jobOf(ctx: TestContext, ingestionId: string) {
      const rows = await sql<{ status: string; run_at: Date; wakes: number }>`select status, run_at, wakes from jobs where type = 'kyc-connector.ingestion' and payload->>'ingestionId' = ${ingestionId}`.execute(ctx.database.db)
      assert.equal(rows.rows.length, 1)
      return rows.rows[0]!
    }

    test('Veriff: every process is imported from one session; the KYC processes, the user and their files follow', async () => {
      const subject = await tenant()
      const sessionId = session()
      const ingestion = await created(subject, 'veriff', { sessions: [{ sessionId, integrationName: 'all' }] })
      assert.deepEqual(ingestion.processes, ALL)
      assert.deepEqual(ingestion.parameters, { sessions: [{ processes: ALL, sessionId, integrationName: 'all' }] })
      assert.equal(ingestion.userId, subject.userId)

      const done = await processed(subject, 'veriff', ingestion.id)
      assert.equal(done.status, 'finished')
      assert.ok(done.startedAt && done.finishedAt && done.finishedAt >= done.startedAt)
      for (const key of ['profile', 'address', 'identity', 'proofOfAddress']) assert.equal(done.result?.[key]?.status, 'completed', JSON.stringify(done.result))
      const identity = done.result!.identity!
      assert.equal((identity.data!.document as Json).type, 'passport')
      assert.deepEqual(identity.files!.map((file) => file.context).sort(), ['photo-document-front', 'photo-selfie', 'video'])
      assert.deepEqual(done.result!.proofOfAddress!.files!.map((file) => file.context), ['address-proof'])
      assert.deepEqual(done.result!.address!.data, { country: 'GB', city: 'Manchester', line1: '1 High Street', postalCode: 'M4 1AA' })

      const kyc = await kycOf(subject)
      assert.equal(kyc.profile!.status, 'ok')
      assert.equal((kyc.profile!.input as Json).fullName, done.result!.profile!.data!.fullName)
      assert.equal(kyc.identity!.status, 'ok')
      assert.equal((kyc.identity!.output as Json).provider, 'Veriff')
      assert.deepEqual(((kyc.identity!.input as Json).media as Json[]).map((m) => m.fileId).sort(), identity.files!.map((file) => file.id).sort())
      assert.equal(kyc.proofOfAddress!.status, 'ok')
      const me = await suite.ctx.request({ method: 'GET', url: '/core/users/me', headers: subject.headers })
      assert.equal(me.json<{ user: Json }>().user.fullName, done.result!.profile!.data!.fullName)

      // The evidence is the user's own files now, with their content.
      for (const file of identity.files!) {
        const response = await suite.ctx.request({ method: 'GET', url: `/core/files/${file.id}`, headers: subject.headers })
        assert.equal(response.status, 200, response.body)
        assert.equal(response.json<{ file: { status: string } }>().file.status, 'uploaded')
        assert.equal(file.size, 4096)
      }

      // Announced: created, running, finished; each event carries the ingestion as the reference shows it.
      const events = await eventsAbout(suite.ctx.database.db, subject.client.organizationId, { type: 'ingestion', id: ingestion.id })
      assert.deepEqual(events.map((event) => event.type), ['kyc-connector.veriff.ingestion.created', 'kyc-connector.veriff.ingestion.status-changed', 'kyc-connector.veriff.ingestion.status-changed'])
      assert.deepEqual(events.map((event) => (event.data as { ingestion: Ingestion }).ingestion.status), ['queued', 'running', 'finished'])
      for (const event of events) reference?.schema('veriff-ingestion', (event.data as { ingestion: unknown }).ingestion)

      // Running the job again changes nothing: the ingestion is finished.
      assert.equal(await suite.ctx.services.kycIngestions.run(subject.client.organizationId, ingestion.id), null)
      assert.deepEqual((await subject.get('veriff', ingestion.id)).json(), { ingestion: done })

      const list = await subject.list('veriff')
      assert.equal(list.status, 200, list.body)
      reference?.response('list-veriff-ingestions-response', list)
      assert.deepEqual(list.json<{ ingestions: Ingestion[] }>().ingestions.map((i) => i.id), [ingestion.id])
    })

    test('Veriff: processes come from the sessions that provide them; the requested ones only', async () => {
      const subject = await tenant()
      const first = session()
      const second = session()
      const ingestion = await created(subject, 'veriff', {
        processes: ['identity', 'profile'],
        sessions: [{ sessionId: first, integrationName: 'identity-only' }, { sessionId: second, integrationName: 'all' }],
      })
      assert.deepEqual(ingestion.processes, ['profile', 'identity'])
      // A session naming no processes provides its integration's, among those asked for; the first source wins.
      assert.deepEqual(ingestion.parameters.sessions, [
        { processes: ['identity'], sessionId: first, integrationName: 'identity-only' },
        { processes: ['profile', 'identity'], sessionId: second, integrationName: 'all' },
      ])
      const done = await processed(subject, 'veriff', ingestion.id)
      assert.deepEqual(Object.keys(done.result!).sort(), ['identity', 'profile'])
      assert.equal(done.result!.identity!.status, 'completed')
      // Address was not asked for: it stays as the user declared it.
      assert.equal((await kycOf(subject)).address!.status, 'pending')
    })

    test('Veriff: each outcome of the provider is the process error the reference names', async () => {
      const subject = await tenant()
      const outcome = async (selector: string, processes = ALL) => {
        const ingestion = await created(subject, 'veriff', { processes, sessions: [{ sessionId: session(selector), integrationName: 'all' }] })
        const done = await processed(subject, 'veriff', ingestion.id)
        assert.equal(done.status, 'finished')
        return done.result!
      }
      for (const result of Object.values(await outcome(SANDBOX_VERIFF_SESSIONS.declined))) {
        assert.equal(result.status, 'failed')
        assert.equal(result.error!.code, 'veriff_session_not_approved')
        assert.equal(result.error!.step, 'fetch-provider-data')
      }
      for (const result of Object.values(await outcome(SANDBOX_VERIFF_SESSIONS.unknown))) assert.equal(result.error!.code, 'veriff_client_error')

      const files = await outcome(SANDBOX_VERIFF_SESSIONS.filesMissing, ['profile', 'identity'])
      assert.equal(files.profile!.status, 'completed')
      assert.equal(files.identity!.error!.code, 'provider_file_download_failed')
      assert.equal(files.identity!.error!.step, 'download-provider-files')

      // Without an address, the address cannot be imported, nor the proof of address that depends on it.
      const other = await tenant()
      const ingestion = await created(other, 'veriff', { sessions: [{ sessionId: session(SANDBOX_VERIFF_SESSIONS.withoutAddress), integrationName: 'all' }] })
      const done = await processed(other, 'veriff', ingestion.id)
      assert.equal(done.result!.address!.error!.code, 'provider_data_not_available')
      assert.equal(done.result!.proofOfAddress!.error!.code, 'dependent_process_failed')
      assert.equal(done.result!.identity!.status, 'completed')
      assert.equal((await kycOf(other)).proofOfAddress!.status, 'pending')
    })

    test('Veriff: a KYC process the client already completed is not overwritten (operation_not_allowed at update-kyc-process)', async () => {
      const subject = await tenant()
      const first = await created(subject, 'veriff', { processes: ['identity'], sessions: [{ sessionId: session(), integrationName: 'all' }] })
      assert.equal((await processed(subject, 'veriff', first.id)).result!.identity!.status, 'completed')
      const again = await created(subject, 'veriff', { processes: ['identity'], sessions: [{ sessionId: session(), integrationName: 'all' }] })
      const error = (await processed(subject, 'veriff', again.id)).result!.identity!.error!
      assert.equal(error.code, 'operation_not_allowed')
      assert.equal(error.step, 'update-kyc-process')
    })

    test('Veriff: sessions the configuration cannot read are refused (409 with the reason) and nothing is recorded', async () => {
      const subject = await tenant()
      const refused = async (payload: Json, reason: string) => assertError(await subject.create('veriff', payload), 409, 'operation_not_allowed', reason)
      await refused({ sessions: [{ sessionId: session(), integrationName: 'missing' }] }, 'ingestion-not-supported-by-provider-config')
      await refused({ sessions: [{ processes: ['profile'], sessionId: session(), integrationName: 'identity-only' }] }, 'ingestion-not-supported-by-provider-config')
      await refused({ processes: ['address'], sessions: [{ sessionId: session(), integrationName: 'identity-only' }] }, 'ingestion-process-not-resolvable')
      const duplicated = session()
      await refused({ sessions: [{ sessionId: duplicated, integrationName: 'all' }, { sessionId: duplicated.toUpperCase(), integrationName: 'identity-only' }] }, 'duplicate-session')
      const unconfigured = await tenant({ configure: false })
      assertError(await unconfigured.create('veriff', { sessions: [{ sessionId: session(), integrationName: 'all' }] }), 409, 'operation_not_allowed', 'provider-not-configured')
      for (const who of [subject, unconfigured]) assert.deepEqual((await who.list('veriff')).json<{ ingestions: unknown[] }>().ingestions, [])
    })

    test('malformed requests are 400 request_invalid and record nothing', async () => {
      const subject = await tenant()
      const sessionId = session()
      for (const payload of [
        {},
        { sessions: [] },
        { sessions: [{ sessionId: 'not-a-uuid', integrationName: 'all' }] },
        { sessions: [{ sessionId }] },
        { sessions: [{ sessionId, integrationName: ' all' }] },
        { sessions: [{ sessionId, integrationName: 'all', processes: [] }] },
        { sessions: [{ sessionId, integrationName: 'all' }], processes: ['identity', 'identity'] },
        { sessions: [{ sessionId, integrationName: 'all' }], processes: ['selfie'] },
        { sessions: [{ sessionId, integrationName: 'all' }], extra: true },
        { sessions: Array.from({ length: 11 }, () => ({ sessionId: session(), integrationName: 'all' })) },
      ]) {
        assertError(await subject.create('veriff', payload), 400, 'request_invalid')
      }
      for (const payload of [{}, { shareToken: '' }, { shareToken: ' token' }, { shareToken: 'x'.repeat(1025) }, { shareToken: token(), processes: [] }, { shareToken: 42 }]) {
        assertError(await subject.create('sumsub', payload as Json), 400, 'request_invalid')
      }
      // A malformed id names nothing, like an unknown one (the project's rule for every id in a path).
      for (const id of ['not-a-uuid', randomUUID()]) {
        const missing = await subject.get('veriff', id)
        assertError(missing, 404, 'entity_not_found')
        assert.equal(missing.json<{ details: { entity: string } }>().details.entity, 'ingestion')
      }
      for (const provider of ['veriff', 'sumsub'] as const) assert.deepEqual((await subject.list(provider)).json<{ ingestions: unknown[] }>().ingestions, [])
    })

    test('an ingestion is its user\'s alone: another user, another organization and the other provider see 404', async () => {
      const subject = await tenant()
      const ingestion = await created(subject, 'veriff', { processes: ['profile'], sessions: [{ sessionId: session(), integrationName: 'all' }] })
      const response = await subject.get('veriff', ingestion.id)
      assert.equal(response.status, 200)
      const otherUser = await suite.ctx.createUser(subject.clientToken)
      const stranger = await tenant()
      for (const headers of [bearer(subject.clientToken, otherUser.id), stranger.headers]) {
        const denied = await subject.get('veriff', ingestion.id, headers)
        assertError(denied, 404, 'entity_not_found')
        assert.equal(denied.json<{ details: { entity: string } }>().details.entity, 'ingestion')
        assert.deepEqual((await subject.list('veriff', '', headers)).json<{ ingestions: unknown[] }>().ingestions, [])
      }
      assertError(await subject.get('sumsub', ingestion.id), 404, 'entity_not_found')
    })

    test('each operation needs its scope and a user subject', async () => {
      const subject = await tenant()
      const ingestion = await created(subject, 'veriff', { processes: ['profile'], sessions: [{ sessionId: session(), integrationName: 'all' }] })
      const reader = await suite.ctx.newClient('core.users:act-on-behalf-of kyc-connector.veriff.ingestions:read', subject.client.organizationId)
      const readerHeaders = bearer(await suite.ctx.token(reader), subject.userId)
      assertError(await subject.create('veriff', { sessions: [{ sessionId: session(), integrationName: 'all' }] }, readerHeaders), 403, 'token_insufficient_scopes')
      assert.equal((await subject.get('veriff', ingestion.id, readerHeaders)).status, 200)
      assertError(await subject.get('sumsub', ingestion.id, readerHeaders), 403, 'token_insufficient_scopes')
      assertError(await subject.list('veriff', '', bearer(subject.clientToken)), 403, 'subject_not_allowed')
    })

    test('lists are newest first, a page at a time', async () => {
      const subject = await tenant()
      const ids = []
      for (let i = 0; i < 3; i += 1) ids.push((await created(subject, 'sumsub', { shareToken: token(), processes: ['profile'] })).id)
      const first = await subject.list('sumsub', '?perPage=2')
      reference?.response('list-sumsub-ingestions-response', first)
      const page = first.json<{ ingestions: Ingestion[]; pagination: { next?: string } }>()
      assert.deepEqual(page.ingestions.map((i) => i.id), [ids[2], ids[1]])
      const next = new URL(page.pagination.next!)
      assert.deepEqual((await subject.list('sumsub', next.search)).json<{ ingestions: Ingestion[] }>().ingestions.map((i) => i.id), [ids[0]])
    })

    test('Sumsub: a share token imports the applicant into every process', async () => {
      const subject = await tenant({ configure: false })
      const shareToken = token()
      const ingestion = await created(subject, 'sumsub', { shareToken })
      assert.deepEqual(ingestion.processes, ALL)
      assert.deepEqual(ingestion.parameters, { shareToken })
      const done = await processed(subject, 'sumsub', ingestion.id)
      assert.equal(done.status, 'finished')
      for (const key of ['profile', 'address', 'identity', 'proofOfAddress']) assert.equal(done.result?.[key]?.status, 'completed', JSON.stringify(done.result))
      // Sumsub's alpha-3 countries are Tessera's alpha-2 ones.
      assert.deepEqual(done.result!.profile!.data!.birthplace, { town: 'London', country: 'GB' })
      assert.equal((done.result!.identity!.data!.document as Json).country, 'GB')
      assert.deepEqual(done.result!.identity!.files!.map((file) => file.context), ['photo-document-front', 'photo-selfie'])
      assert.ok(done.result!.identity!.files!.every((file) => typeof (file as unknown as { providerDetails: Json }).providerDetails.fileId === 'string'))
      const kyc = await kycOf(subject)
      assert.equal(kyc.identity!.status, 'ok')
      assert.equal((kyc.identity!.output as Json).provider, 'Sumsub')
      assert.equal(kyc.proofOfAddress!.status, 'ok')
      const events = await eventsAbout(suite.ctx.database.db, subject.client.organizationId, { type: 'ingestion', id: ingestion.id })
      assert.deepEqual(events.map((event) => event.type), ['kyc-connector.sumsub.ingestion.created', 'kyc-connector.sumsub.ingestion.status-changed', 'kyc-connector.sumsub.ingestion.status-changed'])
      for (const event of events) reference?.schema('sumsub-ingestion', (event.data as { ingestion: unknown }).ingestion)
    })

    test('Sumsub: a rejected review, an invalid token and a review that never ends fail the processes as the reference names', async () => {
      const subject = await tenant({ configure: false })
      const run = async (suffix: string) => {
        const ingestion = await created(subject, 'sumsub', { shareToken: token(suffix), processes: ['profile', 'identity'] })
        return { ingestion, done: await processed(subject, 'sumsub', ingestion.id) }
      }
      const rejected = await run(SANDBOX_SUMSUB_TOKENS.rejected)
      assert.deepEqual(Object.values(rejected.done.result!).map((r) => r.error!.code), ['sumsub_applicant_review_state_invalid', 'sumsub_applicant_review_state_invalid'])
      const invalid = await run(SANDBOX_SUMSUB_TOKENS.invalid)
      assert.deepEqual(Object.values(invalid.done.result!).map((r) => r.error!.code), ['sumsub_client_error', 'sumsub_client_error'])

      // In review: the ingestion runs and waits; past the readiness timeout (2 s here) its processes fail.
      const pending = await run(SANDBOX_SUMSUB_TOKENS.pending)
      assert.equal(pending.done.status, 'running')
      assert.deepEqual(Object.values(pending.done.result!).map((r) => r.status), ['processing', 'processing'])
      await new Promise((resolve) => setTimeout(resolve, 2_100))
      await sql`update jobs set run_at = now() where type = 'kyc-connector.ingestion' and payload->>'ingestionId' = ${pending.ingestion.id}`.execute(suite.ctx.database.db)
      const timedOut = await processed(subject, 'sumsub', pending.ingestion.id)
      assert.equal(timedOut.status, 'finished')
      assert.deepEqual(Object.values(timedOut.result!).map((r) => r.error!.code), ['provider_data_readiness_timeout_exceeded', 'provider_data_readiness_timeout_exceeded'])
    })

    test('Veriff callbacks: only one signed with the integration\'s secret wakes the ingestion; forged ones are refused (403)', async () => {
      const subject = await tenant()
      const sessionId = session(SANDBOX_VERIFF_SESSIONS.inReview)
      const ingestion = await created(subject, 'veriff', { processes: ['profile'], sessions: [{ sessionId, integrationName: 'all' }] })
      assert.equal((await processed(subject, 'veriff', ingestion.id)).status, 'running')
      assert.ok((await jobOf(suite.ctx, ingestion.id)).run_at.getTime() > Date.now(), 'the job waits for its next look')
      const waiting = await park(suite.ctx, ingestion.id)

      const integration = subject.integrations[0]!
      const body = JSON.stringify({ status: 'success', verification: { id: sessionId, status: 'approved', code: 9001 } })
      const send = (payload: string, headers: Record<string, string>) =>
        suite.ctx.request({ method: 'POST', url: '/kyc-connector/veriff/callbacks', headers: { 'content-type': 'application/json', ...headers }, payload })
      const genuine = { 'x-auth-client': integration.apiKey, 'x-hmac-signature': veriffSignature(integration.sharedSecretKey, body) }
      const other = subject.integrations[1]!
      for (const [payload, headers] of [
        [body, { ...genuine, 'x-hmac-signature': veriffSignature('not-the-secret', body) }],
        [body, { ...genuine, 'x-hmac-signature': 'zz' }],
        [body, { 'x-auth-client': integration.apiKey }],
        [body, { ...genuine, 'x-auth-client': other.apiKey }],
        [body, { 'x-auth-client': other.apiKey, 'x-hmac-signature': veriffSignature(other.sharedSecretKey, body) }],
        [body.replace('approved', 'declined'), genuine],
        ['not json', { ...genuine, 'x-hmac-signature': veriffSignature(integration.sharedSecretKey, 'not json') }],
      ] as const) {
        assertError(await send(payload, headers), 403, 'signature_invalid')
      }
      const untouched = await jobOf(suite.ctx, ingestion.id)
      assert.equal(untouched.wakes, waiting.wakes)
      assert.equal(untouched.run_at.getTime(), waiting.run_at.getTime())

      const accepted = await send(body, genuine)
      assert.equal(accepted.status, 200, accepted.body)
      assert.deepEqual(accepted.json(), { received: true })
      const woken = await jobOf(suite.ctx, ingestion.id)
      assert.equal(woken.wakes, waiting.wakes + 1)
      assert.ok(woken.run_at.getTime() <= Date.now())
    })

    test('Sumsub callbacks: only the deployment\'s digest wakes the applicant\'s ingestion; forged ones are refused (403)', async () => {
      const subject = await tenant({ configure: false })
      const ingestion = await created(subject, 'sumsub', { shareToken: token(SANDBOX_SUMSUB_TOKENS.pending), processes: ['profile'] })
      assert.equal((await processed(subject, 'sumsub', ingestion.id)).status, 'running')
      let waiting = await park(suite.ctx, ingestion.id)
      const applicant = await sql<{ state: { applicantId: string } }>`select state from kyc_ingestions where id = ${ingestion.id}`.execute(suite.ctx.database.db)
      const applicantId = applicant.rows[0]!.state.applicantId
      assert.match(applicantId, /^[0-9a-f]{24}$/)

      const body = JSON.stringify({ applicantId, type: 'applicantReviewed', reviewStatus: 'completed', reviewResult: { reviewAnswer: 'GREEN' } })
      const send = (payload: string, headers: Record<string, string>) =>
        suite.ctx.request({ method: 'POST', url: '/kyc-connector/sumsub/callbacks', headers: { 'content-type': 'application/json', ...headers }, payload })
      for (const [payload, headers] of [
        [body, { 'x-payload-digest': sumsubDigest('another-secret', body), 'x-payload-digest-alg': 'HMAC_SHA256_HEX' }],
        [body, { 'x-payload-digest-alg': 'HMAC_SHA256_HEX' }],
        [body, { 'x-payload-digest': sumsubDigest(SUMSUB_WEBHOOK_SECRET, body), 'x-payload-digest-alg': 'HMAC_MD5_HEX' }],
        [body, { 'x-payload-digest': sumsubDigest(SUMSUB_WEBHOOK_SECRET, body, 'HMAC_SHA512_HEX'), 'x-payload-digest-alg': 'HMAC_SHA256_HEX' }],
        [body.replace('GREEN', 'RED'), { 'x-payload-digest': sumsubDigest(SUMSUB_WEBHOOK_SECRET, body), 'x-payload-digest-alg': 'HMAC_SHA256_HEX' }],
      ] as const) {
        assertError(await send(payload, headers), 403, 'signature_invalid')
      }
      assert.equal((await jobOf(suite.ctx, ingestion.id)).wakes, waiting.wakes)

      for (const algorithm of ['HMAC_SHA256_HEX', 'HMAC_SHA512_HEX', 'HMAC_SHA1_HEX'] as const) {
        const accepted = await send(body, { 'x-payload-digest': sumsubDigest(SUMSUB_WEBHOOK_SECRET, body, algorithm), 'x-payload-digest-alg': algorithm })
        assert.equal(accepted.status, 200, accepted.body)
        const woken = await jobOf(suite.ctx, ingestion.id)
        assert.equal(woken.wakes, waiting.wakes + 1, algorithm)
        assert.ok(woken.run_at.getTime() <= Date.now())
        waiting = await park(suite.ctx, ingestion.id)
      }
    })

    test('the ingestion events are in the webhook catalogue, their examples in the reference\'s shape', () => {
      for (const provider of ['sumsub', 'veriff']) {
        for (const what of ['created', 'status-changed']) {
          const entry = EVENT_CATALOGUE.find((candidate) => candidate.type === `kyc-connector.${provider}.ingestion.${what}`)
          assert.ok(entry?.sent, `${provider} ${what}`)
          reference?.schema(`${provider}-ingestion-webhook-event`, { id: randomUUID(), type: entry.type, createdAt: '2026-01-15T14:23:01.819Z', data: entry.example })
          reference?.schema(`${provider}-ingestion`, (entry.example as { ingestion: unknown }).ingestion)
        }
      }
    })

    test('the operations are in the OpenAPI document with the reference\'s ids, scopes and subjects', () => {
      const document = suite.ctx.app.swagger() as unknown as { paths: Record<string, Record<string, { operationId: string; security?: { OAuth2: string[] }[]; 'x-service'?: unknown }>> }
      for (const provider of ['sumsub', 'veriff']) {
        const list = document.paths[`/kyc-connector/${provider}/ingestions`]!
        assert.equal(list.post!.operationId, `kyc-connector.create-${provider}-ingestion`)
        assert.deepEqual(list.post!.security, [{ OAuth2: [`kyc-connector.${provider}.ingestions:create`] }])
        assert.deepEqual(list.post!['x-service'], { security: { OAuth2: { subjects: ['user:individual'] } } })
        assert.equal(list.get!.operationId, `kyc-connector.list-${provider}-ingestions`)
        const one = document.paths[`/kyc-connector/${provider}/ingestions/{ingestionId}`]!
        assert.equal(one.get!.operationId, `kyc-connector.get-${provider}-ingestion`)
        assert.deepEqual(one.get!.security, [{ OAuth2: [`kyc-connector.${provider}.ingestions:read`] }])
      }
    })
  })
}
