// Benchmark runner: measures Tessera on PostgreSQL against a bare Fastify hello-world measured in the same run.
// See bench/README.md. Settings come from the environment (BENCH_*), read once below.
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { Options } from 'autocannon'
import {
  accessToken,
  backgroundCpuLoad,
  databaseVersion,
  expectJson,
  freePort,
  load,
  log,
  newClientCredentials,
  RESULTS_DIR,
  ROOT,
  runMain,
  startChild,
  startCluster,
  startTessera,
  stopChild,
  waitUntil,
} from './harness.ts'
import { positiveInteger } from './settings.ts'

const TARGET_RATIO = 0.4

const settings = {
  durationSeconds: positiveInteger('BENCH_DURATION', 10),
  warmupSeconds: positiveInteger('BENCH_WARMUP', 3),
  connections: positiveInteger('BENCH_CONNECTIONS', 50),
  pipelining: positiveInteger('BENCH_PIPELINING', 1),
  databaseUrl: process.env.BENCH_DATABASE_URL?.trim() || null,
  cpuProfile: process.env.BENCH_CPU_PROF === '1',
  enforceTarget: process.env.BENCH_ENFORCE_TARGET === '1',
}

// ---------------------------------------------------------------------------------------------------------------
// Load

interface Figures {
  scenario: string
  label: string
  method: string
  url: string
  /** Mean of the per-second request counts of the measured run. */
  requestsPerSecond: number
  requestsPerSecondStddev: number
  requestsTotal: number
  latencyMs: { average: number; p50: number; p90: number; p99: number; max: number }
  /** The status every response must have (`2xx`: any success). */
  expectedStatus: string
  /** Responses with another status: any of them fails the run. */
  unexpected: number
  non2xx: number
  errors: number
  timeouts: number
  statusCodes: Record<string, number>
}

async function measure(
  scenario: string,
  label: string,
  options: Omit<Options, 'duration' | 'connections' | 'pipelining'>,
  expectedStatus?: number,
): Promise<Figures> {
  const common = { ...options, connections: settings.connections, pipelining: settings.pipelining }
  log(`${scenario} ${label}: warm-up ${settings.warmupSeconds} s`)
  const warmup = await load({ ...common, duration: settings.warmupSeconds })
  if (warmup.non2xx > 0 || warmup.errors > 0) log(`${scenario} warm-up saw ${warmup.non2xx} non-2xx and ${warmup.errors} errors`)
  log(`${scenario} ${label}: measuring ${settings.durationSeconds} s, ${settings.connections} connections, pipelining ${settings.pipelining}`)
  const result = await load({ ...common, duration: settings.durationSeconds })
  const statusCodes = Object.fromEntries(Object.entries(result.statusCodeStats).map(([status, { count }]) => [status, count]))
  return {
    scenario,
    label,
    method: options.method ?? 'GET',
    url: options.url,
    requestsPerSecond: result.requests.mean,
    requestsPerSecondStddev: result.requests.stddev,
    requestsTotal: result.requests.total,
    latencyMs: { average: result.latency.average, p50: result.latency.p50, p90: result.latency.p90, p99: result.latency.p99, max: result.latency.max },
    expectedStatus: expectedStatus === undefined ? '2xx' : String(expectedStatus),
    unexpected: expectedStatus === undefined ? result.non2xx : result.requests.total - (statusCodes[String(expectedStatus)] ?? 0),
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    statusCodes,
  }
}

const failed = (f: Figures) => f.unexpected > 0 || f.errors > 0 || f.timeouts > 0 || f.requestsTotal === 0

const timestamp = new Date().toISOString().replace(/[:.]/g, '-')
const credentials = newClientCredentials()
const { basicAuth } = credentials
const tokenForm = 'grant_type=client_credentials'

async function main(): Promise<number> {
  const startedAt = new Date()
  log(`node ${process.version}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? 'unknown'}), ${os.platform()} ${os.release()}`)

  const backgroundLoad = await backgroundCpuLoad()
  const busy = backgroundLoad > 0.1
  if (busy) log(`WARNING: ${(backgroundLoad * 100).toFixed(0)}% of the CPUs were busy before the run started; other processes will skew the figures`)

  const databaseUrl = settings.databaseUrl ?? (await startCluster())
  const postgresVersion = await databaseVersion(databaseUrl)
  log(`PostgreSQL ${postgresVersion} at ${databaseUrl.replace(/\/\/[^@/]*@/, '//***@')}`)

  // (a) the ceiling, measured alone so that nothing else competes for the CPUs.
  const helloPort = await freePort()
  let helloListening = false
  const hello = startChild('hello', ['bench/hello.ts'], { ...process.env, PORT: String(helloPort) }, (line) => {
    if (line.trim() === 'listening') helloListening = true
  })
  await waitUntil('"listening"', hello, 15_000, async () => helloListening)
  const a = await measure('(a)', 'bare Fastify hello-world', { url: `http://127.0.0.1:${helloPort}/`, method: 'GET' })
  await stopChild(hello)

  const profileDir = settings.cpuProfile ? path.join(RESULTS_DIR, `profile-${timestamp}`) : null
  const tessera = await startTessera(databaseUrl, credentials, { profileDir })
  const { baseUrl } = tessera

  const token = await accessToken(baseUrl, credentials)
  const created = await expectJson(
    await fetch(`${baseUrl}/core/users`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', 'x-service-user-ip': '203.0.113.7' },
      body: JSON.stringify({
        type: 'individual',
        email: 'bench@example.com',
        termsOfService: 'general-gb-fca',
        primaryCitizenship: 'GB',
        address: { country: 'GB' },
      }),
    }),
    201,
    'POST /core/users',
  )
  const userId = String((created.user as { id?: unknown } | undefined)?.id)
  const meHeaders = { authorization: `Bearer ${token}`, 'x-on-behalf-of': `user ${userId}` }
  // One checked request first, so that a broken scenario fails with its response body rather than as a count.
  const me = await expectJson(await fetch(`${baseUrl}/core/users/me`, { headers: meHeaders }), 200, 'GET /core/users/me')
  if ((me.user as { id?: unknown } | undefined)?.id !== userId) throw new Error(`GET /core/users/me returned another user: ${JSON.stringify(me)}`)

  const b = await measure('(b)', 'POST /core/oauth2/token', {
    url: `${baseUrl}/core/oauth2/token`,
    method: 'POST',
    headers: { authorization: basicAuth, 'content-type': 'application/x-www-form-urlencoded' },
    body: tokenForm,
  })
  const c = await measure('(c)', 'GET /core/users/me (bearer + X-On-Behalf-Of)', { url: `${baseUrl}/core/users/me`, method: 'GET', headers: meHeaders })

  // Metadata: reads, conditional reads and conditional writes of one user's metadata. The PUT body never
  // changes, so its ETag does not either and every If-Match write succeeds (and really writes).
  const metadataUrl = `${baseUrl}/core/users/me/metadata`
  const metadataBody = JSON.stringify({ externalId: 'bench-1', tier: 'gold', tags: ['a', 'b'] })
  const stored = await fetch(metadataUrl, { method: 'PUT', headers: { ...meHeaders, 'content-type': 'application/json' }, body: metadataBody })
  await expectJson(stored, 201, 'PUT /core/users/me/metadata')
  const etag = stored.headers.get('etag') ?? ''
  const d = await measure('(d)', 'GET /core/users/me/metadata → 200', { url: metadataUrl, method: 'GET', headers: meHeaders }, 200)
  const e = await measure('(e)', 'GET /core/users/me/metadata, If-None-Match → 304', { url: metadataUrl, method: 'GET', headers: { ...meHeaders, 'if-none-match': etag } }, 304)
  const f = await measure(
    '(f)',
    'PUT /core/users/me/metadata, If-Match → 200',
    { url: metadataUrl, method: 'PUT', headers: { ...meHeaders, 'content-type': 'application/json', 'if-match': etag }, body: metadataBody },
    200,
  )

  // Reference data, as a client reads it (no user): served from memory after authentication.
  const clientHeaders = { authorization: `Bearer ${token}` }
  const g = await measure('(g)', 'GET /core/assets/BTC', { url: `${baseUrl}/core/assets/BTC`, method: 'GET', headers: clientHeaders }, 200)
  const h = await measure('(h)', 'GET /core/countries/GB', { url: `${baseUrl}/core/countries/GB`, method: 'GET', headers: clientHeaders }, 200)
  const i = await measure(
    '(i)',
    'POST /core/networks/bitcoin/validate-address',
    {
      url: `${baseUrl}/core/networks/bitcoin/validate-address`,
      method: 'POST',
      headers: { ...clientHeaders, 'content-type': 'application/json' },
      body: JSON.stringify({ address: 'tb1qxsy3qh8d44d5jkuvn98rxsjtxpmdlslg8d92cv' }),
    },
    200,
  )

  // Taken before stopping: shutdown adds its own lines, which say nothing about the measured runs.
  const tesseraOutput = tessera.child.tail()
  await stopChild(tessera.child)
  const scenarios = [a, b, c, d, e, f, g, h, i]
  const ratios = {
    tokenToHello: b.requestsPerSecond / a.requestsPerSecond,
    usersMeToHello: c.requestsPerSecond / a.requestsPerSecond,
    metadataGetToHello: d.requestsPerSecond / a.requestsPerSecond,
    metadataNotModifiedToHello: e.requestsPerSecond / a.requestsPerSecond,
    metadataPutToHello: f.requestsPerSecond / a.requestsPerSecond,
    assetToHello: g.requestsPerSecond / a.requestsPerSecond,
    countryToHello: h.requestsPerSecond / a.requestsPerSecond,
    validateAddressToHello: i.requestsPerSecond / a.requestsPerSecond,
  }
  const targetMet = ratios.usersMeToHello >= TARGET_RATIO

  const row = (cells: string[]) => `${cells[0]!.padEnd(52)}${cells.slice(1).map((cell) => cell.padStart(11)).join('')}`
  const lines = [
    '',
    `Tessera benchmark — ${startedAt.toISOString()} — node ${process.version}, PostgreSQL ${postgresVersion}, ${os.cpus().length} CPUs`,
    `${settings.durationSeconds} s measured after ${settings.warmupSeconds} s warm-up, ${settings.connections} connections, pipelining ${settings.pipelining}`,
    `CPU busy before the run: ${(backgroundLoad * 100).toFixed(0)}%${busy ? ' — WARNING: the machine was not idle; figures are unreliable' : ''}`,
    '',
    row(['scenario', 'req/s', '±stddev', 'p50 ms', 'p99 ms', 'unexpected', 'errors']),
    ...scenarios.map((figures) =>
      row([
        `${figures.scenario} ${figures.label}`,
        figures.requestsPerSecond.toFixed(0),
        figures.requestsPerSecondStddev.toFixed(0),
        String(figures.latencyMs.p50),
        String(figures.latencyMs.p99),
        String(figures.unexpected),
        String(figures.errors + figures.timeouts),
      ]),
    ),
    '',
    `(b)/(a) req/s: ${ratios.tokenToHello.toFixed(3)}`,
    `(c)/(a) req/s: ${ratios.usersMeToHello.toFixed(3)}   target ≥ ${TARGET_RATIO.toFixed(2)}: ${targetMet ? 'met' : 'NOT met'}`,
    `(d)/(a) req/s: ${ratios.metadataGetToHello.toFixed(3)}`,
    `(e)/(a) req/s: ${ratios.metadataNotModifiedToHello.toFixed(3)}`,
    `(f)/(a) req/s: ${ratios.metadataPutToHello.toFixed(3)}`,
    `(g)/(a) req/s: ${ratios.assetToHello.toFixed(3)}   target ≥ ${TARGET_RATIO.toFixed(2)}: ${ratios.assetToHello >= TARGET_RATIO ? 'met' : 'NOT met'}`,
    `(h)/(a) req/s: ${ratios.countryToHello.toFixed(3)}   target ≥ ${TARGET_RATIO.toFixed(2)}: ${ratios.countryToHello >= TARGET_RATIO ? 'met' : 'NOT met'}`,
    `(i)/(a) req/s: ${ratios.validateAddressToHello.toFixed(3)}   target ≥ ${TARGET_RATIO.toFixed(2)}: ${ratios.validateAddressToHello >= TARGET_RATIO ? 'met' : 'NOT met'}`,
    '',
  ]
  process.stdout.write(lines.join('\n'))

  fs.mkdirSync(RESULTS_DIR, { recursive: true })
  const resultFile = path.join(RESULTS_DIR, `${timestamp}.json`)
  const report = {
    startedAt: startedAt.toISOString(),
    finishedAt: new Date().toISOString(),
    environment: {
      node: process.version,
      platform: `${os.platform()} ${os.release()}`,
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model ?? null,
      postgres: postgresVersion,
      databaseProvidedExternally: settings.databaseUrl !== null,
      backgroundCpuLoad: backgroundLoad,
    },
    settings: {
      durationSeconds: settings.durationSeconds,
      warmupSeconds: settings.warmupSeconds,
      connections: settings.connections,
      pipelining: settings.pipelining,
    },
    scenarios: { a, b, c, d, e, f, g, h, i },
    ratios: { ...ratios, target: TARGET_RATIO, targetMet },
    cpuProfileDir: profileDir,
  }
  fs.writeFileSync(resultFile, `${JSON.stringify(report, null, 2)}\n`)
  process.stdout.write(`Results: ${path.relative(ROOT, resultFile)}\n`)
  if (profileDir) process.stdout.write(`CPU profile of Tessera: ${path.relative(ROOT, profileDir)}/\n`)

  const broken = scenarios.filter(failed)
  if (broken.length > 0) {
    for (const figures of broken) {
      process.stderr.write(
        `\n${figures.scenario} ${figures.label}: ${figures.unexpected} not ${figures.expectedStatus}, ${figures.errors} errors, ` +
          `${figures.timeouts} timeouts; status codes ${JSON.stringify(figures.statusCodes)}\n`,
      )
    }
    process.stderr.write(`\nLast output of Tessera:\n${tesseraOutput}\n`)
    return 1
  }
  if (settings.enforceTarget && !targetMet) {
    process.stderr.write(`\n(c)/(a) is below the target of ${TARGET_RATIO} (BENCH_ENFORCE_TARGET=1)\n`)
    return 1
  }
  return 0
}

await runMain(main)
