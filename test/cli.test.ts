import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes, randomUUID } from 'node:crypto'
import net from 'node:net'
import { after, describe, test } from 'node:test'
import { openDatabase } from '../src/db/database.ts'
import { ENGINES, USER_IP } from './helpers.ts'
import { cli, deployment as scratchDeployment, freePort, MAIN, processEnv, ROOT } from './processes.ts'

/** A deployment that can serve: its own data directory, database and port. */
async function deployment(engine: string): Promise<{ env: Record<string, string>; dataDir: string; cleanup: () => Promise<void> }> {
  const scratch = await scratchDeployment(engine, 'cli')
  const port = String(await freePort())
  Object.assign(scratch.env, { HOST: '127.0.0.1', PORT: port, PUBLIC_URL: `http://127.0.0.1:${port}` })
  return scratch
}

interface Server {
  child: ChildProcess
  baseUrl: string
  banner: string
  exited: Promise<number | null>
}

/** Starts `serve` and resolves once the banner is printed (the server is listening by then). */
function serve(env: Record<string, string>): Promise<Server> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN, 'serve'], { cwd: ROOT, env: processEnv(env) })
    const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)))
    let stderr = ''
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString()
      if (/listening on/.test(stderr) && /\n\n$/.test(stderr)) resolve({ child, baseUrl: env.PUBLIC_URL!, banner: stderr, exited })
    })
    child.stdout.resume()
    void exited.then((code) => reject(new Error(`serve exited with ${code}: ${stderr}`)))
  })
}

function credentialsFrom(banner: string): { clientId: string; clientSecret: string } {
  const clientId = /client id:\s+(\S+)/.exec(banner)?.[1]
  const clientSecret = /client secret:\s+(\S+)/.exec(banner)?.[1]
  assert.ok(clientId && clientSecret, `no credentials in:\n${banner}`)
  return { clientId, clientSecret }
}

async function token(baseUrl: string, credentials: { clientId: string; clientSecret: string }): Promise<Response> {
  return fetch(`${baseUrl}/core/oauth2/token`, {
    method: 'POST',
    headers: { authorization: `Basic ${Buffer.from(`${credentials.clientId}:${credentials.clientSecret}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=client_credentials',
  })
}

async function accessToken(baseUrl: string, credentials: { clientId: string; clientSecret: string }): Promise<string> {
  const response = await token(baseUrl, credentials)
  assert.equal(response.status, 200)
  return ((await response.json()) as { access_token: string }).access_token
}

for (const engine of ENGINES) {
  describe(`command line [${engine}]`, () => {
    const cleanups: (() => Promise<void>)[] = []
    after(async () => {
      for (const cleanup of cleanups) await cleanup()
    })

    test('clients create, list and revoke; secrets are stored only as scrypt hashes', async () => {
      const { env, dataDir, cleanup } = await deployment(engine)
      cleanups.push(cleanup)

      const created = await cli(['clients', 'create', '--name', 'Acme', '--scopes', 'core.users:read core.users:create'], env)
      assert.equal(created.code, 0, created.stderr)
      const client = JSON.parse(created.stdout) as { clientId: string; clientSecret: string; scopes: string[] }
      assert.deepEqual(Object.keys(client).sort(), ['clientId', 'clientSecret', 'organizationId', 'scopes'])
      assert.deepEqual(client.scopes, ['core.users:create', 'core.users:read'])

      const everything = JSON.parse((await cli(['clients', 'create', '--name', 'Ops', '--scopes', '*'], env)).stdout) as { scopes: string[] }
      assert.deepEqual(everything.scopes, ['*'])

      const listed = await cli(['clients', 'list'], env)
      assert.equal(listed.code, 0, listed.stderr)
      assert.ok(!listed.stdout.includes(client.clientSecret), 'list never shows a secret')
      const clients = JSON.parse(listed.stdout) as { clientId: string; name: string; revokedAt: string | null }[]
      assert.deepEqual(clients.map((c) => c.name), ['Acme', 'Ops'])

      const revoked = await cli(['clients', 'revoke', client.clientId], env)
      assert.equal(revoked.code, 0, revoked.stderr)
      assert.ok((JSON.parse(revoked.stdout) as { revokedAt: string | null }).revokedAt)

      const database = await openDatabase({ databaseUrl: env.DATABASE_URL ?? null, databasePoolSize: 1, dataDir })
      const rows = await database.db.selectFrom('clients').select(['id', 'secret_hash', 'revoked_at']).execute()
      await database.close()
      const row = rows.find((r) => r.id === client.clientId)!
      assert.match(row.secret_hash, /^scrypt\$16384\$8\$1\$/)
      assert.ok(!row.secret_hash.includes(client.clientSecret))
      assert.ok(row.revoked_at instanceof Date)
    })

    test('migrate applies the migrations once', async () => {
      const { env, cleanup } = await deployment(engine)
      cleanups.push(cleanup)
      const first = await cli(['migrate'], env)
      assert.equal(first.code, 0, first.stderr)
      assert.match(first.stdout, /Applied 0001_initial/)
      const second = await cli(['migrate'], env)
      assert.equal(second.code, 0, second.stderr)
      assert.match(second.stdout, /The database is up to date/)
    })

    test('operator mistakes get a readable message and exit code 2', async () => {
      const { env, cleanup } = await deployment(engine)
      cleanups.push(cleanup)
      const cases: [string[], RegExp][] = [
        [['clients', 'create', '--name', 'X', '--scopes', 'core.users:read core.everything:write'], /Unknown scope\(s\): core\.everything:write/],
        [['clients', 'create', '--scopes', '*'], /--name is required/],
        [['clients', 'revoke', randomUUID()], /does not exist/],
        [['clients', 'explode'], /Unknown clients command/],
        [['dance'], /Unknown command "dance"/],
      ]
      for (const [args, message] of cases) {
        const run = await cli(args, env)
        assert.equal(run.code, 2, `${args.join(' ')}: ${run.stderr}`)
        assert.match(run.stderr, message)
      }
    })

    test('clients can be granted the connector scopes of the configured providers, and only of those', async () => {
      const { env, cleanup } = await deployment(engine)
      cleanups.push(cleanup)
      const scopes = 'kyc-connector.sumsub.config:read kyc-connector.veriff.config:write'
      const refused = await cli(['clients', 'create', '--name', 'Connector', '--scopes', scopes], env)
      assert.equal(refused.code, 2, refused.stderr)
      assert.match(refused.stderr, /Unknown scope\(s\): kyc-connector\.sumsub\.config:read/)
      const created = await cli(['clients', 'create', '--name', 'Connector', '--scopes', scopes], { ...env, KYC_CONNECTOR_PROVIDERS: 'veriff,sumsub' })
      assert.equal(created.code, 0, created.stderr)
      assert.deepEqual((JSON.parse(created.stdout) as { scopes: string[] }).scopes, scopes.split(' '))
    })

    test('first start creates a client with every scope, prints it once, and it works end to end', async () => {
      const { env, cleanup } = await deployment(engine)
      cleanups.push(cleanup)
      const server = await serve(env)
      try {
        assert.match(server.banner, new RegExp(`listening on ${server.baseUrl.replace(/[.]/g, '\\.')}`))
        assert.match(server.banner, /\/docs/)
        const credentials = credentialsFrom(server.banner)
        const bearerToken = await accessToken(server.baseUrl, credentials)
        const created = await fetch(`${server.baseUrl}/core/users`, {
          method: 'POST',
          headers: { authorization: `Bearer ${bearerToken}`, 'content-type': 'application/json', 'x-service-user-ip': USER_IP },
          body: JSON.stringify({ type: 'individual', email: 'first@example.com', termsOfService: 'general-gb-fca', primaryCitizenship: 'GB', address: { country: 'GB' } }),
        })
        assert.equal(created.status, 201)
        const { user } = (await created.json()) as { user: { id: string } }
        const me = await fetch(`${server.baseUrl}/core/users/me`, { headers: { authorization: `Bearer ${bearerToken}`, 'x-on-behalf-of': `user ${user.id}` } })
        assert.equal(me.status, 200)

        server.child.kill('SIGTERM')
        assert.equal(await server.exited, 0)

        // Keys and clients persist: a restart prints no new client and earlier tokens still verify.
        const again = await serve(env)
        assert.doesNotMatch(again.banner, /client secret/)
        const stillValid = await fetch(`${again.baseUrl}/core/users/me`, { headers: { authorization: `Bearer ${bearerToken}`, 'x-on-behalf-of': `user ${user.id}` } })
        assert.equal(stillValid.status, 200)
        again.child.kill('SIGTERM')
        assert.equal(await again.exited, 0)
      } finally {
        server.child.kill('SIGKILL')
      }
    })

    test('SIGTERM lets an in-flight request finish before the process exits', async () => {
      const { env, cleanup } = await deployment(engine)
      cleanups.push(cleanup)
      const server = await serve(env)
      const bearerToken = await accessToken(server.baseUrl, credentialsFrom(server.banner))
      const body = JSON.stringify({ type: 'individual', email: 'inflight@example.com', termsOfService: 'general-gb-fca', primaryCitizenship: 'GB', address: { country: 'GB' } })
      const { port } = new URL(server.baseUrl)
      const socket = net.connect(Number(port), '127.0.0.1')
      await new Promise((resolve) => socket.once('connect', resolve))
      let received = ''
      socket.on('data', (chunk: Buffer) => (received += chunk.toString()))
      const closed = new Promise((resolve) => socket.once('close', resolve))
      // Headers and half the body now; the rest only after the server was told to stop.
      socket.write(
        `POST /core/users HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${bearerToken}\r\nX-Service-User-Ip: ${USER_IP}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body.slice(0, 20)}`,
      )
      // A request sent after it and answered: the server has read the first one's headers, even on a busy machine
      // (a fixed pause was not always long enough in CI), so the request is in flight when the signal comes.
      await new Promise((resolve) => setTimeout(resolve, 200))
      assert.equal((await fetch(`${server.baseUrl}/health/live`)).status, 200)
      server.child.kill('SIGTERM')
      await new Promise((resolve) => setTimeout(resolve, 300))
      socket.write(body.slice(20))
      await closed
      assert.match(received, /^HTTP\/1\.1 201 /)
      assert.equal(await server.exited, 0)
    })

    test('INITIAL_CLIENT_ID and INITIAL_CLIENT_SECRET make the first client deterministic', async () => {
      const { env, cleanup } = await deployment(engine)
      cleanups.push(cleanup)
      const credentials = { clientId: randomUUID(), clientSecret: randomBytes(24).toString('base64url') }
      const server = await serve({ ...env, INITIAL_CLIENT_ID: credentials.clientId, INITIAL_CLIENT_SECRET: credentials.clientSecret })
      try {
        assert.equal(credentialsFrom(server.banner).clientId, credentials.clientId)
        assert.equal((await token(server.baseUrl, credentials)).status, 200)
      } finally {
        server.child.kill('SIGTERM')
        await server.exited
      }
    })
  })
}

describe('process guards', () => {
  const cleanups: (() => Promise<void>)[] = []
  after(async () => {
    for (const cleanup of cleanups) await cleanup()
  })

  test('the embedded database belongs to one process: a second serve and the CLI refuse while it runs', async () => {
    const { env, cleanup } = await deployment('pglite')
    cleanups.push(cleanup)
    const server = await serve(env)
    try {
      const second = await cli(['serve'], { ...env, PORT: String(await freePort()) })
      assert.equal(second.code, 2)
      assert.match(second.stderr, /in use by another Tessera process \(pid \d+\)/)
      const listing = await cli(['clients', 'list'], env)
      assert.equal(listing.code, 2)
      assert.match(listing.stderr, /stop the server first, or run Tessera on PostgreSQL/)
    } finally {
      server.child.kill('SIGTERM')
      await server.exited
    }
    const afterStop = await cli(['clients', 'list'], env)
    assert.equal(afterStop.code, 0, afterStop.stderr)
  })

  test('production refuses to start without its keys, naming what is missing', async () => {
    const run = await cli(['serve'], { TESSERA_ENV: 'production', DATA_DIR: ':memory:' })
    assert.equal(run.code, 2)
    assert.match(run.stderr, /TOKEN_SIGNING_KEY is required in production/)
    assert.match(run.stderr, /SEALING_KEY is required in production/)
    assert.match(run.stderr, /PRICE_FEED is required in production/)
  })

  test('an invalid environment fails fast with every problem listed', async () => {
    const run = await cli(['serve'], { PORT: 'eighty', TESSERA_ENV: 'staging', DATABASE_URL: 'mysql://x', INITIAL_CLIENT_ID: 'abc', PRICE_FEED: 'oracle' })
    assert.equal(run.code, 2)
    for (const message of [/PORT must be an integer/, /TESSERA_ENV must be one of sandbox, production/, /DATABASE_URL must be a postgres/, /INITIAL_CLIENT_ID must be a UUID/, /PRICE_FEED must be simulated/]) {
      assert.match(run.stderr, message)
    }
  })
})
