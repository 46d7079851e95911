import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { OpenAPIV3_1 } from 'openapi-types'
import type { FastifyInstance, FastifySchema } from 'fastify'
import type { RouteAuth, ScopesByParam } from './principal.ts'
import { componentName, registeredComponents } from './schemas.ts'

export const REQUEST_ID_HEADER = 'x-service-request-id'

type Json = null | boolean | number | string | Json[] | { [key: string]: Json }

/** Copies a schema, replacing every named schema inside it (not the root) with a reference to its component. */
function withComponentRefs(schema: unknown, isRoot: boolean, used: Set<string>): Json {
  if (Array.isArray(schema)) return schema.map((item) => withComponentRefs(item, false, used))
  if (schema === null || typeof schema !== 'object') return schema as Json
  const name = isRoot ? undefined : componentName(schema)
  if (name !== undefined) {
    used.add(name)
    return { $ref: `#/components/schemas/${name}` }
  }
  return Object.fromEntries(Object.entries(schema).map(([key, value]) => [key, withComponentRefs(value, false, used)]))
}

/** Response schemas keep their description at the response level and reference the named body schema. */
function responseWithRef(schema: unknown, used: Set<string>): Json {
  if (schema === null || typeof schema !== 'object') return schema as Json
  const name = componentName(schema)
  if (name === undefined) return withComponentRefs(schema, true, used)
  used.add(name)
  const { description, headers } = schema as { description?: string; headers?: Json }
  return { ...(description ? { description } : {}), ...(headers ? { headers } : {}), $ref: `#/components/schemas/${name}` }
}

export interface OpenApiOptions {
  title: string
  version: string
  description: string
  serverUrl: string
  scopes: Record<string, string>
}

/**
 * The OpenAPI 3.1 document is generated from the route schemas: each route's TypeBox schemas, its
 * `config.auth` (scopes and subjects, rendered as `security` and `x-service`), and the named components.
 */
export async function registerOpenApi(app: FastifyInstance, options: OpenApiOptions): Promise<void> {
  const used = new Set<string>()
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: options.title, version: options.version, description: options.description },
      servers: [{ url: options.serverUrl }],
      components: {
        securitySchemes: {
          OAuth2: {
            type: 'oauth2',
            description: 'OAuth 2.0 client credentials; send the access token as `Authorization: Bearer <token>`.',
            flows: { clientCredentials: { tokenUrl: '/core/oauth2/token', scopes: options.scopes } },
          },
          WebhookPortal: {
            type: 'http',
            scheme: 'bearer',
            description: 'The webhook portal\'s session: opened with a management link (`POST /hosted/webhooks/api/sessions`), for one organization, until the link expires.',
          },
        },
        headers: {
          [REQUEST_ID_HEADER]: {
            description: 'Identifier of the request, for troubleshooting. Present on every response.',
            required: true,
            schema: { type: 'string', format: 'uuid' },
          },
          'retry-after': {
            description: 'Seconds to wait before retrying.',
            required: true,
            schema: { type: 'integer', minimum: 0 },
          },
          // draft-ietf-httpapi-ratelimit-headers: absent only while the limiter's shared store is unreachable (it fails open).
          ratelimit: {
            description: 'What is left of the caller\'s quota: `"<policy>";r=<requests left>;t=<seconds until the window resets>`.',
            schema: { type: 'string' },
            example: '"default";r=1187;t=42',
          },
          'ratelimit-policy': {
            description: 'The quota that applies: `"<policy>";q=<requests>;w=<window in seconds>`.',
            schema: { type: 'string' },
            example: '"default";q=1200;w=60',
          },
        },
      },
    },
    transform: ({ schema, url, route }) => {
      const auth = route.config?.auth as RouteAuth | undefined
      const original = (schema ?? {}) as FastifySchema & Record<string, unknown>
      const transformed = withComponentRefs({ ...original, response: undefined }, true, used) as Record<string, Json>
      delete transformed.response
      if (original.response) {
        transformed.response = Object.fromEntries(
          Object.entries(original.response as Record<string, unknown>).map(([status, body]) => [status, responseWithRef(body, used)]),
        )
      }
      if (auth) {
        // Scopes chosen by a path parameter are alternatives: any one of them, for its value.
        transformed.security = Array.isArray(auth.scopes)
          ? [{ OAuth2: [...auth.scopes] }]
          : Object.values((auth.scopes as ScopesByParam).byValue).map((scopes) => ({ OAuth2: [...scopes] }))
        transformed['x-service'] = { security: { OAuth2: { subjects: [...auth.subjects] } } }
      }
      if (route.config?.webhookPortal === true) transformed.security = [{ WebhookPortal: [] }]
      return { schema: transformed as FastifySchema, url }
    },
    transformObject: (documentObject) => {
      const document = ('openapiObject' in documentObject ? documentObject.openapiObject : {}) as { components?: { schemas?: Record<string, Json> }; paths?: Record<string, Record<string, unknown>> }
      const schemas: Record<string, Json> = {}
      const pending = [...used]
      for (let name = pending.pop(); name !== undefined; name = pending.pop()) {
        if (schemas[name] !== undefined) continue
        const before = new Set(used)
        schemas[name] = withComponentRefs(registeredComponents().get(name), true, used)
        for (const added of used) if (!before.has(added)) pending.push(added)
      }
      document.components = { ...document.components, schemas: Object.fromEntries(Object.entries(schemas).sort(([a], [b]) => a.localeCompare(b))) }
      for (const operations of Object.values(document.paths ?? {})) {
        for (const operation of Object.values(operations)) {
          const responses = (operation as { responses?: Record<string, { headers?: Record<string, Json> }> }).responses ?? {}
          for (const [status, response] of Object.entries(responses)) {
            response.headers = {
              [REQUEST_ID_HEADER]: { $ref: `#/components/headers/${REQUEST_ID_HEADER}` },
              ...(status === '429' ? { 'retry-after': { $ref: '#/components/headers/retry-after' } } : {}),
              // Optional: operations outside the limits (health, discovery) answer without them.
              ratelimit: { $ref: '#/components/headers/ratelimit' },
              'ratelimit-policy': { $ref: '#/components/headers/ratelimit-policy' },
              ...response.headers,
            }
          }
        }
      }
      return document as Partial<OpenAPIV3_1.Document>
    },
  })

  await app.register(swaggerUi, {
    routePrefix: '/docs',
    // BaseLayout drops Swagger UI's top bar: its URL box is not needed and its logo needs inline styles.
    uiConfig: { docExpansion: 'list', deepLinking: true, validatorUrl: null, tryItOutEnabled: true, layout: 'BaseLayout' },
    // Everything is served from here: nothing may come from elsewhere, and plain-http deployments must
    // keep working (so no upgrade-insecure-requests, which the plugin's default policy adds).
    staticCSP:
      "default-src 'self'; base-uri 'self'; font-src 'self' data:; frame-ancestors 'self'; img-src 'self' data:; " +
      "object-src 'none'; script-src 'self'; script-src-attr 'none'; style-src 'self'",
    theme: { title: `${options.title} — API reference` },
  })
}
