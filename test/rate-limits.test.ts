import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes, randomUUID } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import { sql } from 'kysely'
import { POSTGRES_ONLY } from './crash.ts'
import { basicAuth, bearer, ENGINES, startApp, type TestContext, type TestResponse } from './helpers.ts'
import { OpenApiValidator } from './openapi-validator.ts'
import { deployment, freePort, MAIN, processEnv, ROOT } from './processes.ts'
import { startLoggedApp } from './secrecy.ts'

const FORM = 'application/x-www-form-urlencoded'
const LIMIT = /^"(?<policy>[a-z]+)";r=(?<remaining>\d+);t=(?<reset>\d+)$/

/** The RateLimit field of a response, parsed. */
function serviceLimit(response: { headers: Record<string, unknown> }): { policy: string; remaining: number; reset: number } {
  const value = String(response.headers['ratelimit'])
  const match = LIMIT.exec(value)
  assert.ok(match?.groups, `RateLimit is "${value}"`)
  const reset = Number(match.groups.reset)
  assert.ok(reset > 0 && reset <= 60, `the window ends within its 60 seconds (t=${reset})`)
  return { policy: match.groups.policy!, remaining: Number(match.groups.remaining), reset }
}

function assertLimited(response: TestResponse, policy: string): void {
  assert.equal(response.status, 429, response.body)
  const body = response.json<{ code: string; message: string }>()
  assert.equal(body.code, 'too_many_requests')
  assert.match(body.message, /retry after \d+ seconds/)
  const limit = serviceLimit(response)
  assert.deepEqual({ policy: limit.policy, remaining: limit.remaining }, { policy, remaining: 0 })
  assert.equal(response.headers['retry-after'], String(limit.reset), 'Retry-After is the end of the window')
}

for (const engine of ENGINES) {
  describe(`rate limits [${engine}]`, () => {
    let ctx: TestContext
    before(async () => {
      ctx = await startApp(engine, { RATE_LIMIT_PER_MINUTE: '3', TOKEN_RATE_LIMIT_PER_MINUTE: '2' })
    })
    after(() => ctx.close())

    const networks = (token: string) => ctx.request({ method: 'GET', url: '/core/networks', headers: bearer(token) })

    test('responses carry RateLimit-Policy and RateLimit; past the limit, 429 in the envelope with Retry-After', async () => {
      const token = await ctx.token(await ctx.newClient())
      for (const remaining of [2, 1, 0]) {
        const response = await networks(token)
        assert.equal(response.status, 200, response.body)
        assert.equal(response.headers['ratelimit-policy'], '"default";q=3;w=60')
        assert.deepEqual({ ...serviceLimit(response), reset: 0 }, { policy: 'default', remaining, reset: 0 })
      }
      const limited = await networks(token)
      assertLimited(limited, 'default')
      assert.equal(limited.headers['ratelimit-policy'], '"default";q=3;w=60')
      assertLimited(await networks(token), 'default')
    })

    test('each client has its own budget: another client of the organization, and another organization, are unaffected', async () => {
      const spent = await ctx.newClient()
      const sameOrganization = await ctx.newClient('*', spent.organizationId)
      const otherOrganization = await ctx.newClient()
      const token = await ctx.token(spent)
      for (let i = 0; i < 3; i++) assert.equal((await networks(token)).status, 200)
      assertLimited(await networks(token), 'default')

      for (const client of [sameOrganization, otherOrganization]) {
        const response = await networks(await ctx.token(client))
        assert.equal(response.status, 200, response.body)
        assert.equal(serviceLimit(response).remaining, 2)
      }
    })

    test('before authentication, each address has its own budget; an IPv6 /64 network is one address', async () => {
      const download = (remoteAddress: string) =>
        ctx.request({ method: 'GET', url: `/core/files/${randomUUID()}/content?token=forged`, remoteAddress })
      const first = `198.51.100.${1 + (randomBytes(1)[0]! % 200)}`
      for (let i = 0; i < 3; i++) {
        const response = await download(first)
        assert.equal(response.status, 403, response.body)
        assert.equal(serviceLimit(response).remaining, 2 - i)
      }
      assertLimited(await download(first), 'default')
      assert.equal((await download(first.replace(/\d+$/, (n) => String(Number(n) + 1)))).status, 403, 'the next address has its own budget')

      const network = `2001:db8:${randomBytes(2).toString('hex')}:1`
      for (let i = 0; i < 3; i++) assert.equal((await download(`${network}::${i + 1}`)).status, 403)
      assertLimited(await download(`${network}:ffff:ffff:ffff:ffff`), 'default')
      assert.equal((await download(`${network.replace(/:1$/, ':2')}::1`)).status, 403, 'the next /64 network has its own budget')
    })

    test('the token endpoint has its own policy, per client and address', async () => {
      const client = await ctx.newClient()
      const requestToken = () =>
        ctx.request({ method: 'POST', url: '/core/oauth2/token', headers: { 'content-type': FORM, authorization: basicAuth(client) }, payload: 'grant_type=client_credentials' })
      for (const remaining of [1, 0]) {
        const response = await requestToken()
        assert.equal(response.status, 200, response.body)
        assert.equal(response.headers['ratelimit-policy'], '"token";q=2;w=60')
        assert.equal(serviceLimit(response).remaining, remaining)
      }
      assertLimited(await requestToken(), 'token')
    })

    test('operational routes are not limited and carry no RateLimit fields', async () => {
      for (let i = 0; i < 5; i++) {
        const response = await ctx.request({ method: 'GET', url: '/health/live', remoteAddress: '192.0.2.44' })
        assert.equal(response.status, 200)
        assert.equal(response.headers['ratelimit'], undefined)
        assert.equal(response.headers['ratelimit-policy'], undefined)
      }
    })

    test('browser apps may read the RateLimit fields and Retry-After', async () => {
      const token = await ctx.token(await ctx.newClient())
      const response = await ctx.request({ method: 'GET', url: '/core/networks', headers: { ...bearer(token), origin: 'https://app.example.com' } })
      assert.equal(response.status, 200)
      const exposed = String(response.headers['access-control-expose-headers']).split(',').map((name) => name.trim().toLowerCase())
      for (const name of ['ratelimit', 'ratelimit-policy', 'retry-after']) assert.ok(exposed.includes(name), `${name} in ${exposed.join(', ')}`)
      assert.ok(!exposed.some((name) => name.startsWith('x-ratelimit')), 'the pre-draft fields are gone')
    })
  })
}

describe('rate limits on PostgreSQL [postgres]', POSTGRES_ONLY, () => {
  test('a lease serves several requests from one round trip, and the table holds the window for every process', async () => {
    const ctx = await startApp('postgres', { RATE_LIMIT_PER_MINUTE: '64' })
    try {
      const client = await ctx.newClient()
      const token = await ctx.token(client)
      const leased = async () => {
        const row = await ctx.database.db.selectFrom('rate_limits').select('used').where('key', '=', `default:client:${client.clientId}`).executeTakeFirstOrThrow()
        return row.used
      }
      assert.equal((await ctx.request({ method: 'GET', url: '/core/networks', headers: bearer(token) })).status, 200)
      assert.equal(await leased(), 4, 'the first lease takes a sixteenth of the window')
      for (let i = 0; i < 3; i++) assert.equal((await ctx.request({ method: 'GET', url: '/core/networks', headers: bearer(token) })).status, 200)
      assert.equal(await leased(), 4, 'the next three requests were served from it')
      const fifth = await ctx.request({ method: 'GET', url: '/core/networks', headers: bearer(token) })
      assert.equal(fifth.status, 200)
      assert.equal(await leased(), 7, 'the next lease is a sixteenth of what the window has left')
      assert.equal(serviceLimit(fifth).remaining, 59)
    } finally {
      await ctx.close()
    }
  })

  test('when the store fails, requests go through (never a 500), one line is logged, and the limit returns with the store', async () => {
    const { ctx, lines } = await startLoggedApp('postgres', { RATE_LIMIT_PER_MINUTE: '2' })
    try {
      const token = await ctx.token(await ctx.newClient())
      const networks = () => ctx.request({ method: 'GET', url: '/core/networks', headers: bearer(token) })
      await sql`alter table rate_limits rename to rate_limits_away`.execute(ctx.database.db)
      for (let i = 0; i < 4; i++) {
        const response = await networks()
        assert.equal(response.status, 200, response.body)
        assert.equal(response.headers['ratelimit'], undefined, 'an uncounted request advertises no limit')
      }
      const warnings = lines.filter((line) => line.includes('rate limits are not enforced'))
      assert.equal(warnings.length, 1, warnings.join('\n'))
      assert.equal(JSON.parse(warnings[0]!).level, 40, 'logged as a warning')

      await sql`alter table rate_limits_away rename to rate_limits`.execute(ctx.database.db)
      // The store is asked again a second after it failed; until then requests still go through.
      const statuses: number[] = []
      const deadline = Date.now() + 15_000
      while (!statuses.includes(429) && Date.now() < deadline) {
        statuses.push((await networks()).status)
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      assert.ok(statuses.includes(429), `the limit applies again: ${statuses.join(',')}`)
      assert.deepEqual(statuses.filter((status) => status !== 200 && status !== 429), [])
      assert.ok(lines.some((line) => line.includes('rate limits are enforced again')))
    } finally {
      await ctx.close()
    }
  })
})

interface ApiProcess {
  child: ChildProcess
  exited: Promise<number | null>
  url: string
}

/** `tessera serve --role api`, as an operator runs each API process behind a load balancer. */
function serveApi(env: Record<string, string>): Promise<ApiProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN, 'serve', '--role', 'api'], { cwd: ROOT, env: processEnv(env) })
    const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)))
    let stderr = ''
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`serve did not start in 30 s: ${stderr}`))
    }, 30_000)
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString()
      if (/listening on[\s\S]*\n\n$/.test(stderr)) {
        clearTimeout(timer)
        resolve({ child, exited, url: `http://127.0.0.1:${env.PORT}` })
      }
    })
    child.stdout.resume()
    void exited.then((code) => {
      clearTimeout(timer)
      reject(new Error(`serve exited with ${code}: ${stderr}`))
    })
  })
}

describe('two API processes on one PostgreSQL [postgres]', POSTGRES_ONLY, () => {
  const LIMIT_PER_MINUTE = 100
  const client = { clientId: randomUUID(), clientSecret: randomBytes(24).toString('base64url') }
  const processes: ApiProcess[] = []
  let cleanup = async () => {}
  let validator: OpenApiValidator

  before(async () => {
    const setup = await deployment('postgres', 'ratelimits')
    cleanup = setup.cleanup
    const env = {
      ...setup.env,
      HOST: '127.0.0.1',
      // Both processes sit behind one address, whose URL issues and accepts the tokens.
      PUBLIC_URL: 'http://tessera.test',
      INITIAL_CLIENT_ID: client.clientId,
      INITIAL_CLIENT_SECRET: client.clientSecret,
      RATE_LIMIT_PER_MINUTE: String(LIMIT_PER_MINUTE),
      TOKEN_RATE_LIMIT_PER_MINUTE: '10',
    }
    // One after the other: the first migrates the database and writes the shared keys to the data directory.
    processes.push(await serveApi({ ...env, PORT: String(await freePort()) }))
    processes.push(await serveApi({ ...env, PORT: String(await freePort()) }))
    validator = new OpenApiValidator(await (await fetch(`${processes[0]!.url}/openapi.json`)).json())
  })

  after(async () => {
    for (const server of processes) server.child.kill('SIGTERM')
    await Promise.all(processes.map((server) => server.exited))
    await cleanup()
  })

  async function send(server: ApiProcess, path: string, init: RequestInit = {}): Promise<TestResponse> {
    const response = await fetch(`${server.url}${path}`, init)
    const body = await response.text()
    const headers = Object.fromEntries(response.headers.entries())
    validator.check({ method: init.method ?? 'GET', url: path, status: response.status, headers, body })
    return { status: response.status, headers, body, json: <T>() => JSON.parse(body) as T }
  }

  test('share one limit: together they serve exactly the limit, then both refuse', async () => {
    const issued = await send(processes[0]!, '/core/oauth2/token', {
      method: 'POST',
      headers: { 'content-type': FORM, authorization: basicAuth(client) },
      body: 'grant_type=client_credentials',
    })
    assert.equal(issued.status, 200, issued.body)
    const token = issued.json<{ access_token: string }>().access_token

    // Both processes take requests side by side, a few at a time each, until each has refused one. A process
    // refuses only once its leases are used up and the shared window has nothing left: the requests served by
    // both together are then every lease taken, which must be the limit.
    const served = [0, 0]
    const refused = [false, false]
    while (refused.includes(false)) {
      await Promise.all(
        processes.map(async (server, i) => {
          if (refused[i]) return
          const answers = await Promise.all(Array.from({ length: 4 }, () => send(server, '/core/networks', { headers: bearer(token) })))
          for (const answer of answers) {
            if (answer.status === 200) served[i]! += 1
            else {
              assertLimited(answer, 'default')
              refused[i] = true
            }
          }
        }),
      )
    }
    assert.equal(served[0]! + served[1]!, LIMIT_PER_MINUTE, `served ${served.join(' + ')}`)
    assert.ok(served[0]! > 0 && served[1]! > 0, `each process served part of the limit: ${served.join(' + ')}`)
    for (const server of processes) assertLimited(await send(server, '/core/networks', { headers: bearer(token) }), 'default')
  })
})
