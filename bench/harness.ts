// What the benchmark runners share: cleanup on every exit path, child processes, a throwaway PostgreSQL cluster,
// Tessera started as a real server on it, and the fixtures and API runs of the runners that move money. See
// bench/README.md.
import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes, randomUUID } from 'node:crypto'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import autocannon, { type Instance, type Options, type RequestParams, type Result } from 'autocannon'
import pg from 'pg'

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
  options: { env?: NodeJS.ProcessEnv; profileDir?: string | null } = {},
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
  const nodeArgs = options.profileDir ? ['--cpu-prof', `--cpu-prof-dir=${options.profileDir}`] : []
  const child = startChild('tessera', [...nodeArgs, 'src/main.ts', 'serve'], env)
  const baseUrl = `http://127.0.0.1:${port}`
  await waitUntil('GET /health/ready = 200', child, 60_000, async () => (await fetch(`${baseUrl}/health/ready`)).status === 200)
  return { child, baseUrl }
}

/** A client's access token (client credentials). */
export async function accessToken(baseUrl: string, credentials: ClientCredentials): Promise<string> {
  const response = await fetch(`${baseUrl}/core/oauth2/token`, {
    method: 'POST',
    headers: { authorization: credentials.basicAuth, 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=client_credentials',
  })
  return String((await expectJson(response, 200, 'POST /core/oauth2/token')).access_token)
}

// ---------------------------------------------------------------------------------------------------------------
// Fixtures and runs shared by the runners that move money (bench/trades.ts, bench/withdrawals.ts)

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

/**
 * Sends `count` quotes and commits of transactions of `type` (`trade`, `withdrawal`) over `connections`
 * connections: each sends a quote (`next()`: the headers and body of the next one), then the commit of the quote it
 * got back, and again. Timed from the first request until every response is in and no transaction is processing
 * (the worker carries them out meanwhile); fails unless every request answered 201 and every transaction of `type`
 * completed.
 */
export async function quoteAndCommit(
  baseUrl: string,
  pool: pg.Pool,
  options: { connections: number; count: number; type: string; next: () => { headers: Record<string, string>; body: string } },
): Promise<{ seconds: number; latencyMs: { p50: number; p99: number } }> {
  const { connections, count, type } = options
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
        const { headers, body } = options.next()
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
      setupRequest: (request, context) => ({ ...request, headers: context!.headers!, body: JSON.stringify({ quoteId: context!.quoteId }) }),
    },
  ]
  const started = performance.now()
  const result = await load({ url: baseUrl, connections, amount: 2 * count, requests }, () => {
    if (++answered === 2 * count) allAnswered()
  })
  const created = result.statusCodeStats['201']?.count ?? 0
  if (created !== 2 * count || result.errors > 0 || result.timeouts > 0) {
    throw new Error(`${type}s were refused: ${created} of ${2 * count} requests answered 201; status codes ${JSON.stringify(result.statusCodeStats)}, ${result.errors} errors`)
  }
  const seconds = ((await completed) - started) / 1000
  const { rows } = await pool.query<{ n: string }>(`select count(*) as n from transactions where type = '${type}' and status <> 'completed'`)
  if (Number(rows[0]!.n) > 0) throw new Error(`${rows[0]!.n} ${type}s did not complete (see the transactions and flows tables)`)
  return { seconds, latencyMs: { p50: result.latency.p50, p99: result.latency.p99 } }
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
