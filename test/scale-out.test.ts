import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import pg from 'pg'
import { bearer, ENGINES, startApp, startPeer, TEST_DATABASE_URL, type TestContext } from './helpers.ts'

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

  test('a process that lost its notification connection reads from the database until it listens again', async () => {
    const client = await first.newClient()
    const token = await first.token(client)
    const user = await first.createUser(token)
    assert.equal((await second.request({ method: 'GET', url: '/core/users/me', headers: bearer(token, user.id) })).status, 200)

    // Cut the LISTEN connections of this schema's processes (other suites share the cluster): any notification
    // sent now is lost.
    const channel = `tessera_changes_${first.database.schema}`
    const admin = new pg.Client({ connectionString: TEST_DATABASE_URL })
    await admin.connect()
    try {
      const listening = `select pid from pg_stat_activity where query = $1 and pid <> pg_backend_pid()`
      const { rows } = await admin.query<{ pid: number }>(listening, [`LISTEN ${pg.escapeIdentifier(channel)}`])
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
        const listeners = await admin.query<{ n: number }>(`select count(*)::int as n from pg_stat_activity where query = $1`, [`LISTEN ${pg.escapeIdentifier(channel)}`])
        assert.equal(listeners.rows[0]!.n, 2)
      }, 10_000)
    } finally {
      await admin.end()
    }
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
