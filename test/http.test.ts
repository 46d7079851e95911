import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { Writable } from 'node:stream'
import { before, describe, test } from 'node:test'
import { buildApp, loggerOptions } from '../src/app.ts'
import { loadOrCreateSecrets } from '../src/lib/data-dir.ts'
import { basicAuth, bearer, ENGINES, individualUser, openTestDatabase, startApp, testConfig, USER_IP, useApp } from './helpers.ts'

const REFERENCE = path.resolve(import.meta.dirname, '../../shared/reference/core-openapi.json')

type Operation = { operationId?: string; security?: Record<string, string[]>[]; 'x-service'?: { security?: { OAuth2?: { subjects?: string[] } } }; responses?: Record<string, unknown> }
type Document = { openapi: string; paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, unknown> } }

for (const engine of ENGINES) {
  describe(`HTTP conventions [${engine}]`, () => {
    const suite = useApp(engine, { BODY_LIMIT_BYTES: '4096' })

    test('every response carries a fresh request id, errors included', async () => {
      const responses = [
        await suite.ctx.request({ method: 'GET', url: '/health/live' }),
        await suite.ctx.request({ method: 'GET', url: '/core/unknown' }),
        await suite.ctx.request({ method: 'GET', url: '/core/users/me' }),
        await suite.ctx.request({ method: 'POST', url: '/core/users', headers: bearer(suite.token), payload: { type: 'individual' } }),
        await suite.ctx.request({ method: 'POST', url: '/core/oauth2/suite.token', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'grant_type=client_credentials' }),
      ]
      const ids = responses.map((r) => r.headers['x-service-request-id'])
      assert.equal(new Set(ids).size, ids.length)
    })

    test('an incoming request id header is not trusted', async () => {
      const response = await suite.ctx.request({ method: 'GET', url: '/health/live', headers: { 'x-service-request-id': 'attacker-chosen' } })
      assert.notEqual(response.headers['x-service-request-id'], 'attacker-chosen')
    })

    test('unknown routes are 404 in the error envelope', async () => {
      for (const [method, url] of [['GET', '/nothing/here'], ['POST', '/core/users/me'], ['PUT', '/core/users']] as const) {
        const response = await suite.ctx.request({ method, url })
        assert.equal(response.status, 404)
        assert.equal(response.json().code, 'route_not_found')
        assert.equal(typeof response.json().message, 'string')
      }
    })

    test('a content type other than JSON is 415', async () => {
      for (const contentType of ['text/plain', 'application/xml', 'application/x-www-form-urlencoded']) {
        const response = await suite.ctx.request({ method: 'POST', url: '/core/users', headers: { ...bearer(suite.token), 'x-service-user-ip': USER_IP, 'content-type': contentType }, payload: 'email=a@example.com' })
        assert.equal(response.status, 415, `${contentType}: ${response.body}`)
        assert.equal(response.json().code, 'content_type_unsupported')
      }
    })

    test('malformed JSON and an empty JSON body are 400 request_invalid', async () => {
      for (const payload of ['{"email":', '']) {
        const response = await suite.ctx.request({ method: 'POST', url: '/core/users', headers: { ...bearer(suite.token), 'x-service-user-ip': USER_IP, 'content-type': 'application/json' }, payload })
        assert.equal(response.status, 400, response.body)
        assert.equal(response.json().code, 'request_invalid')
      }
    })

    test('a body over the limit is 413 content_too_large and stores nothing', async () => {
      const body = individualUser({ fullName: `John ${'x'.repeat(5000)}` })
      const response = await suite.ctx.request({ method: 'POST', url: '/core/users', headers: { ...bearer(suite.token), 'x-service-user-ip': USER_IP }, payload: body })
      assert.equal(response.status, 413)
      assert.deepEqual(response.json().details, { threshold: { unit: 'bytes', limit: '4096' } })
      assert.equal((await suite.ctx.request({ method: 'POST', url: '/core/users', headers: { ...bearer(suite.token), 'x-service-user-ip': USER_IP }, payload: { ...body, fullName: 'John Doe' } })).status, 201)
    })

    test('deeply nested, hostile or wrongly typed input never causes a 500', async () => {
      let nested: unknown = 'x'
      for (let i = 0; i < 200; i++) nested = { a: nested }
      const base = JSON.stringify(individualUser()).slice(0, -1)
      const payloads = [
        `${base},"metadata":${JSON.stringify(nested)}}`,
        `${base},"email":{"$gt":""}}`,
        `${base},"address":[]}`,
        `${base},"__proto__":{"admin":true}}`,
        `${base},"constructor":{"prototype":{"admin":true}}}`,
        `[${'['.repeat(5000)}${']'.repeat(5000)}]`,
      ]
      for (const payload of payloads) {
        const response = await suite.ctx.request({ method: 'POST', url: '/core/users', headers: { ...bearer(suite.token), 'x-service-user-ip': USER_IP, 'content-type': 'application/json' }, payload })
        assert.ok(response.status < 500, response.body)
      }
      assert.equal(({} as Record<string, unknown>).admin, undefined)
    })

    test('health, readiness and metrics answer without a suite.token', async () => {
      assert.deepEqual((await suite.ctx.request({ method: 'GET', url: '/health/live' })).json(), { status: 'ok' })
      assert.deepEqual((await suite.ctx.request({ method: 'GET', url: '/health/ready' })).json(), { status: 'ok' })
      const metrics = await suite.ctx.request({ method: 'GET', url: '/metrics' })
      assert.equal(metrics.status, 200)
      assert.match(metrics.body, /http_request_duration_seconds_count\{method="GET",route="\/health\/ready",status_code="200"\}/)
      // Every route under its template, preflights included; URLs that match no route under one label, whatever they are.
      const countOf = (text: string, labels: string) => Number(new RegExp(`^http_request_duration_seconds_count\\{${labels.replace(/[{}*/]/g, '\\$&')}\\} (\\d+)$`, 'm').exec(text)?.[1] ?? 0)
      const series = ['method="GET",route="/core/assets/:asset",status_code="404"', 'method="OPTIONS",route="*",status_code="204"', 'method="GET",route="unmatched",status_code="404"']
      const before = series.map((labels) => countOf(metrics.body, labels))
      const asset = await suite.ctx.request({ method: 'GET', url: `/core/assets/NOPE${randomUUID().slice(0, 4)}`, headers: bearer(suite.token) })
      assert.equal(asset.status, 404)
      const preflight = await suite.ctx.app.inject({ method: 'OPTIONS', url: '/core/users', headers: { origin: 'https://app.example', 'access-control-request-method': 'POST' } })
      assert.equal(preflight.statusCode, 204)
      for (let i = 0; i < 3; i++) assert.equal((await suite.ctx.request({ method: 'GET', url: `/no-such-path-${i}` })).status, 404)
      const after = (await suite.ctx.request({ method: 'GET', url: '/metrics' })).body
      assert.deepEqual(series.map((labels, i) => countOf(after, labels) - before[i]!), [1, 1, 3])
      assert.doesNotMatch(after, /no-such-path/)
      assert.match(metrics.body, /process_cpu_user_seconds_total/)
    })

    test('the docs page is served', async () => {
      const response = await suite.ctx.app.inject({ method: 'GET', url: '/docs/' })
      assert.equal(response.statusCode, 200)
      assert.match(response.headers['content-type'] as string, /text\/html/)
      assert.ok(response.headers['x-service-request-id'])
      // Only this server's own assets, and no forced https upgrade that would blank the page over plain http.
      const policy = String(response.headers['content-security-policy'])
      assert.match(policy, /default-src 'self'/)
      assert.doesNotMatch(policy, /upgrade-insecure-requests|https:|validator/)
    })

    describe('the generated OpenAPI document', () => {
      let document: Document
      before(async () => {
        document = (await suite.ctx.app.inject({ method: 'GET', url: '/openapi.json' })).json<Document>()
      })

      test('is OpenAPI 3.1 with named component schemas only', () => {
        assert.equal(document.openapi, '3.1.0')
        const names = Object.keys(document.components.schemas)
        assert.ok(names.length > 5)
        assert.deepEqual(names.filter((n) => /^def-\d+/.test(n)), [])
        const refs = [...JSON.stringify(document).matchAll(/"\$ref":"#\/components\/(schemas|headers)\/([^"]+)"/g)]
        for (const [, kind, name] of refs) {
          assert.ok((document.components as Record<string, Record<string, unknown>>)[kind!]?.[name!], `dangling reference ${kind}/${name}`)
        }
      })

      test('every operation has an id, a 500 response and the request id header on every response', () => {
        for (const [route, operations] of Object.entries(document.paths)) {
          for (const [method, operation] of Object.entries(operations)) {
            assert.ok(operation.operationId, `${method} ${route}`)
            for (const [status, response] of Object.entries(operation.responses ?? {})) {
              const headers = (response as { headers?: Record<string, unknown> }).headers ?? {}
              assert.ok(headers['x-service-request-id'], `${operation.operationId} ${status}`)
            }
          }
        }
      })

      test('scopes and subjects of each operation match the reference document', { skip: !fs.existsSync(REFERENCE) && 'reference not found' }, () => {
        const reference = JSON.parse(fs.readFileSync(REFERENCE, 'utf8')) as Document
        let compared = 0
        for (const [route, operations] of Object.entries(document.paths)) {
          for (const [method, operation] of Object.entries(operations)) {
            const upstream = reference.paths[route]?.[method]
            if (!upstream || !operation.security) continue
            compared++
            // The reference leaves out `security` where the scope depends on a parameter (metadata).
            if (upstream.security) assert.deepEqual(operation.security, upstream.security, `${method} ${route} scopes`)
            assert.deepEqual(
              [...(operation['x-service']?.security?.OAuth2?.subjects ?? [])].sort(),
              [...(upstream['x-service']?.security?.OAuth2?.subjects ?? [])].sort(),
              `${method} ${route} subjects`,
            )
          }
        }
        assert.ok(compared >= 3, `compared ${compared} operations`)
      })
    })
  })

  describe(`failures [${engine}]`, () => {
    test('an unexpected failure is 500 internal_error with the request id and no internals; readiness turns 503', async () => {
      const ctx = await startApp(engine)
      const token = await ctx.token()
      const user = await ctx.createUser(token)
      await ctx.database.close()
      const response = await ctx.request({ method: 'GET', url: '/core/users/me', headers: bearer(token, user.id) })
      assert.equal(response.status, 500)
      assert.deepEqual(Object.keys(response.json()).sort(), ['code', 'message'])
      assert.equal(response.json().code, 'internal_error')
      assert.doesNotMatch(response.body, /select|from|pglite|postgres|stack|at /i)
      const ready = await ctx.request({ method: 'GET', url: '/health/ready' })
      assert.equal(ready.status, 503)
      await ctx.app.close().catch(() => {})
    })
  })

  describe(`logs [${engine}]`, () => {
    test('logs are JSON lines with the request id and never contain credentials', async () => {
      const lines: string[] = []
      const stream = new Writable({
        write(chunk: Buffer, _encoding, callback) {
          lines.push(...chunk.toString().split('\n').filter(Boolean))
          callback()
        },
      })
      const config = testConfig({ LOG_LEVEL: 'info' })
      const { database, cleanup } = await openTestDatabase(engine, config)
      const { app, services } = await buildApp({
        config,
        database,
        secrets: loadOrCreateSecrets(null, config),
        logger: { ...(loggerOptions('info') as object), stream },
        onClose: cleanup,
      })
      const client = await services.clients.create({ name: 'Logged client', scopes: '*' })
      const tokenResponse = await app.inject({
        method: 'POST',
        url: '/core/oauth2/token',
        headers: { authorization: basicAuth(client), 'content-type': 'application/x-www-form-urlencoded' },
        payload: 'grant_type=client_credentials',
      })
      const accessToken = tokenResponse.json<{ access_token: string }>().access_token
      const formLogin = await app.inject({
        method: 'POST',
        url: '/core/oauth2/token',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: new URLSearchParams({ grant_type: 'client_credentials', client_id: client.clientId, client_secret: client.clientSecret }).toString(),
      })
      assert.equal(formLogin.statusCode, 200)
      await app.inject({ method: 'GET', url: '/core/users/me', headers: { authorization: `Bearer ${accessToken}` } })
      await app.close()

      assert.ok(lines.length >= 6)
      const records = lines.map((line) => JSON.parse(line) as Record<string, unknown>)
      const requestId = tokenResponse.headers['x-service-request-id']
      assert.ok(records.some((r) => r.requestId === requestId), 'log records carry the request id')
      const all = lines.join('\n')
      for (const secret of [client.clientSecret, accessToken, accessToken.split('.')[2]!, basicAuth(client)]) {
        assert.ok(!all.includes(secret), 'a credential leaked into the logs')
      }
    })
  })
}
