import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
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

export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL || undefined

/** Every engine the suite runs on here: PGlite always, PostgreSQL when TEST_DATABASE_URL is set. */
export const ENGINES: Engine[] = TEST_DATABASE_URL ? ['pglite', 'postgres'] : ['pglite']

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

async function createSchema(url: string): Promise<string> {
  const schema = `test_${randomBytes(6).toString('hex')}`
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  await client.query(`create schema ${schema}`)
  await client.end()
  return schema
}

/**
 * Suites migrate and drop their schemas side by side on one server. Kysely's migrator reads the catalogue of every
 * schema before it takes its own lock, and that read fails when another suite drops its schema at that moment
 * ("schema … does not exist"): migrations hold this lock shared, a drop holds it alone.
 */
const SCHEMA_LOCK = 7_311_905_223

async function withSchemaLock<T>(url: string, mode: 'shared' | 'exclusive', work: () => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  const suffix = mode === 'shared' ? '_shared' : ''
  try {
    await client.query(`select pg_advisory_lock${suffix}(${SCHEMA_LOCK})`)
    return await work()
  } finally {
    await client.end()
  }
}

async function dropSchema(url: string, schema: string): Promise<void> {
  await withSchemaLock(url, 'exclusive', async () => {
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    await client.query(`drop schema if exists ${schema} cascade`)
    await client.end()
  })
}

/** Opens a fresh database on the engine: an in-memory PGlite, or a new schema on the test PostgreSQL server. */
export async function openTestDatabase(engine: Engine, config: Config): Promise<{ database: DatabaseHandle; cleanup: () => Promise<void> }> {
  if (engine === 'pglite') {
    const database = await openDatabase({ ...config, databaseUrl: null, dataDir: null })
    await migrateToLatest(database)
    return { database, cleanup: async () => {} }
  }
  assert.ok(TEST_DATABASE_URL, 'TEST_DATABASE_URL is required for the postgres engine')
  const schema = await createSchema(TEST_DATABASE_URL)
  const database = await openDatabase({ ...config, databaseUrl: TEST_DATABASE_URL, databasePoolSize: 4, searchPath: schema })
  await withSchemaLock(TEST_DATABASE_URL, 'shared', () => migrateToLatest(database))
  return { database, cleanup: () => dropSchema(TEST_DATABASE_URL, schema) }
}

export function testConfig(env: Record<string, string> = {}): Config {
  return loadConfig({
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

export function individualUser(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    type: 'individual',
    email: `user-${randomBytes(5).toString('hex')}@example.com`,
    termsOfService: 'general-gb-fca',
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
 * Another instance of the service on the same PostgreSQL schema, with the same keys: what a second process
 * behind a load balancer is. Its client is the first instance's.
 */
export async function startPeer(first: TestContext): Promise<TestContext> {
  assert.equal(first.engine, 'postgres', 'only PostgreSQL is shared between processes')
  const database = await openDatabase({ ...first.config, databaseUrl: TEST_DATABASE_URL!, databasePoolSize: 4, searchPath: first.database.schema! })
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
  const { app, services } = await buildApp({ config, database, secrets, onClose: cleanup, ...(appOptions.logger ? { logger: appOptions.logger } : {}) })

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
