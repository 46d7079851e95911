import assert from 'node:assert/strict'
import { randomBytes, randomUUID } from 'node:crypto'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import pg from 'pg'
import { sql } from 'kysely'
import { ChangeFeed } from '../src/db/changes.ts'
import { openDatabase } from '../src/db/database.ts'
import type { Db } from '../src/db/schema.ts'
import { loadOrCreateSecrets } from '../src/lib/data-dir.ts'
import { basicAuth, bearer, ENGINES, individualUser, startApp, startPeer, TEST_DATABASE_DIRECT_URL, TEST_DATABASE_URL, USER_IP, type TestContext, type TestDatabase } from './helpers.ts'
import { cli, freePort, scratchDatabase, serve, type Server } from './processes.ts'

/** Retries `check` until it passes or the time is up: notifications cross processes asynchronously. */
async function eventually(check: () => Promise<void>, timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    try {
      return await check()
    } catch (error) {
      if (Date.now() > deadline) throw error
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
  }
}

describe('several processes on one PostgreSQL', { skip: !TEST_DATABASE_URL && 'needs TEST_DATABASE_URL' }, () => {
  let first: TestContext
  let second: TestContext
  before(async () => {
    first = await startApp('postgres')
    second = await startPeer(first)
  })
  after(async () => {
    await second.close()
    await first.close()
  })

  test('a client revoked through one process is refused at once by the others', async () => {
    const client = await first.newClient()
    const token = await first.token(client)
    const user = await first.createUser(token)
    // The second process has now read (and cached) the client and the user.
    for (let i = 0; i < 3; i++) assert.equal((await second.request({ method: 'GET', url: '/core/users/me', headers: bearer(token, user.id) })).status, 200)

    await first.services.clients.revoke(client.clientId)
    await eventually(async () => {
      const response = await second.request({ method: 'GET', url: '/core/users/me', headers: bearer(token, user.id) })
      assert.equal(response.status, 401)
      assert.equal(response.json().code, 'token_revoked')
    })
  })

  test('a user deleted through one process is gone for the others', async () => {
    const token = await first.token()
    const user = await first.createUser(token)
    assert.equal((await second.request({ method: 'GET', url: '/core/users/me', headers: bearer(token, user.id) })).status, 200)

    const removal = await first.request({ method: 'DELETE', url: '/core/users/me', headers: bearer(token, user.id), payload: { review: { reason: 'other' } } })
    assert.equal(removal.status, 204)
    await eventually(async () => {
      assert.equal((await second.request({ method: 'GET', url: '/core/users/me', headers: bearer(token, user.id) })).status, 404)
    })
  })

  test('hot statements run as named prepared statements on a direct connection, and never behind a pooling proxy', async () => {
    // Both on PostgreSQL itself (in the PgBouncer pass too), with one connection: its session is the one asked.
    const url = first.database.directUrl!
    const preparedOn = async (db: Db) => (await sql<{ name: string; statement: string }>`select name, statement from pg_prepared_statements where statement not like '%pg_prepared_statements%'`.execute(db)).rows
    const direct = await openDatabase({ databaseUrl: url, databaseDirectUrl: null, databasePoolSize: 1, dataDir: null })
    try {
      for (let i = 0; i < 4; i++) assert.equal((await sql<{ n: number }>`select ${i}::int + 1 as n`.execute(direct.db)).rows[0]!.n, i + 1)
      const prepared = await preparedOn(direct.db)
      assert.ok(prepared.some((row) => row.name.startsWith('tessera_') && row.statement.includes('$1::int + 1')), JSON.stringify(prepared))
      // The session loses its statements (as behind a pooling proxy that changed sessions): the statement that meets
      // the loss runs again unnamed when it was alone, fails its transaction when it was in one; unnamed after that.
      await sql`deallocate all`.execute(direct.db)
      assert.equal((await sql<{ n: number }>`select ${41}::int + 1 as n`.execute(direct.db)).rows[0]!.n, 42)
      assert.deepEqual(await preparedOn(direct.db), [])
      for (let i = 0; i < 3; i++) await sql`select ${i}::int - 2 as n`.execute(direct.db)
      await sql`deallocate all`.execute(direct.db)
      await assert.rejects(
        direct.db.transaction().execute(async (tx) => sql`select ${1}::int - 2 as n`.execute(tx)),
        (error: { code?: string }) => error.code === '26000',
      )
      assert.equal((await sql<{ n: number }>`select ${44}::int - 2 as n`.execute(direct.db)).rows[0]!.n, 42)
      assert.deepEqual(await preparedOn(direct.db), [])
    } finally {
      await direct.close()
    }
    // A DATABASE_DIRECT_URL other than DATABASE_URL: a proxy may be in front, no name is ever given.
    const proxied = await openDatabase({ databaseUrl: url, databaseDirectUrl: `${url}${url.includes('?') ? '&' : '?'}application_name=direct`, databasePoolSize: 1, dataDir: null })
    try {
      for (let i = 0; i < 4; i++) await sql`select ${i}::int + 1 as n`.execute(proxied.db)
      assert.deepEqual(await preparedOn(proxied.db), [])
    } finally {
      await proxied.close()
    }
  })

  test('metadata written through one process is read by the others once its notification arrives', async () => {
    const token = await first.token()
    const user = await first.createUser(token)
    const url = '/core/users/me/metadata'
    const headers = { ...bearer(token, user.id), 'content-type': 'application/json' }
    const readOnSecond = async () => {
      const response = await second.request({ method: 'GET', url, headers: bearer(token, user.id) })
      return { status: response.status, etag: response.headers.etag, body: response.body }
    }
    const created = await first.request({ method: 'PUT', url, headers, payload: JSON.stringify({ version: 1 }) })
    assert.equal(created.status, 201)
    // The second process reads it, twice: from then on from its memory.
    for (let i = 0; i < 2; i++) assert.deepEqual(await readOnSecond(), { status: 200, etag: created.headers.etag, body: '{"metadata":{"version":1}}' })

    const replaced = await first.request({ method: 'PUT', url, headers: { ...headers, 'if-match': String(created.headers.etag) }, payload: JSON.stringify({ version: 2 }) })
    assert.equal(replaced.status, 200)
    await eventually(async () => assert.deepEqual(await readOnSecond(), { status: 200, etag: replaced.headers.etag, body: '{"metadata":{"version":2}}' }))

    const patched = await first.request({ method: 'PATCH', url, headers: { ...headers, 'content-type': 'application/json-patch+json' }, payload: '[{"op":"add","path":"/extra","value":true}]' })
    assert.equal(patched.status, 200)
    await eventually(async () => assert.deepEqual(await readOnSecond(), { status: 200, etag: patched.headers.etag, body: '{"metadata":{"version":2,"extra":true}}' }))

    assert.equal((await first.request({ method: 'DELETE', url, headers: bearer(token, user.id) })).status, 204)
    await eventually(async () => assert.equal((await readOnSecond()).status, 404))
  })

  test('a process that lost its notification connection reads from the database until it listens again', async () => {
    const client = await first.newClient()
    const token = await first.token(client)
    const user = await first.createUser(token)
    assert.equal((await second.request({ method: 'GET', url: '/core/users/me', headers: bearer(token, user.id) })).status, 200)

    // Cut the LISTEN connections of this database's processes (other suites share the cluster): any notification
    // sent now is lost. They are direct connections (a session each), never PgBouncer's.
    const listen = `LISTEN ${pg.escapeIdentifier(new ChangeFeed(first.database.schema).channel)}`
    const datname = new URL(first.database.directUrl!).pathname.slice(1)
    const admin = new pg.Client({ connectionString: TEST_DATABASE_DIRECT_URL })
    await admin.connect()
    try {
      const listening = `select pid from pg_stat_activity where datname = $1 and query = $2 and pid <> pg_backend_pid()`
      const { rows } = await admin.query<{ pid: number }>(listening, [datname, listen])
      assert.equal(rows.length, 2, 'one listener per process')
      const pids = rows.map((row) => row.pid)
      await admin.query('select pg_terminate_backend(pid) from unnest($1::int[]) as pid', [pids])
      // pg_terminate_backend only signals: wait until those backends are gone, so their connections are closed.
      await eventually(async () => {
        const alive = await admin.query<{ n: number }>('select count(*)::int as n from pg_stat_activity where pid = any($1::int[])', [pids])
        assert.equal(alive.rows[0]!.n, 0)
      })
      await first.services.clients.revoke(client.clientId)
      // Not live, the other process reads the database; live again (the listener reconnects after 100 ms, which a
      // loaded machine may have passed already), it cleared its caches on reconnecting and then hears the
      // notification a moment after the commit. Either way the revocation is seen at once or within that moment,
      // never served stale from a cache filled before the cut.
      await eventually(async () => {
        const response = await second.request({ method: 'GET', url: '/core/users/me', headers: bearer(token, user.id) })
        assert.equal(response.json().code, 'token_revoked', 'the revocation is seen although its notification may have been lost')
      }, 1_000)

      // The listeners come back on their own.
      await eventually(async () => {
        const listeners = await admin.query<{ n: number }>(`select count(*)::int as n from pg_stat_activity where datname = $1 and query = $2`, [datname, listen])
        assert.equal(listeners.rows[0]!.n, 2)
      }, 10_000)
    } finally {
      await admin.end()
    }
  })
})

/**
 * The deployment of docs/deployment.md on one machine: two `serve --role api` processes behind a (pretend) load
 * balancer and two `serve --role worker` processes, all on one database — through PgBouncer in transaction mode
 * in the run that has one (TEST_DATABASE_DIRECT_URL), their LISTEN and migrations on direct connections.
 */
describe('two API processes and two workers', { skip: !TEST_DATABASE_URL && 'needs TEST_DATABASE_URL' }, () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-scale-'))
  const initial = { clientId: randomUUID(), clientSecret: randomBytes(24).toString('base64url') }
  let database: TestDatabase
  let env: Record<string, string>
  const apis: { server: Server; baseUrl: string }[] = []
  const workers: Server[] = []

  before(async () => {
    database = await scratchDatabase('scale')
    // One deployment: the same keys everywhere, and the load balancer's URL as the token issuer.
    const keys = loadOrCreateSecrets(null, { tokenSigningKey: null, sealingKey: null })
    env = {
      DATA_DIR: dataDir,
      DATABASE_URL: database.url,
      DATABASE_DIRECT_URL: database.directUrl,
      DATABASE_POOL_SIZE: '4',
      HOST: '127.0.0.1',
      PUBLIC_URL: 'http://tessera.test',
      LOG_LEVEL: 'silent',
      TOKEN_SIGNING_KEY: keys.tokenSigningKey,
      SEALING_KEY: keys.sealingKey,
      INITIAL_CLIENT_ID: initial.clientId,
      INITIAL_CLIENT_SECRET: initial.clientSecret,
      RATE_LIMIT_PER_MINUTE: '0',
      TOKEN_RATE_LIMIT_PER_MINUTE: '0',
      WORKER_POLL_INTERVAL_MS: '50',
      WORKER_CONCURRENCY: '2',
    }
    // All four at once on the empty database: they migrate it together, once.
    const ports = await Promise.all([freePort(), freePort()])
    const started = await Promise.allSettled([
      ...ports.map((port) => serve({ ...env, PORT: String(port) }, 'api')),
      serve(env, 'worker'),
      serve(env, 'worker'),
    ])
    for (const [i, result] of started.entries()) {
      if (result.status === 'rejected') continue
      if (i < 2) apis.push({ server: result.value, baseUrl: `http://127.0.0.1:${ports[i]}` })
      else workers.push(result.value)
    }
    const failed = started.find((result) => result.status === 'rejected')
    if (failed) throw failed.reason
  })

  after(async () => {
    for (const server of [...apis.map((api) => api.server), ...workers]) {
      if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL')
    }
    await database?.drop()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  async function token(baseUrl: string, client: { clientId: string; clientSecret: string }): Promise<string> {
    const response = await fetch(`${baseUrl}/core/oauth2/token`, {
      method: 'POST',
      headers: { authorization: basicAuth(client), 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=client_credentials',
    })
    assert.equal(response.status, 200)
    return ((await response.json()) as { access_token: string }).access_token
  }

  async function createUser(baseUrl: string, accessToken: string): Promise<string> {
    const response = await fetch(`${baseUrl}/core/users`, {
      method: 'POST',
      headers: { ...bearer(accessToken), 'content-type': 'application/json', 'x-service-user-ip': USER_IP },
      body: JSON.stringify(individualUser()),
    })
    assert.equal(response.status, 201, await response.clone().text())
    return ((await response.json()) as { user: { id: string } }).user.id
  }

  const me = (baseUrl: string, accessToken: string, userId: string) => fetch(`${baseUrl}/core/users/me`, { headers: bearer(accessToken, userId) })

  test('the migrations ran once, whichever process took the lock', async () => {
    const client = new pg.Client({ connectionString: database.directUrl })
    await client.connect()
    try {
      const { rows } = await client.query<{ n: number; distinct: number }>('select count(*)::int as n, count(distinct name)::int as distinct from kysely_migration')
      assert.ok(rows[0]!.n > 0)
      assert.equal(rows[0]!.n, rows[0]!.distinct)
    } finally {
      await client.end()
    }
  })

  test('a token of one API process works on the other; a client revoked through the CLI is refused by both at once', async () => {
    const created = await cli(['clients', 'create', '--name', 'Scale-out', '--scopes', '*'], env)
    assert.equal(created.code, 0, created.stderr)
    const client = JSON.parse(created.stdout) as { clientId: string; clientSecret: string }
    const [first, second] = apis.map((api) => api.baseUrl) as [string, string]
    const accessToken = await token(first, client)
    const userId = await createUser(second, accessToken)
    // Both processes have now read (and cached) the client and the user.
    for (let i = 0; i < 3; i++) for (const baseUrl of [first, second]) assert.equal((await me(baseUrl, accessToken, userId)).status, 200)

    const revoked = await cli(['clients', 'revoke', client.clientId], env)
    assert.equal(revoked.code, 0, revoked.stderr)
    // Their caches drop the client on the notification the revocation sent, or they would serve it for a minute.
    await eventually(async () => {
      for (const baseUrl of [first, second]) {
        const response = await me(baseUrl, accessToken, userId)
        assert.equal(response.status, 401)
        assert.equal(((await response.json()) as { code: string }).code, 'token_revoked')
      }
    })
  })

  test('SIGTERM: an API process finishes the request in flight and exits 0 while the other serves on; the workers exit 0', async () => {
    const [stopping, staying] = apis as [(typeof apis)[number], (typeof apis)[number]]
    const accessToken = await token(staying.baseUrl, initial)
    const body = JSON.stringify(individualUser())
    const socket = net.connect(Number(new URL(stopping.baseUrl).port), '127.0.0.1')
    await new Promise((resolve) => socket.once('connect', resolve))
    let received = ''
    socket.on('data', (chunk: Buffer) => (received += chunk.toString()))
    const closed = new Promise((resolve) => socket.once('close', resolve))
    // The headers and half the body now; the rest only after the process was told to stop.
    socket.write(
      `POST /core/users HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${accessToken}\r\nX-Service-User-Ip: ${USER_IP}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body.slice(0, 20)}`,
    )
    await new Promise((resolve) => setTimeout(resolve, 200))
    stopping.server.child.kill('SIGTERM')
    await new Promise((resolve) => setTimeout(resolve, 300))
    socket.write(body.slice(20))
    await closed
    assert.match(received, /^HTTP\/1\.1 201 /)
    assert.equal(await stopping.server.exited, 0)
    await assert.rejects(fetch(`${stopping.baseUrl}/health/live`), 'the stopped process listens no more')

    const userId = (JSON.parse(received.slice(received.indexOf('\r\n\r\n') + 4)) as { user: { id: string } }).user.id
    assert.equal((await me(staying.baseUrl, accessToken, userId)).status, 200, 'the request in flight committed')

    for (const worker of workers) worker.child.kill('SIGTERM')
    assert.deepEqual(await Promise.all(workers.map((worker) => worker.exited)), [0, 0])
    staying.server.child.kill('SIGTERM')
    assert.equal(await staying.server.exited, 0)
  })
})

for (const engine of ENGINES) {
  describe(`shutdown [${engine}]`, () => {
    test('closing the app lets requests in progress finish: none fails with a 500', async () => {
      const ctx = await startApp(engine)
      const token = await ctx.token()
      const users = await Promise.all(Array.from({ length: 5 }, () => ctx.createUser(token)))
      const requests = Array.from({ length: 60 }, (_, i) => ctx.app.inject({ method: 'GET', url: '/core/users/me', headers: bearer(token, users[i % users.length]!.id) }))
      await ctx.close()
      const statuses = (await Promise.all(requests)).map((response) => response.statusCode)
      assert.deepEqual(statuses.filter((status) => status !== 200 && status !== 503), [], `statuses: ${statuses.join(',')}`)
    })
  })
}

describe('caches within one process', () => {
  let ctx: TestContext
  before(async () => {
    ctx = await startApp(ENGINES.at(-1)!)
  })
  after(() => ctx.close())

  test('a revoked client and a deleted user take effect on the next request', async () => {
    const client = await ctx.newClient()
    const token = await ctx.token(client)
    const user = await ctx.createUser(token)
    for (let i = 0; i < 3; i++) assert.equal((await ctx.request({ method: 'GET', url: '/core/users/me', headers: bearer(token, user.id) })).status, 200)
    const removal = await ctx.request({ method: 'DELETE', url: '/core/users/me', headers: bearer(token, user.id), payload: { review: { reason: 'other' } } })
    assert.equal(removal.status, 204)
    assert.equal((await ctx.request({ method: 'GET', url: '/core/users/me', headers: bearer(token, user.id) })).status, 404)
    await ctx.services.clients.revoke(client.clientId)
    assert.equal((await ctx.request({ method: 'GET', url: '/core/users/me', headers: bearer(token, user.id) })).json().code, 'token_revoked')
  })
})
