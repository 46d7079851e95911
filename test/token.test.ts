import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose'
import * as oauth from 'oauth4webapi'
import { ChangeFeed } from '../src/db/changes.ts'
import { verifySecret } from '../src/lib/secrets.ts'
import { ClientsService } from '../src/modules/auth/clients.service.ts'
import { basicAuth, ENGINES, PUBLIC_URL, startApp, type TestContext, type TestResponse } from './helpers.ts'

const FORM = 'application/x-www-form-urlencoded'

for (const engine of ENGINES) {
  describe(`token endpoint [${engine}]`, () => {
    let ctx: TestContext
    before(async () => {
      ctx = await startApp(engine)
    })
    after(() => ctx.close())

    const tokenRequest = (form: string | Record<string, string>, headers: Record<string, string> = {}) =>
      ctx.request({
        method: 'POST',
        url: '/core/oauth2/token',
        headers: { 'content-type': FORM, ...headers },
        payload: typeof form === 'string' ? form : new URLSearchParams(form).toString(),
      })

    function assertOAuthError(response: TestResponse, status: number, error: string) {
      assert.equal(response.status, status, response.body)
      const body = response.json<{ error: string; error_description?: string }>()
      assert.equal(body.error, error)
      assert.equal(typeof body.error_description, 'string')
      if (status === 401) assert.match(String(response.headers['www-authenticate']), /^Basic realm="tessera"/)
    }

    /** Routes oauth4webapi's requests into the app without a socket. */
    const viaApp = async (url: string, options: oauth.CustomFetchOptions<string, unknown>): Promise<Response> => {
      const target = new URL(url)
      const response = await ctx.request({
        method: options.method as 'GET' | 'POST',
        url: `${target.pathname}${target.search}`,
        headers: options.headers,
        payload: typeof options.body === 'string' ? options.body : options.body ? String(options.body) : undefined,
      })
      const headers = new Headers()
      for (const [name, value] of Object.entries(response.headers)) if (value !== undefined) headers.set(name, String(value))
      return new Response(response.body, { status: response.status, headers })
    }
    const clientOptions = { [oauth.customFetch]: viaApp, [oauth.allowInsecureRequests]: true }

    async function discover() {
      const issuer = new URL(PUBLIC_URL)
      return oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { ...clientOptions, algorithm: 'oauth2' }))
    }

    test('a standard OAuth 2.0 client obtains a token with client_secret_basic', async () => {
      const as = await discover()
      assert.equal(as.token_endpoint, `${PUBLIC_URL}/core/oauth2/token`)
      assert.deepEqual(as.grant_types_supported, ['client_credentials'])
      const client = { client_id: ctx.client.clientId }
      const response = await oauth.clientCredentialsGrantRequest(as, client, oauth.ClientSecretBasic(ctx.client.clientSecret), new URLSearchParams({ scope: 'core.users:read core.users:create' }), clientOptions)
      const result = await oauth.processClientCredentialsResponse(as, client, response)
      assert.equal(result.token_type, 'bearer')
      assert.equal(result.scope, 'core.users:read core.users:create')
      assert.equal(result.expires_in, ctx.config.accessTokenTtlSeconds)
    })

    test('a standard OAuth 2.0 client obtains a token with client_secret_post', async () => {
      const as = await discover()
      const client = { client_id: ctx.client.clientId }
      const response = await oauth.clientCredentialsGrantRequest(as, client, oauth.ClientSecretPost(ctx.client.clientSecret), new URLSearchParams(), clientOptions)
      const result = await oauth.processClientCredentialsResponse(as, client, response)
      assert.equal(result.scope, ctx.services.clients.scopes.all.join(' '), 'an omitted scope grants every scope of the client')
    })

    test('the token response is not cacheable and names the organization', async () => {
      const response = await tokenRequest({ grant_type: 'client_credentials' }, { authorization: basicAuth(ctx.client) })
      assert.equal(response.status, 200)
      assert.equal(response.headers['cache-control'], 'no-store')
      assert.equal(response.headers.pragma, 'no-cache')
      assert.equal(response.headers['x-service-organization-id'], ctx.client.organizationId)
    })

    test('access tokens are RFC 9068 JWTs verifiable with the published key set', async () => {
      const token = await ctx.token(ctx.client, 'core.users:read')
      const jwks = (await ctx.request({ method: 'GET', url: '/.well-known/jwks.json' })).json<{ keys: Record<string, unknown>[] }>()
      assert.equal(jwks.keys.length, 1)
      assert.equal(jwks.keys[0]!.d, undefined, 'the key set must not contain private key material')
      const { payload, protectedHeader } = await jwtVerify(token, createLocalJWKSet(jwks as never), { issuer: PUBLIC_URL, audience: PUBLIC_URL })
      assert.equal(protectedHeader.typ, 'at+jwt')
      assert.equal(protectedHeader.alg, 'ES256')
      assert.equal(decodeProtectedHeader(token).kid, jwks.keys[0]!.kid)
      assert.equal(payload.sub, ctx.client.clientId)
      assert.equal(payload.client_id, ctx.client.clientId)
      assert.equal(payload.organization_id, ctx.client.organizationId)
      assert.equal(payload.scope, 'core.users:read')
      assert.equal(typeof payload.jti, 'string')
      assert.equal(payload.exp! - payload.iat!, ctx.config.accessTokenTtlSeconds)
    })

    test('a narrower client only gets what it was granted, and can narrow further', async () => {
      const narrow = await ctx.newClient('core.users:read core.users:create')
      const all = await tokenRequest({ grant_type: 'client_credentials' }, { authorization: basicAuth(narrow) })
      assert.equal(all.json().scope, 'core.users:create core.users:read')
      const one = await tokenRequest({ grant_type: 'client_credentials', scope: 'core.users:read' }, { authorization: basicAuth(narrow) })
      assert.equal(one.json().scope, 'core.users:read')
    })

    test('a bearer refusal carries the RFC 6750 challenge: the scheme without a token, the reason with a bad one', async () => {
      const without = await ctx.request({ method: 'GET', url: '/core/users/me' })
      assert.equal(without.status, 401)
      assert.equal(without.headers['www-authenticate'], 'Bearer realm="tessera"')
      const bad = await ctx.request({ method: 'GET', url: '/core/users/me', headers: { authorization: 'Bearer not.a.jwt' } })
      assert.equal(bad.status, 401)
      assert.equal(bad.headers['www-authenticate'], 'Bearer realm="tessera", error="invalid_token", error_description="The access token is invalid"')
    })

    describe('RFC 6749 §5.2 errors', () => {
      test('a missing grant_type is invalid_request', async () => {
        assertOAuthError(await tokenRequest({}, { authorization: basicAuth(ctx.client) }), 400, 'invalid_request')
      })

      test('an unsupported grant type is unsupported_grant_type', async () => {
        for (const grant of ['refresh_token', 'authorization_code', 'password', 'urn:example:other']) {
          assertOAuthError(await tokenRequest({ grant_type: grant }, { authorization: basicAuth(ctx.client) }), 400, 'unsupported_grant_type')
        }
      })

      test('an unknown scope is invalid_scope', async () => {
        assertOAuthError(await tokenRequest({ grant_type: 'client_credentials', scope: 'core.users:read core.everything:*' }, { authorization: basicAuth(ctx.client) }), 400, 'invalid_scope')
      })

      test('a scope the client was not granted is invalid_scope', async () => {
        const narrow = await ctx.newClient('core.users:read')
        assertOAuthError(await tokenRequest({ grant_type: 'client_credentials', scope: 'core.users:create' }, { authorization: basicAuth(narrow) }), 400, 'invalid_scope')
      })

      test('a malformed scope is invalid_request', async () => {
        assertOAuthError(await tokenRequest({ grant_type: 'client_credentials', scope: 'core.users:read "quoted"' }, { authorization: basicAuth(ctx.client) }), 400, 'invalid_request')
        assertOAuthError(await tokenRequest({ grant_type: 'client_credentials', scope: 'x'.repeat(5000) }, { authorization: basicAuth(ctx.client) }), 400, 'invalid_request')
      })

      test('a parameter sent twice is invalid_request', async () => {
        assertOAuthError(await tokenRequest('grant_type=client_credentials&grant_type=client_credentials', { authorization: basicAuth(ctx.client) }), 400, 'invalid_request')
      })

      test('two client authentication methods at once are invalid_request', async () => {
        const form = { grant_type: 'client_credentials', client_id: ctx.client.clientId, client_secret: ctx.client.clientSecret }
        assertOAuthError(await tokenRequest(form, { authorization: basicAuth(ctx.client) }), 400, 'invalid_request')
      })

      test('a body that is not form-encoded is invalid_request', async () => {
        const response = await ctx.request({
          method: 'POST',
          url: '/core/oauth2/token',
          headers: { authorization: basicAuth(ctx.client), 'content-type': 'application/json' },
          payload: { grant_type: 'client_credentials' },
        })
        assertOAuthError(response, 400, 'invalid_request')
      })

      test('a wrong secret is invalid_client with WWW-Authenticate', async () => {
        assertOAuthError(await tokenRequest({ grant_type: 'client_credentials' }, { authorization: basicAuth({ ...ctx.client, clientSecret: 'wrong-secret' }) }), 401, 'invalid_client')
        const form = { grant_type: 'client_credentials', client_id: ctx.client.clientId, client_secret: 'wrong-secret' }
        assertOAuthError(await tokenRequest(form), 401, 'invalid_client')
      })

      test('an unknown client is invalid_client', async () => {
        assertOAuthError(await tokenRequest({ grant_type: 'client_credentials' }, { authorization: basicAuth({ clientId: '6a3c3d0e-7f4e-4f7c-9d42-5d3f1a2b3c4d', clientSecret: 'x' }) }), 401, 'invalid_client')
        assertOAuthError(await tokenRequest({ grant_type: 'client_credentials' }, { authorization: basicAuth({ clientId: 'not-a-uuid', clientSecret: 'x' }) }), 401, 'invalid_client')
      })

      test('a malformed Authorization header is invalid_client', async () => {
        for (const authorization of ['Basic', 'Basic !!!', `Basic ${Buffer.from('no-separator').toString('base64')}`, 'Bearer abc']) {
          assertOAuthError(await tokenRequest({ grant_type: 'client_credentials' }, { authorization }), 401, 'invalid_client')
        }
      })

      test('no client authentication at all is invalid_client', async () => {
        assertOAuthError(await tokenRequest({ grant_type: 'client_credentials' }), 401, 'invalid_client')
        assertOAuthError(await tokenRequest({ grant_type: 'client_credentials', client_id: ctx.client.clientId }), 401, 'invalid_client')
      })

      test('a revoked client is invalid_client', async () => {
        const revoked = await ctx.newClient()
        await ctx.services.clients.revoke(revoked.clientId)
        assertOAuthError(await tokenRequest({ grant_type: 'client_credentials' }, { authorization: basicAuth(revoked) }), 401, 'invalid_client')
      })

      test('known and unknown client ids, right and wrong secrets cost the same: one scrypt for a wrong secret or a right one not seen yet, none and no database read for a right one seen', async () => {
        let checks = 0
        let reads = 0
        const counted = ctx.database.db.withPlugin({
          transformQuery: (args) => {
            reads++
            return args.node
          },
          transformResult: async (args) => args.result,
        })
        const feed = new ChangeFeed(ctx.database.schema)
        await feed.listen(ctx.database)
        try {
          for (let i = 0; !feed.isLive(); i++) {
            assert.ok(i < 200, 'the change feed listens')
            await new Promise((resolve) => setTimeout(resolve, 25))
          }
          const clients = new ClientsService(counted, feed, ctx.services.clients.scopes, {
            checkSecret: (secret, stored) => {
              checks++
              return verifySecret(secret, stored)
            },
          })
          const known = await clients.create({ name: 'Timing', scopes: '*' })
          const unknownId = randomUUID()
          const attempt = async (clientId: string, secret: string) => {
            const [checksBefore, readsBefore] = [checks, reads]
            const client = await clients.authenticate(clientId, secret)
            return { client: client?.id ?? null, checks: checks - checksBefore, reads: reads - readsBefore }
          }
          // First sight of an id: its row (or that it has none) is read once. A right secret costs one scrypt the
          // first time and none after; a wrong one, for a known id or an unknown one, one scrypt every time.
          assert.deepEqual(await attempt(known.clientId, known.clientSecret), { client: known.clientId, checks: 1, reads: 1 })
          // The creation's own notification may arrive after that read and evict the row once more: until it has, a read.
          for (let i = 0; (await attempt(known.clientId, known.clientSecret)).reads > 0; i++) {
            assert.ok(i < 100, 'the row stays cached once the creation was heard')
            await new Promise((resolve) => setTimeout(resolve, 20))
          }
          assert.deepEqual(await attempt(unknownId, 'guess-1'), { client: null, checks: 1, reads: 1 })
          for (const [clientId, secret, client, checked] of [
            [known.clientId, known.clientSecret, known.clientId, 0],
            [known.clientId.toUpperCase(), known.clientSecret, known.clientId, 0],
            [known.clientId, 'guess-1', null, 1],
            [known.clientId, 'guess-1', null, 1],
            [unknownId, 'guess-1', null, 1],
            [unknownId.toUpperCase(), 'guess-2', null, 1],
          ] as const) {
            assert.deepEqual(await attempt(clientId, secret), { client, checks: checked, reads: 0 }, `${clientId === unknownId ? 'unknown' : 'known'} ${secret}`)
          }
          // An id once unknown that becomes a client: its creation is announced, the next attempt reads it.
          // (Named in capitals: the same id, the same key.)
          const created = await clients.create({ name: 'Timing, later', scopes: '*', clientId: unknownId.toUpperCase() })
          assert.equal((await attempt(unknownId, created.clientSecret)).client, unknownId)
          assert.equal((await attempt(unknownId, 'guess-1')).client, null)
          // A revoked client: refused, whatever was proven before.
          await clients.revoke(known.clientId.toUpperCase())
          assert.equal((await attempt(known.clientId, known.clientSecret)).client, null)
        } finally {
          await feed.stop()
        }
      })

      test('oauth4webapi surfaces the server error to the client', async () => {
        const as = await discover()
        const client = { client_id: ctx.client.clientId }
        const response = await oauth.clientCredentialsGrantRequest(as, client, oauth.ClientSecretBasic('wrong'), new URLSearchParams(), clientOptions)
        await assert.rejects(oauth.processClientCredentialsResponse(as, client, response), (error: unknown) => {
          // A 401 with a WWW-Authenticate challenge surfaces as the challenge; either way the client sees invalid_client.
          if (error instanceof oauth.WWWAuthenticateChallengeError) {
            assert.equal(error.response.status, 401)
            assert.equal(error.cause[0]?.scheme, 'basic')
          } else {
            assert.ok(error instanceof oauth.ResponseBodyError, String(error))
            assert.equal(error.error, 'invalid_client')
          }
          return true
        })
      })
    })
  })

  describe(`token endpoint rate limit [${engine}]`, () => {
    let ctx: TestContext
    before(async () => {
      ctx = await startApp(engine, { TOKEN_RATE_LIMIT_PER_MINUTE: '3' })
    })
    after(() => ctx.close())

    test('token requests beyond the limit get 429 with Retry-After, per client', async () => {
      const other = await ctx.newClient()
      const send = (client: typeof other) =>
        ctx.request({
          method: 'POST',
          url: '/core/oauth2/token',
          headers: { 'content-type': FORM, authorization: basicAuth(client) },
          payload: 'grant_type=client_credentials',
        })
      for (let i = 0; i < 3; i++) assert.equal((await send(ctx.client)).status, 200)
      const limited = await send(ctx.client)
      assert.equal(limited.status, 429)
      assert.equal(limited.json().code, 'too_many_requests')
      assert.ok(Number(limited.headers['retry-after']) > 0)
      assert.equal((await send(other)).status, 200, 'another client keeps its own budget')
    })
  })
}
