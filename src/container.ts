import { AuditTrailService } from './modules/audit/index.ts'
import { ConfigError, type Config } from './config.ts'
import type { Db, Executor } from './db/schema.ts'
import { ChangeFeed } from './db/changes.ts'
import type { DatabaseHandle } from './db/database.ts'
import { defineDepositFlow } from './flows/deposit.flow.ts'
import { defineCardDepositFlow } from './flows/card-deposit.flow.ts'
import { defineBankPullFlow, defineWithdrawalFlow } from './flows/rail.flows.ts'
import { FlowRunner } from './flows/runner.ts'
import { defineTradeFlow } from './flows/trade.flow.ts'
import type { Principal } from './http/principal.ts'
import { registerIdempotencyPurge } from './http/idempotency.ts'
import { JobHandlers } from './jobs/queue.ts'
import { registerJobRetention } from './jobs/retention.ts'
import { Scheduler, Schedules } from './jobs/schedules.ts'
import { Worker, type WorkerLogger } from './jobs/worker.ts'
import type { SandboxSecrets } from './lib/data-dir.ts'
import { derivePurposeKey, type SealedValueSet } from './lib/sealing.ts'
import { AccountsService } from './modules/accounts/index.ts'
import { AuthService, ClientsService, ScopeCatalogue, TokenSigner } from './modules/auth/index.ts'
import { CapabilitiesFile, CapabilitiesService, capabilitySourcesOf } from './modules/capabilities/index.ts'
import { CardBinsFile, cardNumbers, ExternalAccountsService } from './modules/external-accounts/index.ts'
import { DepositBanksFile, DepositMethodsService, DepositTestHelpersService, IncomingDepositsService } from './modules/deposit-methods/index.ts'
import { FilesService, FilesSettingsFile } from './modules/files/index.ts'
import { connectorSecrets, KycConnectorService, KycIngestionsService } from './modules/kyc-connector/index.ts'
import { KeyRing, KeysService, type KeyRingLogger } from './modules/keys/index.ts'
import { KYC_PROCESSES, KycService } from './modules/kyc/index.ts'
import { LedgerService } from './modules/ledger/index.ts'
import { PortfolioService, SandboxHistory, StatementsService } from './modules/portfolio/index.ts'
import { MetadataService } from './modules/metadata/index.ts'
import { MIN_QUOTE_TTL_MS, QuotesService, TransactionRulesFile } from './modules/quotes/index.ts'
import {
  AssetCatalogue,
  AssetsFile,
  AssetsService,
  CountriesFile,
  CountriesService,
  CountryRestrictionsFile,
  loadReferenceData,
  NetworksFile,
  NetworksService,
  RailsFile,
  RailsService,
  RatesService,
  userDirectoryOf,
} from './modules/reference/index.ts'
import { TermsOfServiceFile, TermsOfServiceService } from './modules/terms-of-service/index.ts'
import { DepositsService, TransactionsService } from './modules/transactions/index.ts'
import { DEFAULT_TRAVEL_RULE, RequestsForInformationService } from './modules/travel-rule/index.ts'
import { UsersService } from './modules/users/index.ts'
import { webhookSecrets, WebhookMetrics, WebhookSender, WebhooksService } from './modules/webhooks/index.ts'
import type { Resolver } from './lib/outbound-address.ts'
import { Registry } from 'prom-client'
import { KycWidgetSessionsService, TravelRuleWidgetSessionsService, WidgetsService } from './modules/widgets/index.ts'
import { SandboxCardProcessor } from './providers/cards/sandbox.ts'
import { SandboxTravelRuleNode } from './providers/travel-rule/sandbox.ts'
import { verifyMessageSignature } from './lib/signatures/index.ts'
import BigNumber from 'bignumber.js'
import { SandboxKycProvider } from './providers/kyc/sandbox.ts'
import { SandboxSumsubApi, SandboxVeriffApi } from './providers/kyc-connector/sandbox.ts'
import { SumsubHttpApi, SumsubReader } from './providers/kyc-connector/sumsub.ts'
import { VeriffHttpApi, VeriffReader } from './providers/kyc-connector/veriff.ts'
import { SANDBOX_PRICE_SEED, SandboxPriceFeed } from './providers/prices/sandbox.ts'
import type { PaymentRail } from './providers/rails/payouts.ts'
import { SandboxPaymentRail } from './providers/rails/sandbox-payouts.ts'
import { SandboxBankRail, SandboxChainRail } from './providers/rails/sandbox.ts'
import { LocalFileStorage } from './providers/storage/local.ts'
import { MemoryFileStorage } from './providers/storage/memory.ts'

export interface ContainerDeps {
  config: Config
  database: DatabaseHandle
  secrets: SandboxSecrets
  /** Where background work logs; silent when not given. */
  logger?: WorkerLogger
  /** Runs after the database is closed, when the container closes. */
  onClose?: () => void | Promise<void>
  /** How the addresses of clients' URLs (webhook endpoints) are resolved; the system's resolver by default. */
  outboundResolver?: Resolver
}

export interface Services {
  clients: ClientsService
  auth: AuthService
  signer: TokenSigner
  scopes: ScopeCatalogue
  users: UsersService
  metadata: MetadataService
  networks: NetworksService
  rails: RailsService
  countries: CountriesService
  assets: AssetsService
  rates: RatesService
  kycConnector: KycConnectorService
  kycIngestions: KycIngestionsService
  auditTrail: AuditTrailService
  kyc: KycService
  capabilities: CapabilitiesService
  files: FilesService
  termsOfService: TermsOfServiceService
  ledger: LedgerService
  accounts: AccountsService
  jobs: JobHandlers
  /** The recurring jobs: the worker schedules them as their periods begin. */
  schedules: Schedules
  /** Not started by the container: `serve` starts it for the roles that run jobs; it stops when the container closes. */
  worker: Worker
  deposits: DepositsService
  transactions: TransactionsService
  requestsForInformation: RequestsForInformationService
  portfolio: PortfolioService
  statements: StatementsService
  /** Sandbox only (null in production): the simulated travel-rule network. */
  travelRuleNode: SandboxTravelRuleNode | null
  quotes: QuotesService
  flows: FlowRunner
  depositMethods: DepositMethodsService
  externalAccounts: ExternalAccountsService
  /** Sandbox only (null in production): simulated deposits, sent through the sandbox rails. */
  depositTestHelpers: DepositTestHelpersService | null
  /** Sandbox only (null in production): months of generated activity for a user (POST /core/portfolio/test-helpers/history). */
  portfolioHistory: SandboxHistory | null
  widgets: WidgetsService
  kycWidgetSessions: KycWidgetSessionsService
  travelRuleWidgetSessions: TravelRuleWidgetSessionsService
  /** Sandbox only (null in production): the simulated card processor, whose issuer pages Tessera serves. */
  sandboxCardProcessor: SandboxCardProcessor | null
  webhooks: WebhooksService
  /** The key rings' operations (`tessera keys`): rotate, re-seal, retire. */
  keys: KeysService
}

export interface Container {
  config: Config
  database: DatabaseHandle
  services: Services
  /** Keys the digests of requests stored with their Idempotency-Key (derived from the sealing key). */
  requestDigestKey: Buffer
  /** Metrics of the background work (webhook delivery); the API adds its own and serves them at /metrics. */
  metrics: Registry
  /**
   * Stops the worker (running jobs get `timeoutMs` to finish, then are given back to the queue) and the change
   * feed, then closes the database.
   */
  close(timeoutMs?: number): Promise<void>
}

/**
 * Builds every service once over an open database, with no HTTP: the api role serves them (src/app.ts), the
 * worker role runs their background jobs. Closing the container closes the database.
 */
export async function buildContainer(deps: ContainerDeps): Promise<Container> {
  const { config, database } = deps
  const changes = new ChangeFeed(database.schema)
  // The key rings open first: a root key that does not open them stops the start here, before anything else opens.
  const { ring: keyRing, keys } = await buildKeys({ config, database, changes, secrets: deps.secrets, ...(deps.logger ? { logger: deps.logger } : {}) })
  await changes.listen(database, deps.logger)
  keyRing.watch(changes, config.keyRingRefreshMs)
  const signer = new TokenSigner(keyRing.signingKeys(), config.publicUrl, config.publicUrl)
  const auditTrail = new AuditTrailService({ db: database.db, commitHooks: database.commitHooks })
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
  const metadata = new MetadataService(database.db, changes)
  metadata.registerEntity('users', (principal, entityId) => users.metadataOwner(principal, entityId))
  const kycConnector = new KycConnectorService({ db: database.db, sealer: keyRing.sealer(), providers: config.kycConnectorProviders })
  const files = new FilesService({
    db: database.db,
    storage: config.fileStorageDir === null ? new MemoryFileStorage() : new LocalFileStorage(config.fileStorageDir),
    settings: loadReferenceData<FilesSettingsFile>('files-settings.json', FilesSettingsFile, config.referenceDataDir).settings,
    publicUrl: config.publicUrl,
    sealingKey: keyRing.derivationRoot,
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
  // A new user's cooldowns run from their creation; their ends are announced when they come.
  users.onCreate((tx, user, at) => assets.scheduleCooldownEnds(tx, user, at))
  const ledger = new LedgerService({ db: database.db, assets: { decimalsOf: (code) => assetCatalogue.find(code)?.decimals } })
  // A user may hold an asset that is listed and offers them at least one feature (where they live, now).
  const mayHold = async (principal: Principal, code: string) => {
    const asset = await assets.get(principal, code)
    return !asset.delisted && asset.features.length > 0
  }
  const accounts = new AccountsService({ db: database.db, ledger, assets: { mayHold } })
  metadata.registerEntity('accounts', (principal, entityId) => accounts.metadataOwner(principal, entityId))
  // The card processor verifies cards as they are linked and takes card payments: the simulator in sandbox.
  // Production has no adapter yet, so there cards cannot be linked (409, permission-denied) rather than be linked
  // unverified, and card deposits are not quoted.
  const cardProcessor = config.environment === 'sandbox'
    ? new SandboxCardProcessor({ db: database.db, publicUrl: config.publicUrl, challengeTtlMs: config.sandbox3dsChallengeTtlMs })
    : null
  const externalAccounts = new ExternalAccountsService({
    db: database.db,
    rails,
    networks,
    capabilities: { enabledFor: (principal) => capabilities.enabledFor(principal), require: (principal, code) => capabilities.require(principal, code) },
    users: { residence: async (principal) => (await users.getMe(principal)).address?.country ?? null },
    currencyOf: (country) => countries.currencyOf(country),
    processor: cardProcessor,
    bins: loadReferenceData<CardBinsFile>('card-bins.json', CardBinsFile, config.referenceDataDir).ranges,
    settings: { maxLiveCards: config.cardsMaxLinked, maxDistinctCards: config.cardsMaxDistinct },
    sealingKey: keyRing.derivationRoot,
    cardSealer: keyRing.sealer(CARD_NUMBER_KEYS),
  })
  metadata.registerEntity('external-accounts', (principal, entityId) => externalAccounts.metadataOwner(principal, entityId))
  // Withdrawals and bank pulls go out over a payment rail: the simulator in sandbox. Production has no adapter yet,
  // so there quotes for them are refused (409, permission-denied).
  const paymentRail: PaymentRail | null = config.environment === 'sandbox' ? new SandboxPaymentRail({ db: database.db, settleAfterMs: config.sandboxRailSettleMs }) : null
  const jobs = new JobHandlers()
  assets.registerJobs(jobs)
  externalAccounts.registerJobs(jobs)
  // Recurring work, run once per period by whichever worker takes the period (docs/architecture.md#scheduled-work).
  const schedules = new Schedules(jobs, config.schedulePeriods)
  rates.registerSchedules(schedules)
  kyc.registerSchedules(schedules)
  files.registerSchedules(schedules, { graceMs: config.fileOrphanGraceMs })
  registerIdempotencyPurge(schedules, database.db)
  registerJobRetention(schedules, database.db, { completedMs: config.jobRetentionMs, failedMs: config.failedJobRetentionMs })
  const unknownSchedules = schedules.unknownPeriods()
  if (unknownSchedules.length > 0) {
    throw new ConfigError([`SCHEDULE_PERIODS names no schedule: ${unknownSchedules.join(', ')} (schedules: ${schedules.all().map((s) => s.name).join(', ')})`])
  }
  const decimalsOf = (code: string) => assetCatalogue.find(code)?.decimals
  const transactionRules = loadReferenceData<TransactionRulesFile>('transaction-rules.json', TransactionRulesFile, config.referenceDataDir)
  // Which of a user's addresses they declared: their crypto external accounts with a completed verification.
  const declaredAddress = async (organizationId: string, ownerId: string, network: string, addresses: readonly string[]) =>
    (await externalAccounts.declaredAddresses(database.db, organizationId, ownerId, network, addresses)).size > 0
  const quotes = new QuotesService({
    db: database.db,
    travelRule: {
      async declared(principal, destination) {
        if (principal.userId === null) return false
        const address = destination.externalAccountId !== undefined ? await externalAccounts.cryptoAddress(principal.organizationId, destination.externalAccountId) : destination.address
        return address !== undefined && declaredAddress(principal.organizationId, principal.userId, destination.network, [address])
      },
    },
    accounts: { getMany: (principal, ids) => accounts.getMany(principal, ids) },
    externalAccounts,
    networks: {
      validateAddress: (code, address, reference) => networks.validateAddress(code, address, reference),
      railHas: (type, network, asset, feature) => rails.list({ type: [type], network: [network], asset: [asset] }).some((rail) => rail.features.includes(feature)),
    },
    executes: new Set(['trade', 'transfer', ...(paymentRail ? ['withdrawal', 'deposit:bank'] : []), ...(cardProcessor ? ['deposit:card'] : [])]),
    assets: { decimalsOf, forUser: (principal, codes, enabled) => assets.getMany(principal, codes, enabled) },
    capabilities,
    prices: { usdQuote: (code) => rates.usdQuote(code) },
    settings: {
      defaultTtlMs: config.quoteTtlMs,
      maxTtlMs: config.quoteMaxTtlMs,
      minTtlMs: MIN_QUOTE_TTL_MS,
      spread: config.quoteSpread,
      rules: transactionRules,
    },
  })
  // The worker is created below; flows started in this process wake it rather than wait for its next poll.
  const pokeWorker = () => worker.poke()
  const transactions = new TransactionsService({
    db: database.db,
    accounts: { ownedAccount: (principal, id) => accounts.metadataOwner(principal, id) },
    quotes,
    canonicalAddress: (network, address, reference) => networks.canonicalAddress(network, address, reference),
    afterCreate: pokeWorker,
  })
  const portfolio = new PortfolioService({
    db: database.db,
    ledger,
    rates,
    assets: { decimalsOf: (code) => assetCatalogue.find(code)?.decimals, isFiat: (code) => assetCatalogue.find(code)?.type === 'fiat' },
    accounts: {
      owners: (executor, organizationId, ids) => accounts.owners(executor, organizationId, ids),
      open: (principal, ids) => accounts.openAmong(principal, ids),
      owned: async (principal, id) => (principal.userId === null ? undefined : accounts.find(database.db, principal.organizationId, principal.userId, id)),
    },
    transactions: { terms: (executor, organizationId, ids) => transactions.terms(executor, organizationId, ids) },
  })
  const statements = new StatementsService({
    portfolio,
    rates,
    transactions: { completedBetween: (principal, from, to, window) => transactions.completedBetween(principal, from, to, window) },
    users: { createdAt: async (principal) => new Date((await users.getMe(principal)).createdAt) },
    assets: { decimalsOf: (code) => assetCatalogue.find(code)?.decimals },
  })
  const flows = new FlowRunner({ db: database.db, jobs })
  // The flows that wait for requests for information, by transaction type.
  const wakers = new Map<string, { wake(organizationId: string, ids: readonly string[], executor?: Executor): Promise<number> }>()
  // The travel-rule network: the simulator in sandbox. Production has no adapter yet: answers are then kept after
  // Tessera's own checks, unscreened (docs/travel-rule.md).
  const travelRuleNode = config.environment === 'sandbox'
    ? new SandboxTravelRuleNode({ publicUrl: config.publicUrl, key: derivePurposeKey(keyRing.derivationRoot, 'sandbox/travel-rule-node') })
    : null
  const valueUsd = async (asset: string, amount: string) => {
    const quote = await rates.usdQuote(asset)
    return quote === null ? null : new BigNumber(amount).times(quote.mid).toFixed()
  }
  const requestsForInformation = new RequestsForInformationService({
    db: database.db,
    transactions,
    node: travelRuleNode,
    checkSignature: ({ network, ...signed }) => {
      const family = networks.addressFamily(network)
      return family === undefined ? { valid: false, reason: 'address-unsupported' } : verifyMessageSignature({ family, chain: networks.deploymentChain, ...signed })
    },
    canonicalAddress: (network, address) => networks.canonicalAddress(network, address),
    valueUsd,
    settings: { rules: transactionRules.travelRule ?? DEFAULT_TRAVEL_RULE, ttlMs: config.travelRuleRequestTtlSeconds * 1000 },
  })
  const travelRuleSteps = {
    db: database.db,
    requests: requestsForInformation,
    transactions,
    ledger,
    directory: externalAccounts,
    screening: { valueUsd, declared: declaredAddress, isCrypto: (network: string) => networks.networkType(network) === 'crypto' },
  }
  const tradeFlow = defineTradeFlow({
    runner: flows,
    ledger,
    transactions,
    velocity: { maxMovements: config.velocityMaxMovements, windowSeconds: config.velocityWindowSeconds },
    batchSize: config.workerBatchSize,
  })
  transactions.executeWith('trade', tradeFlow)
  transactions.executeWith('transfer', tradeFlow)
  if (paymentRail) {
    const railDeps = { runner: flows, ledger, transactions, rail: paymentRail, directory: externalAccounts, batchSize: config.workerBatchSize, travelRule: travelRuleSteps }
    const withdrawals = defineWithdrawalFlow(railDeps)
    transactions.executeWith('withdrawal', withdrawals)
    wakers.set('withdrawal', withdrawals)
    // Nothing is held before a bank pull: its first step is the call to the rail, made by the worker.
    transactions.executeWith('deposit', defineBankPullFlow(railDeps), { inline: 0 })
  }
  if (cardProcessor) {
    const cardDeposits = defineCardDepositFlow({
      runner: flows,
      ledger,
      transactions,
      processor: cardProcessor,
      directory: externalAccounts,
      batchSize: config.workerBatchSize,
      challengePollMs: config.cardChallengePollMs,
    })
    // The request asks the issuer at once: its answer (a 3-D Secure challenge to show) is part of the response.
    transactions.executeWith('deposit:card', cardDeposits, { inline: 0, afterCommit: 1 })
    // A cardholder who answered the challenge need not wait for the flow's next look.
    cardProcessor.onChange(({ organizationId, reference }) => {
      void cardDeposits.wake(organizationId, [reference]).then(pokeWorker, (error: unknown) => deps.logger?.warn({ err: error }, 'could not wake a card deposit'))
    })
  }
  const depositFlow = defineDepositFlow({ runner: flows, ledger, transactions, batchSize: config.workerBatchSize, travelRule: travelRuleSteps })
  wakers.set('deposit', depositFlow)
  const deposits = new DepositsService({
    db: database.db,
    accounts,
    assets: { decimalsOf },
    networks,
    flow: depositFlow,
  })
  // An answered or expired request wakes the flow of its transaction (a deposit's or a withdrawal's), which waits for
  // it, in the database transaction that records the answer.
  requestsForInformation.onSettled(async (executor, organizationId, transactionId) => {
    for (const flow of wakers.values()) await flow.wake(organizationId, [transactionId], executor)
  }, pokeWorker)
  metadata.registerEntity('transactions', (principal, entityId) => transactions.metadataOwner(principal, entityId))
  const worker = new Worker({
    db: database.db,
    handlers: jobs,
    pollIntervalMs: config.workerPollIntervalMs,
    concurrency: config.workerConcurrency,
    leaseMs: config.workerLeaseMs,
    scheduler: new Scheduler({ db: database.db, schedules, ...(deps.logger ? { logger: deps.logger } : {}) }),
    ...(deps.logger ? { logger: deps.logger } : {}),
  })
  const depositMethods = new DepositMethodsService({
    db: database.db,
    accounts,
    users,
    rails,
    networks,
    secret: keyRing.derivationRoot,
    banks: loadReferenceData<DepositBanksFile>('deposit-banks.json', DepositBanksFile, config.referenceDataDir),
    environment: config.environment,
  })
  // The bank and chain rails report incoming payments; in sandbox their simulators stand in for them, sending what
  // the test helpers ask for (production has no adapter yet, so the helpers do not exist there).
  let depositTestHelpers: DepositTestHelpersService | null = null
  if (config.environment === 'sandbox') {
    const bankRail = new SandboxBankRail()
    const chainRail = new SandboxChainRail()
    const incoming = new IncomingDepositsService({ db: database.db, depositMethods, deposits, afterRecord: pokeWorker })
    bankRail.onPayment((payment) => incoming.bankPayment(payment))
    chainRail.onTransfer((transfer) => incoming.chainTransfer(transfer))
    depositTestHelpers = new DepositTestHelpersService({ rails, networks, users, bankRail, chainRail })
  }
  const portfolioHistory = config.environment === 'sandbox'
    ? new SandboxHistory({
      db: database.db,
      ledger,
      transactions,
      users,
      accounts,
      prices: { usdQuote: (asset, at) => rates.usdQuote(asset, at) },
      assets: { decimalsOf },
      rules: {
        spread: config.quoteSpread,
        tradeFees: transactionRules.fees.trade,
        cryptoWithdrawalFees: transactionRules.fees.withdrawal?.crypto ?? [],
        networkFees: transactionRules.networkFees ?? {},
      },
    })
    : null

  const kycWidgetSessions = new KycWidgetSessionsService({
    signer,
    kyc,
    files,
    settings: { publicUrl: config.publicUrl, sessionTtlSeconds: config.widgetSessionTtlSeconds, enabled: kycProvider !== null },
  })
  const travelRuleWidgetSessions = new TravelRuleWidgetSessionsService({
    signer,
    requests: requestsForInformation,
    node: travelRuleNode,
    ports: {
      quotes,
      priceUsd: async (asset) => (await rates.usdQuote(asset))?.mid ?? null,
      async destinationAddress(principal, node) {
        if (node.type === 'crypto-address') return String(node.address)
        return node.type === 'external-account' ? externalAccounts.cryptoAddress(principal.organizationId, String(node.id)) : undefined
      },
      async customer(principal) {
        const user = await users.getMe(principal)
        return user.type === 'business' ? { name: user.name ?? '', type: 'legal' } : { name: user.fullName ?? '', type: 'natural' }
      },
    },
    settings: {
      publicUrl: config.publicUrl,
      sessionTtlSeconds: config.widgetSessionTtlSeconds,
      selfDeclarationMaximumUsd: (transactionRules.travelRule ?? DEFAULT_TRAVEL_RULE).selfDeclarationMaximumUsd,
    },
  })
  const widgets = new WidgetsService({
    signer,
    quotes,
    settings: {
      publicUrl: config.publicUrl,
      sessionTtlSeconds: config.widgetSessionTtlSeconds,
      pollIntervalMs: config.widgetPollIntervalMs,
      maxPollAttempts: config.widgetPollMaxAttempts,
      paymentsEnabled: cardProcessor !== null,
    },
  })

  const metrics = new Registry()
  const { webhooks, sender: webhookSender } = buildWebhooks({
    config,
    db: database.db,
    keys: keyRing,
    registry: metrics,
    poke: pokeWorker,
    ...(deps.outboundResolver ? { resolver: deps.outboundResolver } : {}),
  })
  webhooks.registerJobs(jobs)
  // Imported verifications: read from the providers' APIs when configured; in sandbox, from their simulators.
  const { kycIngestion } = config
  const veriffApi = kycIngestion.veriffApiUrl !== null ? new VeriffHttpApi({ baseUrl: kycIngestion.veriffApiUrl }) : config.environment === 'sandbox' ? new SandboxVeriffApi() : null
  const sumsubApi = kycIngestion.sumsub !== null
    ? new SumsubHttpApi({ baseUrl: kycIngestion.sumsub.apiUrl, appToken: kycIngestion.sumsub.appToken, secretKey: kycIngestion.sumsub.secretKey })
    : config.environment === 'sandbox' ? new SandboxSumsubApi() : null
  const kycIngestions = new KycIngestionsService({
    db: database.db,
    connector: kycConnector,
    veriff: veriffApi && new VeriffReader(veriffApi),
    sumsub: sumsubApi && new SumsubReader(sumsubApi),
    kyc,
    files,
    settings: {
      readinessTimeoutMs: kycIngestion.readinessTimeoutSeconds * 1000,
      recheckMs: kycIngestion.recheckMs,
      sumsubWebhookSecret: kycIngestion.sumsubWebhookSecret,
    },
    poke: pokeWorker,
  })
  kycIngestions.registerJobs(jobs)

  return {
    config,
    database,
    metrics,
    requestDigestKey: derivePurposeKey(keyRing.derivationRoot, 'idempotency/request-digest'),
    services: {
      clients,
      auth,
      signer,
      scopes,
      users,
      metadata,
      networks,
      rails,
      countries,
      assets,
      rates,
      kycConnector,
      kycIngestions,
      auditTrail,
      files,
      termsOfService,
      kyc,
      capabilities,
      ledger,
      accounts,
      jobs,
      schedules,
      worker,
      deposits,
      transactions,
      requestsForInformation,
      portfolio,
      statements,
      travelRuleNode,
      quotes,
      flows,
      depositMethods,
      externalAccounts,
      depositTestHelpers,
      portfolioHistory,
      sandboxCardProcessor: cardProcessor,
      widgets,
      kycWidgetSessions,
      travelRuleWidgetSessions,
      webhooks,
      keys,
    },
    async close(timeoutMs = config.shutdownTimeoutMs) {
      await worker.stop(timeoutMs)
      webhookSender.close()
      keyRing.stop()
      await changes.stop()
      await database.close()
      await deps.onClose?.()
    },
  }
}

/** Card numbers are sealed under keys of their own, derived from each key of the ring for this purpose. */
const CARD_NUMBER_KEYS = 'external-accounts/card-number'

/**
 * The key rings of a deployment, opened under its root key (and created from the environment's keys the first time),
 * and the service that rotates them and re-seals every module's secrets: what the container runs, and what
 * `tessera keys` uses. Throws KeyRingError when the rings do not open with the configured keys.
 */
export async function buildKeys(input: {
  config: Config
  database: Pick<DatabaseHandle, 'db' | 'engine'>
  changes: ChangeFeed
  secrets: SandboxSecrets
  logger?: KeyRingLogger
}): Promise<{ ring: KeyRing; keys: KeysService }> {
  const { config, database: { db, engine } } = input
  const ring = await KeyRing.open({
    db,
    root: input.secrets.sealingKey,
    previousRoot: config.sealingKeyPrevious,
    seeds: { sealingKey: input.secrets.sealingKey, tokenSigningKey: input.secrets.tokenSigningKey, tokenSigningKeyConfigured: config.tokenSigningKey !== null },
    ...(input.logger ? { logger: input.logger } : {}),
  })
  // Every module's sealed values, each set over its own table.
  const sealed: SealedValueSet[] = [connectorSecrets(db, ring.sealer()), cardNumbers(db, ring.sealer(CARD_NUMBER_KEYS)), webhookSecrets(db, ring.sealer())]
  const keys = new KeysService({
    db,
    ring,
    changes: input.changes,
    sealed,
    settings: {
      refreshMs: config.keyRingRefreshMs,
      // The embedded database has one process: it knows a new key as soon as it adds it.
      activationDelayMs: engine === 'pglite' ? 0 : 2 * config.keyRingRefreshMs,
      tokenLifetimeSeconds: Math.max(config.accessTokenTtlSeconds, config.widgetSessionTtlSeconds),
    },
  })
  return { ring, keys }
}

/**
 * The webhooks service of a deployment, over its database and key ring: what the container runs, and what the CLI
 * uses to list and replay deliveries. Closing the sender closes its pooled connections.
 */
export function buildWebhooks(input: { config: Config; db: Db; keys: Pick<KeyRing, 'sealer' | 'derivationRoot'>; registry?: Registry; resolver?: Resolver; poke?: () => void }): { webhooks: WebhooksService; sender: WebhookSender } {
  const { config } = input
  const sender = new WebhookSender({
    allowPrivateAddresses: config.environment === 'sandbox',
    timeoutMs: config.webhookTimeoutMs,
    ...(input.resolver ? { resolver: input.resolver } : {}),
  })
  const webhooks: WebhooksService = new WebhooksService({
    db: input.db,
    sealer: input.keys.sealer(),
    portalKey: derivePurposeKey(input.keys.derivationRoot, 'webhooks/portal'),
    sender,
    settings: {
      publicUrl: config.publicUrl,
      allowPrivateAddresses: config.environment === 'sandbox',
      retryDelaysMs: config.webhookRetryDelaysMs,
      portalLinkTtlSeconds: config.webhookPortalLinkTtlSeconds,
      secretGraceSeconds: config.webhookSecretGraceSeconds,
      maxEndpointsPerOrganization: config.webhookMaxEndpoints,
      dispatchIntervalMs: config.webhookDispatchIntervalMs,
      dispatchBatchSize: 500,
      deliveryBatchSize: 200,
      deliveryRunMs: 10_000,
      idleLookMs: 60_000,
    },
    ...(input.registry ? { metrics: new WebhookMetrics(input.registry, () => webhooks.queueDepth()) } : {}),
    ...(input.resolver ? { resolver: input.resolver } : {}),
    ...(input.poke ? { poke: input.poke } : {}),
  })
  return { webhooks, sender }
}
