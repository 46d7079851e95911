import path from 'node:path'
import { parseSchedulePeriods } from './jobs/periods.ts'
import { parseDurationList } from './lib/durations.ts'

/**
 * The only reader of the environment. Every setting is declared once here, parsed, validated, and
 * reported together when wrong, so that a misconfigured process stops before it serves anything.
 */

export type Environment = 'sandbox' | 'production'
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent'

export interface Config {
  environment: Environment
  host: string
  port: number
  /** Base URL clients use to reach this deployment; the token issuer and links derive from it. */
  publicUrl: string
  /** Directory of the embedded database and of generated sandbox secrets; null means in memory only. */
  dataDir: string | null
  databaseUrl: string | null
  /**
   * A connection string that reaches PostgreSQL itself, for what needs a session of its own (LISTEN, the
   * migrations' lock) when `databaseUrl` goes through a transaction-pooling proxy; null means `databaseUrl`.
   */
  databaseDirectUrl: string | null
  /**
   * Whether hot statements run as named prepared statements: `auto` (on unless DATABASE_DIRECT_URL says a
   * transaction-pooling proxy is in front, where a named statement may meet another session), `on`, `off`.
   */
  databasePreparedStatements: 'auto' | 'on' | 'off'
  databasePoolSize: number
  logLevel: LogLevel
  /** `auto`: readable lines when the output is a terminal, JSON lines otherwise (LOG_FORMAT). */
  logFormat: 'auto' | 'json' | 'text'
  accessTokenTtlSeconds: number
  /**
   * PKCS#8 PEM private key (ES256): the first key of the token signing ring, the first time Tessera starts; sandbox
   * generates one when absent. The ring (src/modules/keys) decides since: rotate with `tessera keys rotate`.
   */
  tokenSigningKey: string | null
  /**
   * 32-byte key, base64: the root key that seals the key rings (and the ring's first data key, the first time Tessera
   * starts); sandbox generates one when absent.
   */
  sealingKey: string | null
  /** The previous root key while the root key changes (SEALING_KEY_PREVIOUS): the rings open under either. */
  sealingKeyPrevious: string | null
  /** How often every process reads the key rings at the least (KEY_RING_REFRESH_MS); a new key activates after twice this. */
  keyRingRefreshMs: number
  initialClientId: string | null
  initialClientSecret: string | null
  /** Requests per minute per client on the API; 0 turns the limit off. */
  rateLimitPerMinute: number
  /** Requests per minute per client (or per address) on the token endpoint; 0 turns the limit off. */
  tokenRateLimitPerMinute: number
  bodyLimitBytes: number
  trustProxy: boolean | string
  shutdownTimeoutMs: number
  /** Directory whose reference-data files (networks.json, …) replace the ones shipped in reference-data/. */
  referenceDataDir: string | null
  /** Identity-verification providers whose connector can be configured (`/kyc-connector/<provider>/config`). */
  kycConnectorProviders: string[]
  /**
   * Where Tessera reads imported verifications (docs/kyc-connector.md): Veriff's API (the organization's
   * integrations sign each call) and Sumsub's (the deployment's own app token: share tokens are issued to it).
   * Null: the sandbox simulator in sandbox, no ingestions of that provider in production.
   */
  kycIngestion: {
    veriffApiUrl: string | null
    sumsub: { apiUrl: string; appToken: string; secretKey: string } | null
    /** Verifies Sumsub's callbacks (X-Payload-Digest); null refuses them all. */
    sumsubWebhookSecret: string | null
    /** How long an ingestion waits for the provider's decision before its processes fail. */
    readinessTimeoutSeconds: number
    /** How often a waiting ingestion asks the provider again (a verified callback wakes it sooner). */
    recheckMs: number
  }
  /** Directory of uploaded files (`<DATA_DIR>/files` by default); null keeps them in memory (DATA_DIR=:memory:). */
  fileStorageDir: string | null
  /** How many files one user may have; beyond it creating a file is 409 max_files_limit_exceeded. */
  maxFilesPerUser: number
  /** How long an idle background worker waits before looking for due jobs again. */
  workerPollIntervalMs: number
  /** Jobs one worker process runs at the same time. */
  workerConcurrency: number
  workerBatchSize: number
  /** How long a claimed job stays with its worker without a renewal; a dead worker's jobs are taken over after it. */
  workerLeaseMs: number
  /** How long a quote may be executed when the request names no `ttl`, and the longest `ttl` allowed. */
  quoteTtlMs: number
  quoteMaxTtlMs: number
  /** Taken off the market mid of every trade's rate: Tessera's margin as the counterparty (0.005 is 0.5 %). */
  quoteSpread: string
  /** Movements (trades, transfers) one user may start per window; 0 turns the check off. */
  velocityMaxMovements: number
  velocityWindowSeconds: number
  /** Cards a user may have linked at once (CARDS_MAX_LINKED). */
  cardsMaxLinked: number
  /** Distinct cards a user may ever link (CARDS_MAX_DISTINCT). */
  cardsMaxDistinct: number
  /** Sandbox: how long the simulated payment rail takes to settle an order (SANDBOX_RAIL_SETTLE_MS). */
  sandboxRailSettleMs: number
  /** Sandbox: how long the issuer's 3-D Secure challenge waits for the cardholder (SANDBOX_3DS_CHALLENGE_TTL_MS). */
  sandbox3dsChallengeTtlMs: number
  /** How long a card deposit waiting for its 3-D Secure challenge waits before it asks the processor again (CARD_CHALLENGE_POLL_MS). */
  cardChallengePollMs: number
  /** How long a travel-rule request for information waits for its answer before it expires (TRAVEL_RULE_REQUEST_TTL_SECONDS). */
  travelRuleRequestTtlSeconds: number
  /**
   * Origins of client web apps that call the API from the browser (CORS) and embed the widgets (framing), from
   * ALLOWED_ORIGINS: `*` for any (the sandbox default), none by default in production.
   */
  allowedOrigins: '*' | string[]
  /** How long a widget session (its token) lasts (WIDGET_SESSION_TTL_SECONDS). */
  widgetSessionTtlSeconds: number
  /** How often the payment widget asks for a transaction's status, and how many times at most (WIDGET_POLL_INTERVAL_MS, WIDGET_POLL_MAX_ATTEMPTS). */
  widgetPollIntervalMs: number
  widgetPollMaxAttempts: number
  /** Delays between the attempts to deliver a webhook message (WEBHOOK_RETRY_SCHEDULE, e.g. `5s,5m,30m,2h,5h,10h,10h`). */
  webhookRetryDelaysMs: number[]
  /** How long one webhook delivery attempt may take, answer included (WEBHOOK_TIMEOUT_MS). */
  webhookTimeoutMs: number
  /** How long a webhook management link, and the portal session it opens, last (WEBHOOK_PORTAL_LINK_TTL_SECONDS). */
  webhookPortalLinkTtlSeconds: number
  /** How long a rotated-out webhook secret keeps signing beside the new one by default (WEBHOOK_SECRET_GRACE_SECONDS). */
  webhookSecretGraceSeconds: number
  /** Webhook endpoints one organization may have (WEBHOOK_MAX_ENDPOINTS). */
  webhookMaxEndpoints: number
  /** How often the webhook dispatcher looks at the outbox when it is idle (WEBHOOK_DISPATCH_INTERVAL_MS). */
  webhookDispatchIntervalMs: number
  /** Periods of recurring jobs that replace their own, by schedule name (SCHEDULE_PERIODS, e.g. `prices.record=30s`). */
  schedulePeriods: Map<string, number>
  /** How long a completed job is kept (JOB_RETENTION), and one that failed for good (FAILED_JOB_RETENTION). */
  jobRetentionMs: number
  failedJobRetentionMs: number
  /** How long the bytes of an upload that never committed are left before they are deleted (FILE_ORPHAN_GRACE). */
  fileOrphanGraceMs: number
}

export class ConfigError extends Error {
  readonly problems: string[]
  constructor(problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`)
    this.name = 'ConfigError'
    this.problems = problems
  }
}

type Env = Record<string, string | undefined>

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export function loadConfig(env: Env = process.env, cwd: string = process.cwd()): Config {
  const problems: string[] = []
  const read = (name: string): string | undefined => {
    const value = env[name]
    return value === undefined || value.trim() === '' ? undefined : value.trim()
  }

  const integer = (name: string, fallback: number, min: number, max: number): number => {
    const raw = read(name)
    if (raw === undefined) return fallback
    if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
      problems.push(`${name} must be an integer from ${min} to ${max} (got "${raw}")`)
      return fallback
    }
    return Number(raw)
  }

  const oneOf = <T extends string>(name: string, allowed: readonly T[], fallback: T): T => {
    const raw = read(name)
    if (raw === undefined) return fallback
    if (!(allowed as readonly string[]).includes(raw)) {
      problems.push(`${name} must be one of ${allowed.join(', ')} (got "${raw}")`)
      return fallback
    }
    return raw as T
  }

  const environment = oneOf<Environment>('TESSERA_ENV', ['sandbox', 'production'], 'sandbox')
  const host = read('HOST') ?? '127.0.0.1'
  const port = integer('PORT', 3000, 0, 65535)

  let publicUrl = read('PUBLIC_URL') ?? `http://${host === '0.0.0.0' || host === '::' ? 'localhost' : host}:${port}`
  try {
    const url = new URL(publicUrl)
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('protocol')
    publicUrl = url.href.replace(/\/$/, '')
  } catch {
    problems.push(`PUBLIC_URL must be an absolute http(s) URL (got "${publicUrl}")`)
  }

  const rawDataDir = read('DATA_DIR') ?? 'data'
  const dataDir = rawDataDir === ':memory:' ? null : path.resolve(cwd, rawDataDir)

  const databaseUrl = read('DATABASE_URL') ?? null
  if (databaseUrl !== null && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    problems.push('DATABASE_URL must be a postgres:// or postgresql:// connection string')
  }
  const databaseDirectUrl = read('DATABASE_DIRECT_URL') ?? null
  if (databaseDirectUrl !== null) {
    if (databaseUrl === null) problems.push('DATABASE_DIRECT_URL is set without DATABASE_URL')
    if (!/^postgres(ql)?:\/\//.test(databaseDirectUrl)) problems.push('DATABASE_DIRECT_URL must be a postgres:// or postgresql:// connection string')
  }

  const tokenSigningKey = read('TOKEN_SIGNING_KEY')?.replace(/\\n/g, '\n') ?? null
  if (tokenSigningKey !== null && !tokenSigningKey.includes('-----BEGIN PRIVATE KEY-----')) {
    problems.push('TOKEN_SIGNING_KEY must be a PKCS#8 PEM private key (-----BEGIN PRIVATE KEY-----)')
  }
  const sealingKey = read('SEALING_KEY') ?? null
  if (sealingKey !== null && Buffer.from(sealingKey, 'base64').length !== 32) {
    problems.push('SEALING_KEY must be 32 random bytes encoded in base64 (e.g. `openssl rand -base64 32`)')
  }
  const sealingKeyPrevious = read('SEALING_KEY_PREVIOUS') ?? null
  if (sealingKeyPrevious !== null) {
    if (Buffer.from(sealingKeyPrevious, 'base64').length !== 32) problems.push('SEALING_KEY_PREVIOUS must be 32 random bytes encoded in base64, like SEALING_KEY')
    else if (sealingKey === null) problems.push('SEALING_KEY_PREVIOUS is set without SEALING_KEY: a change of root key needs the new key in SEALING_KEY')
    else if (Buffer.from(sealingKeyPrevious, 'base64').equals(Buffer.from(sealingKey, 'base64'))) problems.push('SEALING_KEY_PREVIOUS must differ from SEALING_KEY')
  }
  if (environment === 'production') {
    if (tokenSigningKey === null) problems.push('TOKEN_SIGNING_KEY is required in production')
    if (sealingKey === null) problems.push('SEALING_KEY is required in production')
  }

  const initialClientId = read('INITIAL_CLIENT_ID') ?? null
  const initialClientSecret = read('INITIAL_CLIENT_SECRET') ?? null
  if (initialClientId !== null && !UUID.test(initialClientId)) problems.push('INITIAL_CLIENT_ID must be a UUID')
  if (initialClientSecret !== null && initialClientSecret.length < 16) {
    problems.push('INITIAL_CLIENT_SECRET must be at least 16 characters')
  }
  if ((initialClientId === null) !== (initialClientSecret === null)) {
    problems.push('INITIAL_CLIENT_ID and INITIAL_CLIENT_SECRET must be set together')
  }

  // Production must choose its prices knowingly: simulated prices are fine for a staging deployment, not for
  // customers' money, and no market-data adapter ships yet.
  const priceFeed = read('PRICE_FEED')
  if (priceFeed !== undefined && priceFeed !== 'simulated') problems.push(`PRICE_FEED must be simulated (got "${priceFeed}")`)
  if (environment === 'production' && priceFeed === undefined) {
    problems.push('PRICE_FEED is required in production: Tessera ships only the simulated feed; set PRICE_FEED=simulated to run with it knowingly')
  }

  // A provider name becomes a path segment and part of scope names (`kyc-connector.<provider>.config:read`).
  const rawProviders = read('KYC_CONNECTOR_PROVIDERS') ?? 'veriff'
  const kycConnectorProviders = rawProviders.split(',').map((name) => name.trim())
  const badProviders = kycConnectorProviders.filter((name) => !/^[a-z][a-z0-9-]{0,31}$/.test(name))
  if (badProviders.length > 0) {
    problems.push(
      `KYC_CONNECTOR_PROVIDERS must be a comma-separated list of provider names of lowercase letters, digits and hyphens, starting with a letter (got "${rawProviders}")`,
    )
  } else if (new Set(kycConnectorProviders).size !== kycConnectorProviders.length) {
    problems.push(`KYC_CONNECTOR_PROVIDERS names a provider more than once (got "${rawProviders}")`)
  }

  const apiUrl = (name: string): string | null => {
    const raw = read(name)
    if (raw === undefined) return null
    let parsed: URL | undefined
    try {
      parsed = new URL(raw)
    } catch {
      parsed = undefined
    }
    const schemes = environment === 'production' ? ['https:'] : ['https:', 'http:']
    if (!parsed || !schemes.includes(parsed.protocol)) {
      problems.push(`${name} must be an ${environment === 'production' ? 'https' : 'http(s)'} URL (got "${raw}")`)
      return null
    }
    return raw.replace(/\/+$/, '')
  }
  const sumsubApiUrl = apiUrl('SUMSUB_API_URL')
  const sumsubAppToken = read('SUMSUB_APP_TOKEN') ?? null
  const sumsubSecretKey = read('SUMSUB_SECRET_KEY') ?? null
  const sumsubSet = ['SUMSUB_API_URL', 'SUMSUB_APP_TOKEN', 'SUMSUB_SECRET_KEY'].filter((name) => read(name) !== undefined).length
  if (sumsubSet !== 0 && sumsubSet !== 3) {
    problems.push('SUMSUB_API_URL, SUMSUB_APP_TOKEN and SUMSUB_SECRET_KEY must be set together')
  }
  const kycIngestion = {
    veriffApiUrl: apiUrl('VERIFF_API_URL'),
    sumsub: sumsubApiUrl !== null && sumsubAppToken !== null && sumsubSecretKey !== null ? { apiUrl: sumsubApiUrl, appToken: sumsubAppToken, secretKey: sumsubSecretKey } : null,
    sumsubWebhookSecret: read('SUMSUB_WEBHOOK_SECRET') ?? null,
    readinessTimeoutSeconds: integer('KYC_INGESTION_READINESS_TIMEOUT_SECONDS', 86_400, 1, 2_592_000),
    recheckMs: integer('KYC_INGESTION_RECHECK_MS', 60_000, 100, 3_600_000),
  }

  const quoteSpread = read('QUOTE_SPREAD') ?? '0.005'
  if (!/^0(\.[0-9]{1,8})?$/.test(quoteSpread) || Number(quoteSpread) >= 0.5) {
    problems.push(`QUOTE_SPREAD must be a decimal fraction from 0 to below 0.5, e.g. 0.005 for 0.5 % (got "${quoteSpread}")`)
  }

  const rawTrustProxy = read('TRUST_PROXY')
  const trustProxy = rawTrustProxy === undefined || rawTrustProxy === 'false'
    ? false
    : rawTrustProxy === 'true' ? true : rawTrustProxy

  // Origins as browsers send them: scheme, host and port, no path.
  const rawOrigins = read('ALLOWED_ORIGINS') ?? (environment === 'sandbox' ? '*' : '')
  let allowedOrigins: '*' | string[] = []
  if (rawOrigins.trim() === '*') allowedOrigins = '*'
  else {
    for (const origin of rawOrigins.split(',').map((value) => value.trim()).filter((value) => value !== '')) {
      let parsed: URL | undefined
      try {
        parsed = new URL(origin)
      } catch {
        parsed = undefined
      }
      if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') || parsed.origin !== origin) {
        problems.push(`ALLOWED_ORIGINS must be * or a comma-separated list of origins such as https://app.example.com (got "${origin}")`)
      } else (allowedOrigins as string[]).push(origin)
    }
  }

  const rawRetrySchedule = read('WEBHOOK_RETRY_SCHEDULE') ?? '5s,5m,30m,2h,5h,10h,10h'
  const webhookRetryDelaysMs = parseDurationList(rawRetrySchedule)
  if (webhookRetryDelaysMs === null) {
    problems.push(`WEBHOOK_RETRY_SCHEDULE must be 1 to 50 delays separated by commas, each a whole number with a unit ms, s, m or h, e.g. 5s,5m,30m,2h (got "${rawRetrySchedule}")`)
  }

  // Durations of the recurring jobs' settings, each a whole number with a unit (ms, s, m, h).
  const duration = (name: string, fallback: string, minMs: number): number => {
    const raw = read(name) ?? fallback
    const parsed = parseDurationList(raw, 1)
    if (parsed === null || parsed[0]! < minMs) {
      problems.push(`${name} must be a whole number with a unit ms, s, m or h, at least ${minMs} ms, e.g. ${fallback} (got "${raw}")`)
      return parseDurationList(fallback, 1)![0]!
    }
    return parsed[0]!
  }
  const rawSchedulePeriods = read('SCHEDULE_PERIODS')
  const schedulePeriods = rawSchedulePeriods === undefined ? { periods: new Map<string, number>() } : parseSchedulePeriods(rawSchedulePeriods)
  if ('problem' in schedulePeriods) problems.push(`SCHEDULE_PERIODS must be name=duration pairs separated by commas, e.g. prices.record=30s: ${schedulePeriods.problem}`)

  const config: Config = {
    environment,
    host,
    port,
    publicUrl,
    dataDir,
    databaseUrl,
    databaseDirectUrl,
    databasePoolSize: integer('DATABASE_POOL_SIZE', 10, 1, 1000),
    databasePreparedStatements: oneOf<Config['databasePreparedStatements']>('DATABASE_PREPARED_STATEMENTS', ['auto', 'on', 'off'], 'auto'),
    logLevel: oneOf<LogLevel>('LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], 'info'),
    logFormat: oneOf<Config['logFormat']>('LOG_FORMAT', ['auto', 'json', 'text'], 'auto'),
    accessTokenTtlSeconds: integer('ACCESS_TOKEN_TTL_SECONDS', 3600, 60, 86400),
    tokenSigningKey,
    sealingKey,
    sealingKeyPrevious,
    keyRingRefreshMs: integer('KEY_RING_REFRESH_MS', 30_000, 100, 600_000),
    initialClientId: initialClientId?.toLowerCase() ?? null,
    initialClientSecret,
    rateLimitPerMinute: integer('RATE_LIMIT_PER_MINUTE', 1200, 0, 100_000_000),
    tokenRateLimitPerMinute: integer('TOKEN_RATE_LIMIT_PER_MINUTE', 60, 0, 100_000_000),
    bodyLimitBytes: integer('BODY_LIMIT_BYTES', 1_048_576, 1024, 104_857_600),
    trustProxy,
    shutdownTimeoutMs: integer('SHUTDOWN_TIMEOUT_MS', 10_000, 0, 600_000),
    referenceDataDir: read('REFERENCE_DATA_DIR') === undefined ? null : path.resolve(cwd, read('REFERENCE_DATA_DIR')!),
    kycConnectorProviders,
    kycIngestion,
    fileStorageDir: read('FILE_STORAGE_DIR') !== undefined
      ? path.resolve(cwd, read('FILE_STORAGE_DIR')!)
      : dataDir === null ? null : path.join(dataDir, 'files'),
    maxFilesPerUser: integer('MAX_FILES_PER_USER', 1000, 1, 1_000_000),
    workerPollIntervalMs: integer('WORKER_POLL_INTERVAL_MS', 250, 10, 600_000),
    workerConcurrency: integer('WORKER_CONCURRENCY', 4, 1, 256),
    workerBatchSize: integer('WORKER_BATCH_SIZE', 100, 1, 1000),
    workerLeaseMs: integer('WORKER_LEASE_MS', 60_000, 1_000, 3_600_000),
    quoteTtlMs: integer('QUOTE_TTL_MS', 30_000, 1_000, 86_400_000),
    quoteMaxTtlMs: integer('QUOTE_MAX_TTL_MS', 600_000, 1_000, 86_400_000),
    quoteSpread,
    velocityMaxMovements: integer('VELOCITY_MAX_MOVEMENTS', 60, 0, 1_000_000),
    velocityWindowSeconds: integer('VELOCITY_WINDOW_SECONDS', 60, 1, 86_400),
    cardsMaxLinked: integer('CARDS_MAX_LINKED', 5, 1, 1000),
    cardsMaxDistinct: integer('CARDS_MAX_DISTINCT', 20, 1, 100_000),
    sandboxRailSettleMs: integer('SANDBOX_RAIL_SETTLE_MS', 2_000, 0, 86_400_000),
    sandbox3dsChallengeTtlMs: integer('SANDBOX_3DS_CHALLENGE_TTL_MS', 600_000, 1_000, 86_400_000),
    cardChallengePollMs: integer('CARD_CHALLENGE_POLL_MS', 30_000, 100, 3_600_000),
    travelRuleRequestTtlSeconds: integer('TRAVEL_RULE_REQUEST_TTL_SECONDS', 259_200, 1, 2_592_000),
    allowedOrigins,
    widgetSessionTtlSeconds: integer('WIDGET_SESSION_TTL_SECONDS', 900, 60, 86_400),
    widgetPollIntervalMs: integer('WIDGET_POLL_INTERVAL_MS', 1_000, 100, 60_000),
    widgetPollMaxAttempts: integer('WIDGET_POLL_MAX_ATTEMPTS', 180, 1, 10_000),
    webhookRetryDelaysMs: webhookRetryDelaysMs ?? [],
    webhookTimeoutMs: integer('WEBHOOK_TIMEOUT_MS', 15_000, 100, 60_000),
    webhookPortalLinkTtlSeconds: integer('WEBHOOK_PORTAL_LINK_TTL_SECONDS', 3_600, 60, 604_800),
    webhookSecretGraceSeconds: integer('WEBHOOK_SECRET_GRACE_SECONDS', 86_400, 0, 604_800),
    webhookMaxEndpoints: integer('WEBHOOK_MAX_ENDPOINTS', 20, 1, 1_000),
    webhookDispatchIntervalMs: integer('WEBHOOK_DISPATCH_INTERVAL_MS', 500, 10, 60_000),
    schedulePeriods: 'periods' in schedulePeriods ? schedulePeriods.periods : new Map(),
    jobRetentionMs: duration('JOB_RETENTION', '168h', 1_000),
    failedJobRetentionMs: duration('FAILED_JOB_RETENTION', '720h', 1_000),
    fileOrphanGraceMs: duration('FILE_ORPHAN_GRACE', '1h', 1_000),
  }
  if (config.quoteTtlMs > config.quoteMaxTtlMs) problems.push(`QUOTE_TTL_MS (${config.quoteTtlMs}) must not exceed QUOTE_MAX_TTL_MS (${config.quoteMaxTtlMs})`)

  if (problems.length > 0) throw new ConfigError(problems)
  return config
}
