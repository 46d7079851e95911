// What the benchmark runners share: cleanup on every exit path, child processes, a throwaway PostgreSQL cluster,
// Tessera started as a real server on it, and for the runners that move money their start, fixtures, API runs, raw
// SQL baseline driver, row counts and report. See bench/README.md.
import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes, randomUUID } from 'node:crypto'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import autocannon, { type Instance, type Options, type RequestParams, type Result } from 'autocannon'
import pg from 'pg'
import { cpuMeter, type CpuMeter, type CpuSpent } from './cpu.ts'
import { claimJobs, type RawJob } from './raw-sql.ts'
import { positiveInteger } from './settings.ts'

export const ROOT = path.resolve(import.meta.dirname, '..')
export const RESULTS_DIR = path.join(ROOT, 'bench', 'results')
const PG_CLUSTER = path.join(ROOT, 'scripts', 'pg-cluster.sh')

let prefix = 'bench'
/** Names the runner in log lines. */
export function setLogPrefix(name: string): void {
  prefix = name
}
export const log = (message: string) => process.stderr.write(`[${prefix}] ${message}\n`)

// ---------------------------------------------------------------------------------------------------------------
// Cleanup: every resource registers how to release it; exit paths (success, failure, signals) run them once.

/** Thrown by steps that would start something after cleanup began (a signal arrived). */
export class Interrupted extends Error {}

const interrupts: Array<() => void> = []
const cleanups: Array<{ name: string; run: () => Promise<void> | void }> = []
let cleaning: Promise<void> | null = null
let signalExitCode: number | null = null

/** Something to stop first when cleanup begins (a load generator in flight). */
export function onInterrupt(run: () => void): void {
  interrupts.push(run)
}

export function onCleanup(name: string, run: () => Promise<void> | void): void {
  cleanups.push({ name, run })
}

export function isCleaning(): boolean {
  return cleaning !== null
}

export function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    for (const run of interrupts) run()
    for (const { name, run } of cleanups.reverse()) {
      try {
        await run()
      } catch (error) {
        log(`cleanup of ${name} failed: ${error instanceof Error ? error.message : String(error)}`)
      }
    }
  })()
  return cleaning
}

for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
  process.on(signal, () => {
    log(`${signal}: stopping`)
    signalExitCode ??= code
    void cleanup().finally(() => process.exit(signalExitCode ?? code))
  })
}

/** Runs a runner's main function, cleans up whatever happened, and exits with its code (or the signal's). */
export async function runMain(main: () => Promise<number>): Promise<never> {
  let exitCode = 1
  try {
    exitCode = await main()
  } catch (error) {
    // After a signal, failures of the steps still in flight are consequences of the cleanup, not news.
    if (!cleaning) process.stderr.write(`\nbenchmark failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
  } finally {
    await cleanup()
  }
  process.exit(signalExitCode ?? exitCode)
}

// ---------------------------------------------------------------------------------------------------------------
// Load

let currentLoad: Instance | null = null
onInterrupt(() => currentLoad?.stop())

/** One autocannon run, stopped if cleanup begins meanwhile; `onResponse` hears each response as it arrives. */
export function load(options: Options, onResponse?: (statusCode: number) => void): Promise<Result> {
  return new Promise((resolve, reject) => {
    if (isCleaning()) throw new Interrupted()
    currentLoad = autocannon(options, (error, result) => {
      currentLoad = null
      if (error) reject(error)
      else resolve(result)
    })
    if (onResponse) currentLoad.on('response', (_client: unknown, statusCode: number) => onResponse(statusCode))
  })
}

// ---------------------------------------------------------------------------------------------------------------
// Processes

export interface Child {
  name: string
  process: ChildProcess
  /** Resolves with the exit code (or signal name) once the process has exited. */
  exited: Promise<number | string>
  /** The last lines the process wrote, stdout and stderr interleaved, for diagnosing failures. */
  tail(): string
}

export function startChild(name: string, args: string[], env: NodeJS.ProcessEnv, onLine?: (line: string) => void): Child {
  if (cleaning) throw new Interrupted()
  const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] })
  const lines: string[] = []
  const collect = (stream: NodeJS.ReadableStream) => {
    let pending = ''
    stream.setEncoding('utf8')
    stream.on('data', (chunk: string) => {
      pending += chunk
      const parts = pending.split('\n')
      pending = parts.pop() ?? ''
      for (const line of parts) {
        lines.push(line)
        if (lines.length > 200) lines.shift()
        onLine?.(line)
      }
    })
  }
  collect(child.stdout!)
  collect(child.stderr!)
  const exited = new Promise<number | string>((resolve) => {
    child.on('exit', (code, signal) => resolve(code ?? signal ?? 'unknown'))
    child.on('error', (error) => {
      lines.push(`spawn failed: ${error.message}`)
      resolve('spawn-error')
    })
  })
  const handle: Child = { name, process: child, exited, tail: () => lines.slice(-40).join('\n') }
  onCleanup(name, () => stopChild(handle))
  return handle
}

/** SIGTERM, then SIGKILL if the process has not exited within the grace period. */
export async function stopChild(child: Child, graceMs = 10_000): Promise<void> {
  if (child.process.exitCode !== null || child.process.signalCode !== null) return
  child.process.kill('SIGTERM')
  const timedOut = Symbol('timeout')
  let timer: NodeJS.Timeout | undefined
  const outcome = await Promise.race([
    child.exited,
    new Promise<typeof timedOut>((resolve) => {
      timer = setTimeout(() => resolve(timedOut), graceMs)
    }),
  ])
  clearTimeout(timer)
  if (outcome === timedOut) {
    log(`${child.name} did not exit within ${graceMs} ms of SIGTERM; killing it`)
    child.process.kill('SIGKILL')
    await child.exited
  }
}

export function runCommand(command: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    // Its own process group: a Ctrl-C aimed at the runner must not cut a cluster start or stop in half.
    const child = spawn(command, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer()
    server.unref()
    server.on('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo
      server.close(() => resolve(port))
    })
  })
}

export function makeTempDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix))
  onCleanup(`temporary directory ${dir}`, () => fs.rmSync(dir, { recursive: true, force: true }))
  return dir
}

export async function startCluster(): Promise<string> {
  // The temporary directory is the data directory itself: its parent (/tmp) lets the postgres user reach it.
  const dir = makeTempDir('tessera-bench-pg-')
  const port = await freePort()
  const starting = runCommand('bash', [PG_CLUSTER, 'start', dir, String(port)])
  // Stopping waits for an interrupted start to finish first, so that the server cannot come up after the stop.
  onCleanup('PostgreSQL cluster', async () => {
    await starting.catch(() => {})
    const { code, stderr } = await runCommand('bash', [PG_CLUSTER, 'stop', dir])
    if (code !== 0) throw new Error(stderr.trim())
  })
  const { code, stdout, stderr } = await starting
  if (code !== 0) throw new Error(`scripts/pg-cluster.sh start failed:\n${stderr.trim()}`)
  return stdout.trim()
}

/** A database of its own in the server (named `<prefix>_<random>`), dropped at cleanup; resolves with its URL. */
export async function scratchDatabase(serverUrl: string, prefix: string): Promise<string> {
  const name = `${prefix}_${randomBytes(4).toString('hex')}`
  const admin = new pg.Client({ connectionString: serverUrl })
  await admin.connect()
  try {
    await admin.query(`create database ${name}`)
  } finally {
    await admin.end()
  }
  onCleanup(`database ${name}`, async () => {
    const client = new pg.Client({ connectionString: serverUrl })
    await client.connect()
    try {
      await client.query(`drop database if exists ${name} with (force)`)
    } finally {
      await client.end()
    }
  })
  const url = new URL(serverUrl)
  url.pathname = `/${name}`
  return url.href
}

export async function databaseVersion(url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const { rows } = await client.query<{ server_version: string }>('show server_version')
    return rows[0]?.server_version ?? 'unknown'
  } finally {
    await client.end()
  }
}

/** Share of all CPUs busy over one second, while the benchmark itself runs nothing: others' load skews figures. */
export async function backgroundCpuLoad(): Promise<number> {
  const sample = () => os.cpus().reduce((acc, { times }) => {
    acc.idle += times.idle
    acc.total += times.user + times.nice + times.sys + times.irq + times.idle
    return acc
  }, { idle: 0, total: 0 })
  const before = sample()
  await new Promise((resolve) => setTimeout(resolve, 1000))
  const after = sample()
  const total = after.total - before.total
  return total > 0 ? 1 - (after.idle - before.idle) / total : 0
}

export async function waitUntil(what: string, child: Child, timeoutMs: number, ready: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + timeoutMs
  let exited: number | string | null = null
  void child.exited.then((outcome) => (exited = outcome))
  while (Date.now() < deadline) {
    if (exited !== null) throw new Error(`${child.name} exited (${exited}) before ${what}:\n${child.tail()}`)
    if (await ready().catch(() => false)) return
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  throw new Error(`${child.name}: no ${what} within ${timeoutMs / 1000} s:\n${child.tail()}`)
}

// ---------------------------------------------------------------------------------------------------------------
// Tessera

export async function expectJson(response: Response, status: number, what: string): Promise<Record<string, unknown>> {
  const text = await response.text()
  if (response.status !== status) throw new Error(`${what}: expected ${status}, got ${response.status}: ${text}`)
  return JSON.parse(text) as Record<string, unknown>
}

export interface ClientCredentials {
  clientId: string
  clientSecret: string
  /** The HTTP Basic `Authorization` header value of the pair. */
  basicAuth: string
}

/** A fresh pair for Tessera's initial client. */
export function newClientCredentials(): ClientCredentials {
  const clientId = randomUUID()
  // 256 random bits, base64url: 43 characters, like the secrets Tessera generates.
  const clientSecret = randomBytes(32).toString('base64url')
  return { clientId, clientSecret, basicAuth: `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret)}`).toString('base64')}` }
}

/**
 * Starts `tessera serve` on the database (sandbox, rate limits off, logging at `warn`) with `credentials` as its
 * initial client and `env` on top; resolves once `GET /health/ready` answers 200.
 */
export async function startTessera(
  databaseUrl: string,
  credentials: ClientCredentials,
  /** `v8Flags`: options for Node.js and V8 before the script (`--no-allocation-site-pretenuring`, …). */
  options: { env?: NodeJS.ProcessEnv; profileDir?: string | null; v8Flags?: readonly string[] } = {},
): Promise<{ child: Child; baseUrl: string }> {
  const port = await freePort()
  const dataDir = makeTempDir('tessera-bench-data-')
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    TESSERA_ENV: 'sandbox',
    DATA_DIR: dataDir,
    INITIAL_CLIENT_ID: credentials.clientId,
    INITIAL_CLIENT_SECRET: credentials.clientSecret,
    // Rate limits would cap the measurement rather than the code under test.
    RATE_LIMIT_PER_MINUTE: '0',
    TOKEN_RATE_LIMIT_PER_MINUTE: '0',
    ...options.env,
  }
  // The profile is written when the process exits, which Tessera does on SIGTERM after closing.
  const nodeArgs = [...(options.v8Flags ?? []), ...(options.profileDir ? ['--cpu-prof', `--cpu-prof-dir=${options.profileDir}`] : [])]
  const child = startChild('tessera', [...nodeArgs, 'src/main.ts', 'serve'], env)
  const baseUrl = `http://127.0.0.1:${port}`
  await waitUntil('GET /health/ready = 200', child, 60_000, async () => (await fetch(`${baseUrl}/health/ready`)).status === 200)
  return { child, baseUrl }
}

/** A client's access token (client credentials): with `scope`'s scopes, or every scope the client holds. */
export async function accessToken(baseUrl: string, credentials: ClientCredentials, scope?: string): Promise<string> {
  const response = await fetch(`${baseUrl}/core/oauth2/token`, {
    method: 'POST',
    headers: { authorization: credentials.basicAuth, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(scope === undefined ? { grant_type: 'client_credentials' } : { grant_type: 'client_credentials', scope }).toString(),
  })
  return String((await expectJson(response, 200, 'POST /core/oauth2/token')).access_token)
}

// ---------------------------------------------------------------------------------------------------------------
// The start of the runners that move money (bench/trades.ts, bench/withdrawals.ts, bench/cards.ts)

/** What every runner that moves money reads from the environment (`movementSettings`). */
export interface MovementSettings {
  users: number
  /** BENCH_API_CLIENTS: concurrent HTTP connections; also the baseline's connections doing the requests' work. */
  clients: number
  /** BENCH_WORKER_CONCURRENCY: Tessera's WORKER_CONCURRENCY (runs at a time); also the baseline's. */
  concurrency: number
  /** Tessera's own WORKER_BATCH_SIZE (passed through to it): how many due flows its worker runs together at most. */
  batchSize: number
  /** Movements of the warm-up. */
  warmup: number
}

/**
 * The settings of a runner that moves money, in the order its results show them: `key`, the movements per scenario
 * (from `variables.count`, 2000 by default), then the users of the "many users" scenario (`variables.users`, 200),
 * `extra` settings of the runner's own, and MovementSettings. Each API connection sends whole movements (a quote,
 * then its commit): autocannon shares the requests out evenly over the connections, so the movements (and the
 * warm-up's, as many up to 500) are rounded up to a multiple of the connections; `rounding` says so when it changed
 * the number asked for.
 */
export function movementSettings<K extends string, X extends Record<string, number> = Record<never, number>>(
  key: K,
  variables: { count: string; users: string },
  extra?: X,
): { settings: Record<K, number> & X & MovementSettings; rounding: string | null } {
  const requested = positiveInteger(variables.count, 2000)
  const users = positiveInteger(variables.users, 200)
  const clients = positiveInteger('BENCH_API_CLIENTS', 16)
  const concurrency = positiveInteger('BENCH_WORKER_CONCURRENCY', 8)
  const batchSize = positiveInteger('WORKER_BATCH_SIZE', 100)
  const roundToClients = (n: number) => Math.ceil(n / clients) * clients
  const count = roundToClients(requested)
  const settings = { [key]: count, users, ...extra, clients, concurrency, batchSize, warmup: roundToClients(Math.min(500, requested)) }
  return {
    settings: settings as Record<K, number> & X & MovementSettings,
    rounding: count !== requested ? `${requested} ${key} rounded up to ${count}, a multiple of the ${clients} API clients` : null,
  }
}

/** The settings of the runners whose baseline runs in Tessera's batches (bench/withdrawals.ts, bench/cards.ts). */
export function batchedSettings() {
  return {
    /** Tessera's own setting (passed through to it): how long its idle worker sleeps between polls; the baseline's too. */
    pollIntervalMs: positiveInteger('WORKER_POLL_INTERVAL_MS', 250),
    databaseUrl: process.env.BENCH_DATABASE_URL?.trim() || null,
    cpuProfile: process.env.BENCH_CPU_PROF === '1',
    enforceTarget: process.env.BENCH_ENFORCE_TARGET === '1',
  }
}

/** Logs a warning when other processes kept more than a tenth of the CPUs busy `when`. */
export function warnIfBusy(load: number, when: string): void {
  if (load > 0.1) log(`WARNING: ${(load * 100).toFixed(0)}% of the CPUs were busy ${when}; other processes will skew the figures`)
}

export interface RunStart {
  startedAt: Date
  /** Share of the CPUs other processes kept busy in the second before the run. */
  backgroundLoad: number
  url: string
  postgresVersion: string
  profileDir: string | null
  tessera: { child: Child; baseUrl: string }
  token: string
  /** Two connections for the runner's own reads (counts, the processing check). */
  pool: pg.Pool
}

/**
 * Starts a runner that moves money: logs the machine (then `note`, when given), samples other processes' CPU, creates
 * a database `bench_<name>` (in a throwaway cluster unless `settings.databaseUrl` is given), starts Tessera on it with
 * WORKER_CONCURRENCY and `env` (with a CPU profile into bench/results/<name>-profile-<time>/ when
 * `settings.cpuProfile`), takes a token and opens a pool for the runner's own reads.
 */
export async function startRun(
  name: string,
  settings: { databaseUrl: string | null; cpuProfile: boolean; concurrency: number },
  options: { env: NodeJS.ProcessEnv; note: string | null },
): Promise<RunStart> {
  const startedAt = new Date()
  log(`node ${process.version}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? 'unknown'})`)
  if (options.note) log(options.note)
  const backgroundLoad = await backgroundCpuLoad()
  warnIfBusy(backgroundLoad, 'before the run started')
  const url = await scratchDatabase(settings.databaseUrl ?? (await startCluster()), `bench_${name}`)
  const postgresVersion = await databaseVersion(url)

  const credentials = newClientCredentials()
  const profileDir = settings.cpuProfile ? path.join(RESULTS_DIR, `${name}-profile-${startedAt.toISOString().replace(/[:.]/g, '-')}`) : null
  const tessera = await startTessera(url, credentials, { env: { WORKER_CONCURRENCY: String(settings.concurrency), ...options.env }, profileDir })
  const token = await accessToken(tessera.baseUrl, credentials)
  const pool = new pg.Pool({ connectionString: url, max: 2 })
  onCleanup('status pool', () => pool.end())
  return { startedAt, backgroundLoad, url, postgresVersion, profileDir, tessera, token, pool }
}

/**
 * The pool of a baseline that runs in Tessera's batches (`batchedBaseline`): a connection for each API client, each
 * run at a time and the claims, opened at once and kept (connections that close while a phase runs would blur its CPU
 * figures); and the meter of CPU time by process (this runner, Tessera, PostgreSQL, others).
 */
export async function baselinePool(run: RunStart, settings: { clients: number; concurrency: number }): Promise<{ rawPool: pg.Pool; meter: CpuMeter }> {
  const { pool } = run
  const connections = settings.clients + settings.concurrency + 1
  const rawPool = new pg.Pool({ connectionString: run.url, max: connections, idleTimeoutMillis: 0 })
  onCleanup('baseline pool', () => rawPool.end())
  // `end()` resolves before every connection has closed: the database's drop at cleanup may still terminate one,
  // whose error reaches its pool as an idle client's. Anything else is worth a line.
  for (const idlePool of [pool, rawPool]) {
    idlePool.on('error', (error) => {
      if (!isCleaning()) log(`an idle database connection failed: ${error.message}`)
    })
  }
  const opened = await Promise.all(Array.from({ length: connections }, () => rawPool.connect()))
  for (const client of opened) client.release()
  const meter = cpuMeter(run.tessera.child.process.pid!, (await pool.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid)
  return { rawPool, meter }
}

/** The organization of one of its accounts. */
export async function organizationOf(pool: pg.Pool, accountId: string): Promise<string> {
  return (await pool.query<{ organization_id: string }>('select organization_id from accounts where id = $1', [accountId])).rows[0]!.organization_id
}

/** The id of the organization's system ledger account of `code` (`clearing:sepa`, `fees`, …) and `asset`. */
export async function systemAccountId(pool: pg.Pool, organizationId: string, code: string, asset: string): Promise<string> {
  return (await pool.query<{ id: string }>('select id from ledger_accounts where organization_id = $1 and system_code = $2 and asset = $3', [organizationId, code, asset])).rows[0]!.id
}

// ---------------------------------------------------------------------------------------------------------------
// Fixtures and runs shared by the runners that move money

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** `work` on every item, at most `limit` at a time; resolves with the results in the items' order. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, work: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array<R>(items.length)
  let next = 0
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      for (let i = next++; i < items.length; i = next++) results[i] = await work(items[i]!, i)
    }),
  )
  return results
}

async function processing(pool: pg.Pool): Promise<number> {
  const { rows } = await pool.query<{ n: string }>("select count(*) as n from transactions where status = 'processing'")
  return Number(rows[0]!.n)
}

/** Resolves once no transaction is processing (the worker has carried out everything committed). */
export async function untilNoneProcessing(pool: pg.Pool): Promise<void> {
  while ((await processing(pool)) > 0) await sleep(5)
}

const DUE_DILIGENCE = [
  { intent: { 'expected-activities': ['cryptocurrency_investing'] } },
  { 'financial-information': { 'source-of-funds': 'salary', 'annual-income-range': '40000-60000-GBP', 'expected-annual-deposits-range': '0-5000-GBP' } },
  { employment: { status: 'employed' } },
]

/** One API call that must answer `status` with JSON; `body`, when given, is sent as JSON. */
export type ApiCall = (method: string, url: string, headers: Record<string, string>, status: number, body?: unknown) => Promise<Record<string, unknown>>

/**
 * A verified user made through the API (as test/money.ts `verifiedUser`: a French resident with identity, proof of
 * address and due diligence), who may trade and withdraw to a bank. Resolves with its id, headers that act for it
 * (`acting`; `headers` with a JSON body too) and `call`, to go on with.
 */
export async function verifiedUser(baseUrl: string, token: string, email: string): Promise<{ userId: string; acting: Record<string, string>; headers: Record<string, string>; call: ApiCall }> {
  const call: ApiCall = async (method, url, headers, status, body) =>
    expectJson(await fetch(`${baseUrl}${url}`, { method, headers, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) }), status, `${method} ${url.split('?')[0]}`)
  const bearer = { authorization: `Bearer ${token}` }
  const user = await call('POST', '/core/users', { ...bearer, 'content-type': 'application/json', 'x-service-user-ip': '203.0.113.7' }, 201, {
    type: 'individual',
    email,
    termsOfService: 'general-lt-fcs',
    primaryCitizenship: 'FR',
    address: { country: 'FR' },
  })
  const userId = (user.user as { id: string }).id
  const acting = { ...bearer, 'x-on-behalf-of': `user ${userId}` }
  const headers = { ...acting, 'content-type': 'application/json' }
  await call('PATCH', '/core/kyc/processes/identity', headers, 200, {
    type: 'electronic-verification',
    input: { data: { givenName: 'John', familyName: 'Doe', birthdate: '1987-01-01', citizenshipCountry: 'FR' } },
  })
  await call('PATCH', '/core/kyc/processes/proof-of-address', headers, 200, {
    type: 'electronic-verification',
    input: { data: { givenName: 'John', familyName: 'Doe', address: { country: 'FR', city: 'Paris', line1: '1 rue de Rivoli', postalCode: '75001' } } },
  })
  for (const answers of DUE_DILIGENCE) await call('PATCH', '/core/kyc/processes/customer-due-diligence', headers, 200, { input: { answers } })
  return { userId, acting, headers, call }
}

/** What one connection of a request sequence carries from the quote to the commit. */
interface QuoteContext {
  headers?: Record<string, string>
  quoteId?: string | null
}

// bench/autocannon.d.ts leaves out what a request sequence with a dependency needs: autocannon hands each request's
// response to its `onResponse` together with the connection's context, and that context to the next `setupRequest`.
type SequenceRequest = Omit<RequestParams, 'setupRequest'> & {
  setupRequest?: (request: RequestParams, context?: QuoteContext) => RequestParams
  onResponse?: (status: number, body: string, context: QuoteContext) => void
}

/** How many movements a run carried out, in how long. */
export interface Measured {
  count: number
  seconds: number
  perSecond: number
}

/**
 * Sends `count` quotes and commits of transactions of `type` (`trade`, `withdrawal`, `deposit`) over `connections`
 * connections: each sends a quote (`quote(target)`: its headers and body, for the targets in turn), then the commit
 * of the quote it got back (with `params`, when given), and again. Timed from the first request until every response
 * is in and no transaction is processing (the worker carries them out meanwhile); fails unless every request
 * answered 201 and every transaction of `type` completed. `label` names them in failures (`${type}s` by default).
 */
export async function quoteAndCommit<T>(
  baseUrl: string,
  pool: pg.Pool,
  options: {
    connections: number
    count: number
    type: string
    label?: string
    targets: readonly T[]
    quote: (target: T) => { headers: Record<string, string>; body: string }
    params?: unknown
  },
): Promise<Measured & { latencyMs: { p50: number; p99: number } }> {
  const { connections, count, type, targets, params } = options
  const label = options.label ?? `${type}s`
  let next = 0
  let answered = 0
  // The end is when the last answer is in and no transaction is processing, not when autocannon returns (on its
  // next one-second tick).
  let allAnswered!: () => void
  const lastAnswer = new Promise<void>((resolve) => (allAnswered = resolve))
  const completed = lastAnswer.then(async () => {
    await untilNoneProcessing(pool)
    return performance.now()
  })
  const requests: SequenceRequest[] = [
    {
      method: 'POST',
      path: '/core/transactions/quote',
      setupRequest: (request, context) => {
        const { headers, body } = options.quote(targets[next++ % targets.length]!)
        context!.headers = headers
        return { ...request, headers, body }
      },
      onResponse: (status, body, context) => {
        context.quoteId = status === 201 ? (JSON.parse(body) as { quote: { id: string } }).quote.id : null
      },
    },
    {
      method: 'POST',
      path: '/core/transactions',
      setupRequest: (request, context) => ({
        ...request,
        headers: context!.headers!,
        body: JSON.stringify(params === undefined ? { quoteId: context!.quoteId } : { quoteId: context!.quoteId, params }),
      }),
    },
  ]
  const started = performance.now()
  const result = await load({ url: baseUrl, connections, amount: 2 * count, requests }, () => {
    if (++answered === 2 * count) allAnswered()
  })
  const created = result.statusCodeStats['201']?.count ?? 0
  if (created !== 2 * count || result.errors > 0 || result.timeouts > 0) {
    throw new Error(`${label} were refused: ${created} of ${2 * count} requests answered 201; status codes ${JSON.stringify(result.statusCodeStats)}, ${result.errors} errors`)
  }
  const seconds = ((await completed) - started) / 1000
  const { rows } = await pool.query<{ n: string }>(`select count(*) as n from transactions where type = '${type}' and status <> 'completed'`)
  if (Number(rows[0]!.n) > 0) throw new Error(`${rows[0]!.n} ${label} did not complete (see the transactions and flows tables)`)
  return { count, seconds, perSecond: count / seconds, latencyMs: { p50: result.latency.p50, p99: result.latency.p99 } }
}

// ---------------------------------------------------------------------------------------------------------------
// Raw SQL baselines

/**
 * `clients` connections of `pool`, each taking the next of `count` movements and doing `request(client, n)` on it
 * (one at a time, like an API client), then `issued()`; a connection stops at its first failure, which `failed`
 * hears, and all of them once `stopped()`.
 */
export function requestClients(
  pool: pg.Pool,
  clients: number,
  count: number,
  request: (client: pg.PoolClient, n: number) => Promise<void>,
  hooks: { issued: () => void; failed: (error: unknown) => void; stopped: () => boolean },
): Promise<void>[] {
  let next = 0
  return Array.from({ length: clients }, async () => {
    const client = await pool.connect()
    try {
      for (let n = next++; n < count && !hooks.stopped(); n = next++) {
        await request(client, n)
        hooks.issued()
      }
    } catch (error) {
      hooks.failed(error)
    } finally {
      client.release()
    }
  })
}

/**
 * A raw SQL baseline of `count` movements through `pg` on `pool`: `clients` connections issue the requests' work
 * (`request(client, n)` for the n-th movement, one at a time, like the API clients; a movement's job is due once it
 * returns), and a worker loop like Tessera's (src/jobs/worker.ts: woken by each movement made due, or its poll
 * interval) the worker's, with up to `concurrency` runs (`run(client, workerId, jobs)`) in flight, each on a
 * connection of its own. It claims jobs of `jobType` with the worker's claim statement, in the batches Tessera's
 * worker formed in the same run (`batches`, in turn): a run starts once as many jobs are due as its batch holds (or
 * what is left), so that the baseline makes as many database transactions per movement as Tessera did. Left to
 * itself, its batches would follow its own pace: larger than Tessera's where its runs queue behind each other,
 * single movements where the requests trickle in. Timed until every movement's run is done.
 */
export async function batchedBaseline(
  pool: pg.Pool,
  settings: { clients: number; concurrency: number; pollIntervalMs: number },
  options: {
    count: number
    jobType: string
    batches: readonly number[]
    request: (client: pg.PoolClient, n: number) => Promise<void>
    run: (client: pg.PoolClient, workerId: string, jobs: readonly RawJob[]) => Promise<void>
  },
): Promise<Measured> {
  const { count, batches } = options
  let done = 0
  let failed: unknown = null
  // Movements made due by their requests, and claimed by the worker: the difference is what is due.
  let due = 0
  let claimedTotal = 0
  // A movement made due wakes the worker loop; one that comes while the loop is awake keeps it from sleeping next time.
  let wake: (() => void) | null = null
  let poked = false
  const poke = () => {
    if (wake) wake()
    else poked = true
  }
  const started = performance.now()
  const requests = requestClients(pool, settings.clients, count, options.request, {
    issued: () => {
      due++
      poke()
    },
    failed: (error) => {
      failed ??= error
      poke()
    },
    stopped: () => failed !== null,
  })
  const worker = (async () => {
    const workerId = 'raw-sql-worker'
    const claimer = await pool.connect()
    const idle = await Promise.all(Array.from({ length: settings.concurrency }, () => pool.connect()))
    const running = new Set<Promise<void>>()
    let batch = 0
    try {
      while (done < count && failed === null) {
        let claimed = 0
        const wanted = Math.min(batches[batch % batches.length] ?? 1, count - claimedTotal)
        if (idle.length > 0 && wanted > 0 && due - claimedTotal >= wanted) {
          const jobs = await claimJobs(claimer, workerId, options.jobType, wanted)
          claimed = jobs.length
          claimedTotal += claimed
          batch++
          if (claimed > 0) {
            const client = idle.pop()!
            const run = options.run(client, workerId, jobs).then(
              () => {
                done += jobs.length
              },
              (error: unknown) => {
                failed ??= error
              },
            ).finally(() => {
              running.delete(run)
              idle.push(client)
              if (done >= count || failed !== null) poke()
            })
            running.add(run)
          }
        }
        if (done >= count || failed !== null) break
        const full = idle.length === 0
        if (claimed > 0 && !full) continue
        if (poked && !full) {
          poked = false
          continue
        }
        poked = false
        await new Promise<void>((resolve) => {
          const resume = () => {
            clearTimeout(timer)
            wake = null
            resolve()
          }
          const timer = setTimeout(resume, settings.pollIntervalMs)
          if (full) void Promise.race(running).then(resume, resume)
          wake = resume
        })
      }
      await Promise.allSettled(running)
    } finally {
      claimer.release()
      for (const client of idle) client.release()
    }
  })()
  await Promise.all([...requests, worker])
  if (failed !== null) throw failed
  const seconds = (performance.now() - started) / 1000
  return { count, seconds, perSecond: count / seconds }
}

// ---------------------------------------------------------------------------------------------------------------
// Rows and worker transactions of a phase

export type RowCounts<Table extends string> = Record<Table, number>

/**
 * The rows of each of `tables`, and the balance-changed events apart: there is one per account and ledger write, so
 * their number follows how the worker's batches happened to form, in either path; every other row is one per
 * movement (or per step). `outbox_events` counts the other events.
 */
async function rowCounts<Table extends string>(pool: pg.Pool, tables: readonly Table[]): Promise<{ rows: RowCounts<Table>; balanceEvents: number }> {
  const count = (table: string) => (table === 'outbox_events' ? `(select count(*) from outbox_events where type <> 'core.account.balance-changed')` : `(select count(*) from ${table})`)
  const { rows } = await pool.query<Record<string, string>>(
    `select ${tables.map((table) => `${count(table)} as ${table}`).join(', ')},
       (select count(*) from outbox_events where type = 'core.account.balance-changed') as balance_events`,
  )
  return { rows: Object.fromEntries(tables.map((table) => [table, Number(rows[0]![table])])) as RowCounts<Table>, balanceEvents: Number(rows[0]!.balance_events) }
}

/**
 * What a phase's figures count: the `tables` a movement writes rows to, and how to read the worker's database
 * transactions from the flows' history. A worker transaction stamps all its history rows with one time: each group of
 * `sharedSteps` counts one transaction per distinct time of its steps' rows; each row of `ownSteps` is a transaction of
 * its own. `batchStep`'s rows, grouped by time in order, are the batches the worker formed.
 */
export interface PhaseCount<Table extends string> {
  tables: readonly Table[]
  sharedSteps: readonly (readonly string[])[]
  ownSteps?: readonly string[]
  batchStep?: string
}

export interface Counted<T, Table extends string, Cpu> {
  outcome: T
  added: RowCounts<Table>
  balanceEvents: number
  workerTransactions: number
  /** The flows of each batch the worker ran, in order (empty without a `batchStep`). */
  batches: number[]
  /** CPU time spent meanwhile (null without a meter). */
  cpu: Cpu
}

/**
 * Runs `phase` and resolves with its outcome, the rows it added to each table, how many database transactions the
 * worker's steps took, the batches the worker formed and (with `meter`) the CPU time spent meanwhile.
 */
export async function counting<T, Table extends string, M extends CpuMeter | null>(
  pool: pg.Pool,
  count: PhaseCount<Table>,
  meter: M,
  phase: () => Promise<T>,
): Promise<Counted<T, Table, M extends CpuMeter ? CpuSpent : null>> {
  const before = await rowCounts(pool, count.tables)
  const since = new Date()
  const measure = meter?.start()
  const outcome = await phase()
  const cpu = (measure?.stop() ?? null) as M extends CpuMeter ? CpuSpent : null
  const after = await rowCounts(pool, count.tables)
  const steps = [...count.sharedSteps, ...(count.ownSteps ?? []).map((step) => [step])]
  const terms = [
    ...count.sharedSteps.map((_, i) => `(select count(distinct at) from flow_steps where step = any($${i + 2}::text[]) and at >= $1)`),
    ...(count.ownSteps ?? []).map((_, i) => `(select count(*) from flow_steps where step = any($${count.sharedSteps.length + i + 2}::text[]) and at >= $1)`),
  ]
  const { rows } = await pool.query<{ n: string }>(`select ${terms.join(' + ')} as n`, [since, ...steps])
  const { rows: batches } = count.batchStep
    ? await pool.query<{ n: string }>('select count(*) as n from flow_steps where step = $2 and at >= $1 group by at order by at', [since, count.batchStep])
    : { rows: [] }
  return {
    outcome,
    added: Object.fromEntries(count.tables.map((table) => [table, after.rows[table] - before.rows[table]])) as RowCounts<Table>,
    balanceEvents: after.balanceEvents - before.balanceEvents,
    workerTransactions: Number(rows[0]!.n),
    batches: batches.map((row) => Number(row.n)),
    cpu,
  }
}

/**
 * Fails unless both paths added the same rows to every table (the ratio's whole premise: the baseline does the same
 * work), after printing `comparisons` (the tables side by side), when given.
 */
export function assertSameRows<Table extends string>(where: string, tables: readonly Table[], raw: RowCounts<Table>, api: RowCounts<Table>, comparisons?: readonly string[]): void {
  const differing = tables.filter((table) => raw[table] !== api[table])
  if (differing.length === 0) return
  if (comparisons) process.stdout.write(`\n${comparisons.join('\n')}`)
  throw new Error(`${where}: the baseline wrote other rows than Tessera: ${differing.map((table) => `${table} ${raw[table]} against ${api[table]}`).join(', ')}`)
}

/** Whether both paths added the same rows to every table. */
export function sameRows<Table extends string>(tables: readonly Table[], raw: RowCounts<Table>, api: RowCounts<Table>): boolean {
  return tables.every((table) => raw[table] === api[table])
}

/** Samples other processes' CPU in the second before a scenario, and warns when they were busy. */
export async function scenarioLoad(scenario: string): Promise<number> {
  const load = await backgroundCpuLoad()
  warnIfBusy(load, `before the "${scenario}" scenario`)
  return load
}

/**
 * One measurement of both paths of a scenario (and `round` of it, when it has rounds), each counted: Tessera first
 * (`api()`), then the baseline (`rawSql(batches)`), which takes the batches Tessera's worker formed; logs each, and
 * warns for a path whose phase other processes kept busy.
 */
export async function apiThenBaseline<A, R, Table extends string>(
  pool: pg.Pool,
  count: PhaseCount<Table>,
  meter: CpuMeter,
  where: { scenario: string; round?: { n: number; of: number }; count: number; noun: string },
  api: () => Promise<A>,
  rawSql: (batches: readonly number[]) => Promise<R>,
): Promise<{ api: Counted<A, Table, CpuSpent>; raw: Counted<R, Table, CpuSpent> }> {
  const label = where.round ? `${where.scenario}, round ${where.round.n}/${where.round.of}` : where.scenario
  log(`${label}: through the API and the worker`)
  const apiCounted = await counting(pool, count, meter, api)
  const { batches } = apiCounted
  log(`${label}: raw SQL baseline, in Tessera's ${batches.length} batches (${(where.count / batches.length).toFixed(1)} ${where.noun} each on average)`)
  const rawCounted = await counting(pool, count, meter, () => rawSql(batches))
  warnIfBusyPaths(rawCounted.cpu, apiCounted.cpu, where.scenario, where.round ? `, round ${where.round.n}` : '')
  return { api: apiCounted, raw: rawCounted }
}

// ---------------------------------------------------------------------------------------------------------------
// Report

/** The report's first line: the runner's title, when it started, and the machine. */
export function reportHeading(title: string, startedAt: Date, postgresVersion: string): string {
  return `${title} — ${startedAt.toISOString()} — node ${process.version}, PostgreSQL ${postgresVersion}, ${os.cpus().length} CPUs`
}

export const percent = (load: number) => `${(load * 100).toFixed(0)}%`

/** Other processes' share of the CPUs over a phase ('n/a' when PostgreSQL is elsewhere). */
export const othersShare = (cpu: CpuSpent) => (cpu.others === null ? 'n/a' : percent(cpu.others / cpu.available))

/** Warns for each path of a scenario (`round`: which round of it, as a suffix) whose phase had other processes keep more than a tenth of the CPUs busy. */
export function warnIfBusyPaths(raw: CpuSpent, api: CpuSpent, scenario: string, round = ''): void {
  warnIfBusy((raw.others ?? 0) / raw.available, `during the "${scenario}" raw SQL baseline${round}`)
  warnIfBusy((api.others ?? 0) / api.available, `during the "${scenario}" API run${round}`)
}

/** The rows each path added to each table, side by side, with the rows per movement; then a blank line. */
export function rowsComparison<Table extends string>(
  title: string,
  tables: readonly Table[],
  raw: { added: RowCounts<Table>; balanceEvents: number },
  api: { added: RowCounts<Table>; balanceEvents: number },
  count: number,
): string[] {
  return [
    title,
    `  ${'table'.padEnd(22)}${'raw SQL'.padStart(9)}${'Tessera'.padStart(9)}${'each'.padStart(7)}`,
    ...tables.map((table) =>
      `  ${table.padEnd(22)}${String(raw.added[table]).padStart(9)}${String(api.added[table]).padStart(9)}${(api.added[table] / count).toFixed(2).padStart(7)}${raw.added[table] === api.added[table] ? '' : '  DIFFERENT'}`),
    `  ${'(balance events)'.padEnd(22)}${String(raw.balanceEvents).padStart(9)}${String(api.balanceEvents).padStart(9)}${(api.balanceEvents / count).toFixed(2).padStart(7)}  not compared: one per account and ledger write`,
    '',
  ]
}

/** CPU milliseconds of one path, by whom (null: not measured, PostgreSQL elsewhere). */
type CpuMs = Record<'runner' | 'tessera' | 'postgres', number | null>

/** The CPU time per movement of each scenario's paths (`title` first), in ms: the runner, Tessera, PostgreSQL. */
export function cpuTable(title: string, rows: readonly { scenario: string; rawSql: CpuMs; tessera: CpuMs }[], count: number): string[] {
  const each = (ms: number | null) => (ms === null ? '  n/a' : (ms / count).toFixed(2).padStart(5))
  return [
    title,
    `  ${''.padEnd(26)}${'runner'.padStart(8)}${'Tessera'.padStart(9)}${'PostgreSQL'.padStart(12)}`,
    ...rows.flatMap((row) => [
      `  ${`${row.scenario}, raw SQL`.padEnd(26)}${each(row.rawSql.runner).padStart(8)}${'-'.padStart(9)}${each(row.rawSql.postgres).padStart(12)}`,
      `  ${`${row.scenario}, API`.padEnd(26)}${each(row.tessera.runner).padStart(8)}${each(row.tessera.tessera).padStart(9)}${each(row.tessera.postgres).padStart(12)}`,
    ]),
  ]
}

/**
 * The end of a runner that moves money: prints the report's `lines` and writes the results (`settings`, with
 * BENCH_DATABASE_URL hidden, then `figures`) to bench/results/<name>-<start time>.json. Returns the exit code: with
 * `settings.enforceTarget` (BENCH_ENFORCE_TARGET=1), 1 when one of `scenarios` has a ratio below
 * `figures.targetRatio`, after saying which; otherwise 0.
 */
export function finishRun(
  run: RunStart,
  name: string,
  lines: readonly string[],
  settings: { databaseUrl: string | null; enforceTarget?: boolean } & Record<string, unknown>,
  figures: { targetRatio: number } & Record<string, unknown>,
  scenarios: readonly { scenario: string; ratio: number }[],
): number {
  process.stdout.write(lines.join('\n'))
  writeResults(
    name,
    run.startedAt,
    { postgres: run.postgresVersion, backgroundCpuLoad: run.backgroundLoad },
    { settings: { ...settings, databaseUrl: settings.databaseUrl ? '(given)' : null }, ...figures },
    run.profileDir,
  )
  const missed = scenarios.filter((row) => row.ratio < figures.targetRatio)
  if (!settings.enforceTarget || missed.length === 0) return 0
  process.stderr.write(`\n${missed.map((row) => `${row.scenario} ${row.ratio.toFixed(3)}`).join(', ')}: below the target of ${figures.targetRatio} (BENCH_ENFORCE_TARGET=1)\n`)
  return 1
}

/** Runs `tessera ledger check` on the database after a run; fails unless every invariant holds. */
export async function ledgerCheck(url: string): Promise<void> {
  const check = await runCommand(process.execPath, ['src/main.ts', 'ledger', 'check'], { ...process.env, DATABASE_URL: url, LOG_LEVEL: 'warn' })
  if (check.code !== 0) throw new Error(`tessera ledger check failed after the run (exit ${check.code}):\n${check.stderr}${check.stdout}`)
}

/**
 * Writes a runner's report to bench/results/<name>-<start time>.json (its start, the environment, then `figures`)
 * and prints where it went (and where Tessera's CPU profile went, if it took one).
 */
export function writeResults(
  name: string,
  startedAt: Date,
  environment: { postgres: string; backgroundCpuLoad: number },
  figures: Record<string, unknown>,
  profileDir: string | null,
): void {
  const report = {
    startedAt: startedAt.toISOString(),
    environment: { node: process.version, cpus: os.cpus().length, postgres: environment.postgres, backgroundCpuLoad: environment.backgroundCpuLoad },
    ...figures,
  }
  fs.mkdirSync(RESULTS_DIR, { recursive: true })
  const file = path.join(RESULTS_DIR, `${name}-${startedAt.toISOString().replace(/[:.]/g, '-')}.json`)
  fs.writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`)
  process.stdout.write(`Results: ${path.relative(ROOT, file)}\n`)
  if (profileDir) process.stdout.write(`CPU profile of Tessera: ${path.relative(ROOT, profileDir)}/\n`)
}
