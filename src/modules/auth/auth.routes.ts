import formbody from '@fastify/formbody'
import Type from 'typebox'
import { addressKey } from '../../http/rate-limit.ts'
import { component, described, ErrorBody, OAuthErrorBody } from '../../http/schemas.ts'
import type { App } from '../../http/types.ts'
import { basicClientId, type AuthService } from './auth.service.ts'
import type { ScopeCatalogue } from './scopes.ts'
import type { TokenSigner } from './tokens.ts'

const TokenRequestBody = component(
  'create-oauth2-token-request',
  Type.Object(
    {
      grant_type: Type.String({ description: 'Only `client_credentials` is supported.', examples: ['client_credentials'] }),
      scope: Type.Optional(Type.String({ maxLength: 4096, description: 'Space-delimited scopes, a subset of the client\'s; omitted means all of them.' })),
      client_id: Type.Optional(Type.String({ maxLength: 200, description: 'Client id, when not sent with HTTP Basic authentication.' })),
      client_secret: Type.Optional(Type.String({ maxLength: 200, description: 'Client secret, when not sent with HTTP Basic authentication.' })),
    },
    { description: 'Form-encoded token request (RFC 6749 §4.4.2).' },
  ),
)

const TokenResponseBody = component(
  'oauth2-token',
  Type.Object({
    access_token: Type.String({ description: 'Signed JWT access token (RFC 9068).' }),
    token_type: Type.Literal('Bearer'),
    expires_in: Type.Integer({ description: 'Seconds until the token expires.' }),
    scope: Type.String({ description: 'Space-delimited scopes the token grants.' }),
  }),
)

const Jwks = component(
  'json-web-key-set',
  Type.Object({ keys: Type.Array(Type.Record(Type.String(), Type.Unknown())) }, { description: 'Public keys that verify access tokens (RFC 7517).' }),
)

const AuthorizationServerMetadata = component(
  'authorization-server-metadata',
  Type.Object(
    {
      issuer: Type.String(),
      token_endpoint: Type.String(),
      jwks_uri: Type.String(),
      scopes_supported: Type.Array(Type.String()),
      response_types_supported: Type.Array(Type.String()),
      grant_types_supported: Type.Array(Type.String()),
      token_endpoint_auth_methods_supported: Type.Array(Type.String()),
      service_documentation: Type.String(),
    },
    { description: 'OAuth 2.0 authorization server metadata (RFC 8414).' },
  ),
)

export function authRoutes(deps: { auth: AuthService; signer: TokenSigner; scopes: ScopeCatalogue; publicUrl: string; tokenRateLimitPerMinute: number }) {
  return async function routes(app: App): Promise<void> {
    // RFC 6749 §4.4.2: token requests are form-encoded, and form bodies are accepted here only.
    app.removeContentTypeParser('application/json')
    await app.register(formbody)

    app.post(
      '/core/oauth2/token',
      {
        schema: {
          operationId: 'core.create-oauth2-token',
          summary: 'Request OAuth2 token',
          description:
            'Issues an access token with the client credentials grant. Authenticate with HTTP Basic ' +
            '(`client_id:client_secret`) or with `client_id` and `client_secret` form fields, not both.',
          tags: ['Authentication'],
          consumes: ['application/x-www-form-urlencoded'],
          headers: Type.Object({ authorization: Type.Optional(Type.String({ description: 'HTTP Basic client credentials.' })) }),
          body: TokenRequestBody,
          response: {
            200: described(TokenResponseBody, 'Token issued.', {
              'x-service-organization-id': { type: 'string', format: 'uuid', description: 'Organization of the client the token was issued to.' },
              'cache-control': { type: 'string', description: 'Always `no-store`.' },
            }),
            400: described(OAuthErrorBody, 'Malformed request, unsupported grant type or scope not granted.'),
            401: described(OAuthErrorBody, 'Client authentication failed.', {
              'www-authenticate': { type: 'string', description: 'The authentication scheme to use.' },
            }),
            429: described(ErrorBody, 'Too many token requests; retry after `Retry-After` seconds.'),
            500: described(ErrorBody, 'An unexpected error; report the request id.'),
          },
        },
        config: {
          oauthErrors: true,
          // Its own policy instead of the API's: token requests come before any client is authenticated.
          rateLimit: deps.tokenRateLimitPerMinute > 0
            ? {
                policy: { name: 'token', limit: deps.tokenRateLimitPerMinute, windowSeconds: 60 },
                // Per client and address, so one client's retries cannot lock out another behind the same address.
                key: (request) => {
                  const body = request.body as Record<string, unknown> | undefined
                  const client = typeof body?.client_id === 'string' ? body.client_id : basicClientId(request.headers.authorization) ?? ''
                  return `${client.slice(0, 64)}:${addressKey(request.ip)}`
                },
              }
            : false,
        },
      },
      async (request, reply) => {
        const { organizationId, ...token } = await deps.auth.issueToken({
          authorization: request.headers.authorization,
          form: request.body as Record<string, unknown>,
        })
        return reply
          .header('cache-control', 'no-store')
          .header('pragma', 'no-cache')
          .header('x-service-organization-id', organizationId)
          .send(token)
      },
    )

    app.get(
      '/.well-known/jwks.json',
      {
        schema: {
          operationId: 'core.get-jwks',
          summary: 'Token verification keys',
          description: 'The public keys that verify access tokens, for resource servers that validate tokens themselves.',
          tags: ['Authentication'],
          response: { 200: described(Jwks, 'Key set.') },
        },
        config: { rateLimit: false },
      },
      // Every key not retired: a new key is published before it signs (docs/deployment.md, Key rotation), and an old
      // one stays while its tokens may still be valid. Cached no longer than a new key waits before it signs (with the
      // default KEY_RING_REFRESH_MS), so that a verifier honouring the header knows a key before any token carries it.
      async (_request, reply) => reply.header('cache-control', 'public, max-age=60').send({ keys: deps.signer.jwks() }),
    )

    app.get(
      '/.well-known/oauth-authorization-server',
      {
        schema: {
          operationId: 'core.get-authorization-server-metadata',
          summary: 'Authorization server metadata',
          description: 'RFC 8414 metadata: the issuer, the token endpoint, the key set and the supported scopes.',
          tags: ['Authentication'],
          response: { 200: described(AuthorizationServerMetadata, 'Metadata.') },
        },
        config: { rateLimit: false },
      },
      async () => ({
        issuer: deps.signer.issuer,
        token_endpoint: `${deps.publicUrl}/core/oauth2/token`,
        jwks_uri: `${deps.publicUrl}/.well-known/jwks.json`,
        scopes_supported: [...deps.scopes.all],
        response_types_supported: [],
        grant_types_supported: ['client_credentials'],
        token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
        service_documentation: `${deps.publicUrl}/docs`,
      }),
    )
  }
}

