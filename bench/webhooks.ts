// Webhook delivery benchmark: signed deliveries per second from one Tessera worker process (`serve --role worker` on
// PostgreSQL) to a local receiver, as a ratio to a bare loop of HTTP POSTs of the same bodies to the same receiver at
// the same concurrency, in the same run. See bench/README.md ("Webhook delivery").
//
// One file, three processes: `node bench/webhooks.ts` is the runner; it starts this file again as the receiver
// (`receiver`) and, for each baseline run, as the bare loop (`baseline`), so that none of the three shares a process
// with another or with Tessera.
import { randomBytes, randomUUID } from 'node:crypto'
import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { Pool } from 'undici'
import { Webhook } from 'standardwebhooks'
import {
  accessToken,
  backgroundCpuLoad,
  type Child,
  databaseVersion,
  expectJson,
  freePort,
  log,
  makeTempDir,
  newClientCredentials,
  onCleanup,
  percent,
  reportHeading,
  RESULTS_DIR,
  runMain,
  scratchDatabase,
  setLogPrefix,
  startChild,
  startCluster,
  stopChild,
  waitUntil,
  warnIfBusy,
  writeResults,
  type ClientCredentials,
} from './harness.ts'
import { cpuMeter, type CpuSpent } from './cpu.ts'
import { positiveInteger } from './settings.ts'
import { uuidv7 } from '../src/lib/ids.ts'
import { eventEnvelope } from '../src/modules/webhooks/catalogue.ts'
import examples from '../src/modules/webhooks/event-examples.json' with { type: 'json' }

/** The issue's target: Tessera's deliveries per second at least this share of the bare loop's requests per second. */
const TARGET_RATIO = 0.5
const EVENT_TYPE = 'core.account.balance-changed'
const SELF = import.meta.filename

// ---------------------------------------------------------------------------------------------------------------
// The receiver (its own process): answers 200 `ok` to every POST under /hooks/ once it has read the body, and keeps,
// per path, the count, the bytes, duplicates and messages out of order (by `webhook-id`, which grows with the event
// id), and a sample of what it got for the runner to check signatures on. `POST /_control/reset` starts a phase
// (`{label, expected}`); when the phase has all it expected the receiver prints `complete <label>` on stdout;
// `GET /_control/stats` answers the phase's figures.

interface PathStats {
  count: number
  bytes: number
  lastId: string
  duplicates: number
  outOfOrder: number
  samples: { headers: Record<string, string>; body: string }[]
}

interface ReceiverStats {
  label: string
  expected: number
  received: number
  /** ms from the arrival of the phase's first request to the end of the body of its last. */
  intervalMs: number
  /** Requests that were not a POST under /hooks/ (none expected). */
  stray: number
  paths: Record<string, PathStats>
}

function receiver(): void {
  const sampleEvery = positiveInteger('BENCH_RECEIVER_SAMPLE_EVERY', 500)
  let stats: ReceiverStats = { label: '', expected: 0, received: 0, intervalMs: 0, stray: 0, paths: {} }
  let firstAt = 0
  const server = http.createServer((request, response) => {
    const arrived = performance.now()
    const url = request.url ?? ''
    if (url.startsWith('/_control/')) return control(request, response)
    const chunks: Buffer[] = []
    let bytes = 0
    request.on('data', (chunk: Buffer) => {
      chunks.push(chunk)
      bytes += chunk.length
    })
    request.on('end', () => {
      if (request.method !== 'POST' || !url.startsWith('/hooks/')) {
        stats.stray++
        response.writeHead(404, { 'content-type': 'text/plain', 'content-length': '9' }).end('not found')
        return
      }
      if (stats.received === 0) firstAt = arrived
      stats.received++
      const id = String(request.headers['webhook-id'] ?? '')
      const entry = (stats.paths[url] ??= { count: 0, bytes: 0, lastId: '', duplicates: 0, outOfOrder: 0, samples: [] })
      entry.count++
      entry.bytes += bytes
      if (id === entry.lastId) entry.duplicates++
      else if (id < entry.lastId) entry.outOfOrder++
      else entry.lastId = id
      if ((entry.count - 1) % sampleEvery === 0 || stats.received === stats.expected) {
        entry.samples.push({
          headers: { 'webhook-id': id, 'webhook-timestamp': String(request.headers['webhook-timestamp'] ?? ''), 'webhook-signature': String(request.headers['webhook-signature'] ?? '') },
          body: Buffer.concat(chunks).toString('utf8'),
        })
      }
      response.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' }).end('ok')
      if (stats.received === stats.expected) {
        stats.intervalMs = performance.now() - firstAt
        process.stdout.write(`complete ${stats.label}\n`)
      }
    })
  })
  const control = (request: http.IncomingMessage, response: http.ServerResponse) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      if (request.url === '/_control/reset' && request.method === 'POST') {
        const { label, expected } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { label: string; expected: number }
        stats = { label, expected, received: 0, intervalMs: 0, stray: 0, paths: {} }
        firstAt = 0
      }
      const body = JSON.stringify(stats)
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) }).end(body)
    })
  }
  server.keepAliveTimeout = 120_000
  server.listen(Number(process.env.BENCH_RECEIVER_PORT), '127.0.0.1', () => process.stdout.write('listening\n'))
  process.on('SIGTERM', () => server.close(() => process.exit(0)))
}

// ---------------------------------------------------------------------------------------------------------------
// The bare loop (its own process): one loop per path, each POSTing its messages in order, one at a time, with a
// keep-alive agent as Tessera's sender has, the same bodies and headers of the same lengths (the signature is not
// computed: the loop does nothing Tessera's delivery does besides sending). Prints its figures as one JSON line.

/**
 * The bare loop's HTTP client: `undici`, the one Tessera sends with (the target's baseline: the ratio then measures
 * what Tessera adds to the same POSTs), or Node's `http` module (shown beside it).
 */
type BareClient = 'undici' | 'http'

interface BaselinePlan {
  client: BareClient
  port: number
  paths: string[]
  /** The messages every path receives, in order: the `webhook-id` and the body. */
  messages: { id: string; body: string }[]
}

async function baseline(): Promise<void> {
  const plan = JSON.parse(fs.readFileSync(process.argv[3]!, 'utf8')) as BaselinePlan
  const agent = new http.Agent({ keepAlive: true, maxSockets: 50 })
  // The same pool settings as WebhookSender's: keep-alive HTTP/1.1, up to 50 connections, no pipelining.
  const pool = new Pool(`http://127.0.0.1:${plan.port}`, { connections: 50, pipelining: 1, allowH2: false })
  // 'v1,' and the base64 of 32 bytes: the length of a signature with one secret.
  const signature = `v1,${randomBytes(32).toString('base64')}`
  const headersOf = (id: string, body: string) => ({
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
    'webhook-signature': signature,
    'content-type': 'application/json',
    'user-agent': 'Tessera-Webhooks/1',
    'content-length': String(Buffer.byteLength(body)),
  })
  const viaHttp = (requestPath: string, id: string, body: string) =>
    new Promise<void>((resolve, reject) => {
      const outgoing = http.request({ method: 'POST', hostname: '127.0.0.1', port: plan.port, path: requestPath, agent, headers: headersOf(id, body) })
      outgoing.on('error', reject)
      outgoing.on('response', (answer) => {
        answer.on('data', () => {})
        answer.on('error', reject)
        answer.on('end', () => (answer.statusCode === 200 ? resolve() : reject(new Error(`answered ${answer.statusCode}`))))
      })
      outgoing.end(body)
    })
  const viaUndici = async (requestPath: string, id: string, body: string) => {
    const answer = await pool.request({ method: 'POST', path: requestPath, headers: headersOf(id, body), body })
    await answer.body.dump()
    if (answer.statusCode !== 200) throw new Error(`answered ${answer.statusCode}`)
  }
  const post = plan.client === 'undici' ? viaUndici : viaHttp
  const latencies: number[] = []
  // Started (modules loaded, plan read), it waits for the runner's signal: its start-up is outside the measured run.
  await new Promise<void>((resolve) => {
    // A signal handler does not keep the process alive: a timer does, meanwhile.
    const alive = setInterval(() => {}, 60_000)
    process.once('SIGUSR2', () => {
      clearInterval(alive)
      resolve()
    })
    process.stdout.write('ready\n')
  })
  const cpuBefore = process.cpuUsage()
  const started = performance.now()
  await Promise.all(
    plan.paths.map(async (requestPath) => {
      for (const { id, body } of plan.messages) {
        const at = performance.now()
        await post(requestPath, id, body)
        latencies.push(performance.now() - at)
      }
    }),
  )
  const seconds = (performance.now() - started) / 1000
  const cpu = process.cpuUsage(cpuBefore)
  latencies.sort((a, b) => a - b)
  agent.destroy()
  process.stdout.write(`${JSON.stringify({ requests: latencies.length, seconds, p50: latencies[Math.floor(latencies.length / 2)], p99: latencies[Math.floor(latencies.length * 0.99)], cpuMs: (cpu.user + cpu.system) / 1000 })}\n`)
}

// ---------------------------------------------------------------------------------------------------------------
// The runner

const settings = {
  /** C: endpoints, and the bare loop's concurrent loops; the worker runs C + 1 jobs at a time (one for the dispatcher). */
  endpoints: positiveInteger('BENCH_WEBHOOK_ENDPOINTS', 8),
  /** Events of each measured round: every endpoint receives each of them. */
  events: positiveInteger('BENCH_WEBHOOK_EVENTS', 5000),
  /** Events of the warm-up round (not measured, checked like the others). */
  warmup: positiveInteger('BENCH_WEBHOOK_WARMUP', 500),
  rounds: positiveInteger('BENCH_WEBHOOK_ROUNDS', 3),
  databaseUrl: process.env.BENCH_DATABASE_URL?.trim() || null,
  cpuProfile: process.env.BENCH_CPU_PROF === '1',
}

/** One phase's CPU time, ms: the usual meter's figures and the receiver's and the bare loop's processes apart from the others. */
interface PhaseCpu {
  runner: number
  worker: number
  postgres: number | null
  receiver: number
  loop: number
  /** Everything else busy on the machine (null when PostgreSQL is elsewhere). */
  others: number | null
  available: number
}

interface BaselineRun {
  client: BareClient
  round: number
  requests: number
  /** By the receiver's clock: from the first request's arrival to the end of the last one's body. */
  seconds: number
  perSecond: number
  /** Of each request, as the loop saw it. */
  p50Ms: number
  p99Ms: number
  cpu: PhaseCpu
}

interface TesseraRun {
  round: number
  deliveries: number
  /** By the receiver's clock, as for the baseline. */
  seconds: number
  perSecond: number
  /** From the commit of the events to the last message recorded delivered (dispatch and recording included). */
  drainSeconds: number
  /** Of each attempt as Tessera recorded it (whole milliseconds). */
  p50Ms: number
  p99Ms: number
  cpu: PhaseCpu
  signaturesChecked: number
}

/** CPU time of a process (user + system, its waited-for children too), ms; 0 once it is gone. */
function processCpuMs(pid: number): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return ((Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) * 1000) / 100
  } catch {
    return 0
  }
}

const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

/** The first line of a child's output that `match` accepts (waiting for it), failing if the child exits first. */
function lineWaiter(): { onLine: (line: string) => void; next: (child: Child, match: (line: string) => boolean, what: string, timeoutMs: number) => Promise<string> } {
  const lines: string[] = []
  let notify: (() => void) | null = null
  return {
    onLine(line) {
      lines.push(line)
      notify?.()
    },
    async next(child, match, what, timeoutMs) {
      const deadline = Date.now() + timeoutMs
      let exited: number | string | null = null
      void child.exited.then((outcome) => {
        exited = outcome
        notify?.()
      })
      for (;;) {
        const index = lines.findIndex(match)
        if (index >= 0) return lines.splice(0, index + 1).at(-1)!
        if (exited !== null) throw new Error(`${child.name} exited (${exited}) before ${what}:\n${child.tail()}`)
        const left = deadline - Date.now()
        if (left <= 0) throw new Error(`${child.name}: no ${what} within ${timeoutMs / 1000} s:\n${child.tail()}`)
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left)
          notify = () => {
            clearTimeout(timer)
            resolve()
          }
        })
        notify = null
      }
    },
  }
}

/** Starts `tessera serve --role <role>` on the database with the shared data directory and keys. */
function startTessera(role: 'api' | 'worker', env: NodeJS.ProcessEnv, onLine?: (line: string) => void, profileDir?: string | null): Child {
  const nodeArgs = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []
  return startChild(`tessera (${role})`, [...nodeArgs, 'src/main.ts', 'serve', '--role', role], env, onLine)
}

interface Endpoint {
  id: string
  path: string
  secret: string
}

/** The portal as a client opens it: a management link, its session, then C endpoints on the receiver and their secrets. */
async function createEndpoints(baseUrl: string, credentials: ClientCredentials, receiverPort: number): Promise<Endpoint[]> {
  const token = await accessToken(baseUrl, credentials)
  const link = await expectJson(await fetch(`${baseUrl}/core/webhooks/management-link`, { method: 'POST', headers: { authorization: `Bearer ${token}` } }), 200, 'POST /core/webhooks/management-link')
  const linkToken = new URLSearchParams(new URL((link.managementLink as { url: string }).url).hash.slice(1)).get('link')
  const session = await expectJson(
    await fetch(`${baseUrl}/hosted/webhooks/api/sessions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ link: linkToken }) }),
    201,
    'POST /hosted/webhooks/api/sessions',
  )
  const portal = { authorization: `Bearer ${(session.session as { token: string }).token}` }
  const endpoints: Endpoint[] = []
  for (let i = 0; i < settings.endpoints; i++) {
    const endpointPath = `/hooks/${i}`
    const created = await expectJson(
      await fetch(`${baseUrl}/hosted/webhooks/api/endpoints`, {
        method: 'POST',
        headers: { ...portal, 'content-type': 'application/json' },
        body: JSON.stringify({ url: `http://127.0.0.1:${receiverPort}${endpointPath}`, description: `bench ${i}`, eventTypes: [EVENT_TYPE] }),
      }),
      201,
      'POST /hosted/webhooks/api/endpoints',
    )
    const id = (created.endpoint as { id: string }).id
    const secret = await expectJson(await fetch(`${baseUrl}/hosted/webhooks/api/endpoints/${id}/secret`, { headers: portal }), 200, 'GET /hosted/webhooks/api/endpoints/{id}/secret')
    endpoints.push({ id, path: endpointPath, secret: String(secret.secret) })
  }
  return endpoints
}

interface BenchEvent {
  id: string
  webhookId: string
  subjectId: string
  userId: string
  /** The data as PostgreSQL gives it back (jsonb orders keys), and so the body Tessera sends. */
  data: string
  occurredAt: Date
  body: string
}

const EXAMPLE = (examples as unknown as Record<string, { account: Record<string, unknown> }>)[EVENT_TYPE]!.account
const ACCOUNTS = Array.from({ length: 200 }, (_, i) => ({
  id: randomUUID(),
  ownerId: randomUUID(),
  label: `Bench account ${i}`,
  asset: ['BTC', 'ETH', 'USD', 'EUR'][i % 4]!,
  createdAt: new Date(Date.UTC(2025, i % 12, 1 + (i % 28))).toISOString(),
}))

/**
 * `count` balance-changed events of the example's shape with varied accounts and balances, in id order (the ids are
 * UUIDv7s made now, after every earlier round's); their data goes through jsonb once, as Tessera will read it.
 */
async function makeEvents(pool: pg.Pool, count: number): Promise<BenchEvent[]> {
  const now = Date.now()
  const raw = Array.from({ length: count }, (_, i) => {
    const account = ACCOUNTS[Math.floor(Math.random() * ACCOUNTS.length)]!
    const occurredAt = new Date(now - count + i)
    const total = (Math.random() * 10).toFixed(8).replace(/\.?0+$/, '')
    const available = (Number(total) * Math.random()).toFixed(8).replace(/\.?0+$/, '')
    const data = { account: { ...EXAMPLE, id: account.id, ownerId: account.ownerId, label: account.label, asset: account.asset, balance: { total, available }, createdAt: account.createdAt, updatedAt: occurredAt.toISOString() } }
    return { id: uuidv7(), subjectId: account.id, userId: account.ownerId, data, occurredAt }
  })
  // jsonb's own text of each: the bytes Tessera sends (it writes `data` as stored), which the bare loop sends too.
  const { rows } = await pool.query<{ value: string }>('select value::text as value from jsonb_array_elements($1::jsonb) with ordinality order by ordinality', [JSON.stringify(raw.map((event) => event.data))])
  return raw.map((event, i) => {
    const dataJson = rows[i]!.value
    return {
      id: event.id,
      webhookId: `msg_${event.id.replace(/-/g, '')}`,
      subjectId: event.subjectId,
      userId: event.userId,
      data: dataJson,
      occurredAt: event.occurredAt,
      body: eventEnvelope({ id: event.id, type: EVENT_TYPE, occurredAt: event.occurredAt, dataJson }),
    }
  })
}

/** Records the events in the outbox in one statement (one transaction), as committed changes would have. */
async function insertEvents(pool: pg.Pool, organizationId: string, events: readonly BenchEvent[]): Promise<void> {
  await pool.query(
    `insert into outbox_events (id, organization_id, type, subject_type, subject_id, user_id, data, occurred_at, dispatched_at)
     select e.id, $1, $2, 'account', e.subject_id, e.user_id, e.data, e.occurred_at, null
     from unnest($3::uuid[], $4::text[], $5::uuid[], $6::jsonb[], $7::timestamptz[]) as e(id, subject_id, user_id, data, occurred_at)`,
    [organizationId, EVENT_TYPE, events.map((e) => e.id), events.map((e) => e.subjectId), events.map((e) => e.userId), events.map((e) => e.data), events.map((e) => e.occurredAt)],
  )
}

class Receiver {
  readonly child: Child
  readonly port: number
  private readonly waiter: ReturnType<typeof lineWaiter>

  private constructor(child: Child, port: number, waiter: ReturnType<typeof lineWaiter>) {
    this.child = child
    this.port = port
    this.waiter = waiter
  }

  static async start(): Promise<Receiver> {
    const port = await freePort()
    const waiter = lineWaiter()
    const child = startChild('receiver', [SELF, 'receiver'], { ...process.env, BENCH_RECEIVER_PORT: String(port) }, waiter.onLine)
    const receiver = new Receiver(child, port, waiter)
    await waiter.next(child, (line) => line === 'listening', 'listening', 30_000)
    return receiver
  }

  async reset(label: string, expected: number): Promise<void> {
    await expectJson(await fetch(`http://127.0.0.1:${this.port}/_control/reset`, { method: 'POST', body: JSON.stringify({ label, expected }) }), 200, 'receiver reset')
  }

  complete(label: string, timeoutMs: number): Promise<string> {
    return this.waiter.next(this.child, (line) => line === `complete ${label}`, `every request of "${label}"`, timeoutMs)
  }

  async stats(): Promise<ReceiverStats> {
    return (await expectJson(await fetch(`http://127.0.0.1:${this.port}/_control/stats`), 200, 'receiver stats')) as unknown as ReceiverStats
  }
}

/** What went wrong with what the receiver got in a phase: every path its count of messages, once each, in order, the same bytes. */
function receiverProblems(stats: ReceiverStats, endpoints: readonly Endpoint[], events: readonly BenchEvent[]): string[] {
  const problems: string[] = []
  const bytes = events.reduce((sum, event) => sum + Buffer.byteLength(event.body), 0)
  if (stats.stray > 0) problems.push(`${stats.stray} stray requests`)
  for (const endpoint of endpoints) {
    const got = stats.paths[endpoint.path]
    if (!got) {
      problems.push(`${endpoint.path}: nothing received`)
      continue
    }
    if (got.count !== events.length) problems.push(`${endpoint.path}: ${got.count} requests, expected ${events.length}`)
    if (got.duplicates > 0) problems.push(`${endpoint.path}: ${got.duplicates} duplicates`)
    if (got.outOfOrder > 0) problems.push(`${endpoint.path}: ${got.outOfOrder} out of order`)
    if (got.bytes !== bytes) problems.push(`${endpoint.path}: ${got.bytes} body bytes, expected ${bytes}`)
    if (got.lastId !== events.at(-1)!.webhookId) problems.push(`${endpoint.path}: last webhook-id ${got.lastId}, expected ${events.at(-1)!.webhookId}`)
  }
  return problems
}

async function main(): Promise<number> {
  setLogPrefix('bench:webhooks')
  const startedAt = new Date()
  const C = settings.endpoints
  log(`node ${process.version}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? 'unknown'})`)
  const backgroundLoad = await backgroundCpuLoad()
  warnIfBusy(backgroundLoad, 'before the run started')
  const url = await scratchDatabase(settings.databaseUrl ?? (await startCluster()), 'bench_webhooks')
  const postgresVersion = await databaseVersion(url)
  const pool = new pg.Pool({ connectionString: url, max: 2 })
  onCleanup('runner pool', () => pool.end())

  const receiver = await Receiver.start()
  const credentials = newClientCredentials()
  const apiPort = await freePort()
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: url,
    HOST: '127.0.0.1',
    PORT: String(apiPort),
    LOG_LEVEL: 'warn',
    TESSERA_ENV: 'sandbox',
    // Both processes open the endpoints' sealed secrets and the portal's tokens: the same keys.
    DATA_DIR: makeTempDir('tessera-bench-data-'),
    SEALING_KEY: randomBytes(32).toString('base64'),
    INITIAL_CLIENT_ID: credentials.clientId,
    INITIAL_CLIENT_SECRET: credentials.clientSecret,
    RATE_LIMIT_PER_MINUTE: '0',
    TOKEN_RATE_LIMIT_PER_MINUTE: '0',
    WEBHOOK_MAX_ENDPOINTS: String(Math.max(20, C)),
    WORKER_CONCURRENCY: String(C + 1),
  }

  // The endpoints, through the portal API of an API-only process, which then stops: the measured runs have the worker alone.
  log(`API process: ${C} endpoints on the receiver (port ${receiver.port}), each subscribed to ${EVENT_TYPE}`)
  const api = startTessera('api', env)
  const baseUrl = `http://127.0.0.1:${apiPort}`
  await waitUntil('GET /health/ready = 200', api, 60_000, async () => (await fetch(`${baseUrl}/health/ready`)).status === 200)
  const endpoints = await createEndpoints(baseUrl, credentials, receiver.port)
  await stopChild(api)
  const organizationId = (await pool.query<{ organization_id: string }>('select distinct organization_id from webhook_endpoints')).rows[0]!.organization_id

  const profileDir = settings.cpuProfile ? path.join(RESULTS_DIR, `webhooks-profile-${startedAt.toISOString().replace(/[:.]/g, '-')}`) : null
  const workerLines = lineWaiter()
  const worker = startTessera('worker', env, workerLines.onLine, profileDir)
  await workerLines.next(worker, (line) => line.includes('is running background jobs'), 'its start', 60_000)
  const workerPid = worker.process.pid!
  const meter = cpuMeter(workerPid, (await pool.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid)
  const planDir = makeTempDir('tessera-bench-webhooks-')

  // The usual meter (this runner, the worker, PostgreSQL, the rest), with the receiver's and the bare loop's time taken out of the rest.
  const measureCpu = () => {
    const receiverBefore = processCpuMs(receiver.child.process.pid!)
    const cpu = meter.start()
    return (loopMs = 0): PhaseCpu => {
      const spent: CpuSpent = cpu.stop()
      const receiverMs = processCpuMs(receiver.child.process.pid!) - receiverBefore
      return {
        runner: spent.runner,
        worker: spent.tessera,
        postgres: spent.postgres,
        receiver: receiverMs,
        loop: loopMs,
        others: spent.others === null ? null : Math.max(0, spent.others - receiverMs - loopMs),
        available: spent.available,
      }
    }
  }

  async function runBaseline(round: number, events: readonly BenchEvent[], client: BareClient): Promise<BaselineRun> {
    const label = `baseline ${client} ${round}`
    const planFile = path.join(planDir, `plan-${client}-${round}.json`)
    const plan: BaselinePlan = { client, port: receiver.port, paths: endpoints.map((e) => e.path), messages: events.map((e) => ({ id: e.webhookId, body: e.body })) }
    fs.writeFileSync(planFile, JSON.stringify(plan))
    await receiver.reset(label, events.length * C)
    const output = lineWaiter()
    const loop = startChild('bare loop', [SELF, 'baseline', planFile], process.env, output.onLine)
    await output.next(loop, (l) => l === 'ready', 'its start', 30_000)
    const stopCpu = measureCpu()
    loop.process.kill('SIGUSR2')
    const line = await output.next(loop, (l) => l.startsWith('{'), 'its figures', 120_000)
    const result = JSON.parse(line) as { requests: number; seconds: number; p50: number; p99: number; cpuMs: number }
    await receiver.complete(label, 10_000)
    await loop.exited
    const cpu = stopCpu(result.cpuMs)
    const stats = await receiver.stats()
    const problems = receiverProblems(stats, endpoints, events)
    if (problems.length > 0) throw new Error(`${label}: the receiver did not get what was sent:\n  ${problems.join('\n  ')}`)
    const seconds = stats.intervalMs / 1000
    return { client, round, requests: stats.received, seconds, perSecond: stats.received / seconds, p50Ms: result.p50, p99Ms: result.p99, cpu }
  }

  async function runTessera(round: number, events: readonly BenchEvent[]): Promise<TesseraRun> {
    const label = `tessera ${round}`
    const expected = events.length * C
    const first = events[0]!.id
    const last = events.at(-1)!.id
    await receiver.reset(label, expected)
    await insertEvents(pool, organizationId, events)
    const committed = performance.now()
    const stopCpu = measureCpu()
    await receiver.complete(label, 240_000)
    // The last batch is recorded after its answers: the drain ends when every message of the round is delivered.
    const delivered = async () => Number((await pool.query<{ n: string }>(
      "select count(*) as n from webhook_attempts where organization_id = $1 and event_id between $2 and $3 and succeeded",
      [organizationId, first, last],
    )).rows[0]!.n)
    const drainDeadline = Date.now() + 30_000
    while ((await delivered()) < expected) {
      if (Date.now() > drainDeadline) throw new Error(`${label}: the receiver got every message but not all were recorded delivered within 30 s`)
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    const drainSeconds = (performance.now() - committed) / 1000
    const cpu = stopCpu()
    const stats = await receiver.stats()
    const problems = receiverProblems(stats, endpoints, events)

    // The database: each message of the round delivered once, at its first attempt, and recorded as such.
    const messages = await pool.query<{ endpoint_id: string; status: string; n: string; attempts: string; events: string }>(
      // Each endpoint's delivered messages are its successful attempts: each event once, at the first attempt.
      `select endpoint_id, 'delivered' as status, count(*) as n, sum(attempt) as attempts, count(distinct event_id) as events
       from webhook_attempts where organization_id = $1 and event_id between $2 and $3 and succeeded group by endpoint_id`,
      [organizationId, first, last],
    )
    for (const endpoint of endpoints) {
      const rows = messages.rows.filter((row) => row.endpoint_id === endpoint.id)
      const ok = rows.length === 1 && rows[0]!.status === 'delivered' && Number(rows[0]!.n) === events.length && Number(rows[0]!.events) === events.length && Number(rows[0]!.attempts) === events.length
      if (!ok) problems.push(`endpoint ${endpoint.path}: messages ${JSON.stringify(rows.map(({ status, n, attempts, events: distinct }) => ({ status, n, attempts, events: distinct })))}, expected ${events.length} delivered at the first attempt`)
    }
    const attempts = (await pool.query<{ n: string; succeeded: string; ok: string; p50: number; p99: number }>(
      `select count(*) as n, count(*) filter (where succeeded) as succeeded, count(*) filter (where response_status = 200) as ok,
         percentile_disc(0.5) within group (order by duration_ms) as p50, percentile_disc(0.99) within group (order by duration_ms) as p99
       from webhook_attempts where organization_id = $1 and event_id between $2 and $3`,
      [organizationId, first, last],
    )).rows[0]!
    if (Number(attempts.n) !== expected || Number(attempts.succeeded) !== expected || Number(attempts.ok) !== expected) {
      problems.push(`attempts: ${attempts.n} recorded, ${attempts.succeeded} succeeded, ${attempts.ok} answered 200; expected ${expected} of each`)
    }
    const undispatched = Number((await pool.query<{ n: string }>('select count(*) as n from outbox_events where id between $1 and $2 and dispatched_at is null', [first, last])).rows[0]!.n)
    if (undispatched > 0) problems.push(`${undispatched} events not marked dispatched`)

    // Signatures, on the receiver's sample: each verifies with its endpoint's secret (standardwebhooks), and the body is the event's.
    const bodies = new Map(events.map((event) => [event.webhookId, event.body]))
    let signaturesChecked = 0
    for (const endpoint of endpoints) {
      const verifier = new Webhook(endpoint.secret)
      for (const sample of stats.paths[endpoint.path]?.samples ?? []) {
        try {
          verifier.verify(sample.body, sample.headers)
        } catch (error) {
          problems.push(`${endpoint.path}: the signature of ${sample.headers['webhook-id']} does not verify (${error instanceof Error ? error.message : String(error)})`)
        }
        if (bodies.get(sample.headers['webhook-id']!) !== sample.body) problems.push(`${endpoint.path}: the body of ${sample.headers['webhook-id']} is not the event's envelope`)
        signaturesChecked++
      }
    }
    if (problems.length > 0) throw new Error(`${label}: delivery was not correct:\n  ${problems.slice(0, 20).join('\n  ')}`)
    const seconds = stats.intervalMs / 1000
    return { round, deliveries: expected, seconds, perSecond: expected / seconds, drainSeconds, p50Ms: Number(attempts.p50), p99Ms: Number(attempts.p99), cpu, signaturesChecked }
  }

  log(`warm-up: ${settings.warmup} events × ${C} endpoints, bare loop then Tessera (not measured)`)
  {
    const events = await makeEvents(pool, settings.warmup)
    await runBaseline(0, events, 'undici')
    await runBaseline(0, events, 'http')
    await runTessera(0, events)
  }

  const baselines: BaselineRun[] = []
  const httpBaselines: BaselineRun[] = []
  const tesseras: TesseraRun[] = []
  for (let round = 1; round <= settings.rounds; round++) {
    const events = await makeEvents(pool, settings.events)
    for (const client of ['undici', 'http'] as const) {
      const b = await runBaseline(round, events, client)
      ;(client === 'undici' ? baselines : httpBaselines).push(b)
      log(`round ${round}/${settings.rounds}, bare loop (${client}): ${b.perSecond.toFixed(0)} requests/s (${b.requests} in ${b.seconds.toFixed(2)} s), p50 ${b.p50Ms.toFixed(2)} ms, other processes ${percent((b.cpu.others ?? 0) / b.cpu.available)} of the CPUs`)
      warnIfBusy((b.cpu.others ?? 0) / b.cpu.available, 'during that run')
    }
    const t = await runTessera(round, events)
    tesseras.push(t)
    log(`round ${round}/${settings.rounds}, Tessera: ${t.perSecond.toFixed(0)} deliveries/s (${t.deliveries} in ${t.seconds.toFixed(2)} s, drained in ${t.drainSeconds.toFixed(2)} s), p50 ${t.p50Ms} ms, worker ${(t.cpu.worker / t.deliveries).toFixed(3)} ms CPU/delivery, other processes ${percent((t.cpu.others ?? 0) / t.cpu.available)} of the CPUs`)
    warnIfBusy((t.cpu.others ?? 0) / t.cpu.available, 'during that run')
  }

  // Everything ever queued was delivered exactly once, and nothing is left.
  // Everything ever dispatched was delivered exactly once to each endpoint, and nothing waits.
  const leftovers = (await pool.query<{ status: string; n: string }>(`
    select 'delivered' as status, count(*) as n from webhook_attempts where succeeded
    union all select 'failed', count(*) from webhook_attempts where not succeeded
    union all select 'waiting', count(*) from webhook_endpoints e join outbox_events o on o.organization_id = e.organization_id and o.delivery_seq > e.stream_seq`)).rows
  await stopChild(worker)
  const totalExpected = (settings.warmup + settings.rounds * settings.events) * C
  const deliveredTotal = Number(leftovers.find((row) => row.status === 'delivered')?.n ?? 0)
  const correct = deliveredTotal === totalExpected && leftovers.every((row) => row.status === 'delivered' || Number(row.n) === 0)
  if (!correct) log(`FAIL: deliveries at the end ${JSON.stringify(leftovers)}, expected ${totalExpected} delivered, none failed or waiting`)

  const bareMedian = median(baselines.map((run) => run.perSecond))
  const httpMedian = median(httpBaselines.map((run) => run.perSecond))
  const tesseraMedian = median(tesseras.map((run) => run.perSecond))
  const ratio = tesseraMedian / bareMedian
  const met = ratio >= TARGET_RATIO
  const perCall = (ms: number | null, count: number) => (ms === null ? 'n/a' : (ms / count).toFixed(3))
  const share = (cpu: PhaseCpu) => (cpu.others === null ? 'n/a' : percent(cpu.others / cpu.available))
  const lines = [
    '',
    reportHeading('Webhook delivery', startedAt, postgresVersion),
    `${C} endpoints (one organization, each on its own path of one receiver process), ${settings.events} events a round (each to every endpoint: ${settings.events * C} deliveries), ` +
      `${settings.rounds} rounds after a warm-up of ${settings.warmup} events, bare loop and Tessera interleaved; one worker process, WORKER_CONCURRENCY ${C + 1}`,
    `other processes' CPU before the run: ${percent(backgroundLoad)}`,
    '',
    `${'run'.padEnd(16)}${'per s'.padStart(8)}${'seconds'.padStart(9)}${'drain s'.padStart(9)}${'p50 ms'.padStart(8)}${'p99 ms'.padStart(8)}` +
      `   CPU ms/request: ${'worker'.padStart(7)}${'PostgreSQL'.padStart(11)}${'receiver'.padStart(9)}${'loop'.padStart(7)}${'runner'.padStart(8)}${'others'.padStart(8)}`,
    ...baselines.flatMap((b, i) => {
      const t = tesseras[i]!
      const h = httpBaselines[i]!
      return [
        ...[b, h].map((b) =>
        `${`bare ${b.client} ${b.round}`.padEnd(16)}${b.perSecond.toFixed(0).padStart(8)}${b.seconds.toFixed(2).padStart(9)}${'-'.padStart(9)}${b.p50Ms.toFixed(2).padStart(8)}${b.p99Ms.toFixed(2).padStart(8)}` +
          `   ${''.padStart(16)}${perCall(b.cpu.worker, b.requests).padStart(7)}${perCall(b.cpu.postgres, b.requests).padStart(11)}${perCall(b.cpu.receiver, b.requests).padStart(9)}${perCall(b.cpu.loop, b.requests).padStart(7)}${perCall(b.cpu.runner, b.requests).padStart(8)}${share(b.cpu).padStart(8)}`),
        `${`Tessera ${t.round}`.padEnd(16)}${t.perSecond.toFixed(0).padStart(8)}${t.seconds.toFixed(2).padStart(9)}${t.drainSeconds.toFixed(2).padStart(9)}${String(t.p50Ms).padStart(8)}${String(t.p99Ms).padStart(8)}` +
          `   ${''.padStart(16)}${perCall(t.cpu.worker, t.deliveries).padStart(7)}${perCall(t.cpu.postgres, t.deliveries).padStart(11)}${perCall(t.cpu.receiver, t.deliveries).padStart(9)}${'-'.padStart(7)}${perCall(t.cpu.runner, t.deliveries).padStart(8)}${share(t.cpu).padStart(8)}`,
      ]
    }),
    '',
    `medians: bare loop ${bareMedian.toFixed(0)} requests/s with undici (Tessera's client), ${httpMedian.toFixed(0)} with node:http; Tessera ${tesseraMedian.toFixed(0)} deliveries/s`,
    `ratio Tessera/bare loop with the same client (undici): ${ratio.toFixed(3)}  target ≥ ${TARGET_RATIO}: ${met ? 'PASS' : 'FAIL'}`,
    `(Tessera/bare loop with node:http: ${(tesseraMedian / httpMedian).toFixed(3)}, for reference)`,
    `correctness: every message delivered once per endpoint at its first attempt, in order per endpoint, with the event's body; ` +
      `${tesseras.reduce((sum, t) => sum + t.signaturesChecked, 0)} signatures verified with standardwebhooks: ${correct ? 'PASS' : 'FAIL'}`,
    '',
  ]
  process.stdout.write(lines.join('\n'))
  writeResults('webhooks', startedAt, { postgres: postgresVersion, backgroundCpuLoad: backgroundLoad }, {
    settings: { ...settings, databaseUrl: settings.databaseUrl ? '(given)' : null },
    targetRatio: TARGET_RATIO,
    baselines,
    httpBaselines,
    tesseras,
    median: { barePerSecond: bareMedian, bareHttpPerSecond: httpMedian, tesseraPerSecond: tesseraMedian },
    ratio,
    met,
    correct,
  }, profileDir)
  return met && correct ? 0 : 1
}

const mode = process.argv[2]
if (mode === 'receiver') receiver()
else if (mode === 'baseline') await baseline()
else await runMain(main)
