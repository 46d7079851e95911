/**
 * Key rotation (src/modules/keys, `tessera keys`): the rings start from the environment's keys with nothing to
 * migrate; a rotation publishes the new keys, then seals and signs with them while old tokens keep verifying; the
 * re-seal moves every module's secrets (connector credentials, card numbers, webhook secrets) and they all still
 * open; retiring refuses while a key is needed; a change of root key; and a wrong key stops the start with a clear
 * message, never a 500 later.
 */
import assert from 'node:assert/strict'
import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { decodeProtectedHeader } from 'jose'
import { sql, type RawBuilder } from 'kysely'
import { buildApp, type Services } from '../src/app.ts'
import { migrateToLatest, openDatabase, type DatabaseHandle, type Engine } from '../src/db/database.ts'
import type { App } from '../src/http/types.ts'
import { loadOrCreateSecrets } from '../src/lib/data-dir.ts'
import { sealingKeyId } from '../src/lib/sealing.ts'
import { SigningKey } from '../src/modules/auth/index.ts'
import type { ClientCredentials } from '../src/modules/auth/clients.service.ts'
import { KeyRingError, type KeyView, type ResealReport } from '../src/modules/keys/index.ts'
import { basicAuth, bearer, ENGINES, individualUser, localContext, openPeerDatabase, openTestDatabase, testConfig, USER_IP, type TestContext, type TestResponse } from './helpers.ts'
import { openAccount, quoted, verifiedUser } from './money.ts'
import { cli, deployment } from './processes.ts'
import { createEndpoint, openPortal, secretOf } from './webhooks/portal.ts'

const CONNECTOR = '/kyc-connector/veriff/config'
/** Short enough that a new key activates (after twice this, on PostgreSQL) within a test. */
const REFRESH_MS = '100'
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const newRoot = () => randomBytes(32).toString('base64')
const newPem = () => generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()

/** A database that outlives the apps opened on it: a PGlite directory, or a schema of the test server. */
async function storage(engine: Engine): Promise<{ open: () => Promise<DatabaseHandle>; cleanup: () => Promise<void> }> {
  if (engine === 'pglite') {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-keys-'))
    return {
      open: async () => {
        const database = await openDatabase({ databaseUrl: null, databasePoolSize: 1, dataDir: dir })
        await migrateToLatest(database)
        return database
      },
      cleanup: async () => fs.rmSync(dir, { recursive: true, force: true }),
    }
  }
  const first = await openTestDatabase('postgres', testConfig())
  let handedOut = false
  return {
    open: async () => {
      if (!handedOut) {
        handedOut = true
        return first.database
      }
      return openPeerDatabase(first.database, 4)
    },
    cleanup: first.cleanup,
  }
}

interface Deployment {
  app: App
  services: Services
  ctx: TestContext
  request: TestContext['request']
  token(client: ClientCredentials): Promise<string>
  close(): Promise<void>
}

/** The app over `database` with the environment `env` (its keys); closing it closes the database. */
async function start(database: DatabaseHandle, env: Record<string, string>): Promise<Deployment> {
  const config = testConfig({ KEY_RING_REFRESH_MS: REFRESH_MS, ...env })
  const { app, services } = await buildApp({ config, database, secrets: loadOrCreateSecrets(null, config) })
  const ctx = localContext(app, services, database)
  return {
    app,
    services,
    ctx,
    request: ctx.request,
    async token(client) {
      const response = await ctx.request({
        method: 'POST',
        url: '/core/oauth2/token',
        headers: { authorization: basicAuth(client), 'content-type': 'application/x-www-form-urlencoded' },
        payload: 'grant_type=client_credentials',
      })
      assert.equal(response.status, 200, response.body)
      return response.json<{ access_token: string }>().access_token
    },
    close: () => app.close(),
  }
}

/** Starting over `database` must fail with KeyRingError; the database is closed after. */
async function refusedStart(database: DatabaseHandle, env: Record<string, string>, message: RegExp): Promise<void> {
  try {
    await assert.rejects(start(database, env), (error: unknown) => error instanceof KeyRingError && message.test(error.message))
  } finally {
    await database.close()
  }
}

const integration = (name: string) => ({ name, apiKey: `${randomBytes(12).toString('hex')}-api`, sharedSecretKey: `${randomBytes(12).toString('hex')}-shared`, processes: ['profile', 'identity'] })
type Config = { config: { integrations: { name: string; apiKey: string; sharedSecretKey: string }[] } }

/** What reading the connector configuration shows (masked secrets): the same before and after a re-seal proves they open. */
async function connectorView(request: TestContext['request'], token: string): Promise<Config['config']['integrations']> {
  const response = await request({ method: 'GET', url: CONNECTOR, headers: bearer(token) })
  assert.equal(response.status, 200, response.body)
  return response.json<Config>().config.integrations
}

const kidOf = (token: string) => decodeProtectedHeader(token).kid

async function jwksKids(request: TestContext['request']): Promise<string[]> {
  const response = await request({ method: 'GET', url: '/.well-known/jwks.json' })
  assert.equal(response.status, 200)
  return response.json<{ keys: { kid: string; d?: string }[] }>().keys.map((key) => {
    assert.equal(key.d, undefined, 'never a private key')
    return key.kid
  })
}

/** Every sealed value of the three modules, by the key id it names. */
async function sealedKeyIds(database: DatabaseHandle): Promise<{ connector: string[]; cards: string[]; webhooks: string[] }> {
  const ids = async (query: RawBuilder<{ key_id: string }>) => (await query.execute(database.db)).rows.map((row) => row.key_id)
  return {
    connector: await ids(sql<{ key_id: string }>`select split_part(v, '.', 2) as key_id from kyc_connector_configs, jsonb_array_elements(integrations) i, lateral (values (i->>'apiKey'), (i->>'sharedSecretKey')) f(v)`),
    cards: await ids(sql<{ key_id: string }>`select split_part(sealed_number, '.', 2) as key_id from external_accounts where sealed_number is not null`),
    webhooks: await ids(sql<{ key_id: string }>`select split_part(v, '.', 2) as key_id from webhook_endpoints, lateral (values (secret_sealed), (previous_secret_sealed)) f(v) where v is not null`),
  }
}

function assertRefused(promise: Promise<unknown>, message: RegExp): Promise<void> {
  return assert.rejects(promise, (error: unknown) => error instanceof Error && (error as { code?: string }).code === 'operation_not_allowed' && message.test(error.message))
}

for (const engine of ENGINES) {
  describe(`key rotation [${engine}]`, () => {
    const cleanups: (() => Promise<void>)[] = []
    after(async () => {
      for (const cleanup of cleanups.reverse()) await cleanup()
    })

    describe('rotate, re-seal, retire', () => {
      let subject: Deployment
      let database: DatabaseHandle
      const root = newRoot()
      const pem = newPem()
      let client: ClientCredentials
      let oldToken: string
      let connectorSecrets: ReturnType<typeof integration>[]
      let connectorBefore: Config['config']['integrations']
      let webhookSecret: string
      let portal: Record<string, string>
      let endpointId: string
      let depositor: { userId: string; eur: string; card: string }
      let rotated: KeyView[]
      const firstSealing = sealingKeyId(root)
      const firstSigning = new SigningKey(pem).kid

      before(async () => {
        const place = await storage(engine)
        cleanups.push(place.cleanup)
        database = await place.open()
        subject = await start(database, { SEALING_KEY: root, TOKEN_SIGNING_KEY: pem })
        cleanups.push(() => subject.close())
        client = await subject.services.clients.create({ name: 'Keys', scopes: '*' })
        oldToken = await subject.token(client)
        connectorSecrets = [integration('first'), integration('second')]
        assert.equal((await subject.request({ method: 'PUT', url: CONNECTOR, headers: bearer(oldToken), payload: { integrations: connectorSecrets } })).status, 200)
        connectorBefore = await connectorView(subject.request, oldToken)
        portal = await openPortal(subject.ctx, oldToken)
        endpointId = (await createEndpoint(subject.ctx, portal, { url: 'http://127.0.0.1:9/hooks', eventTypes: ['core.user.created'] })).id
        webhookSecret = (await secretOf(subject.ctx, portal, endpointId)).secret
        // A verified French user with an EUR account and a linked card: card deposits open the sealed number.
        const userId = await verifiedUser(subject.ctx, oldToken)
        const eur = await openAccount(subject.ctx, oldToken, userId, 'EUR')
        const linked = await subject.request({
          method: 'POST',
          url: '/core/external-accounts',
          headers: bearer(oldToken, userId),
          payload: { type: 'card', label: 'Card', number: '4242424242424242', securityCode: '123', expiryDate: { month: 12, year: new Date().getUTCFullYear() + 3 } },
        })
        assert.equal(linked.status, 201, linked.body)
        depositor = { userId, eur, card: linked.json<{ externalAccount: { id: string } }>().externalAccount.id }
      })

      /** A card deposit: the processor is called with the card's number, which must open. */
      async function cardDeposit(token: string): Promise<void> {
        const quote = await quoted(subject.ctx, token, depositor.userId, { origin: { type: 'external-account', id: depositor.card }, destination: { type: 'account', id: depositor.eur }, denomination: { asset: 'EUR', amount: '25' } })
        const response = await subject.request({
          method: 'POST',
          url: '/core/transactions',
          headers: { ...bearer(token, depositor.userId), 'idempotency-key': randomUUID() },
          payload: { quoteId: quote.id, params: { requirements: [{ name: 'authorize:3ds', returnUrl: 'https://shop.example/paid' }] } },
        })
        assert.equal(response.status, 201, response.body)
        const transaction = response.json<{ transaction: { id: string; status: string } }>().transaction
        assert.notEqual(transaction.status, 'failed')
        const payments = await subject.services.sandboxCardProcessor!.payments(client.organizationId)
        assert.ok(payments.some((payment) => payment.reference === transaction.id), 'the processor was asked to charge the card')
      }

      test("the rings start from the environment's keys: existing values and tokens need nothing migrated", async () => {
        const keys = await subject.services.keys.list()
        assert.deepEqual(keys.map(({ purpose, id, status, current }) => ({ purpose, id, status, current })).sort((a, b) => a.purpose.localeCompare(b.purpose)), [
          { purpose: 'derivation', id: firstSealing, status: 'active', current: true },
          { purpose: 'sealing', id: firstSealing, status: 'active', current: true },
          { purpose: 'signing', id: firstSigning, status: 'active', current: true },
        ])
        assert.equal(kidOf(oldToken), firstSigning)
        assert.deepEqual(await jwksKids(subject.request), [firstSigning])
        const sealed = await sealedKeyIds(database)
        assert.deepEqual([...new Set([...sealed.connector, ...sealed.webhooks])], [firstSealing], 'sealed under SEALING_KEY itself, as before the rings')
        assert.equal(sealed.cards.length, 1)
        const text = JSON.stringify(keys)
        assert.ok(!text.includes(root) && !text.includes('PRIVATE KEY'), 'the list never shows key material')
      })

      test('a rotation publishes both new keys at once; from their activation they seal and sign, and old tokens still verify', async () => {
        rotated = await subject.services.keys.rotate({ sealing: true, signing: true })
        assert.deepEqual(rotated.map((key) => key.purpose), ['sealing', 'signing'])
        const [sealing, signing] = rotated as [KeyView, KeyView]
        // On PostgreSQL a new key waits for every process to read it (twice KEY_RING_REFRESH_MS); one embedded process needs no wait.
        for (const key of rotated) assert.equal(new Date(key.activatesAt).getTime() - new Date(key.createdAt).getTime(), engine === 'pglite' ? 0 : 2 * Number(REFRESH_MS))
        assert.deepEqual((await jwksKids(subject.request)).sort(), [firstSigning, signing.id].sort(), 'the key set publishes old and new')
        await sleep(Math.max(0, new Date(signing.activatesAt).getTime() - Date.now()) + 20)

        const newToken = await subject.token(client)
        assert.equal(kidOf(newToken), signing.id)
        for (const token of [oldToken, newToken]) assert.deepEqual(await connectorView(subject.request, token), connectorBefore)
        // New values are sealed under the new key; the old ones still open.
        const third = integration('third')
        const other = await subject.services.clients.create({ name: 'Other', scopes: '*' })
        const otherToken = await subject.token(other)
        assert.equal((await subject.request({ method: 'PUT', url: CONNECTOR, headers: bearer(otherToken), payload: { integrations: [third] } })).status, 200)
        const sealed = await sealedKeyIds(database)
        assert.equal(sealed.connector.filter((id) => id === sealing.id).length, 2)
        assert.equal(sealed.connector.filter((id) => id === firstSealing).length, 4)
        assert.equal((await secretOf(subject.ctx, portal, endpointId)).secret, webhookSecret)
        await cardDeposit(newToken)

        const listed = await subject.services.keys.list()
        assert.deepEqual(listed.filter((key) => key.current).map((key) => key.id).sort(), [firstSealing, sealing.id, signing.id].sort(), 'the derivation root never rotates')
      })

      test('retiring refuses a key still needed, and says why', async () => {
        const [sealing, signing] = rotated as [KeyView, KeyView]
        await sleep(Number(REFRESH_MS) + 20)
        await assertRefused(subject.services.keys.retire(firstSealing), /value\(s\) are still sealed under key .*tessera keys reseal/)
        await assertRefused(subject.services.keys.retire(firstSigning), /Tokens signed with key .* may be valid until/)
        await assertRefused(subject.services.keys.retire(sealing.id), /is the newest sealing key/)
        await assertRefused(subject.services.keys.retire(signing.id), /is the newest signing key/)
        await assert.rejects(subject.services.keys.retire('no-such-key'), (error: unknown) => (error as { code?: string }).code === 'entity_not_found')
      })

      test('the re-seal moves every sealed value to the new key, online and idempotent, and every one still opens', async () => {
        const [sealing] = rotated as [KeyView]
        const report: ResealReport = await subject.services.keys.reseal({ batchSize: 1 })
        assert.equal(report.key, sealing.id)
        assert.deepEqual(Object.fromEntries(report.sets.map((set) => [set.name, [set.moved, set.unopenable.length]])), {
          'identity-verification connector secrets': [4, 0],
          'card numbers': [1, 0],
          'webhook endpoint secrets': [1, 0],
        })
        assert.deepEqual(report.remaining, {})
        const sealed = await sealedKeyIds(database)
        assert.deepEqual([...new Set([...sealed.connector, ...sealed.webhooks])], [sealing.id])
        assert.equal(sealed.cards.length, 1)
        assert.notEqual(sealed.cards[0], sealingKeyId(root), 'card numbers are sealed under a key derived for them')

        assert.deepEqual(await connectorView(subject.request, oldToken), connectorBefore)
        const inClear = await subject.services.kycConnector.integrationsFor(client.organizationId, 'veriff')
        assert.deepEqual(inClear?.map(({ apiKey, sharedSecretKey }) => [apiKey, sharedSecretKey]), connectorSecrets.map(({ apiKey, sharedSecretKey }) => [apiKey, sharedSecretKey]))
        assert.equal((await secretOf(subject.ctx, portal, endpointId)).secret, webhookSecret)
        await cardDeposit(oldToken)

        const again = await subject.services.keys.reseal()
        assert.deepEqual(again.sets.map((set) => set.moved), [0, 0, 0], 'a second run has nothing left to move')
      })

      test('once nothing needs them, old keys retire: their material is erased, the key set drops them, their tokens stop', async () => {
        const [, signing] = rotated as [KeyView, KeyView]
        const retired = await subject.services.keys.retire(firstSealing)
        assert.equal(retired.status, 'retired')
        assert.equal(retired.root, null)
        const row = await database.db.selectFrom('key_ring').selectAll().where('purpose', '=', 'sealing').where('id', '=', firstSealing).executeTakeFirstOrThrow()
        assert.equal(row.material, null)
        assert.deepEqual(await connectorView(subject.request, oldToken), connectorBefore)
        await assertRefused(subject.services.keys.retire(firstSealing), /already retired/)

        // Every token the old signing key made has expired, as if the access token lifetime had passed since the rotation.
        await sql`update key_ring set created_at = created_at - interval '3 hours', activates_at = activates_at - interval '3 hours' where purpose = 'signing'`.execute(database.db)
        assert.equal((await subject.services.keys.retire(firstSigning)).status, 'retired')
        assert.deepEqual(await jwksKids(subject.request), [signing.id])
        const refused = await subject.request({ method: 'GET', url: CONNECTOR, headers: bearer(oldToken) })
        assert.equal(refused.status, 401)
        assert.equal(refused.json().code, 'token_invalid')
        assert.deepEqual(await connectorView(subject.request, await subject.token(client)), connectorBefore)
      })
    })

    test('a deployment from before the rings keeps its sealed values and tokens: its keys become the first of each ring', async () => {
      const place = await storage(engine)
      cleanups.push(place.cleanup)
      const env = { SEALING_KEY: newRoot(), TOKEN_SIGNING_KEY: newPem() }
      const first = await start(await place.open(), env)
      const client = await first.services.clients.create({ name: 'Before', scopes: '*' })
      const token = await first.token(client)
      assert.equal((await first.request({ method: 'PUT', url: CONNECTOR, headers: bearer(token), payload: { integrations: [integration('kept')] } })).status, 200)
      const view = await connectorView(first.request, token)
      // What a database of an earlier version holds: sealed values and no ring.
      await first.ctx.database.db.deleteFrom('key_ring').execute()
      await first.close()

      const upgraded = await start(await place.open(), env)
      try {
        assert.deepEqual(await connectorView(upgraded.request, token), view)
        assert.equal((await upgraded.services.keys.list()).length, 3)
      } finally {
        await upgraded.close()
      }
    })

    test('a change of root key: both roots during the change, then the new one alone; stable keys do not change', async () => {
      const place = await storage(engine)
      cleanups.push(place.cleanup)
      const oldRoot = newRoot()
      const nextRoot = newRoot()
      const first = await start(await place.open(), { SEALING_KEY: oldRoot })
      const client = await first.services.clients.create({ name: 'Root', scopes: '*' })
      const token = await first.token(client)
      assert.equal((await first.request({ method: 'PUT', url: CONNECTOR, headers: bearer(token), payload: { integrations: [integration('root')] } })).status, 200)
      const view = await connectorView(first.request, token)
      const idempotencyKey = randomUUID()
      const body = individualUser()
      const createUser = (target: Deployment) =>
        target.request({ method: 'POST', url: '/core/users', headers: { ...bearer(token), 'x-service-user-ip': USER_IP, 'idempotency-key': idempotencyKey }, payload: body })
      const created = await createUser(first)
      assert.equal(created.status, 201)
      await first.close()

      await refusedStart(await place.open(), { SEALING_KEY: nextRoot }, /does not open: .* sealed under root key .*SEALING_KEY_PREVIOUS/)

      const during = await start(await place.open(), { SEALING_KEY: nextRoot, SEALING_KEY_PREVIOUS: oldRoot })
      try {
        assert.deepEqual(await connectorView(during.request, token), view)
        assert.equal((await during.services.keys.rewrap()).rewrapped, 3)
        assert.equal((await during.services.keys.rewrap()).rewrapped, 0, 'idempotent')
        assert.equal(new Set((await during.services.keys.list()).map((key) => key.root)).size, 1)
      } finally {
        await during.close()
      }

      const after = await start(await place.open(), { SEALING_KEY: nextRoot })
      try {
        assert.deepEqual(await connectorView(after.request, token), view)
        // Idempotency digests derive from the ring's derivation root, not from the root key: the replay still matches.
        const replay: TestResponse = await createUser(after)
        assert.equal(replay.status, 201, replay.body)
        assert.equal(replay.headers['idempotent-replayed'], 'true')
        assert.equal(replay.body, created.body)
      } finally {
        await after.close()
      }
      await refusedStart(await place.open(), { SEALING_KEY: oldRoot }, /does not open/)
    })

    test('the command line: list, rotate, reseal, retire as JSON; bad input and a wrong or foreign key exit 2 with a clear message', async () => {
      const scratch = await deployment(engine, 'keys')
      cleanups.push(scratch.cleanup)
      const env = { ...scratch.env, KEY_RING_REFRESH_MS: REFRESH_MS, LOG_LEVEL: 'silent' }
      const listed = await cli(['keys', 'list'], env)
      assert.equal(listed.code, 0, listed.stderr)
      const keys = JSON.parse(listed.stdout) as KeyView[]
      assert.deepEqual(keys.map((key) => key.purpose).sort(), ['derivation', 'sealing', 'signing'])
      const secrets = loadOrCreateSecrets(scratch.dataDir, { tokenSigningKey: null, sealingKey: null })
      assert.ok(!listed.stdout.includes(secrets.sealingKey) && !listed.stdout.includes('PRIVATE KEY'))

      const rotated = await cli(['keys', 'rotate', '--signing'], env)
      assert.equal(rotated.code, 0, rotated.stderr)
      const [added] = JSON.parse(rotated.stdout) as KeyView[]
      assert.equal(added!.purpose, 'signing')
      assert.ok(!rotated.stdout.includes('PRIVATE KEY'))
      const sealingRotation = JSON.parse((await cli(['keys', 'rotate', '--sealing'], env)).stdout) as KeyView[]
      const resealed = await cli(['keys', 'reseal', '--batch-size', '10'], env)
      assert.equal(resealed.code, 0, resealed.stderr)
      assert.equal((JSON.parse(resealed.stdout) as ResealReport).key, sealingRotation[0]!.id)

      const cases: [string[], RegExp][] = [
        [['keys', 'explode'], /Unknown keys command "explode"/],
        [['keys', 'rotate', '--everything'], /Unknown option '--everything'/],
        [['keys', 'list', '--sealing'], /apply to keys rotate only/],
        [['keys', 'reseal', '--batch-size', '0'], /--batch-size must be an integer/],
        [['keys', 'retire'], /Usage: tessera keys retire KEY_ID/],
        [['keys', 'retire', 'nope'], /cannot be found/],
        // Key ids are base64url: one may begin with '-', and is still an id, not an option.
        [['keys', 'retire', '-Zfoo123'], /cannot be found/],
        [['keys', 'retire', 'a', 'b'], /Usage: tessera keys retire KEY_ID/],
        [['keys', 'retire', added!.id], /is the newest signing key/],
      ]
      for (const [args, message] of cases) {
        const run = await cli(args, env)
        assert.equal(run.code, 2, `${args.join(' ')}: ${run.stderr}`)
        assert.match(run.stderr, message)
      }

      // A wrong root key stops the command and the server before anything is served.
      const wrongRoot = { ...env, SEALING_KEY: newRoot() }
      for (const args of [['keys', 'list'], ['serve']]) {
        const run = await cli(args, wrongRoot)
        assert.equal(run.code, 2, run.stderr)
        assert.match(run.stderr, /The key ring does not open: .* SEALING_KEY/)
        assert.ok(!run.stderr.includes(wrongRoot.SEALING_KEY))
      }
      const foreignSigningKey = await cli(['keys', 'list'], { ...env, TOKEN_SIGNING_KEY: newPem() })
      assert.equal(foreignSigningKey.code, 2)
      assert.match(foreignSigningKey.stderr, /TOKEN_SIGNING_KEY \(key id .*\) is not a key of this deployment's signing ring/)
      const missing = await cli(['serve'], { TESSERA_ENV: 'production', DATA_DIR: ':memory:', TOKEN_SIGNING_KEY: newPem(), PRICE_FEED: 'simulated' })
      assert.equal(missing.code, 2)
      assert.match(missing.stderr, /SEALING_KEY is required in production/)
    })
  })
}
