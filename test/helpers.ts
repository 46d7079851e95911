import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import fs, { readFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before } from 'node:test'
import type { InjectOptions } from 'fastify'
import pg from 'pg'
import { buildApp, type Services } from '../src/app.ts'
import { loadConfig, type Config } from '../src/config.ts'
import { migrateToLatest, openDatabase, type DatabaseHandle, type Engine } from '../src/db/database.ts'
import type { App } from '../src/http/types.ts'
import { loadOrCreateSecrets, type SandboxSecrets } from '../src/lib/data-dir.ts'
import type { ClientCredentials } from '../src/modules/auth/clients.service.ts'
import { OpenApiValidator } from './openapi-validator.ts'

/** The PostgreSQL server of the suite, as the application reaches it: directly, or through PgBouncer. */
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL || undefined
/**
 * The same server reached directly, when TEST_DATABASE_URL goes through PgBouncer (in transaction pooling mode):
 * databases are created there, and what needs a session of its own (LISTEN, migrations) connects there.
 */
export const TEST_DATABASE_DIRECT_URL = process.env.TEST_DATABASE_DIRECT_URL || TEST_DATABASE_URL
/** Whether the suite runs through a transaction-pooling proxy (see .ci/run). */
export const THROUGH_PGBOUNCER = TEST_DATABASE_URL !== undefined && TEST_DATABASE_DIRECT_URL !== TEST_DATABASE_URL

/**
 * Every engine the suite runs on here: PGlite always, PostgreSQL when TEST_DATABASE_URL is set; TEST_ENGINES (a
 * comma-separated list) keeps only some, e.g. `postgres` for CI's second pass through PgBouncer.
 */
export const ENGINES: Engine[] = ((): Engine[] => {
  const available: Engine[] = TEST_DATABASE_URL ? ['pglite', 'postgres'] : ['pglite']
  const wanted = process.env.TEST_ENGINES?.split(',').map((engine) => engine.trim()).filter((engine) => engine !== '')
  if (!wanted || wanted.length === 0) return available
  const unknown = wanted.filter((engine) => !(available as string[]).includes(engine))
  if (unknown.length > 0) throw new Error(`TEST_ENGINES names engines not available here: ${unknown.join(', ')} (available: ${available.join(', ')})`)
  return available.filter((engine) => wanted.includes(engine))
})()

export const PUBLIC_URL = 'http://tessera.test'
export const USER_IP = '203.0.113.7'

export interface TestResponse {
  status: number
  headers: Record<string, string | string[] | number | undefined>
  body: string
  json<T = Record<string, unknown>>(): T
}

export interface TestContext {
  engine: Engine
  app: App
  services: Services
  config: Config
  secrets: SandboxSecrets
  database: DatabaseHandle
  validator: OpenApiValidator
  /** A client of its own organization holding every scope. */
  client: ClientCredentials
  /** Sends a request and checks the response against the generated OpenAPI document. */
  request(options: InjectOptions): Promise<TestResponse>
  /** Creates a client in a new organization (or the given one). */
  newClient(scopes?: string, organizationId?: string): Promise<ClientCredentials>
  token(client?: ClientCredentials, scope?: string): Promise<string>
  createUser(token: string, body?: Record<string, unknown>): Promise<{ id: string } & Record<string, unknown>>
  close(): Promise<void>
}

function withDatabase(url: string, name: string): string {
  const located = new URL(url)
  located.pathname = `/${name}`
  return located.href
}

/** A database on the test server: how the application reaches it, how a session reaches it, and how to drop it. */
export interface TestDatabase {
  name: string
  url: string
  directUrl: string
  drop(): Promise<void>
}

async function onServer(work: (client: pg.Client) => Promise<unknown>): Promise<void> {
  assert.ok(TEST_DATABASE_DIRECT_URL, 'TEST_DATABASE_URL is required for the postgres engine')
  const client = new pg.Client({ connectionString: TEST_DATABASE_DIRECT_URL })
  await client.connect()
  try {
    await work(client)
  } finally {
    await client.end()
  }
}

/**
 * A new, empty database on the test server. Each test context has a database of its own rather than a schema:
 * a schema needs `search_path`, which a session sets and a transaction-pooling PgBouncer cannot carry (1.18
 * refuses the `options` startup parameter), while a database is chosen by name at every connection. PgBouncer
 * routes any database name to the server's (`* =` in scripts/pgbouncer.sh). Creating one takes some 20 ms.
 */
export async function createTestDatabase(prefix: string): Promise<TestDatabase> {
  const name = `${prefix}_${randomBytes(6).toString('hex')}`
  await onServer((client) => client.query(`create database ${name}`))
  return {
    name,
    url: withDatabase(TEST_DATABASE_URL!, name),
    directUrl: withDatabase(TEST_DATABASE_DIRECT_URL!, name),
    // Whatever still holds a connection to it (PgBouncer's idle server connections) is disconnected.
    drop: () => onServer((client) => client.query(`drop database if exists ${name} with (force)`)),
  }
}

/**
 * DATABASE_DIRECT_URL for a DATABASE_URL that goes through the suite's PgBouncer to a test database: the same
 * database on the server itself. Undefined when there is no PgBouncer in between (the URL is direct already).
 */
export function directUrlOf(url: string): string | undefined {
  if (!THROUGH_PGBOUNCER) return undefined
  const located = new URL(url)
  if (located.host !== new URL(TEST_DATABASE_URL!).host) return undefined
  return withDatabase(TEST_DATABASE_DIRECT_URL!, located.pathname.slice(1))
}

/**
 * An embedded database migrated to the latest version, as a copy of its data directory: every PGlite database of
 * the suite starts from it rather than from initdb and every migration (≈3 s of CPU each on a busy 2-CPU machine,
 * ≈0.7 s from the copy). Made once per set of migrations and PGlite version, shared by the test processes through
 * a file in the temporary directory (written whole, then renamed into place).
 */
let migratedSnapshot: Promise<Blob> | undefined

function embeddedSnapshot(): Promise<Blob> {
  migratedSnapshot ??= (async () => {
    const migrations = new URL('../src/db/migrations/', import.meta.url)
    const hash = createHash('sha256')
    hash.update(readFileSync(new URL('../node_modules/@electric-sql/pglite/package.json', import.meta.url)))
    for (const name of fs.readdirSync(migrations).sort()) hash.update(name).update(readFileSync(new URL(name, migrations)))
    const file = path.join(os.tmpdir(), `tessera-test-pglite-${hash.digest('hex').slice(0, 16)}.tar`)
    if (fs.existsSync(file)) return new Blob([readFileSync(file)])
    const database = await openDatabase({ databaseUrl: null, databasePoolSize: 1, dataDir: null })
    try {
      await migrateToLatest(database)
      const snapshot = await database.snapshot!()
      const partial = `${file}.${process.pid}.partial`
      fs.writeFileSync(partial, Buffer.from(await snapshot.arrayBuffer()))
      fs.renameSync(partial, file)
      return snapshot
    } finally {
      await database.close()
    }
  })()
  return migratedSnapshot
}

/** Opens a fresh database on the engine: an in-memory PGlite, or a new database on the test PostgreSQL server. */
export async function openTestDatabase(engine: Engine, config: Config): Promise<{ database: DatabaseHandle; cleanup: () => Promise<void> }> {
  if (engine === 'pglite') {
    const database = await openDatabase({ ...config, databaseUrl: null, dataDir: null, embeddedSnapshot: await embeddedSnapshot() })
    // Applies nothing to a current copy.
    await migrateToLatest(database)
    return { database, cleanup: async () => {} }
  }
  const scratch = await createTestDatabase('test')
  const database = await openDatabase({ ...config, databaseUrl: scratch.url, databaseDirectUrl: scratch.directUrl, databasePoolSize: 4 })
  await migrateToLatest(database)
  return { database, cleanup: scratch.drop }
}

/** Another connection pool on a test context's PostgreSQL database: what a second process opens. */
export function openPeerDatabase(database: DatabaseHandle, poolSize: number): Promise<DatabaseHandle> {
  assert.equal(database.engine, 'postgres', 'only PostgreSQL is shared between processes')
  return openDatabase({ databaseUrl: database.url!, databaseDirectUrl: database.directUrl!, databasePoolSize: poolSize, dataDir: null })
}

export function testConfig(env: Record<string, string> = {}): Config {
  const direct = env.DATABASE_URL && !env.DATABASE_DIRECT_URL ? directUrlOf(env.DATABASE_URL) : undefined
  return loadConfig({
    ...(direct ? { DATABASE_DIRECT_URL: direct } : {}),
    DATA_DIR: ':memory:',
    PUBLIC_URL,
    LOG_LEVEL: 'silent',
    RATE_LIMIT_PER_MINUTE: '0',
    TOKEN_RATE_LIMIT_PER_MINUTE: '0',
    ...env,
  })
}

export function basicAuth(client: { clientId: string; clientSecret: string }): string {
  return `Basic ${Buffer.from(`${encodeURIComponent(client.clientId)}:${encodeURIComponent(client.clientSecret)}`).toString('base64')}`
}

/** The general terms of the shipped catalogue that a resident of `country` accepts (the one naming no country, else). */
export function generalTermsFor(country: string): string {
  const catalogue = JSON.parse(readFileSync(new URL('../reference-data/terms-of-service.json', import.meta.url), 'utf8')) as {
    termsOfService: { code: string; type: string; countries?: string[] }[]
  }
  const general = catalogue.termsOfService.filter((terms) => terms.type === 'general')
  return (general.find((terms) => terms.countries?.includes(country)) ?? general.find((terms) => terms.countries === undefined))!.code
}

/** A valid individual user; its general terms follow its country of residence unless the overrides name them. */
export function individualUser(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const country = (overrides.address as { country?: unknown } | undefined)?.country
  return {
    type: 'individual',
    email: `user-${randomBytes(5).toString('hex')}@example.com`,
    termsOfService: typeof country === 'string' ? generalTermsFor(country) : 'general-gb-fca',
    primaryCitizenship: 'GB',
    address: { country: 'GB', subdivision: 'GB-MAN' },
    ...overrides,
  }
}

export async function startApp(engine: Engine, env: Record<string, string> = {}): Promise<TestContext> {
  const config = testConfig(env)
  const { database, cleanup } = await openTestDatabase(engine, config)
  return assemble(engine, config, database, loadOrCreateSecrets(null, config), cleanup)
}

/**
 * Another instance of the service on the same PostgreSQL database, with the same keys: what a second process
 * behind a load balancer is. Its client is the first instance's.
 */
export async function startPeer(first: TestContext): Promise<TestContext> {
  assert.equal(first.engine, 'postgres', 'only PostgreSQL is shared between processes')
  const database = await openPeerDatabase(first.database, 4)
  const peer = await assemble('postgres', first.config, database, first.secrets, async () => {}, first.client)
  return peer
}

/** What a test may add to the app it starts: a logger, and a look at every response `request` gets. */
export interface AppOptions {
  logger?: NonNullable<Parameters<typeof buildApp>[0]['logger']>
  onResponse?: (response: TestResponse) => void
}

/** The app of a test over a fresh database of the engine, with `options`' logger and response hook. */
export async function startAppWith(engine: Engine, env: Record<string, string>, options: AppOptions): Promise<TestContext> {
  const config = testConfig(env)
  const { database, cleanup } = await openTestDatabase(engine, config)
  return assemble(engine, config, database, loadOrCreateSecrets(null, config), cleanup, undefined, options)
}

async function assemble(
  engine: Engine,
  config: Config,
  database: DatabaseHandle,
  secrets: SandboxSecrets,
  cleanup: () => Promise<void>,
  existingClient?: ClientCredentials,
  appOptions: AppOptions = {},
): Promise<TestContext> {
  let built: Awaited<ReturnType<typeof buildApp>>
  try {
    built = await buildApp({ config, database, secrets, onClose: cleanup, ...(appOptions.logger ? { logger: appOptions.logger } : {}) })
  } catch (error) {
    // An app that refuses to start (a test of a bad configuration) leaves nothing open behind it: an open embedded
    // database would keep the test file's process alive after its tests.
    await database.close()
    await cleanup()
    throw error
  }
  const { app, services } = built

  const docResponse = await app.inject({ method: 'GET', url: '/openapi.json' })
  assert.equal(docResponse.statusCode, 200)
  const validator = new OpenApiValidator(docResponse.json())

  const request = async (options: InjectOptions): Promise<TestResponse> => {
    const response = await app.inject(options)
    const result: TestResponse = {
      status: response.statusCode,
      headers: response.headers,
      body: response.body,
      json: <T>() => JSON.parse(response.body) as T,
    }
    appOptions.onResponse?.(result)
    validator.check({ method: String(options.method ?? 'GET'), url: String(options.url ?? '/'), status: result.status, headers: result.headers, body: result.body })
    return result
  }

  const newClient = (scopes = '*', organizationId?: string) => services.clients.create({ name: 'Test client', scopes, organizationId })

  const token = async (client: ClientCredentials = context.client, scope?: string): Promise<string> => {
    const response = await request({
      method: 'POST',
      url: '/core/oauth2/token',
      headers: { authorization: basicAuth(client), 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ grant_type: 'client_credentials', ...(scope !== undefined ? { scope } : {}) }).toString(),
    })
    assert.equal(response.status, 200, response.body)
    return response.json<{ access_token: string }>().access_token
  }

  const createUser = async (accessToken: string, body: Record<string, unknown> = individualUser()) => {
    const response = await request({
      method: 'POST',
      url: '/core/users',
      headers: { authorization: `Bearer ${accessToken}`, 'x-service-user-ip': USER_IP },
      payload: body,
    })
    assert.equal(response.status, 201, response.body)
    return response.json<{ user: { id: string } & Record<string, unknown> }>().user
  }

  const context: TestContext = {
    engine,
    app,
    services,
    config,
    secrets,
    database,
    validator,
    client: existingClient ?? (await newClient()),
    request,
    newClient,
    token,
    createUser,
    close: () => app.close(),
  }
  return context
}

export function bearer(token: string, userId?: string): Record<string, string> {
  return userId === undefined ? { authorization: `Bearer ${token}` } : { authorization: `Bearer ${token}`, 'x-on-behalf-of': `user ${userId}` }
}

/**
 * The app of a suite: started with a token of its client before the suite's tests, closed after them.
 * Read `suite.ctx` and `suite.token` inside tests.
 */
export function useApp(engine: Engine, env: Record<string, string> = {}): { readonly ctx: TestContext; readonly token: string } {
  let ctx: TestContext | undefined
  let token: string | undefined
  before(async () => {
    ctx = await startApp(engine, env)
    token = await ctx.token()
  })
  after(() => ctx?.close())
  return {
    get ctx() {
      assert.ok(ctx, 'the suite has not started')
      return ctx
    },
    get token() {
      assert.ok(token, 'the suite has not started')
      return token
    },
  }
}

/**
 * A file of the user, created and uploaded through the API (as a client would before referencing it in a KYC
 * process); `upload: false` leaves it pending.
 */
export async function uploadedFile(ctx: TestContext, token: string, userId: string, options: { category?: string; contentType?: string; upload?: boolean } = {}): Promise<string> {
  const { category = 'image', contentType = 'image/png', upload = true } = options
  const created = await ctx.request({ method: 'POST', url: '/core/files', headers: bearer(token, userId), payload: { category, contentType } })
  assert.equal(created.status, 201, created.body)
  const file = created.json<{ file: { id: string; upload: { url: string; formData: Record<string, string> } } }>().file
  if (!upload) return file.id
  const boundary = `----kyc${randomBytes(8).toString('hex')}`
  const parts = Object.entries(file.upload.formData).map(([name, value]) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`)
  const payload = Buffer.concat([
    Buffer.from(parts.join('')),
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="evidence"\r\nContent-Type: ${contentType}\r\n\r\n`),
    randomBytes(2048),
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ])
  const url = new URL(file.upload.url)
  const uploaded = await ctx.request({ method: 'POST', url: url.pathname + url.search, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` }, payload })
  assert.equal(uploaded.status, 204, uploaded.body)
  return file.id
}

/**
 * The parts of a test context the money fixtures use, over an app of this process on the scratch database (its
 * worker is never started: only the server's settles anything once the server runs).
 */
export function localContext(app: App, services: Services, database: DatabaseHandle): TestContext {
  const request = async (options: InjectOptions): Promise<TestResponse> => {
    const response = await app.inject(options)
    return { status: response.statusCode, headers: response.headers, body: response.body, json: <T>() => JSON.parse(response.body) as T }
  }
  const createUser = async (token: string, body: Record<string, unknown> = {}) => {
    const response = await request({ method: 'POST', url: '/core/users', headers: { authorization: `Bearer ${token}`, 'x-service-user-ip': USER_IP }, payload: body })
    assert.equal(response.status, 201, response.body)
    return response.json<{ user: { id: string } & Record<string, unknown> }>().user
  }
  return { request, createUser, services, database } as Pick<TestContext, 'request' | 'createUser' | 'services' | 'database'> as TestContext
}
