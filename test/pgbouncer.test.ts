// Tessera behind PgBouncer in transaction mode (docs/deployment.md, PgBouncer): what it needs a session for, and the
// safety net when a session is not what it got. The rest of the suite runs through PgBouncer in CI's second pass.
import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { loadConfig } from '../src/config.ts'
import { ChangeFeed } from '../src/db/changes.ts'
import { openDatabase, type DatabaseHandle } from '../src/db/database.ts'
import { createTestDatabase, TEST_DATABASE_URL, THROUGH_PGBOUNCER, type TestDatabase } from './helpers.ts'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

test('DATABASE_DIRECT_URL is a postgres URL, and only beside DATABASE_URL', () => {
  const problems = (env: Record<string, string>) => {
    try {
      loadConfig({ DATA_DIR: ':memory:', ...env })
      return ''
    } catch (error) {
      return (error as Error).message
    }
  }
  assert.match(problems({ DATABASE_DIRECT_URL: 'postgres://db/tessera' }), /DATABASE_DIRECT_URL is set without DATABASE_URL/)
  assert.match(problems({ DATABASE_URL: 'postgres://pgbouncer/tessera', DATABASE_DIRECT_URL: 'mysql://db/tessera' }), /DATABASE_DIRECT_URL must be a postgres/)
  const config = loadConfig({ DATA_DIR: ':memory:', DATABASE_URL: 'postgres://pgbouncer:6432/tessera', DATABASE_DIRECT_URL: 'postgresql://db:5432/tessera' })
  assert.equal(config.databaseDirectUrl, 'postgresql://db:5432/tessera')
  assert.equal(loadConfig({ DATA_DIR: ':memory:', DATABASE_URL: 'postgres://db/tessera' }).databaseDirectUrl, null)
})

// CI runs this file in both passes: in the direct one the suite is left out rather than skipped (a skip in CI is a
// failure); the PgBouncer pass runs it.
const throughPgBouncer = Boolean(TEST_DATABASE_URL && THROUGH_PGBOUNCER)
const pgBouncerSuite = throughPgBouncer || process.env.CI !== 'true' ? describe : () => {}
pgBouncerSuite('the change feed behind PgBouncer', { skip: !throughPgBouncer && 'needs PgBouncer (TEST_DATABASE_DIRECT_URL beside TEST_DATABASE_URL)' }, () => {
  let scratch: TestDatabase
  const opened: DatabaseHandle[] = []
  const feeds: ChangeFeed[] = []
  after(async () => {
    for (const feed of feeds) await feed.stop()
    for (const database of opened) await database.close()
    await scratch?.drop()
  })

  async function feedOn(directUrl: string) {
    scratch ??= await createTestDatabase('feed')
    const database = await openDatabase({ databaseUrl: scratch.url, databaseDirectUrl: directUrl, databasePoolSize: 2, dataDir: null })
    opened.push(database)
    const feed = new ChangeFeed()
    feeds.push(feed)
    const logged: { level: string; message: string }[] = []
    await feed.listen(database, {
      error: (_object, message) => logged.push({ level: 'error', message }),
      info: (_object, message) => logged.push({ level: 'info', message }),
    })
    return { feed, logged }
  }

  test('a LISTEN through PgBouncer is found deaf: the feed stays not live (caches bypassed) and says so once', async () => {
    // The misconfiguration: no direct URL, so LISTEN goes through PgBouncer too.
    scratch ??= await createTestDatabase('feed')
    const { feed, logged } = await feedOn(scratch.url)
    await sleep(6_500)
    assert.equal(feed.isLive(), false)
    assert.deepEqual(logged.map((entry) => entry.level), ['error'])
    assert.match(logged[0]!.message, /DATABASE_DIRECT_URL .* must reach PostgreSQL itself/)
  })

  test('on a direct connection it hears its probe and is live', async () => {
    scratch ??= await createTestDatabase('feed')
    const { feed, logged } = await feedOn(scratch.directUrl)
    const deadline = Date.now() + 10_000
    while (!feed.isLive() && Date.now() < deadline) await sleep(20)
    assert.equal(feed.isLive(), true)
    assert.deepEqual(logged, [])
  })
})
