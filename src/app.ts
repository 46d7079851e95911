import { randomUUID } from 'node:crypto'
import rateLimit from '@fastify/rate-limit'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Ajv, type Options as AjvOptions } from 'ajv'
import addFormats from 'ajv-formats'
import Fastify, { LogController, type FastifyRequest, type FastifyServerOptions } from 'fastify'
import type { Config } from './config.ts'
import { ChangeFeed } from './db/changes.ts'
import { isReachable, type DatabaseHandle } from './db/database.ts'
import { errorHandler, notFoundHandler } from './http/error-handler.ts'
import { registerIdempotency } from './http/idempotency.ts'
import { registerMetrics } from './http/metrics.ts'
import { REQUEST_ID_HEADER, registerOpenApi } from './http/openapi.ts'
import type { Principal } from './http/principal.ts'
import type { App } from './http/types.ts'
import type { SandboxSecrets } from './lib/data-dir.ts'
import { Sealer } from './lib/sealing.ts'
import { accountsRoutes } from './modules/accounts/accounts.routes.ts'
import { AccountsService } from './modules/accounts/accounts.service.ts'
import { authRoutes } from './modules/auth/auth.routes.ts'
import { AuthService } from './modules/auth/auth.service.ts'
import { ClientsService } from './modules/auth/clients.service.ts'
import { ScopeCatalogue } from './modules/auth/scopes.ts'
import { TokenSigner } from './modules/auth/tokens.ts'
import { depositMethodsRoutes } from './modules/deposit-methods/deposit-methods.routes.ts'
import { DepositBanksFile } from './modules/deposit-methods/deposit-methods.schemas.ts'
import { DepositMethodsService } from './modules/deposit-methods/deposit-methods.service.ts'
import { depositTestHelpersRoutes } from './modules/deposit-methods/deposit-test-helpers.routes.ts'
import { DepositTestHelpersService } from './modules/deposit-methods/deposit-test-helpers.service.ts'
import { filesRoutes } from './modules/files/files.routes.ts'
import { FilesSettingsFile } from './modules/files/files.schemas.ts'
import { FilesService } from './modules/files/files.service.ts'
import { healthRoutes } from './modules/health/health.routes.ts'
import { LedgerService } from './modules/ledger/ledger.service.ts'
import { kycConnectorRoutes } from './modules/kyc-connector/kyc-connector.routes.ts'
import { KycConnectorService } from './modules/kyc-connector/kyc-connector.service.ts'
import { kycRoutes } from './modules/kyc/kyc.routes.ts'
import { KYC_PROCESSES } from './modules/kyc/kyc.machine.ts'
import { capabilitiesRoutes } from './modules/capabilities/capabilities.routes.ts'
import { CapabilitiesFile } from './modules/capabilities/capabilities.schemas.ts'
import { CapabilitiesService, capabilitySourcesOf } from './modules/capabilities/capabilities.service.ts'
import { KycService } from './modules/kyc/kyc.service.ts'
import { metadataRoutes } from './modules/metadata/metadata.routes.ts'
import { MetadataService } from './modules/metadata/metadata.service.ts'
import { assetsRoutes } from './modules/reference/assets.routes.ts'
import { AssetsFile } from './modules/reference/assets.schemas.ts'
import { AssetCatalogue, AssetsService, userDirectoryOf } from './modules/reference/assets.service.ts'
import { countriesRoutes } from './modules/reference/countries.routes.ts'
import { CountriesFile, CountryRestrictionsFile } from './modules/reference/countries.schemas.ts'
import { CountriesService } from './modules/reference/countries.service.ts'
import { networksRoutes } from './modules/reference/networks.routes.ts'
import { NetworksFile } from './modules/reference/networks.schemas.ts'
import { NetworksService } from './modules/reference/networks.service.ts'
import { ratesRoutes } from './modules/reference/rates.routes.ts'
import { RatesService } from './modules/reference/rates.service.ts'
import { railsRoutes } from './modules/reference/rails.routes.ts'
import { RailsFile } from './modules/reference/rails.schemas.ts'
import { RailsService } from './modules/reference/rails.service.ts'
import { loadReferenceData } from './modules/reference/reference-data.ts'
import { termsOfServiceRoutes } from './modules/terms-of-service/terms-of-service.routes.ts'
import { TermsOfServiceFile } from './modules/terms-of-service/terms-of-service.schemas.ts'
import { TermsOfServiceService } from './modules/terms-of-service/terms-of-service.service.ts'
import { usersRoutes } from './modules/users/users.routes.ts'
import { UsersService } from './modules/users/users.service.ts'
import { JobHandlers } from './jobs/queue.ts'
import { Worker } from './jobs/worker.ts'
import { DepositsService } from './modules/transactions/deposits.service.ts'
import { defineDepositFlow } from './flows/deposit.flow.ts'
import { FlowRunner } from './flows/runner.ts'
import { defineTradeFlow } from './flows/trade.flow.ts'
import { quotesRoutes } from './modules/quotes/quotes.routes.ts'
import { TransactionRulesFile } from './modules/quotes/quotes.schemas.ts'
import { MIN_QUOTE_TTL_MS, QuotesService } from './modules/quotes/quotes.service.ts'
import { transactionsRoutes } from './modules/transactions/transactions.routes.ts'
import { TransactionsService } from './modules/transactions/transactions.service.ts'
import { SandboxKycProvider } from './providers/kyc/sandbox.ts'
import { SANDBOX_PRICE_SEED, SandboxPriceFeed } from './providers/prices/sandbox.ts'
import { LocalFileStorage } from './providers/storage/local.ts'
import { MemoryFileStorage } from './providers/storage/memory.ts'

export const API_VERSION = '0.1.0'

export interface AppDeps {
  config: Config
  database: DatabaseHandle
  secrets: SandboxSecrets
  logger?: FastifyServerOptions['logger']
  /** Runs after the database is closed, when the app closes. */
  onClose?: () => void | Promise<void>
}

export interface Services {
  clients: ClientsService
  auth: AuthService
  users: UsersService
  metadata: MetadataService
  networks: NetworksService
  countries: CountriesService
  assets: AssetsService
  rates: RatesService
  kycConnector: KycConnectorService
  kyc: KycService
  capabilities: CapabilitiesService
  files: FilesService
  termsOfService: TermsOfServiceService
  ledger: LedgerService
  accounts: AccountsService
  jobs: JobHandlers
  /** Not started by the app: `serve` starts it for the roles that run jobs; it stops when the app closes. */
  worker: Worker
  deposits: DepositsService
  transactions: TransactionsService
  quotes: QuotesService
  flows: FlowRunner
  depositMethods: DepositMethodsService
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
export function loggerOptions(level: Config['logLevel']): FastifyServerOptions['logger'] {
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

/** Builds the HTTP application over an open database. Closing the app closes the database. */
export async function buildApp(deps: AppDeps): Promise<{ app: App; services: Services }> {
  const { config, database } = deps
  // Bodies are validated strictly (a string is not a number); query, path and headers arrive as text.
  const bodyAjv = createAjv({ coerceTypes: false })
  const textAjv = createAjv({ coerceTypes: 'array' })

  const app = Fastify({
    logger: deps.logger ?? false,
    genReqId: () => randomUUID(),
    requestIdHeader: false,
    logController: new LogController({ requestIdLogLabel: 'requestId' }),
    bodyLimit: config.bodyLimitBytes,
    trustProxy: config.trustProxy,
    return503OnClosing: true,
    routerOptions: { ignoreTrailingSlash: true },
  }).withTypeProvider<TypeBoxTypeProvider>()

  app.setValidatorCompiler(({ schema, httpPart }) => (httpPart === 'body' ? bodyAjv : textAjv).compile(schema))
  app.decorateRequest('principal', null)
  // JSON is the API's only body format (the token endpoint adds form bodies for itself).
  app.removeContentTypeParser('text/plain')

  const signer = new TokenSigner(deps.secrets.tokenSigningKey, config.publicUrl, config.publicUrl)
  const changes = new ChangeFeed(database.schema)
  await changes.listen(database)
  const scopes = new ScopeCatalogue(config)
  const clients = new ClientsService(database.db, changes, scopes)
  const users = new UsersService(database.db, changes)
  const auth = new AuthService({ clients, signer, users, ttlSeconds: config.accessTokenTtlSeconds })
  const networkCatalogue = loadReferenceData<NetworksFile>('networks.json', NetworksFile, config.referenceDataDir)
  const chain = config.environment === 'sandbox' ? 'test' : 'main'
  const networks = new NetworksService(networkCatalogue.networks, chain)
  const rails = new RailsService(loadReferenceData<RailsFile>('rails.json', RailsFile, config.referenceDataDir).rails, chain, networks)
  const countries = new CountriesService(
    loadReferenceData<CountriesFile>('countries.json', CountriesFile, config.referenceDataDir).countries,
    loadReferenceData<CountryRestrictionsFile>('country-restrictions.json', CountryRestrictionsFile, config.referenceDataDir),
  )
  const assetCatalogue = new AssetCatalogue(loadReferenceData<AssetsFile>('assets.json', AssetsFile, config.referenceDataDir))
  // The only feed so far; config.ts makes production choose it explicitly (PRICE_FEED=simulated).
  const rates = new RatesService({ catalogue: assetCatalogue, feed: new SandboxPriceFeed(SANDBOX_PRICE_SEED, assetCatalogue.fiatCodes()), db: database.db })
  const metadata = new MetadataService(database.db)
  metadata.registerEntity('users', (principal, entityId) => users.metadataOwner(principal, entityId))
  const kycConnector = new KycConnectorService({ db: database.db, sealer: new Sealer(deps.secrets.sealingKey), providers: config.kycConnectorProviders })
  const files = new FilesService({
    db: database.db,
    storage: config.fileStorageDir === null ? new MemoryFileStorage() : new LocalFileStorage(config.fileStorageDir),
    settings: loadReferenceData<FilesSettingsFile>('files-settings.json', FilesSettingsFile, config.referenceDataDir).settings,
    publicUrl: config.publicUrl,
    sealingKey: deps.secrets.sealingKey,
    maxFilesPerUser: config.maxFilesPerUser,
  })
  metadata.registerEntity('files', (principal, entityId) => files.metadataOwner(principal, entityId))
  // Service-verified KYC checks need a provider: the simulator in sandbox; production has no adapter yet.
  const kycProvider = config.environment === 'sandbox' ? new SandboxKycProvider() : null
  const kyc = new KycService({ db: database.db, users, countries, provider: kycProvider, files })
  const termsOfService = new TermsOfServiceService(
    database.db,
    loadReferenceData<TermsOfServiceFile>('terms-of-service.json', TermsOfServiceFile, config.referenceDataDir).termsOfService,
    users,
  )
  users.onCreate((tx, user, at) =>
    termsOfService.recordAtCreation(tx, { organizationId: user.organizationId, userId: user.id, code: user.termsOfService, at, context: { ...user.context } }),
  )
  const capabilities = new CapabilitiesService(
    loadReferenceData<CapabilitiesFile>('capabilities.json', CapabilitiesFile, config.referenceDataDir).capabilities,
    capabilitySourcesOf({ users, kyc, processKeys: KYC_PROCESSES, termsOfService, countries }),
  )
  const assets = new AssetsService({
    catalogue: assetCatalogue,
    rates,
    db: database.db,
    publicUrl: config.publicUrl,
    users: userDirectoryOf(users),
    capabilities,
  })
  const ledger = new LedgerService({ db: database.db, assets: { decimalsOf: (code) => assetCatalogue.find(code)?.decimals } })
  // A user may hold an asset that is listed and offers them at least one feature (where they live, now).
  const mayHold = async (principal: Principal, code: string) => {
    const asset = await assets.get(principal, code)
    return !asset.delisted && asset.features.length > 0
  }
  const accounts = new AccountsService({ db: database.db, ledger, assets: { mayHold } })
  metadata.registerEntity('accounts', (principal, entityId) => accounts.metadataOwner(principal, entityId))
  const jobs = new JobHandlers()
  const decimalsOf = (code: string) => assetCatalogue.find(code)?.decimals
  const quotes = new QuotesService({
    db: database.db,
    accounts: { get: (principal, id) => accounts.get(principal, id) },
    assets: { decimalsOf, forUser: (principal, codes) => assets.getMany(principal, codes) },
    capabilities,
    prices: { usdQuote: (code) => rates.usdQuote(code) },
    settings: {
      defaultTtlMs: config.quoteTtlMs,
      maxTtlMs: config.quoteMaxTtlMs,
      minTtlMs: MIN_QUOTE_TTL_MS,
      spread: config.quoteSpread,
      rules: loadReferenceData<TransactionRulesFile>('transaction-rules.json', TransactionRulesFile, config.referenceDataDir),
    },
  })
  // The worker is created below; flows started in this process wake it rather than wait for its next poll.
  const pokeWorker = () => worker.poke()
  const transactions = new TransactionsService({
    db: database.db,
    accounts: { ownedAccount: (principal, id) => accounts.metadataOwner(principal, id) },
    quotes,
    afterCreate: pokeWorker,
  })
  const flows = new FlowRunner({ db: database.db, jobs })
  const tradeFlow = defineTradeFlow({
    runner: flows,
    ledger,
    transactions,
    velocity: { maxMovements: config.velocityMaxMovements, windowSeconds: config.velocityWindowSeconds },
    batchSize: config.workerBatchSize,
  })
  transactions.executeWith('trade', tradeFlow)
  transactions.executeWith('transfer', tradeFlow)
  const deposits = new DepositsService({
    db: database.db,
    assets: { decimalsOf },
    networks,
    flow: defineDepositFlow({ runner: flows, ledger, transactions, batchSize: config.workerBatchSize }),
  })
  metadata.registerEntity('transactions', (principal, entityId) => transactions.metadataOwner(principal, entityId))
  const worker = new Worker({
    db: database.db,
    handlers: jobs,
    pollIntervalMs: config.workerPollIntervalMs,
    concurrency: config.workerConcurrency,
    leaseMs: config.workerLeaseMs,
    logger: { info: (o, m) => app.log.info(o, m), warn: (o, m) => app.log.warn(o, m), error: (o, m) => app.log.error(o, m) },
  })
  const depositMethods = new DepositMethodsService({
    db: database.db,
    accounts,
    users,
    rails,
    networks,
    secret: deps.secrets.sealingKey,
    banks: loadReferenceData<DepositBanksFile>('deposit-banks.json', DepositBanksFile, config.referenceDataDir),
    environment: config.environment,
  })
  // Simulated deposits exist in sandbox only: in production their routes are not registered (404).
  const depositTestHelpers = config.environment === 'sandbox'
    ? new DepositTestHelpersService({ db: database.db, depositMethods, deposits, rails, networks, users, afterRecord: () => worker.poke() })
    : null

  // Requests still being handled when the app closes finish before the database goes away. A response
  // always emits 'close' (sent, or its connection dropped), unlike Fastify's onResponse.
  const inFlight = new Set<string>()
  app.addHook('onRequest', async (request, reply) => {
    inFlight.add(request.id)
    reply.raw.once('close', () => inFlight.delete(request.id))
    reply.header(REQUEST_ID_HEADER, request.id)
    const routeAuth = request.routeOptions.config.auth
    if (routeAuth) {
      const onBehalfOf = request.headers['x-on-behalf-of']
      request.principal = await auth.authenticateRequest(
        { authorization: request.headers.authorization, onBehalfOf: Array.isArray(onBehalfOf) ? onBehalfOf.join(',') : onBehalfOf },
        routeAuth,
        request.params,
      )
    }
  })
  app.setErrorHandler(errorHandler(config.bodyLimitBytes))
  app.setNotFoundHandler(notFoundHandler)

  const metrics = registerMetrics(app)
  await registerOpenApi(app, {
    title: 'Tessera Core API',
    version: API_VERSION,
    description:
      'Embedded-finance Core API: onboard and verify users, hold balances, link cards, banks and wallets, and move money. ' +
      `Environment: ${config.environment}.`,
    serverUrl: config.publicUrl,
    scopes: scopes.descriptions,
  })
  // Limits are per client (per address before authentication), in this process's memory.
  await app.register(rateLimit, {
    global: config.rateLimitPerMinute > 0,
    max: config.rateLimitPerMinute,
    timeWindow: 60_000,
    hook: 'preHandler',
    keyGenerator: (request) => (request.principal ? `client:${request.principal.clientId}` : `ip:${request.ip}`),
  })
  // After the rate limit: its per-route check must run before a key is claimed, or a 429 would be stored as the
  // key's answer and replayed to every retry.
  registerIdempotency(app, database.db)

  app.get('/openapi.json', { schema: { hide: true }, config: { rateLimit: false } }, async () => app.swagger())
  await app.register(healthRoutes({ isDatabaseReachable: () => isReachable(database.db), metrics }))
  await app.register(authRoutes({ auth, signer, scopes, publicUrl: config.publicUrl, tokenRateLimitPerMinute: config.tokenRateLimitPerMinute }))
  await app.register(usersRoutes(users))
  await app.register(metadataRoutes(metadata))
  await app.register(networksRoutes(networks))
  await app.register(assetsRoutes(assets, config.environment))
  await app.register(ratesRoutes(rates))
  await app.register(railsRoutes(rails))
  await app.register(countriesRoutes(countries))
  await app.register(kycConnectorRoutes(kycConnector))
  await app.register(kycRoutes(kyc))
  await app.register(filesRoutes(files))
  await app.register(termsOfServiceRoutes(termsOfService))
  await app.register(capabilitiesRoutes(capabilities))
  await app.register(accountsRoutes(accounts, config.publicUrl))
  await app.register(quotesRoutes(quotes))
  await app.register(transactionsRoutes(transactions, config.publicUrl, database.db))
  await app.register(depositMethodsRoutes(depositMethods))
  if (depositTestHelpers) await app.register(depositTestHelpersRoutes(depositTestHelpers))

  // Added last so that it runs once: plugins registered after a root onClose hook inherit it.
  app.addHook('onClose', async () => {
    const deadline = Date.now() + config.shutdownTimeoutMs
    while (inFlight.size > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10))
    await worker.stop(Math.max(0, deadline - Date.now()))
    await changes.stop()
    await database.close()
    await deps.onClose?.()
  })

  await app.ready()
  return { app, services: { clients, auth, users, metadata, networks, countries, assets, rates, kycConnector, files, termsOfService, kyc, capabilities, ledger, accounts, jobs, worker, deposits, transactions, quotes, flows, depositMethods } }
}
