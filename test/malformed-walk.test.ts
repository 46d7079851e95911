/**
 * Walks every operation of the generated OpenAPI document with malformed variants of its request: wrong types,
 * missing and extra fields, huge and deeply nested bodies, invalid UTF-8, U+0000, unpaired surrogates, 1,000-digit
 * numbers, repeated parameters, and foreign and malformed ids. No answer may be a 5xx, every answer carries the
 * request id and (for a refusal) the error envelope, and no refused request changes anything in the database.
 * The operations are read from the document, so that operations added later are walked too.
 */
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import type { InjectOptions } from 'fastify'
import { sql } from 'kysely'
import { UUID_PATTERN } from '../src/lib/ids.ts'
import { basicAuth, bearer, ENGINES, individualUser, startApp, USER_IP, uploadedFile, type TestContext, type TestResponse } from './helpers.ts'

type Schema = Record<string, unknown>
interface Parameter {
  name: string
  in: 'path' | 'query' | 'header'
  required?: boolean
  schema?: Schema
}
interface Operation {
  operationId: string
  parameters?: Parameter[]
  requestBody?: { content: Record<string, { schema?: Schema }> }
  security?: Record<string, string[]>[]
  'x-service'?: { security?: { OAuth2?: { subjects?: string[] } } }
  responses: Record<string, unknown>
}
interface Document {
  paths: Record<string, Record<string, Operation>>
  components: { schemas: Record<string, Schema> }
}

/** What a variant is, and what its answer must be beyond the rules every answer follows. */
interface Variant {
  label: string
  request: InjectOptions
  /**
   * The answer this variant must get when the operation lets the caller in; `orEmpty`: or a 2xx of a safe method
   * whose body does not hold this value.
   */
  expect?: { status: number; code?: string; orEmpty?: string }
  /** Answers whose details must be the same: a malformed id's and an unknown one's 404. */
  sameAs?: string
}

const BODY_LIMIT = 131_072
const THOUSAND_DIGITS = `1${'0'.repeat(999)}`
const BIG = '"__thousand_digits__"'
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const SAFE = new Set(['GET', 'HEAD'])

function resolve(document: Document, schema: Schema | undefined): Schema {
  let current = schema ?? {}
  for (let hops = 0; typeof current.$ref === 'string' && hops < 20; hops++) current = document.components.schemas[String(current.$ref).split('/').pop()!] ?? {}
  return current
}

const isUuid = (schema: Schema) => schema.format === 'uuid' || schema.pattern === UUID_PATTERN
const isUuidSchema = (schema: Schema) => isUuid(schema) || ((schema.anyOf ?? schema.oneOf) as Schema[] | undefined)?.some(isUuid) === true

/** A plausible value of a schema: its example, first allowed value or a value of its type and format. */
function sample(document: Document, raw: Schema | undefined, depth = 0): unknown {
  const schema = resolve(document, raw)
  if (depth > 8) return null
  if ('const' in schema) return schema.const
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0]
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0]
  if (schema.default !== undefined) return schema.default
  const branches = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined
  if (branches?.length) return sample(document, branches[0], depth + 1)
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type
  switch (type ?? (schema.properties ? 'object' : undefined)) {
    case 'object': {
      const properties = (schema.properties ?? {}) as Record<string, Schema>
      const required = (schema.required ?? []) as string[]
      return Object.fromEntries(required.filter((name) => properties[name]).map((name) => [name, sample(document, properties[name], depth + 1)]))
    }
    case 'array':
      return Array.from({ length: Math.max(1, Number(schema.minItems ?? 1)) }, () => sample(document, schema.items as Schema, depth + 1))
    case 'integer':
    case 'number':
      return Number(schema.minimum ?? schema.exclusiveMinimum ?? 1) + (schema.exclusiveMinimum !== undefined ? 1 : 0)
    case 'boolean':
      return true
    case 'null':
      return null
    case 'string':
      switch (schema.format) {
        case 'uuid':
          return randomUUID()
        case 'date-time':
          return new Date().toISOString()
        case 'date':
          return '1990-01-01'
        case 'email':
          return 'walk@example.com'
        case 'uri':
          return 'https://example.com/walk'
        case 'ipv4':
          return USER_IP
        default:
          return 'x'.repeat(Math.max(1, Number(schema.minLength ?? 1)))
      }
    default:
      return 'x'
  }
}

/** A field a body schema declares, where it sits in the sample body. */
interface Slot {
  path: (string | number)[]
  schema: Schema
  required: boolean
}

function slotsOf(document: Document, raw: Schema | undefined, value: unknown, path: (string | number)[] = [], depth = 0): Slot[] {
  const schema = resolve(document, raw)
  if (depth > 6) return []
  const branches = (schema.anyOf ?? schema.oneOf) as Schema[] | undefined
  if (branches?.length) return slotsOf(document, branches[0], value, path, depth + 1)
  if (schema.properties && value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const required = new Set((schema.required ?? []) as string[])
    return Object.entries(schema.properties as Record<string, Schema>).flatMap(([name, child]) => [
      { path: [...path, name], schema: resolve(document, child), required: required.has(name) },
      ...(name in value ? slotsOf(document, child, (value as Record<string, unknown>)[name], [...path, name], depth + 1) : []),
    ])
  }
  if (schema.items && Array.isArray(value) && value.length > 0) {
    return [{ path: [...path, 0], schema: resolve(document, schema.items as Schema), required: true }, ...slotsOf(document, schema.items as Schema, value[0], [...path, 0], depth + 1)]
  }
  return []
}

function withValue(base: unknown, path: (string | number)[], value: unknown, remove = false): unknown {
  const copy = structuredClone(base) as Record<string | number, unknown>
  let at = copy
  for (const key of path.slice(0, -1)) at = at[key] as Record<string | number, unknown>
  const last = path.at(-1)!
  if (remove) delete at[last]
  else at[last] = value
  return copy
}

function typeOf(schema: Schema): string | undefined {
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type
  return typeof type === 'string' ? type : schema.properties ? 'object' : undefined
}

/** A value of another type than the schema's. */
function wrongType(schema: Schema): unknown {
  switch (typeOf(schema)) {
    case 'string':
      return 12345
    case 'integer':
    case 'number':
      return '12'
    case 'boolean':
      return 'true'
    case 'object':
      return ['x']
    case 'array':
      return { x: 1 }
    default:
      return { unexpected: [1, 2, 3] }
  }
}

const nested = (levels: number) => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`

/** Every variant of one operation, from its plain request (`base`). */
/** An operation's plain request, and what its variants are made from. */
interface Base {
  method: NonNullable<InjectOptions['method']>
  url: string
  headers: Record<string, string>
  pathValues: Record<string, string>
  query: Record<string, string>
  body: unknown
  payload?: string
}

function variantsOf(document: Document, template: string, operation: Operation, base: Base, foreign: Record<string, string>): Variant[] {
  const variants: Variant[] = []
  const parameters = operation.parameters ?? []
  const urlWith = (pathValues: Record<string, string>, query: Record<string, string>, rawQuery = '') => {
    const path = template.replace(/\{([^}]+)\}/g, (_, name: string) => pathValues[name]!)
    const pairs = [...Object.entries(query).map(([name, value]) => `${name}=${value}`), ...(rawQuery ? [rawQuery] : [])]
    return pairs.length > 0 ? `${path}?${pairs.join('&')}` : path
  }
  const json = operation.requestBody?.content['application/json'] ?? operation.requestBody?.content['application/json-patch+json']
  const contentType = operation.requestBody?.content['application/json'] ? 'application/json' : 'application/json-patch+json'
  const send = (label: string, overrides: Partial<InjectOptions>, expect?: Variant['expect'], sameAs?: string): void => {
    const request: InjectOptions = { method: base.method, url: base.url, headers: base.headers, ...(base.payload !== undefined ? { payload: base.payload } : {}), ...overrides }
    variants.push({ label, request, ...(expect ? { expect } : {}), ...(sameAs ? { sameAs } : {}) })
  }
  // With one id in the path and no body, an unknown id reaches the service: a malformed one must be told apart
  // from it by nothing, `details.entity` included.
  const ids = parameters.filter((p) => p.in === 'path' && isUuidSchema(resolve(document, p.schema)))
  const comparable = ids.length === 1 && !operation.requestBody

  // Path parameters: malformed, foreign, overlong, undecodable.
  for (const parameter of parameters.filter((p) => p.in === 'path')) {
    const schema = resolve(document, parameter.schema)
    const id = isUuidSchema(schema)
    const notFound = id ? { status: 404, code: 'entity_not_found' } : undefined
    const values: [string, string, Variant['expect']?][] = [
      ['malformed', 'not-a-uuid', notFound],
      ['U+0000', '%00', notFound ?? { status: 400, code: 'request_invalid' }],
      ['a 1,000-digit number', THOUSAND_DIGITS, notFound],
      ['overlong', 'x'.repeat(3000), notFound],
      ['invalid UTF-8', '%FF%FE', { status: 400, code: 'request_invalid' }],
      ['a urn:uuid: prefix', `urn:uuid:${randomUUID()}`, notFound],
    ]
    for (const [label, value, expect] of values) {
      send(`path ${parameter.name}: ${label}`, { url: urlWith({ ...base.pathValues, [parameter.name]: value }, base.query) }, expect, id && comparable && expect === notFound ? parameter.name : undefined)
    }
    if (id) {
      // Another organization's entity is unknown here: 404, or nothing of it in a list. With a body, the
      // sample body may be refused first.
      const foreignId = foreign[parameter.name] ?? randomUUID()
      const hidden = operation.requestBody ? undefined : { status: 404, code: 'entity_not_found', orEmpty: foreignId }
      send(`path ${parameter.name}: foreign`, { url: urlWith({ ...base.pathValues, [parameter.name]: foreignId }, base.query) }, hidden, comparable ? parameter.name : undefined)
      send(`path ${parameter.name}: foreign, upper case`, { url: urlWith({ ...base.pathValues, [parameter.name]: foreignId.toUpperCase() }, base.query) }, hidden)
    }
  }

  // Query parameters: wrong types, U+0000, invalid UTF-8, 1,000 digits, repeated.
  for (const parameter of parameters.filter((p) => p.in === 'query')) {
    const schema = resolve(document, parameter.schema)
    const type = typeOf(schema)
    const plain = String(sample(document, schema))
    const scalar = type !== 'array'
    const withQuery = (value: string, extra = '') => urlWith(base.pathValues, { ...base.query, [parameter.name]: value }, extra)
    if (type === 'integer' || type === 'number' || type === 'boolean' || schema.enum) send(`query ${parameter.name}: wrong type`, { url: withQuery('zz-not-valid') })
    send(`query ${parameter.name}: U+0000`, { url: withQuery(`a%00b`) }, { status: 400, code: 'request_invalid' })
    send(`query ${parameter.name}: invalid UTF-8`, { url: withQuery('%FF%FE') })
    send(`query ${parameter.name}: a 1,000-digit number`, { url: withQuery(THOUSAND_DIGITS) })
    if (scalar) {
      send(`query ${parameter.name}: repeated`, { url: withQuery(encodeURIComponent(plain), `${parameter.name}=${encodeURIComponent(plain)}`) }, { status: 400, code: 'request_invalid' })
    }
  }
  send('query: an unknown parameter holding U+0000', { url: urlWith(base.pathValues, base.query, 'zzUnknown=%00') })

  // Header parameters: malformed and foreign subjects, 1,000-digit values.
  const headers = parameters.filter((p) => p.in === 'header')
  if (headers.some((p) => p.name === 'x-on-behalf-of')) {
    send('x-on-behalf-of: malformed', { headers: { ...base.headers, 'x-on-behalf-of': 'user not-a-uuid' } }, { status: 400, code: 'request_invalid' })
    send('x-on-behalf-of: a foreign user', { headers: { ...base.headers, 'x-on-behalf-of': `user ${foreign.userId}` } })
  }
  if (headers.length > 0) {
    send('every header: a 1,000-digit value', { headers: { ...base.headers, ...Object.fromEntries(headers.filter((p) => p.name !== 'x-on-behalf-of').map((p) => [p.name, THOUSAND_DIGITS])) } })
  }

  // JSON bodies: framing, top-level shapes, sizes, nesting, encodings, then every field.
  if (json) {
    const body = base.body
    const raw = (label: string, payload: string | Buffer, expect?: Variant['expect'], type = contentType) =>
      send(`body: ${label}`, { payload, headers: { ...base.headers, 'content-type': type } }, expect)
    raw('empty', '', { status: 400, code: 'request_invalid' })
    raw('truncated JSON', '{"a":', { status: 400, code: 'request_invalid' })
    for (const shape of ['[]', '"text"', 'null', '{}', THOUSAND_DIGITS]) raw(shape.length > 20 ? 'a 1,000-digit number' : shape, shape)
    raw('an extra field', JSON.stringify(body !== null && typeof body === 'object' && !Array.isArray(body) ? { ...body, zzExtra: { a: 1 } } : { zzExtra: 1 }))
    raw('__proto__ and constructor', `{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}}}`)
    raw('nested 20,000 levels', `{"deep":${nested(20_000)}}`)
    raw('arrays nested 50,000 levels', `${'['.repeat(50_000)}${']'.repeat(50_000)}`)
    raw('over the size limit', JSON.stringify({ big: 'x'.repeat(BODY_LIMIT) }), { status: 413, code: 'content_too_large' })
    raw('invalid UTF-8', Buffer.concat([Buffer.from('{"a":"'), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('"}')]))
    raw('U+0000 in a key', `{"a\\u0000b":1}`, { status: 400, code: 'request_invalid' })
    raw('text/plain', 'hello', { status: 415, code: 'content_type_unsupported' }, 'text/plain')

    // Each declared field gets a value of the wrong type, and one of the other malformations in turn.
    const others: [string, (slot: Slot) => { value?: unknown; remove?: boolean; rawValue?: string }, Variant['expect']?][] = [
      ['U+0000', () => ({ value: 'a\u0000b' }), { status: 400, code: 'request_invalid' }],
      ['a 1,000-digit number', (slot) => (typeOf(slot.schema) === 'string' ? { value: THOUSAND_DIGITS } : { rawValue: THOUSAND_DIGITS })],
      ['an unpaired surrogate', () => ({ value: 'a\ud800b' }), { status: 400, code: 'request_invalid' }],
      ['missing', () => ({ remove: true })],
      ['null', () => ({ value: null })],
      ['a 100,000-character string', () => ({ value: 'x'.repeat(100_000) })],
      ['an object nested 2,000 levels', () => ({ rawValue: nested(2_000) })],
      ['-1e308', () => ({ rawValue: '-1e308' })],
    ]
    slotsOf(document, json.schema, body).forEach((slot, index) => {
      const name = slot.path.join('.')
      const encode = (value: unknown) => JSON.stringify(withValue(body, slot.path, value))
      raw(`${name}: wrong type`, encode(wrongType(slot.schema)))
      const [label, make, expect] = others[index % others.length]!
      const change = make(slot)
      const text = change.remove
        ? JSON.stringify(withValue(body, slot.path, undefined, true))
        : change.rawValue !== undefined
          ? encode(JSON.parse(BIG)).replace(BIG, change.rawValue)
          : encode(change.value)
      raw(`${name}: ${label}`, text, expect)
    })
  }

  // Other bodies: the token endpoint's form and the upload's multipart form.
  if (operation.requestBody?.content['application/x-www-form-urlencoded']) {
    for (const form of ['grant_type=%00', 'grant_type=client_credentials&scope=a%00b', 'grant_type=client_credentials&grant_type=password', `grant_type=${THOUSAND_DIGITS}`, '%FF=%FE']) {
      send(`form: ${form.slice(0, 40)}`, { payload: form, headers: { ...base.headers, 'content-type': 'application/x-www-form-urlencoded' } })
    }
    send('form: JSON instead', { payload: '{"grant_type":"client_credentials"}', headers: { ...base.headers, 'content-type': 'application/json' } })
  }
  if (operation.requestBody?.content['multipart/form-data']) {
    for (const [label, payload, type] of [
      ['no boundary', 'garbage', 'multipart/form-data'],
      ['a broken part', '--b\r\nContent-Disposition: form-data; name="key"\r\n\r\n\u0000\r\n--b', 'multipart/form-data; boundary=b'],
      ['JSON instead', '{"key":"x"}', 'application/json'],
    ] as const) {
      send(`multipart: ${label}`, { payload, headers: { ...base.headers, 'content-type': type } })
    }
  }
  return variants
}

const businessUser = () => ({ type: 'business', email: `biz-${randomUUID()}@example.com`, country: 'GB', legalEntityType: 'private-limited-company', termsOfService: 'general-gb-fca' })

/**
 * One line per table, in one query: its row count and its newest row version (`xmin`). An insert, an update or a
 * delete that committed changes one of them; a rolled-back one changes neither.
 */
async function snapshot(ctx: TestContext): Promise<Map<string, string>> {
  const db = ctx.database.db
  const tables = await sql<{ name: string }>`select table_name as name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE' order by 1`.execute(db)
  const parts = tables.rows.map(({ name }) => sql`select ${name}::text as name, count(*)::text || ':' || coalesce(max(t.xmin::text::bigint), 0)::text as digest from ${sql.table(name)} t`)
  const rows = await sql<{ name: string; digest: string }>`${sql.join(parts, sql` union all `)}`.execute(db)
  return new Map(rows.rows.map((row) => [row.name, row.digest]))
}

function changedTables(before: Map<string, string>, after: Map<string, string>): string[] {
  return [...after.keys()].filter((name) => before.get(name) !== after.get(name))
}

/** What every answer must be: no 5xx, a request id, and for a refusal the envelope (the OAuth shape where documented). */
function answerProblems(response: TestResponse, oauth: boolean): string[] {
  const problems: string[] = []
  if (response.status >= 500) problems.push(`status ${response.status}: ${response.body.slice(0, 300)}`)
  const requestId = response.headers['x-service-request-id']
  if (typeof requestId !== 'string' || !UUID.test(requestId)) problems.push(`no request id (${String(requestId)})`)
  if (response.status >= 400) {
    let body: Record<string, unknown> | undefined
    try {
      body = JSON.parse(response.body) as Record<string, unknown>
    } catch {
      problems.push(`a ${response.status} that is not JSON: ${response.body.slice(0, 200)}`)
    }
    if (body && oauth && typeof body.error !== 'string') problems.push(`a ${response.status} without the OAuth error shape: ${response.body.slice(0, 200)}`)
    if (body && !oauth && (typeof body.code !== 'string' || typeof body.message !== 'string')) problems.push(`a ${response.status} without the envelope: ${response.body.slice(0, 200)}`)
  }
  return problems
}

for (const engine of ENGINES) {
  describe(`malformed input walk [${engine}]`, () => {
    let ctx: TestContext
    before(async () => {
      ctx = await startApp(engine, { BODY_LIMIT_BYTES: String(BODY_LIMIT) })
    })
    after(() => ctx.close())

    test('the cases the issue names', async () => {
      const token = await ctx.token()
      const user = await ctx.createUser(token)
      const headers = bearer(token, user.id)
      const refused = async (request: InjectOptions, status: number, code: string, caller = headers): Promise<Record<string, unknown> | undefined> => {
        const response = await ctx.request({ ...request, headers: { ...caller, ...(request.headers as Record<string, string>) } })
        assert.equal(response.status, status, `${request.method} ${request.url}: ${response.body}`)
        const body = response.json<{ code: string; details?: Record<string, unknown> }>()
        assert.equal(body.code, code)
        return body.details
      }
      // U+0000 in a parameter: 400, not the database's encoding error.
      for (const url of ['/core/accounts?asset=%00', '/core/accounts/defaults?asset=%00', '/core/accounts?asset=BTC%00']) {
        assert.deepEqual(await refused({ method: 'GET', url }, 400, 'request_invalid'), { context: 'query', violations: [{ property: 'asset', rule: 'characters', ruleParams: { disallowed: 'U+0000' } }] })
      }
      // A repeated scalar parameter: 400, never one of its values.
      for (const query of ['perPage=5&perPage=abc', 'perPage=5&perPage=5', 'asset=BTC&asset=ETH']) {
        assert.equal((await refused({ method: 'GET', url: `/core/accounts?${query}` }, 400, 'request_invalid'))?.context, 'query')
      }
      // A malformed id in a path: 404 as an unknown id, on every method.
      for (const method of ['GET', 'PUT', 'PATCH', 'DELETE'] as const) {
        const body = method === 'PATCH' ? { payload: '[]', headers: { 'content-type': 'application/json-patch+json' } } : method === 'PUT' ? { payload: { a: 1 } } : {}
        for (const entity of ['accounts', 'external-accounts', 'files', 'transactions', 'users']) {
          assert.deepEqual(await refused({ method, url: `/core/${entity}/not-a-uuid/metadata`, ...body }, 404, 'entity_not_found'), { entity: entity.slice(0, -1) })
        }
        assert.deepEqual(await refused({ method, url: '/core/accounts/me/metadata', ...body }, 404, 'entity_not_found'), { entity: 'account' })
      }
      // U+0000 and unpaired surrogates in a JSON body: 400 naming the property.
      assert.deepEqual(await refused({ method: 'PUT', url: '/core/users/me/metadata', payload: { note: 'a\u0000b' } }, 400, 'request_invalid'), {
        context: 'body',
        violations: [{ property: 'note', rule: 'characters', ruleParams: { disallowed: 'U+0000' } }],
      })
      const created = await refused({ method: 'POST', url: '/core/users', payload: individualUser({ fullName: 'Jane \ud800 Doe' }) }, 400, 'request_invalid', bearer(token))
      assert.deepEqual(created, { context: 'body', violations: [{ property: 'fullName', rule: 'characters', ruleParams: { disallowed: 'unpaired surrogate' } }] })
    })

    test('every operation of the document, malformed every way: no 5xx, always the envelope, nothing changed', { timeout: 300_000 }, async (t) => {
      const document = (await ctx.app.inject({ method: 'GET', url: '/openapi.json' })).json<Document>()
      const token = await ctx.token()
      const individual = await ctx.createUser(token)
      const business = await ctx.createUser(token, businessUser())
      const portalLink = await ctx.request({ method: 'POST', url: '/core/webhooks/management-link', headers: bearer(token) })
      const link = new URLSearchParams(new URL(portalLink.json<{ managementLink: { url: string } }>().managementLink.url).hash.slice(1)).get('link')!
      const portal = await ctx.request({ method: 'POST', url: '/hosted/webhooks/api/sessions', payload: { link } })
      assert.equal(portal.status, 201, portal.body)
      const portalHeaders = { authorization: `Bearer ${portal.json<{ session: { token: string } }>().session.token}` }

      // Another organization's entities: what a foreign id names.
      const other = await ctx.newClient()
      const otherToken = await ctx.token(other)
      const otherUser = await ctx.createUser(otherToken, individualUser())
      const otherAccount = await ctx.request({ method: 'POST', url: '/core/accounts', headers: bearer(otherToken, otherUser.id), payload: { asset: 'BTC', label: 'Foreign' } })
      assert.equal(otherAccount.status, 201, otherAccount.body)
      const otherFile = await uploadedFile(ctx, otherToken, otherUser.id)
      const foreign: Record<string, string> = {
        userId: otherUser.id,
        accountId: otherAccount.json<{ account: { id: string } }>().account.id,
        fileId: otherFile,
        entityId: otherUser.id,
      }

      const failures: string[] = []
      const accepted: string[] = []
      const unauthorized: string[] = []
      let checked = 0
      let sent = 0
      for (const [template, operations] of Object.entries(document.paths)) {
        for (const [method, operation] of Object.entries(operations)) {
          const upper = method.toUpperCase()
          const safe = SAFE.has(upper)
          const name = `${operation.operationId} (${upper} ${template})`
          const schemes = (operation.security ?? []).flatMap((requirement) => Object.keys(requirement))
          const subjects = operation['x-service']?.security?.OAuth2?.subjects ?? []
          let headers: Record<string, string> = {}
          const kind = !schemes.includes('OAuth2') || subjects.includes('client') || subjects.length === 0 ? undefined : subjects.includes('user:individual') ? 'individual' : 'business'
          const newUser = async () => (await ctx.createUser(token, kind === 'individual' ? individualUser() : businessUser())).id
          if (schemes.includes('OAuth2')) {
            // A user of its own for what may change things: a variant accepted after all (a deleted user) cannot
            // spoil the operations after it.
            const actingUser = kind === undefined ? undefined : safe ? (kind === 'individual' ? individual.id : business.id) : await newUser()
            headers = { ...bearer(token, actingUser), 'x-service-user-ip': USER_IP }
          } else if (schemes.includes('WebhookPortal')) {
            headers = portalHeaders
          } else if (template === '/core/oauth2/token') {
            headers = { authorization: basicAuth(ctx.client) }
          }
          const pathValues = Object.fromEntries(
            (operation.parameters ?? []).filter((p) => p.in === 'path').map((p) => {
              const schema = resolve(document, p.schema)
              return [p.name, isUuidSchema(schema) ? randomUUID() : encodeURIComponent(String(sample(document, schema)))]
            }),
          )
          const query = Object.fromEntries(
            (operation.parameters ?? []).filter((p) => p.in === 'query' && p.required).map((p) => [p.name, encodeURIComponent(String(sample(document, p.schema)))]),
          )
          const pairs = Object.entries(query).map(([key, value]) => `${key}=${value}`)
          const url = template.replace(/\{([^}]+)\}/g, (_, param: string) => pathValues[param]!) + (pairs.length > 0 ? `?${pairs.join('&')}` : '')
          const jsonBody = operation.requestBody?.content['application/json'] ?? operation.requestBody?.content['application/json-patch+json']
          const body = jsonBody ? sample(document, jsonBody.schema) : undefined
          // A JSON body goes with every variant but the body's own, so that they reach the checks they are about.
          const base: Base = {
            method: upper as Base['method'],
            url,
            headers: jsonBody ? { ...headers, 'content-type': operation.requestBody?.content['application/json'] ? 'application/json' : 'application/json-patch+json' } : headers,
            pathValues,
            query,
            body,
            ...(jsonBody ? { payload: JSON.stringify(body) } : {}),
          }
          const variants = variantsOf(document, template, operation, base, foreign)

          // Whether the operation lets this caller in, asked without changing anything: a safe request as is,
          // else its first variant (all are malformed). Only then do the variants reach the checks whose answer
          // is prescribed.
          // Whether the operation lets this caller in, asked without changing anything: a safe request as is,
          // else a variant that must be refused. Only then do the variants reach the checks whose answer is
          // prescribed.
          const probe = safe ? { method: base.method, url, headers } : (variants.find((variant) => variant.expect) ?? variants[0]!).request
          const probed = await ctx.app.inject(probe)
          const authorized = probed.statusCode !== 401 && probed.statusCode !== 403
          if (!authorized) unauthorized.push(`${name}: ${probed.statusCode}`)

          const before = await snapshot(ctx)
          let acting = headers['x-on-behalf-of']
          const refused: Variant[] = []
          const notFoundDetails = new Map<string, string>()
          for (const variant of variants) {
            if (acting !== undefined && variant.request.headers?.['x-on-behalf-of'] === headers['x-on-behalf-of']) {
              variant.request.headers = { ...variant.request.headers, 'x-on-behalf-of': acting }
            }
            let response: TestResponse
            sent++
            try {
              response = await ctx.request(variant.request)
            } catch (error) {
              failures.push(`${name} — ${variant.label}: ${(error as Error).message.split('\n')[0]}`)
              continue
            }
            for (const problem of answerProblems(response, template === '/core/oauth2/token')) failures.push(`${name} — ${variant.label}: ${problem}`)
            const expect = variant.expect
            if (expect && authorized) {
              checked++
              const code = response.status >= 400 ? (JSON.parse(response.body) as { code?: string }).code : undefined
              const hiddenInList = expect.orEmpty !== undefined && safe && response.status < 300 && !response.body.toLowerCase().includes(expect.orEmpty.toLowerCase())
              if (!hiddenInList && (response.status !== expect.status || (expect.code !== undefined && code !== expect.code))) {
                failures.push(`${name} — ${variant.label}: expected ${expect.status} ${expect.code ?? ''}, got ${response.status} ${response.body.slice(0, 200)}`)
              }
            }
            if (variant.sameAs !== undefined && response.status === 404) {
              const details = JSON.stringify((JSON.parse(response.body) as { details?: unknown }).details)
              const first = notFoundDetails.get(variant.sameAs)
              if (first === undefined) notFoundDetails.set(variant.sameAs, details)
              else if (first !== details) failures.push(`${name} — ${variant.label}: details ${details}, another 404 of ${variant.sameAs} ${first}`)
            }
            if (response.status >= 300) refused.push(variant)
            else if (!safe) {
              accepted.push(`${name} — ${variant.label}: ${response.status}`)
              // What it changed may have been the acting user itself (deleted): the next variants act for another.
              if (acting !== undefined) acting = `user ${await newUser()}`
            }
          }

          // A refusal changes nothing; what was accepted (a valid request after all) may. When both happened and
          // something changed, the refused variants are sent again one by one to tell.
          const changed = changedTables(before, await snapshot(ctx))
          if (changed.length > 0 && (safe || refused.length === variants.length)) failures.push(`${name}: ${safe ? 'reads' : 'refused requests'} changed ${changed.join(', ')}`)
          else if (changed.length > 0) {
            for (const variant of refused) {
              const ahead = await snapshot(ctx)
              const response = await ctx.app.inject(variant.request)
              const changedBy = changedTables(ahead, await snapshot(ctx))
              if (changedBy.length > 0 && response.statusCode >= 300) failures.push(`${name} — ${variant.label}: refused (${response.statusCode}) yet changed ${changedBy.join(', ')}`)
            }
          }
        }
      }
      t.diagnostic(`${checked} answers checked against a prescribed one; operations that did not let the walk in: ${unauthorized.join(', ')}`)
      t.diagnostic(`${sent} requests; accepted by unsafe operations (valid after all): ${accepted.length}\n${accepted.join('\n')}`)
      assert.ok(sent > 1000, `${sent} requests`)
      assert.deepEqual(failures, [], `${failures.length} problems in ${sent} requests:\n${failures.join('\n')}`)
    })
  })
}
