import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { Writable } from 'node:stream'
import { after, before, describe, test } from 'node:test'
import { sql } from 'kysely'
import { buildApp, loggerOptions } from '../src/app.ts'
import type { Db } from '../src/db/schema.ts'
import type { App } from '../src/http/types.ts'
import { loadOrCreateSecrets } from '../src/lib/data-dir.ts'
import { Sealer } from '../src/lib/sealing.ts'
import { eventsAbout } from '../src/modules/events/outbox.ts'
import type { KycConnectorService } from '../src/modules/kyc-connector/kyc-connector.service.ts'
import { basicAuth, bearer, ENGINES, openTestDatabase, testConfig, useApp, type TestContext, type TestResponse } from './helpers.ts'

const URL = '/kyc-connector/veriff/config'

/** A secret unlike any other text, so that finding it anywhere is proof of a leak. */
const newSecret = (label: string) => `${randomBytes(12).toString('hex')}-${label}`

interface IntegrationInput {
  name: string
  apiKey?: string
  sharedSecretKey?: string
  processes: string[]
}

interface ConfigBody {
  config: { integrations: { name: string; apiKey: string; sharedSecretKey: string; processes: string[] }[]; createdAt: string; updatedAt: string }
}

function integration(name: string, processes: string[] = ['profile', 'identity']): Required<IntegrationInput> {
  return { name, apiKey: newSecret('api'), sharedSecretKey: newSecret('shared'), processes }
}

/** The secrets a body carries. */
function secretsOf(integrations: IntegrationInput[]): string[] {
  return integrations.flatMap((i) => [i.apiKey, i.sharedSecretKey]).filter((s): s is string => s !== undefined)
}

function assertNoSecret(text: string, secrets: string[], where: string) {
  for (const secret of secrets) {
    // Whatever follows the four characters a mask shows.
    assert.ok(!text.includes(secret.slice(4)), `${where} reveals a secret: ${text}`)
  }
}

function assertError(response: TestResponse, status: number, code: string) {
  assert.equal(response.status, status, response.body)
  assert.equal(response.json().code, code, response.body)
}

function violationsOf(response: TestResponse): { property: string; rule: string }[] {
  assertError(response, 400, 'request_invalid')
  const details = response.json<{ details: { context: string; violations: { property: string; rule: string }[] } }>().details
  assert.equal(details.context, 'body')
  return details.violations
}

/** Every column of the organization's rows, as text. */
async function rawRows(ctx: TestContext, organizationId: string, table: 'kyc_connector_configs' | 'outbox_events'): Promise<string> {
  const rows = await sql<Record<string, unknown>>`select * from ${sql.table(table)} where organization_id = ${organizationId}`.execute(ctx.database.db)
  return rows.rows.map((row) => Object.values(row).map((value) => (value instanceof Date ? value.toISOString() : JSON.stringify(value))).join(' ')).join('\n')
}

for (const engine of ENGINES) {
  describe(`kyc connector configuration [${engine}]`, () => {
    const suite = useApp(engine)

    /** A new organization with a client holding every scope, and requests made as it. */
    async function tenant() {
      const client = await suite.ctx.newClient()
      const token = await suite.ctx.token(client)
      const headers = bearer(token)
      return {
        client,
        organizationId: client.organizationId,
        token,
        get: (url = URL) => suite.ctx.request({ method: 'GET', url, headers }),
        put: (body: unknown, url = URL) => suite.ctx.request({ method: 'PUT', url, headers, payload: body as Record<string, unknown> }),
      }
    }

    /** Proves a refused request changed nothing. */
    async function assertUnchanged(subject: Awaited<ReturnType<typeof tenant>>, previous: TestResponse) {
      const now = await subject.get()
      assert.equal(now.status, previous.status)
      assert.equal(now.body, previous.body)
    }

    test('GET before any PUT is 404 entity_not_found (provider-config)', async () => {
      const subject = await tenant()
      const response = await subject.get()
      assertError(response, 404, 'entity_not_found')
      assert.equal(response.json<{ details: { entity: string } }>().details.entity, 'provider-config')
      assert.equal(await suite.ctx.services.kycConnector.integrationsFor(subject.organizationId, 'veriff'), null)
    })

    test('PUT creates the configuration (200) with secrets masked; GET returns it; the server reads them in clear', async () => {
      const subject = await tenant()
      const integrations = [integration('integration-abc123', ['profile', 'address', 'identity', 'proof-of-address']), integration('integration-def456', ['address'])]
      const created = await subject.put({ integrations })
      assert.equal(created.status, 200, created.body)
      const { config } = created.json<ConfigBody>()
      assert.deepEqual(
        config.integrations,
        integrations.map((i) => ({ name: i.name, apiKey: `${i.apiKey.slice(0, 4)}****`, sharedSecretKey: `${i.sharedSecretKey.slice(0, 4)}****`, processes: i.processes })),
      )
      assert.equal(config.createdAt, config.updatedAt)
      assert.ok(Math.abs(Date.parse(config.createdAt) - Date.now()) < 60_000)

      const read = await subject.get()
      assert.equal(read.status, 200)
      assert.deepEqual(read.json(), created.json())

      assert.deepEqual(await suite.ctx.services.kycConnector.integrationsFor(subject.organizationId, 'veriff'), integrations)
    })

    test('secrets never appear unmasked in a response, successful or failing', async () => {
      const subject = await tenant()
      const first = integration('first')
      const bodies: unknown[] = [
        { integrations: [first] },
        // Failing bodies that carry secrets: each error must describe the problem without echoing them.
        { integrations: [{ ...integration('x'), processes: ['selfie'] }] },
        { integrations: [{ ...integration('x'), unexpected: newSecret('extra') }] },
        { integrations: [{ ...integration('x'), apiKey: `${newSecret('spaced')} tail` }] },
        { integrations: [{ ...integration('x'), sharedSecretKey: newSecret('long').repeat(40) }] },
        { integrations: [integration('dup'), integration('dup')] },
        { integrations: [{ name: 'new-one', apiKey: newSecret('half'), processes: ['identity'] }] },
        { integrations: [{ ...integration('x'), apiKey: 12345678 }], other: newSecret('top') },
        { integrations: integration('not-an-array') },
        { integrations: [integration('replaced')] },
      ]
      const secrets: string[] = []
      for (const body of bodies) {
        secrets.push(...JSON.stringify(body).match(/[0-9a-f]{24}-(api|shared|extra|spaced|long|half|top)/g)!)
        const response = await subject.put(body)
        assert.ok(response.status === 200 || response.status === 400, response.body)
        assertNoSecret(response.body + JSON.stringify(response.headers), secrets, `PUT ${response.status}`)
      }
      const read = await subject.get()
      assert.equal(read.status, 200)
      assertNoSecret(read.body, secrets, 'GET')
    })

    test('secrets never appear in any column of the database; the stored values are sealed for their place', async () => {
      const subject = await tenant()
      const integrations = [integration('one'), integration('two', ['address'])]
      assert.equal((await subject.put({ integrations })).status, 200)
      const columns = await rawRows(suite.ctx, subject.organizationId, 'kyc_connector_configs')
      assertNoSecret(columns, secretsOf(integrations), 'kyc_connector_configs')
      const events = await rawRows(suite.ctx, subject.organizationId, 'outbox_events')
      assertNoSecret(events, secretsOf(integrations), 'outbox_events')

      const row = await suite.ctx.database.db.selectFrom('kyc_connector_configs').selectAll().where('organization_id', '=', subject.organizationId).executeTakeFirstOrThrow()
      assert.equal(row.provider, 'veriff')
      const sealer = new Sealer(suite.ctx.secrets.sealingKey)
      for (const [index, stored] of row.integrations.entries()) {
        assert.match(stored.apiKey, /^v1\./)
        const context = (field: string) => ['kyc-connector', subject.organizationId, 'veriff', stored.name, field]
        assert.equal(sealer.open(stored.apiKey, context('apiKey')), integrations[index]!.apiKey)
        assert.equal(sealer.open(stored.sharedSecretKey, context('sharedSecretKey')), integrations[index]!.sharedSecretKey)
        assert.throws(() => sealer.open(stored.apiKey, context('sharedSecretKey')))
      }
    })

    test('a sealed value copied to another row does not open: the read fails loudly instead of using it', async () => {
      const victim = await tenant()
      const attacker = await tenant()
      const victimSecrets = integration('shared-name')
      assert.equal((await victim.put({ integrations: [victimSecrets] })).status, 200)
      assert.equal((await attacker.put({ integrations: [integration('shared-name')] })).status, 200)
      const db = suite.ctx.database.db
      const victimRow = await db.selectFrom('kyc_connector_configs').select('integrations').where('organization_id', '=', victim.organizationId).executeTakeFirstOrThrow()
      await db
        .updateTable('kyc_connector_configs')
        .set({ integrations: JSON.stringify(victimRow.integrations) })
        .where('organization_id', '=', attacker.organizationId)
        .execute()

      const response = await attacker.get()
      assertError(response, 500, 'internal_error')
      assertNoSecret(response.body, secretsOf([victimSecrets]), 'GET of a swapped row')
      await assert.rejects(suite.ctx.services.kycConnector.integrationsFor(attacker.organizationId, 'veriff'), /does not open/)
      // Keeping a swapped secret by omitting it does not launder it either.
      assertError(await attacker.put({ integrations: [{ name: 'shared-name', processes: ['profile'] }] }), 500, 'internal_error')
    })

    test('replacing re-seals every secret and moves updatedAt, never createdAt; omitted secrets are kept', async () => {
      const subject = await tenant()
      const kept = integration('kept')
      const rotated = integration('rotated')
      const created = (await subject.put({ integrations: [kept, rotated] })).json<ConfigBody>().config
      const sealedBefore = await rawRows(suite.ctx, subject.organizationId, 'kyc_connector_configs')
      await new Promise((resolve) => setTimeout(resolve, 5))

      const newRotated = { ...integration('rotated'), processes: ['proof-of-address'] }
      const added = integration('added')
      const replaced = await subject.put({ integrations: [{ name: 'kept', processes: ['address'] }, newRotated, added] })
      assert.equal(replaced.status, 200, replaced.body)
      const config = replaced.json<ConfigBody>().config
      assert.equal(config.createdAt, created.createdAt)
      assert.ok(Date.parse(config.updatedAt) > Date.parse(created.updatedAt))
      assert.deepEqual(config.integrations.map((i) => [i.name, i.apiKey, i.processes]), [
        ['kept', `${kept.apiKey.slice(0, 4)}****`, ['address']],
        ['rotated', `${newRotated.apiKey.slice(0, 4)}****`, ['proof-of-address']],
        ['added', `${added.apiKey.slice(0, 4)}****`, ['profile', 'identity']],
      ])
      assert.deepEqual(await suite.ctx.services.kycConnector.integrationsFor(subject.organizationId, 'veriff'), [
        { ...kept, processes: ['address'] },
        newRotated,
        added,
      ])

      // The same secrets sent again are sealed again, with fresh IVs.
      const again = [kept, newRotated]
      assert.equal((await subject.put({ integrations: again })).status, 200)
      const sealedAfter = await rawRows(suite.ctx, subject.organizationId, 'kyc_connector_configs')
      const sealedTexts = (text: string) => new Set(text.match(/v1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+/g))
      const overlap = [...sealedTexts(sealedAfter)].filter((value) => sealedTexts(sealedBefore).has(value))
      assert.deepEqual(overlap, [])

      // An integration left out of the body is gone.
      assert.deepEqual((await subject.get()).json<ConfigBody>().config.integrations.map((i) => i.name), ['kept', 'rotated'])
    })

    test('every change records a config.updated event in the outbox, without secrets', async () => {
      const subject = await tenant()
      const integrations = [integration('evented', ['identity'])]
      assert.equal((await subject.put({ integrations })).status, 200)
      assert.equal((await subject.put({ integrations: [{ name: 'evented', processes: ['profile'] }] })).status, 200)
      assert.equal((await subject.put({ integrations: [{ name: 'x', processes: ['profile'] }] })).status, 400)
      const events = await eventsAbout(suite.ctx.database.db, subject.organizationId, { type: 'provider-config', id: 'veriff' })
      assert.deepEqual(
        events.map((e) => [e.type, e.data]),
        [
          ['kyc-connector.veriff.config.updated', { provider: 'veriff', integrations: [{ name: 'evented', processes: ['identity'] }] }],
          ['kyc-connector.veriff.config.updated', { provider: 'veriff', integrations: [{ name: 'evented', processes: ['profile'] }] }],
        ],
      )
    })

    test('integration names are unique within a configuration (400, nothing changes)', async () => {
      const subject = await tenant()
      assert.equal((await subject.put({ integrations: [integration('a')] })).status, 200)
      const previous = await subject.get()
      const violations = violationsOf(await subject.put({ integrations: [integration('a'), integration('b'), integration('a')] }))
      assert.deepEqual(violations, [{ property: 'integrations[2].name', rule: 'unique' }])
      await assertUnchanged(subject, previous)
    })

    test('a new integration must bring both secrets; an existing one may omit them (400 otherwise, nothing changes)', async () => {
      const subject = await tenant()
      assert.deepEqual(violationsOf(await subject.put({ integrations: [{ name: 'a', processes: ['profile'] }] })), [
        { property: 'integrations[0].apiKey', rule: 'required' },
        { property: 'integrations[0].sharedSecretKey', rule: 'required' },
      ])
      assertError(await subject.get(), 404, 'entity_not_found')
      assert.equal((await subject.put({ integrations: [integration('a')] })).status, 200)
      const previous = await subject.get()
      const { apiKey } = integration('b')
      assert.deepEqual(violationsOf(await subject.put({ integrations: [{ name: 'a', processes: ['profile'] }, { name: 'b', apiKey, processes: ['profile'] }] })), [
        { property: 'integrations[1].sharedSecretKey', rule: 'required' },
      ])
      await assertUnchanged(subject, previous)
    })

    test('malformed bodies are 400 request_invalid naming the violation, and change nothing', async () => {
      const subject = await tenant()
      assert.equal((await subject.put({ integrations: [integration('a')] })).status, 200)
      const previous = await subject.get()
      const good = integration('b')
      const cases: [unknown, string, string][] = [
        [{}, 'integrations', 'required'],
        [{ integrations: [] }, 'integrations', 'minItems'],
        [{ integrations: 'a' }, 'integrations', 'type'],
        [{ integrations: Array.from({ length: 21 }, (_, i) => integration(`n${i}`)) }, 'integrations', 'maxItems'],
        [{ integrations: [{ ...good, name: undefined }] }, 'integrations[0].name', 'required'],
        [{ integrations: [{ ...good, name: 42 }] }, 'integrations[0].name', 'type'],
        [{ integrations: [{ ...good, name: '' }] }, 'integrations[0].name', 'pattern'],
        [{ integrations: [{ ...good, name: ' padded' }] }, 'integrations[0].name', 'pattern'],
        [{ integrations: [{ ...good, name: 'nul\u0000inside' }] }, 'integrations[0].name', 'pattern'],
        [{ integrations: [{ ...good, name: 'n'.repeat(101) }] }, 'integrations[0].name', 'maxLength'],
        [{ integrations: [{ ...good, processes: undefined }] }, 'integrations[0].processes', 'required'],
        [{ integrations: [{ ...good, processes: [] }] }, 'integrations[0].processes', 'minItems'],
        [{ integrations: [{ ...good, processes: ['selfie'] }] }, 'integrations[0].processes[0]', 'enum'],
        [{ integrations: [{ ...good, processes: ['profile', 'profile'] }] }, 'integrations[0].processes', 'uniqueItems'],
        [{ integrations: [{ ...good, apiKey: 'short' }] }, 'integrations[0].apiKey', 'minLength'],
        [{ integrations: [{ ...good, apiKey: 'k'.repeat(513) }] }, 'integrations[0].apiKey', 'maxLength'],
        [{ integrations: [{ ...good, sharedSecretKey: 'has a space' }] }, 'integrations[0].sharedSecretKey', 'pattern'],
        [{ integrations: [{ ...good, sharedSecretKey: null }] }, 'integrations[0].sharedSecretKey', 'type'],
        [{ integrations: [{ ...good, region: 'eu' }] }, 'integrations[0].region', 'additionalProperties'],
        [{ integrations: [good], provider: 'sumsub' }, 'provider', 'additionalProperties'],
        [[good], '', 'type'],
      ]
      for (const [body, property, rule] of cases) {
        const violations = violationsOf(await subject.put(body))
        assert.ok(violations.some((v) => v.property === property && v.rule === rule), `${property} ${rule}: ${JSON.stringify(violations)}`)
      }
      const notJson = await suite.ctx.request({ method: 'PUT', url: URL, headers: { ...bearer(subject.token), 'content-type': 'application/json' }, payload: '{"integrations": [' })
      assertError(notJson, 400, 'request_invalid')
      const huge = await subject.put({ integrations: [{ ...good, name: 'x'.repeat(2_000_000) }] })
      assertError(huge, 413, 'content_too_large')
      const text = await suite.ctx.request({ method: 'PUT', url: URL, headers: { ...bearer(subject.token), 'content-type': 'text/plain' }, payload: 'integrations' })
      assertError(text, 415, 'content_type_unsupported')
      await assertUnchanged(subject, previous)
    })

    test("another organization's client sees 404 and writes only its own configuration", async () => {
      const owner = await tenant()
      const other = await tenant()
      const ownerIntegrations = [integration('mine')]
      assert.equal((await owner.put({ integrations: ownerIntegrations })).status, 200)
      const previous = await owner.get()

      const foreign = await other.get()
      assertError(foreign, 404, 'entity_not_found')
      assertNoSecret(foreign.body, secretsOf(ownerIntegrations), 'a foreign GET')
      // Omitting the secrets of the owner's integration name does not reach the owner's secrets.
      assert.deepEqual(violationsOf(await other.put({ integrations: [{ name: 'mine', processes: ['profile'] }] })), [
        { property: 'integrations[0].apiKey', rule: 'required' },
        { property: 'integrations[0].sharedSecretKey', rule: 'required' },
      ])

      const otherIntegrations = [integration('theirs', ['address'])]
      assert.equal((await other.put({ integrations: otherIntegrations })).status, 200)
      assert.deepEqual((await other.get()).json<ConfigBody>().config.integrations.map((i) => i.name), ['theirs'])
      await assertUnchanged(owner, previous)
      assert.deepEqual(await suite.ctx.services.kycConnector.integrationsFor(owner.organizationId, 'veriff'), ownerIntegrations)
      assert.deepEqual(await suite.ctx.services.kycConnector.integrationsFor(other.organizationId, 'veriff'), otherIntegrations)
    })

    test('each operation needs its own scope: write for PUT, read for GET (403 otherwise)', async () => {
      const subject = await tenant()
      assert.equal((await subject.put({ integrations: [integration('a')] })).status, 200)
      const previous = await subject.get()
      const reader = await suite.ctx.token(await suite.ctx.newClient('kyc-connector.veriff.config:read', subject.organizationId))
      const writer = await suite.ctx.token(await suite.ctx.newClient('kyc-connector.veriff.config:write', subject.organizationId))

      const denied = await suite.ctx.request({ method: 'PUT', url: URL, headers: bearer(reader), payload: { integrations: [integration('b')] } })
      assertError(denied, 403, 'token_insufficient_scopes')
      assert.deepEqual(denied.json<{ details: { security: { schemeScopes: string[] }[] } }>().details.security[0]!.schemeScopes, ['kyc-connector.veriff.config:write'])
      assertError(await suite.ctx.request({ method: 'GET', url: URL, headers: bearer(writer) }), 403, 'token_insufficient_scopes')
      await assertUnchanged(subject, previous)

      assert.equal((await suite.ctx.request({ method: 'GET', url: URL, headers: bearer(reader) })).status, 200)
      assert.equal((await suite.ctx.request({ method: 'PUT', url: URL, headers: bearer(writer), payload: { integrations: [integration('c')] } })).status, 200)
    })

    test('a provider that is not configured has no route (404 route_not_found)', async () => {
      const subject = await tenant()
      for (const url of ['/kyc-connector/sumsub/config', '/kyc-connector/VERIFF/config', '/kyc-connector/config']) {
        assertError(await subject.get(url), 404, 'route_not_found')
        assertError(await subject.put({ integrations: [integration('a')] }, url), 404, 'route_not_found')
      }
      await assert.rejects(suite.ctx.services.kycConnector.integrationsFor(subject.organizationId, 'sumsub'), /No identity-verification provider 'sumsub'/)
    })

    test('the scopes are in the OpenAPI security scheme, the authorization server metadata and the operations', async () => {
      const document = suite.ctx.app.swagger() as unknown as {
        components: { securitySchemes: { OAuth2: { flows: { clientCredentials: { scopes: Record<string, string> } } } } }
        paths: Record<string, Record<string, { operationId: string; security: { OAuth2: string[] }[]; 'x-service': unknown }>>
      }
      const scopes = document.components.securitySchemes.OAuth2.flows.clientCredentials.scopes
      assert.ok(scopes['kyc-connector.veriff.config:read'])
      assert.ok(scopes['kyc-connector.veriff.config:write'])
      assert.equal(scopes['kyc-connector.sumsub.config:read'], undefined)
      const operations = document.paths[URL]!
      assert.equal(operations.put!.operationId, 'kyc-connector.set-veriff-config')
      assert.deepEqual(operations.put!.security, [{ OAuth2: ['kyc-connector.veriff.config:write'] }])
      assert.deepEqual(operations.put!['x-service'], { security: { OAuth2: { subjects: ['client'] } } })
      assert.equal(operations.get!.operationId, 'kyc-connector.get-veriff-config')
      assert.deepEqual(operations.get!.security, [{ OAuth2: ['kyc-connector.veriff.config:read'] }])

      const metadata = await suite.ctx.request({ method: 'GET', url: '/.well-known/oauth-authorization-server' })
      const supported = metadata.json<{ scopes_supported: string[] }>().scopes_supported
      assert.ok(supported.includes('kyc-connector.veriff.config:read') && supported.includes('kyc-connector.veriff.config:write'))
    })
  })

  describe(`kyc connector configuration with several providers [${engine}]`, () => {
    const suite = useApp(engine, { KYC_CONNECTOR_PROVIDERS: 'veriff,sumsub' })

    test("each configured provider has its routes, scopes and configuration; one provider's scope does not open another's", async () => {
      const { ctx } = suite
      const client = await ctx.newClient()
      const token = await ctx.token(client)

      const scopes = (ctx.app.swagger() as unknown as { components: { securitySchemes: { OAuth2: { flows: { clientCredentials: { scopes: Record<string, string> } } } } } })
        .components.securitySchemes.OAuth2.flows.clientCredentials.scopes
      for (const provider of ['veriff', 'sumsub']) {
        assert.ok(scopes[`kyc-connector.${provider}.config:read`] && scopes[`kyc-connector.${provider}.config:write`], provider)
      }

      const veriff = [integration('v')]
      const sumsub = [integration('s', ['address'])]
      assert.equal((await ctx.request({ method: 'PUT', url: URL, headers: bearer(token), payload: { integrations: veriff } })).status, 200)
      assertError(await ctx.request({ method: 'GET', url: '/kyc-connector/sumsub/config', headers: bearer(token) }), 404, 'entity_not_found')
      const put = await ctx.request({ method: 'PUT', url: '/kyc-connector/sumsub/config', headers: bearer(token), payload: { integrations: sumsub } })
      assert.equal(put.status, 200, put.body)
      assert.deepEqual(await ctx.services.kycConnector.integrationsFor(client.organizationId, 'veriff'), veriff)
      assert.deepEqual(await ctx.services.kycConnector.integrationsFor(client.organizationId, 'sumsub'), sumsub)

      // The token endpoint grants a provider's scopes on request; they do not reach the other provider.
      const narrow = await ctx.token(client, 'kyc-connector.sumsub.config:read')
      assert.equal((await ctx.request({ method: 'GET', url: '/kyc-connector/sumsub/config', headers: bearer(narrow) })).status, 200)
      assertError(await ctx.request({ method: 'GET', url: URL, headers: bearer(narrow) }), 403, 'token_insufficient_scopes')
      const granted = await ctx.newClient('kyc-connector.sumsub.config:write', client.organizationId)
      assertError(await ctx.request({ method: 'PUT', url: URL, headers: bearer(await ctx.token(granted)), payload: { integrations: veriff } }), 403, 'token_insufficient_scopes')

      // A sealed value moved between providers of one organization does not open.
      const db = ctx.database.db
      const veriffRow = await db.selectFrom('kyc_connector_configs').select('integrations').where('organization_id', '=', client.organizationId).where('provider', '=', 'veriff').executeTakeFirstOrThrow()
      await db
        .updateTable('kyc_connector_configs')
        .set({ integrations: JSON.stringify(veriffRow.integrations.map((i) => ({ ...i, name: 's' }))) })
        .where('organization_id', '=', client.organizationId)
        .where('provider', '=', 'sumsub')
        .execute()
      await assert.rejects(ctx.services.kycConnector.integrationsFor(client.organizationId, 'sumsub'), /does not open/)
    })

    test('the token endpoint refuses a scope of a provider that is not configured', async () => {
      const response = await suite.ctx.request({
        method: 'POST',
        url: '/core/oauth2/token',
        headers: { authorization: basicAuth(suite.ctx.client), 'content-type': 'application/x-www-form-urlencoded' },
        payload: 'grant_type=client_credentials&scope=kyc-connector.onfido.config:read',
      })
      assert.equal(response.status, 400)
      assert.equal(response.json().error, 'invalid_scope')
    })
  })

  describe(`kyc connector logs [${engine}]`, () => {
    const lines: string[] = []
    let app: App
    let service: KycConnectorService
    let db: Db
    let organizationId: string
    let token: string

    before(async () => {
      const config = testConfig({ LOG_LEVEL: 'trace' })
      const { database, cleanup } = await openTestDatabase(engine, config)
      db = database.db
      const stream = new Writable({
        write(chunk: Buffer, _encoding, callback) {
          lines.push(chunk.toString('utf8'))
          callback()
        },
      })
      const built = await buildApp({ config, database, secrets: loadOrCreateSecrets(null, config), logger: { ...(loggerOptions('trace') as object), stream }, onClose: cleanup })
      app = built.app
      service = built.services.kycConnector
      const client = await built.services.clients.create({ name: 'Logged', scopes: '*' })
      organizationId = client.organizationId
      const issued = await app.inject({
        method: 'POST',
        url: '/core/oauth2/token',
        headers: { authorization: basicAuth(client), 'content-type': 'application/x-www-form-urlencoded' },
        payload: 'grant_type=client_credentials',
      })
      token = issued.json<{ access_token: string }>().access_token
    })
    after(() => app.close())

    test('no log line, at trace level, ever holds a secret: requests, failures and logged bodies', async () => {
      const integrations = [integration('logged'), integration('other', ['address'])]
      const secrets = secretsOf(integrations)
      const send = (method: 'GET' | 'PUT', payload?: unknown) =>
        app.inject({ method, url: URL, headers: { authorization: `Bearer ${token}` }, ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }) })

      assert.equal((await send('PUT', { integrations })).statusCode, 200)
      assert.equal((await send('GET')).statusCode, 200)
      const failing = [
        { integrations: [{ ...integrations[0]!, processes: ['selfie'] }] },
        { integrations: [integrations[0]!, integrations[0]!] },
        { integrations: [{ ...integrations[1]!, name: 'brand-new', sharedSecretKey: undefined }] },
      ]
      for (const body of failing) assert.equal((await send('PUT', body)).statusCode, 400)
      const notJson = await app.inject({ method: 'PUT', url: URL, headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, payload: `{"integrations":[{"apiKey":"${secrets[0]}"` })
      assert.equal(notJson.statusCode, 400)
      // A failure deep inside (a row that no longer opens) is logged as an error: still no secret.
      await sql`update kyc_connector_configs set integrations = jsonb_set(integrations, '{0,name}', '"renamed"') where organization_id = ${organizationId}`.execute(db)
      assert.equal((await send('GET')).statusCode, 500)
      await assert.rejects(service.integrationsFor(organizationId, 'veriff'))

      // Code that logs a body, or anything holding one, gets it redacted.
      app.log.info(integrations[0]!, 'an integration')
      app.log.info({ body: { integrations } }, 'a body')
      app.log.info({ req: { body: { integrations } } }, 'a request with its body')
      app.log.info({ config: { integration: integrations[1] } }, 'nested')

      const output = lines.join('')
      assert.ok(output.includes('"level":10') || output.includes('"level":20') || output.includes('"level":30'), 'the logger wrote lines')
      assert.ok(output.includes('"level":50'), 'the 500 was logged')
      assert.ok(output.includes('[redacted]'))
      assertNoSecret(output, secrets, 'the log')
    })
  })
}
