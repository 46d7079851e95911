import { externalAccountsRoutes } from './modules/external-accounts/index.ts'
import { randomUUID } from 'node:crypto'
import http from 'node:http'
import cors from '@fastify/cors'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Ajv, type Options as AjvOptions } from 'ajv'
import addFormats from 'ajv-formats'
import Fastify, { LogController, type FastifyBaseLogger, type FastifyRequest, type FastifyServerOptions } from 'fastify'
import type { LoggerOptions } from 'pino'
import type { Config } from './config.ts'
import { buildContainer, type Container, type ContainerDeps, type Services } from './container.ts'
import { isReachable, type DatabaseHandle } from './db/database.ts'
import { errorHandler, notFoundHandler } from './http/error-handler.ts'
import { ApiError, requestInvalid } from './http/errors.ts'
import { clientErrorHandler, frameworkErrorHandler } from './http/transport-errors.ts'
import { validatorCompiler } from './http/validation.ts'
import { UUID_PATTERN } from './lib/ids.ts'
import { registerIdempotency } from './http/idempotency.ts'
import { allowanceStoreFor, clientKey, RateLimiter, registerRateLimits } from './http/rate-limit.ts'
import { registerMetrics } from './http/metrics.ts'
import { lazyChildLoggerFactory } from './http/request-logger.ts'
import { REQUEST_ID_HEADER, registerOpenApi } from './http/openapi.ts'
import { hooksOf, type App } from './http/types.ts'
import type { SandboxSecrets } from './lib/data-dir.ts'
import { accountsRoutes } from './modules/accounts/index.ts'
import { registerAuditTrail } from './modules/audit/index.ts'
import { authRoutes } from './modules/auth/index.ts'
import { capabilitiesRoutes } from './modules/capabilities/index.ts'
import { depositMethodsRoutes, depositTestHelpersRoutes } from './modules/deposit-methods/index.ts'
import { filesRoutes } from './modules/files/index.ts'
import { healthRoutes } from './modules/health/index.ts'
import { kycConnectorRoutes, kycIngestionsRoutes } from './modules/kyc-connector/index.ts'
import { kycRoutes } from './modules/kyc/index.ts'
import { metadataRoutes } from './modules/metadata/index.ts'
import { quotesRoutes } from './modules/quotes/index.ts'
import { assetsRoutes, countriesRoutes, networksRoutes, railsRoutes, ratesRoutes } from './modules/reference/index.ts'
import { termsOfServiceRoutes } from './modules/terms-of-service/index.ts'
import { portfolioRoutes, sandboxHistoryRoutes, statementsRoutes } from './modules/portfolio/index.ts'
import { transactionsRoutes } from './modules/transactions/index.ts'
import { travelRuleRoutes } from './modules/travel-rule/index.ts'
import { usersRoutes } from './modules/users/index.ts'
import { webhookPortalPageRoutes, webhookPortalRoutes, webhooksRoutes } from './modules/webhooks/index.ts'
import { kycWidgetSessionsRoutes, pagesRoutes, travelRuleWidgetSessionsRoutes, widgetsRoutes } from './modules/widgets/index.ts'
import { sandboxIssuerRoutes } from './providers/cards/sandbox-issuer.routes.ts'
import { sandboxTravelRuleNodeRoutes } from './providers/travel-rule/sandbox-node.routes.ts'

export type { Services } from './container.ts'

export const API_VERSION = '0.1.0'

export interface AppDeps {
  config: Config
  database: DatabaseHandle
  secrets: SandboxSecrets
  logger?: FastifyServerOptions['logger']
  /** Runs after the database is closed, when the app closes. */
  onClose?: () => void | Promise<void>
  /** How the addresses of clients' URLs (webhook endpoints) are resolved; the system's resolver by default. */
  outboundResolver?: ContainerDeps['outboundResolver']
}

function createAjv(options: AjvOptions): Ajv {
  const ajv = new Ajv({ allErrors: true, removeAdditional: false, useDefaults: true, strict: false, ...options })
  addFormats.default(ajv)
  return ajv
}

// Provider credentials (kyc-connector): a body, or anything holding one, logged at any of the first levels.
const PROVIDER_SECRET_PATHS = ['apiKey', 'sharedSecretKey'].flatMap((field) => [
  field,
  `*.${field}`,
  `*.*.${field}`,
  ...['', '*.', '*.*.', '*.*.*.'].map((prefix) => `${prefix}integrations[*].${field}`),
])

/** Logs are JSON, carry the request id, and never contain credentials. */
export function loggerOptions(level: Config['logLevel']): LoggerOptions {
  return {
    level,
    redact: {
      paths: ['req.headers.authorization', 'req.headers.cookie', '*.client_secret', '*.clientSecret', '*.access_token', '*.password', ...PROVIDER_SECRET_PATHS],
      censor: '[redacted]',
    },
    // Signed links carry their signature in the query: logged whole, a link would be a working credential.
    serializers: {
      // Only Fastify's requests are reshaped; anything else logged under `req` stays as it is (and redacted).
      req: (req: FastifyRequest) =>
        typeof (req as { url?: unknown } | null)?.url !== 'string'
          ? (req as unknown as Record<string, unknown>)
          : {
              method: req.method,
              url: req.url.replace(/([?&](?:token|signature)=)[^&]*/gi, '$1[redacted]'),
              host: req.host,
              remoteAddress: req.ip,
              remotePort: req.socket?.remotePort,
            },
    },
  }
}

/** Builds the services over an open database, and the HTTP application over them. Closing the app closes the database. */
export async function buildApp(deps: AppDeps): Promise<{ app: App; services: Services }> {
  const app = createServer(deps.config, { logger: deps.logger ?? false })
  const container = await buildContainer({
    config: deps.config,
    database: deps.database,
    secrets: deps.secrets,
    logger: app.log,
    onClose: deps.onClose,
    ...(deps.outboundResolver ? { outboundResolver: deps.outboundResolver } : {}),
  })
  await registerApi(app, container)
  return { app, services: container.services }
}

/** The HTTP application over a container's services, logging to `logger`. Closing the app closes the container. */
export async function buildApi(container: Container, logger: FastifyBaseLogger): Promise<App> {
  const app = createServer(container.config, { loggerInstance: logger })
  await registerApi(app, container)
  return app
}

function createServer(config: Config, logging: Pick<FastifyServerOptions, 'logger' | 'loggerInstance'>): App {
  // Bodies are validated strictly (a string is not a number); query, path and headers arrive as text.
  const bodyAjv = createAjv({ coerceTypes: false })
  const textAjv = createAjv({ coerceTypes: 'array' })

  // Strictly the 8-4-4-4-12 hexadecimal form the database reads: ajv-formats' `uuid` also takes a `urn:uuid:` prefix.
  for (const ajv of [bodyAjv, textAjv]) ajv.addFormat('uuid', UUID_PATTERN)

  // Every answer is in the envelope with a request id, those made before any route is found included: what Node's
  // parser refuses (clientErrorHandler), a path that does not decode (frameworkErrors), a request without Host and
  // one arriving while the server closes (the onRequest hook below, rather than Node's and Fastify's bare answers).
  const app = Fastify({
    ...logging,
    genReqId: () => randomUUID(),
    requestIdHeader: false,
    logController: new LogController({ requestIdLogLabel: 'requestId' }),
    childLoggerFactory: lazyChildLoggerFactory,
    bodyLimit: config.bodyLimitBytes,
    trustProxy: config.trustProxy,
    return503OnClosing: false,
    http: { requireHostHeader: false },
    clientErrorHandler: clientErrorHandler(),
    frameworkErrors: frameworkErrorHandler(config.bodyLimitBytes),
    // A path parameter is never refused for its length by the router (Node limits the whole request line first):
    // its schema decides, so that an overlong id is a 404 like any malformed id.
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: http.maxHeaderSize },
    // The serializer picks the branch of a union (the user: individual or business) by validating the reply against
    // each branch. Formats (email, date-time) never tell our branches apart and the replies are ours, checked against
    // the OpenAPI document in the tests: checking them again on every reply is pure cost.
    serializerOpts: { ajv: { validateFormats: false } },
  }).withTypeProvider<TypeBoxTypeProvider>()

  let closing = false
  app.addHook('preClose', async () => {
    closing = true
  })
  // A callback hook: it runs on every request and has nothing to await (an async one costs a promise and a tick).
  app.addHook('onRequest', (request, reply, done) => {
    reply.header(REQUEST_ID_HEADER, request.id)
    if (closing) return done(new ApiError(503, 'service_unavailable', 'The server is shutting down; retry the request', undefined, { 'retry-after': '1' }))
    // RFC 9112 §3.2: an HTTP/1.1 request without Host is a 400.
    if (request.headers.host === undefined && request.raw.httpVersion === '1.1') return done(requestInvalid('headers', [{ property: 'host', rule: 'required' }]))
    done()
  })
  // Unknown expectations are ignored (RFC 9110 §10.1.1 allows it) rather than answered with Node's bare 417.
  app.server.on('checkExpectation', (req: http.IncomingMessage, res: http.ServerResponse) => app.server.emit('request', req, res))
  app.setValidatorCompiler(validatorCompiler({ body: bodyAjv, text: textAjv }))
  app.decorateRequest('principal', null)
  // JSON is the API's only body format (the token endpoint adds form bodies for itself).
  app.removeContentTypeParser('text/plain')
  return app
}

/** Cross-cutting plugins, then each module's routes over the container's services. */
async function registerApi(app: App, container: Container): Promise<void> {
  const { config, database, services } = container
  const { auth, signer, scopes } = services

  // First: it instruments each route as it is added, the CORS preflight route included.
  const metrics = registerMetrics(app, container.metrics)

  // Browser apps of the allowed origins call the API directly (the upstream widget test app does): CORS answers
  // their preflights. Any origin in sandbox by default; none in production unless ALLOWED_ORIGINS names them.
  // Registered first, so that every answer carries its headers, a refused token's included.
  await app.register(cors, {
    origin: config.allowedOrigins === '*' ? true : config.allowedOrigins.length > 0 ? [...config.allowedOrigins] : false,
    // As the header values they become: the plugin joins a list again on every answer.
    methods: 'GET, HEAD, POST, PUT, PATCH, DELETE',
    exposedHeaders: [REQUEST_ID_HEADER, 'etag', 'location', 'retry-after', 'ratelimit', 'ratelimit-policy'].join(', '),
    maxAge: 600,
    strictPreflight: false,
  })

  // Requests still being handled when the app closes finish before the database goes away. A response
  // always emits 'close' (sent, or its connection dropped), unlike Fastify's onResponse.
  // A count and one shared listener: no closure, no `once` wrapper and no removal per request ('close' comes once).
  let inFlight = 0
  const settled = () => {
    inFlight--
  }
  app.addHook('onRequest', (request, reply, done) => {
    inFlight++
    reply.raw.on('close', settled)
    done()
  })
  // Authentication is a hook of each route that asks for it, holding the route's own requirements: nothing to look
  // up per request (`request.routeOptions` builds a copy on every read), nothing at all for public routes.
  app.addHook('onRoute', (route) => {
    const routeAuth = route.config?.auth
    if (!routeAuth) return
    const authenticate = async (request: FastifyRequest) => {
      const onBehalfOf = request.headers['x-on-behalf-of']
      request.principal = await auth.authenticateRequest(
        { authorization: request.headers.authorization, onBehalfOf: Array.isArray(onBehalfOf) ? onBehalfOf.join(',') : onBehalfOf },
        routeAuth,
        request.params,
      )
    }
    // First of the route's own hooks, as it was first of all hooks registered after the ones above.
    route.onRequest = [authenticate, ...hooksOf(route.onRequest)]
  })
  app.setErrorHandler(errorHandler(config.bodyLimitBytes))
  app.setNotFoundHandler(notFoundHandler)

  await registerOpenApi(app, {
    title: 'Tessera Core API',
    version: API_VERSION,
    description:
      'Embedded-finance Core API: onboard and verify users, hold balances, link cards, banks and wallets, and move money. ' +
      `Environment: ${config.environment}.`,
    serverUrl: config.publicUrl,
    scopes: scopes.descriptions,
  })
  // Limits are per client (per address before authentication), counted across every process on PostgreSQL and
  // in this process's memory on the embedded engine (src/http/rate-limit.ts).
  registerRateLimits(
    app,
    new RateLimiter(allowanceStoreFor(database, app.log), app.log),
    config.rateLimitPerMinute > 0 ? { policy: { name: 'default', limit: config.rateLimitPerMinute, windowSeconds: 60 }, key: clientKey } : null,
  )
  // After the rate limit: its per-route check must run before a key is claimed, or a 429 would be stored as the
  // key's answer and replayed to every retry.
  registerIdempotency(app, database.db, container.requestDigestKey)
  // Before the routes: it wraps each write operation's handler so that its first committing write records the row.
  registerAuditTrail(app)

  app.get('/openapi.json', { schema: { hide: true }, config: { rateLimit: false } }, async () => app.swagger())
  await app.register(healthRoutes({ isDatabaseReachable: () => isReachable(database.db), metrics }))
  await app.register(authRoutes({ auth, signer, scopes, publicUrl: config.publicUrl, tokenRateLimitPerMinute: config.tokenRateLimitPerMinute }))
  await app.register(usersRoutes(services.users))
  await app.register(metadataRoutes(services.metadata))
  await app.register(networksRoutes(services.networks))
  await app.register(assetsRoutes(services.assets, config.environment))
  await app.register(ratesRoutes(services.rates))
  await app.register(railsRoutes(services.rails))
  await app.register(countriesRoutes(services.countries))
  await app.register(kycConnectorRoutes(services.kycConnector))
  await app.register(kycIngestionsRoutes(services.kycIngestions, config.publicUrl))
  await app.register(kycRoutes(services.kyc))
  await app.register(filesRoutes(services.files))
  await app.register(termsOfServiceRoutes(services.termsOfService))
  await app.register(capabilitiesRoutes(services.capabilities))
  await app.register(accountsRoutes(services.accounts, config.publicUrl))
  await app.register(quotesRoutes(services.quotes))
  await app.register(transactionsRoutes(services.transactions, config.publicUrl, database.db))
  await app.register(travelRuleRoutes(services.requestsForInformation))
  await app.register(portfolioRoutes(services.portfolio))
  await app.register(statementsRoutes(services.statements, config.publicUrl))
  await app.register(depositMethodsRoutes(services.depositMethods))
  await app.register(externalAccountsRoutes(services.externalAccounts, config.publicUrl))
  await app.register(widgetsRoutes(services.widgets))
  await app.register(kycWidgetSessionsRoutes(services.kycWidgetSessions))
  await app.register(travelRuleWidgetSessionsRoutes(services.travelRuleWidgetSessions))
  await app.register(webhooksRoutes(services.webhooks))
  await app.register(webhookPortalRoutes(services.webhooks))
  await app.register(webhookPortalPageRoutes({ publicUrl: config.publicUrl }))
  await app.register(pagesRoutes({ publicUrl: config.publicUrl, allowedOrigins: config.allowedOrigins, sandbox: config.environment === 'sandbox' }))
  if (services.sandboxCardProcessor) {
    await app.register(sandboxIssuerRoutes(services.sandboxCardProcessor, { frameAncestors: config.allowedOrigins === '*' ? '*' : ["'self'", ...config.allowedOrigins].join(' ') }))
  }
  if (services.travelRuleNode) await app.register(sandboxTravelRuleNodeRoutes(services.travelRuleNode))
  // Simulated deposits exist in sandbox only: in production their routes are not registered (404).
  if (services.depositTestHelpers) await app.register(depositTestHelpersRoutes(services.depositTestHelpers))
  if (services.portfolioHistory) await app.register(sandboxHistoryRoutes(services.portfolioHistory))

  // Added last so that it runs once: plugins registered after a root onClose hook inherit it.
  app.addHook('onClose', async () => {
    const deadline = Date.now() + config.shutdownTimeoutMs
    while (inFlight > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10))
    await container.close(Math.max(0, deadline - Date.now()))
  })

  await app.ready()
}
