import { parseArgs } from 'node:util'
import { pino, type Logger } from 'pino'
import { buildApi, loggerOptions } from './app.ts'
import { ConfigError, loadConfig, type Config } from './config.ts'
import { buildContainer, buildKeys, buildWebhooks, type Container } from './container.ts'
import { DomainError } from './lib/errors.ts'
import { isUuid } from './lib/ids.ts'
import { ChangeFeed } from './db/changes.ts'
import { migrateToLatest, openDatabase, type DatabaseHandle } from './db/database.ts'
import { DataDirBusyError, loadOrCreateSecrets, lockDataDir } from './lib/data-dir.ts'
import { readableLogStream } from './lib/readable-logs.ts'
import { AuditTrailService, type AuditFilter } from './modules/audit/index.ts'
import { ClientInputError, ClientsService, ScopeCatalogue } from './modules/auth/index.ts'
import { KeyRingError } from './modules/keys/index.ts'
import { checkLedger } from './modules/ledger/index.ts'
import { ReferenceDataError } from './modules/reference/index.ts'

const USAGE = `Usage: tessera [command]

Commands:
  serve [--role all|api|worker]       Run the API (default). Migrates the database first. --role all (default)
                                      serves the API and runs background jobs; api only serves; worker only
                                      runs background jobs (no HTTP listener).
  migrate                             Apply pending database migrations and exit.
  clients create --name NAME [--scopes "a b" | --scopes "*"] [--organization ID]
                                      Create a client; prints its secret once, as JSON.
  clients list                        List clients (never their secrets), as JSON.
  clients revoke ID                   Revoke a client; its tokens stop working at once.
  ledger check                        Verify the ledger's invariants; prints a JSON report. Exits 3 and names
                                      every offending transaction or account when one is broken.
  webhooks list --endpoint ID [--status pending|delivered|failed] [--limit N]
                                      List an endpoint's webhook messages, newest first, with where each stands.
  webhooks attempts --endpoint ID [--message ID] [--limit N]
                                      List delivery attempts of an endpoint (or of one of its messages).
  webhooks replay --endpoint ID --since TIME
                                      Queue again for the endpoint every event since TIME (ISO 8601).
  webhooks resend --endpoint ID --message ID
                                      Queue one message's event for its endpoint again.
  audit [--organization ID] [--client ID] [--user ID] [--operation OPERATION_ID] [--object ID]
        [--request ID] [--since TIME] [--until TIME] [--after ID] [--limit N]
                                      List the audit trail (every write clients made through the API), oldest
                                      first, as JSON lines; --after the last id printed reads the next page.
  keys list                           List the sealing and signing keys (never their material), as JSON.
  keys rotate [--sealing] [--signing] Add a new sealing key, signing key, or both (neither flag: both). A new key
                                      is published at once and seals or signs from its activatesAt.
  keys reseal [--batch-size N]        Seal every secret anew under the newest sealing key, online; idempotent and
                                      resumable. Exits 3 and names them when some values do not open.
  keys retire ID                      Retire a key nothing needs any more (its values re-sealed, its tokens
                                      expired); its material is erased.
  keys rewrap                         Seal the keys anew under SEALING_KEY when they are under
                                      SEALING_KEY_PREVIOUS (a change of root key).

Configuration comes from the environment; see docs/configuration.md.`

/**
 * Opens the configured database and brings its schema up to date, holding the embedded data directory's
 * lock while it is open. Returns the migrations it applied.
 */
async function openForCommand(config: Config, purpose: string): Promise<{ database: DatabaseHandle; release: () => void; applied: string[] }> {
  const release = config.databaseUrl === null && config.dataDir !== null ? lockDataDir(config.dataDir, purpose) : () => {}
  try {
    const database = await openDatabase(config)
    const applied = await migrateToLatest(database)
    return { database, release, applied }
  } catch (error) {
    release()
    throw error
  }
}

const ROLES = ['all', 'api', 'worker'] as const
type Role = (typeof ROLES)[number]

function roleOf(args: string[]): Role {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: { role: { type: 'string', default: 'all' } } })
  if (positionals.length > 0) throw new ClientInputError(`Unexpected argument "${positionals[0]}"\n\n${USAGE}`)
  if (!(ROLES as readonly string[]).includes(values.role)) throw new ClientInputError(`--role must be one of ${ROLES.join(', ')} (got "${values.role}")`)
  return values.role as Role
}

async function serve(config: Config, role: Role): Promise<void> {
  const { database, release } = await openForCommand(config, 'stop the running server before starting another one on the same directory.')
  const secrets = loadOrCreateSecrets(config.dataDir, config)
  const logger = createLogger(config)
  const container = await buildContainer({ config, database, secrets, logger, onClose: release })
  // The migrations create the webhook dispatcher's job; a deployment that lost it gets it back here.
  if (role !== 'api') await container.services.webhooks.ensureDispatcher()

  if (role === 'worker') return work(container, logger)
  const { services } = container
  const app = await buildApi(container, logger)
  const initial = await services.clients.ensureInitialClient(
    config.initialClientId && config.initialClientSecret ? { clientId: config.initialClientId, clientSecret: config.initialClientSecret } : null,
    config.environment === 'sandbox',
  )

  exitOnSignals(logger, 'shutting down: finishing in-flight requests', config.shutdownTimeoutMs, () => app.close())

  await app.listen({ host: config.host, port: config.port })
  // The worker also runs the recurring jobs (price recording among them), once per period across all workers.
  if (role === 'all') services.worker.start()
  const baseUrl = config.publicUrl
  const lines = [
    '',
    `Tessera ${config.environment} is listening on ${baseUrl}`,
    `  API reference: ${baseUrl}/docs   OpenAPI: ${baseUrl}/openapi.json`,
    `  Database: ${database.engine === 'pglite' ? `embedded (${config.dataDir ?? 'in memory'})` : 'PostgreSQL'}`,
    `  Background jobs: ${role === 'all' ? `run here (${config.workerConcurrency} at a time)` : 'not run here (start `tessera serve --role worker`)'}`,
  ]
  if (initial) {
    lines.push(
      '',
      '  A client with every scope was created. Keep its secret: it is shown only now.',
      `    client id:     ${initial.clientId}`,
      `    client secret: ${initial.clientSecret}`,
      '',
      `  Get a token:  curl -s -u '${initial.clientId}:${initial.clientSecret}' -d grant_type=client_credentials ${baseUrl}/core/oauth2/token`,
    )
  }
  process.stderr.write(`${lines.join('\n')}\n\n`)
}

/**
 * On the first SIGTERM or SIGINT: runs `close` (which lets in-flight work finish) and exits 0, or exits 1 when
 * that fails or takes longer than `timeoutMs`.
 */
/** JSON lines for collectors; readable lines for a person at a terminal (LOG_FORMAT). */
function createLogger(config: Config): Logger {
  const text = config.logFormat === 'text' || (config.logFormat === 'auto' && process.stdout.isTTY === true)
  return text ? pino(loggerOptions(config.logLevel), readableLogStream(process.stdout)) : pino(loggerOptions(config.logLevel))
}

function exitOnSignals(logger: Logger, message: string, timeoutMs: number, close: () => Promise<void>): void {
  let closing = false
  const shutdown = (signal: string) => {
    if (closing) return
    closing = true
    logger.info({ signal }, message)
    const timer = setTimeout(() => {
      logger.error('shutdown timed out; exiting')
      process.exit(1)
    }, timeoutMs)
    timer.unref()
    close().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed')
        process.exit(1)
      },
    )
  }
  process.on('SIGTERM', () => shutdown('SIGTERM'))
  process.on('SIGINT', () => shutdown('SIGINT'))
}

/** The worker role: the container's job loop and no HTTP server, until SIGTERM or SIGINT. */
function work(container: Container, logger: Logger): void {
  const { config, services } = container
  // Running jobs get the shutdown timeout to finish, and a few seconds more to be given back.
  exitOnSignals(logger, 'shutting down: finishing or releasing running jobs', config.shutdownTimeoutMs + 5_000, () => container.close())
  services.worker.start()
  process.stderr.write(`\nTessera ${config.environment} worker ${services.worker.id} is running background jobs (${config.workerConcurrency} at a time)\n\n`)
}

async function clients(config: Config, args: string[]): Promise<void> {
  const [action, ...rest] = args
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: { name: { type: 'string' }, scopes: { type: 'string' }, organization: { type: 'string' } },
  })
  const { database, release } = await openForCommand(
    config,
    'stop the server first, or run Tessera on PostgreSQL (DATABASE_URL) where clients can be managed while it serves.',
  )
  try {
    // The CLI announces changes for running servers to hear; it keeps no cache of its own.
    const service = new ClientsService(database.db, new ChangeFeed(database.schema), new ScopeCatalogue(config))
    let output: unknown
    if (action === 'create') {
      if (values.name === undefined) throw new ClientInputError('--name is required')
      const created = await service.create({ name: values.name, scopes: values.scopes ?? '*', organizationId: values.organization })
      output = { clientId: created.clientId, clientSecret: created.clientSecret, scopes: created.scopes, organizationId: created.organizationId }
    } else if (action === 'list') {
      output = await service.list()
    } else if (action === 'revoke') {
      if (positionals.length !== 1) throw new ClientInputError('Usage: tessera clients revoke CLIENT_ID')
      output = await service.revoke(positionals[0]!)
    } else {
      throw new ClientInputError(`Unknown clients command "${action ?? ''}"\n\n${USAGE}`)
    }
    process.stdout.write(`${JSON.stringify(output, null, 2)}\n`)
  } finally {
    await database.close()
    release()
  }
}

/** Exit status of `ledger check` when an invariant is broken (1 is a crash, 2 a usage or configuration error). */
const LEDGER_BROKEN_EXIT_CODE = 3

async function ledger(config: Config, args: string[]): Promise<void> {
  const [action, ...rest] = args
  if (action !== 'check' || rest.length > 0) throw new ClientInputError(`Unknown ledger command "${args.join(' ')}"\n\n${USAGE}`)
  const { database, release } = await openForCommand(
    config,
    'stop the server first, or run Tessera on PostgreSQL (DATABASE_URL) where the ledger can be checked while it serves.',
  )
  try {
    const { violations, checked } = await checkLedger(database.db)
    process.stdout.write(`${JSON.stringify({ ok: violations.length === 0, checked, violations }, null, 2)}\n`)
    if (violations.length > 0) {
      const lines = violations.map((v) => `  - ${v.rule}: ${v.rule === 'transaction-unbalanced' ? 'transaction' : 'account'} ${v.id} (organization ${v.organizationId}): ${v.detail}`)
      process.stderr.write(`The ledger is broken: ${violations.length} problem(s)\n${lines.join('\n')}\n`)
      process.exitCode = LEDGER_BROKEN_EXIT_CODE
    }
  } finally {
    await database.close()
    release()
  }
}

const WEBHOOK_STATUSES = ['pending', 'delivered', 'failed']

async function webhooks(config: Config, args: string[]): Promise<void> {
  const [action, ...rest] = args
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: {
      endpoint: { type: 'string' },
      message: { type: 'string' },
      status: { type: 'string' },
      since: { type: 'string' },
      limit: { type: 'string', default: '50' },
    },
  })
  if (positionals.length > 0) throw new ClientInputError(`Unexpected arguments "${positionals.join(' ')}"\n\n${USAGE}`)
  const limit = Number(values.limit)
  if (!Number.isInteger(limit) || limit < 1 || limit > 10_000) throw new ClientInputError('--limit must be an integer from 1 to 10000')
  if (values.status !== undefined && !WEBHOOK_STATUSES.includes(values.status)) throw new ClientInputError(`--status must be one of ${WEBHOOK_STATUSES.join(', ')}`)
  for (const name of ['endpoint', 'message'] as const) {
    if (values[name] !== undefined && !isUuid(values[name])) throw new ClientInputError(`--${name} must be a UUID`)
  }
  const required = (name: 'endpoint' | 'message' | 'since'): string => {
    if (values[name] === undefined) throw new ClientInputError(`--${name} is required for webhooks ${action}`)
    return values[name]
  }
  if (!['list', 'attempts', 'replay', 'resend'].includes(action ?? '')) throw new ClientInputError(`Unknown webhooks command "${action ?? ''}"\n\n${USAGE}`)
  const { database, release } = await openForCommand(
    config,
    'stop the server first, or run Tessera on PostgreSQL (DATABASE_URL) where deliveries can be managed while it serves.',
  )
  const { ring } = await buildKeys({ config, database, changes: new ChangeFeed(database.schema), secrets: loadOrCreateSecrets(config.dataDir, config) })
  const { webhooks: service, sender } = buildWebhooks({ config, db: database.db, keys: ring })
  try {
    const endpointId = required('endpoint')
    const organizationId = await service.organizationOfEndpoint(endpointId)
    let output: unknown
    if (action === 'list') {
      output = await service.listMessages(organizationId, endpointId, { limit, ...(values.status ? { status: values.status } : {}) })
    } else if (action === 'attempts') {
      output = await service.listAttempts(organizationId, { endpointId, limit, ...(values.message ? { messageId: values.message } : {}) })
    } else if (action === 'replay') {
      const since = new Date(required('since'))
      if (Number.isNaN(since.getTime())) throw new ClientInputError('--since must be a time in ISO 8601, e.g. 2026-01-31T12:00:00Z')
      output = await service.replay(organizationId, endpointId, since)
    } else {
      output = await service.resend(organizationId, endpointId, required('message'))
    }
    process.stdout.write(`${JSON.stringify(output, null, 2)}\n`)
  } catch (error) {
    // A refusal of the service (an unknown endpoint, a time out of range) is the operator's input, not a crash.
    if (error instanceof DomainError) throw new ClientInputError(`${error.message}${error.details ? ` ${JSON.stringify(error.details)}` : ''}`)
    throw error
  } finally {
    sender.close()
    await database.close()
    release()
  }
}

async function audit(config: Config, args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      organization: { type: 'string' },
      client: { type: 'string' },
      user: { type: 'string' },
      operation: { type: 'string' },
      object: { type: 'string' },
      request: { type: 'string' },
      since: { type: 'string' },
      until: { type: 'string' },
      after: { type: 'string' },
      limit: { type: 'string', default: '100' },
    },
  })
  if (positionals.length > 0) throw new ClientInputError(`Unexpected arguments "${positionals.join(' ')}"\n\n${USAGE}`)
  const limit = Number(values.limit)
  if (!Number.isInteger(limit) || limit < 1 || limit > 10_000) throw new ClientInputError('--limit must be an integer from 1 to 10000')
  for (const name of ['organization', 'user', 'after'] as const) {
    if (values[name] !== undefined && !isUuid(values[name])) throw new ClientInputError(`--${name} must be a UUID`)
  }
  const time = (name: 'since' | 'until'): Date | undefined => {
    if (values[name] === undefined) return undefined
    const at = new Date(values[name])
    if (Number.isNaN(at.getTime())) throw new ClientInputError(`--${name} must be a time in ISO 8601, e.g. 2026-01-31T12:00:00Z`)
    return at
  }
  const filter: AuditFilter = { limit }
  if (values.organization !== undefined) filter.organizationId = values.organization
  if (values.client !== undefined) filter.clientId = values.client
  if (values.user !== undefined) filter.userId = values.user
  if (values.operation !== undefined) filter.operation = values.operation
  if (values.object !== undefined) filter.objectId = values.object
  if (values.request !== undefined) filter.requestId = values.request
  if (values.after !== undefined) filter.after = values.after
  const since = time('since')
  const until = time('until')
  if (since) filter.since = since
  if (until) filter.until = until
  const { database, release } = await openForCommand(config, 'stop the server first, or run Tessera on PostgreSQL (DATABASE_URL) where the trail can be read while it serves.')
  try {
    for (const entry of await new AuditTrailService({ db: database.db }).list(filter)) process.stdout.write(`${JSON.stringify(entry)}\n`)
  } finally {
    await database.close()
    release()
  }
}

const KEY_ACTIONS = ['list', 'rotate', 'reseal', 'retire', 'rewrap']

/** Exit status of `keys reseal` when some sealed values do not open (1 is a crash, 2 a usage or configuration error). */
const RESEAL_INCOMPLETE_EXIT_CODE = 3

async function keys(config: Config, args: string[]): Promise<void> {
  const [action, ...rest] = args
  if (!KEY_ACTIONS.includes(action ?? '')) throw new ClientInputError(`Unknown keys command "${action ?? ''}"\n\n${USAGE}`)
  // A key id is base64url and may begin with '-': `keys retire` takes its one argument as it is, never as an option.
  const retiring = action === 'retire' ? (rest[0] === '--' ? rest.slice(1) : rest) : []
  let parsed
  try {
    parsed = parseArgs({
      args: action === 'retire' ? ['--', ...retiring] : rest,
      allowPositionals: true,
      options: { sealing: { type: 'boolean', default: false }, signing: { type: 'boolean', default: false }, 'batch-size': { type: 'string', default: '100' } },
    })
  } catch (error) {
    throw new ClientInputError(`${(error as Error).message}\n\n${USAGE}`)
  }
  const { values, positionals } = parsed
  if (action === 'retire' ? positionals.length !== 1 : positionals.length > 0) {
    throw new ClientInputError(action === 'retire' ? 'Usage: tessera keys retire KEY_ID' : `Unexpected arguments "${positionals.join(' ')}"`)
  }
  if (action !== 'rotate' && (values.sealing || values.signing)) throw new ClientInputError('--sealing and --signing apply to keys rotate only')
  const batchSize = Number(values['batch-size'])
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 10_000) throw new ClientInputError('--batch-size must be an integer from 1 to 10000')
  const { database, release } = await openForCommand(
    config,
    'stop the server first, or run Tessera on PostgreSQL (DATABASE_URL) where keys can be rotated while it serves.',
  )
  try {
    // The CLI announces changes to the rings for running servers to hear; it keeps no cache of its own.
    const { keys: service } = await buildKeys({ config, database, changes: new ChangeFeed(database.schema), secrets: loadOrCreateSecrets(config.dataDir, config) })
    let output: unknown
    if (action === 'list') output = await service.list()
    else if (action === 'rotate') {
      const both = !values.sealing && !values.signing
      output = await service.rotate({ sealing: both || values.sealing, signing: both || values.signing })
    } else if (action === 'reseal') {
      const report = await service.reseal({
        batchSize,
        onWait: (key, until) => process.stderr.write(`Waiting for sealing key ${key} to activate at ${until.toISOString()} …\n`),
      })
      output = report
      const unopenable = report.sets.flatMap((set) => set.unopenable)
      if (unopenable.length > 0) {
        process.stderr.write(`${unopenable.length} sealed value(s) do not open and were left as they are:\n${unopenable.map((where) => `  - ${where}`).join('\n')}\n`)
        process.exitCode = RESEAL_INCOMPLETE_EXIT_CODE
      }
    } else if (action === 'retire') output = await service.retire(positionals[0]!)
    else output = await service.rewrap()
    process.stdout.write(`${JSON.stringify(output, null, 2)}\n`)
  } catch (error) {
    // A refusal (a key still needed, an unknown id) is the operator's input, not a crash.
    if (error instanceof DomainError) throw new ClientInputError(`${error.message}${error.details ? ` ${JSON.stringify(error.details)}` : ''}`)
    throw error
  } finally {
    await database.close()
    release()
  }
}

async function main(argv: string[]): Promise<void> {
  const [command = 'serve', ...args] = argv
  if (command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(`${USAGE}\n`)
    return
  }
  const config = loadConfig()
  switch (command) {
    case 'serve':
      return serve(config, roleOf(args))
    case 'migrate': {
      const { database, release, applied } = await openForCommand(config, 'stop the server first; it applies migrations itself when it starts.')
      await database.close()
      release()
      process.stdout.write(applied.length > 0 ? `Applied ${applied.join(', ')}\n` : 'The database is up to date\n')
      return
    }
    case 'clients':
      return clients(config, args)
    case 'ledger':
      return ledger(config, args)
    case 'webhooks':
      return webhooks(config, args)
    case 'audit':
      return audit(config, args)
    case 'keys':
      return keys(config, args)
    default:
      throw new ClientInputError(`Unknown command "${command}"\n\n${USAGE}`)
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof ConfigError || error instanceof DataDirBusyError || error instanceof ClientInputError || error instanceof ReferenceDataError || error instanceof KeyRingError) {
    process.stderr.write(`${error.message}\n`)
    process.exit(2)
  }
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
  process.exit(1)
})
