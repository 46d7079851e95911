import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { Webhook } from 'standardwebhooks'
import { buildApp } from '../../src/app.ts'
import { migrateToLatest, openDatabase } from '../../src/db/database.ts'
import { loadOrCreateSecrets } from '../../src/lib/data-dir.ts'
import { basicAuth, individualUser, localContext, TEST_DATABASE_URL, testConfig, type TestContext } from '../helpers.ts'
import { MAIN, processEnv, ROOT, scratchDatabase } from '../processes.ts'
import { createEndpoint, messagesOf, openPortal, secretOf } from './portal.ts'
import { Receiver } from './receiver.ts'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

interface Worker {
  child: ChildProcess
  exited: Promise<number | null>
}

function startWorker(env: Record<string, string>): Promise<Worker> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN, 'serve', '--role', 'worker'], { cwd: ROOT, env: processEnv(env) })
    const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)))
    let stderr = ''
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString()
      if (/is running background jobs[\s\S]*\n\n$/.test(stderr)) resolve({ child, exited })
    })
    child.stdout.resume()
    void exited.then((code) => reject(new Error(`the worker exited with ${code}: ${stderr}`)))
  })
}

async function waitUntil(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(25)
  }
}

/** The user ids of `core.user.created` messages a receiver got, in the order it got them. */
const userIdsOf = (receiver: Receiver, path?: string) =>
  receiver.received.filter((r) => path === undefined || r.url === path).map((r) => ((JSON.parse(r.body) as { data: { user: { id: string } } }).data.user.id))

describe('webhook delivery by worker processes [postgres]', { skip: TEST_DATABASE_URL ? false : 'needs PostgreSQL (TEST_DATABASE_URL)' }, () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-webhooks-'))
  let env: Record<string, string>
  let ctx: TestContext
  let token: string
  let dropDatabase = async () => {}
  let closeApp = async () => {}
  const workers: Worker[] = []
  const receivers: Receiver[] = []

  before(async () => {
    const scratch = await scratchDatabase('webhooks')
    dropDatabase = scratch.drop
    const secrets = loadOrCreateSecrets(null, testConfig())
    // The workers open the secrets this process seals: one deployment, one sealing key.
    env = {
      DATA_DIR: dataDir,
      DATABASE_URL: scratch.url,
      DATABASE_DIRECT_URL: scratch.directUrl,
      LOG_LEVEL: 'silent',
      SEALING_KEY: secrets.sealingKey,
      WORKER_POLL_INTERVAL_MS: '20',
      WORKER_LEASE_MS: '1000',
      WORKER_CONCURRENCY: '8',
      WEBHOOK_DISPATCH_INTERVAL_MS: '20',
      WEBHOOK_RETRY_SCHEDULE: '50ms,50ms,50ms,50ms,50ms,50ms',
      WEBHOOK_TIMEOUT_MS: '5000',
    }
    const config = testConfig({ DATABASE_URL: scratch.url, DATABASE_POOL_SIZE: '8', SEALING_KEY: secrets.sealingKey })
    const database = await openDatabase(config)
    await migrateToLatest(database)
    // This process serves the API and records events; it never runs jobs itself.
    const built = await buildApp({ config, database, secrets: loadOrCreateSecrets(null, config) })
    ctx = localContext(built.app, built.services, database)
    closeApp = () => built.app.close()
    const client = await built.services.clients.create({ name: 'Webhooks', scopes: '*' })
    const response = await built.app.inject({
      method: 'POST',
      url: '/core/oauth2/token',
      headers: { authorization: basicAuth(client), 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'grant_type=client_credentials',
    })
    token = response.json<{ access_token: string }>().access_token
  })

  after(async () => {
    for (const worker of workers) if (worker.child.exitCode === null) worker.child.kill('SIGKILL')
    for (const receiver of receivers) await receiver.stop()
    await closeApp()
    await dropDatabase()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  test('a worker killed with SIGKILL in the middle of a delivery loses nothing: the message is sent again, same webhook-id, in order', async () => {
    const receiver = new Receiver()
    receivers.push(receiver)
    const url = await receiver.start()
    const portal = await openPortal(ctx, token)
    const endpoint = await createEndpoint(ctx, portal, { url, eventTypes: ['core.user.created'] })
    const { secret } = await secretOf(ctx, portal, endpoint.id)
    const users: string[] = []
    for (let i = 0; i < 12; i++) users.push((await ctx.createUser(token, individualUser())).id)

    // The fifth message is never answered while the first worker lives: the kill lands in the middle of its delivery.
    let hold = true
    let holding = false
    receiver.answer = (received) => {
      const userId = (JSON.parse(received.body) as { data: { user: { id: string } } }).data.user.id
      if (hold && userId === users[4]) {
        holding = true
        return new Promise(() => {})
      }
      return 200
    }
    const first = await startWorker(env)
    workers.push(first)
    await waitUntil(() => holding, 20_000, 'the delivery of the fifth message to begin')
    // The four before it are recorded while it waits for its answer (a slow answer has what waits recorded).
    await waitUntil(async () => (await messagesOf(ctx, portal, endpoint.id, '?status=delivered')).length === 4, 5_000, 'the first four to be recorded')
    first.child.kill('SIGKILL')
    await first.exited
    assert.deepEqual(userIdsOf(receiver), users.slice(0, 5))
    const messages = await messagesOf(ctx, portal, endpoint.id)
    assert.deepEqual(messages.map((message) => message.status).sort(), [...Array(4).fill('delivered'), ...Array(8).fill('pending')], 'the interrupted message was not marked delivered')

    hold = false
    const second = await startWorker(env)
    workers.push(second)
    await waitUntil(async () => (await messagesOf(ctx, portal, endpoint.id, '?status=delivered')).length === 12, 30_000, 'every message delivered')
    second.child.kill('SIGTERM')
    assert.equal(await second.exited, 0)

    // The fifth came twice (the attempt the kill cut, then its redelivery), under one webhook-id; nothing else twice.
    assert.deepEqual(userIdsOf(receiver), [...users.slice(0, 5), ...users.slice(4)])
    const ids = receiver.received.map((received) => received.headers['webhook-id'])
    assert.equal(ids[4], ids[5])
    assert.equal(new Set(ids).size, 12)
    for (const received of receiver.received) new Webhook(secret).verify(received.body, received.headers as Record<string, string>)
  })

  test('two workers never deliver one message at the same time, nor twice; each endpoint gets its events in order', async () => {
    const receiver = new Receiver()
    receivers.push(receiver)
    const base = await receiver.start()
    const portal = await openPortal(ctx, token)
    const endpoints = await Promise.all([1, 2, 3, 4].map((n) => createEndpoint(ctx, portal, { url: `${base}/${n}`, eventTypes: ['core.user.created'] })))
    const inFlight = new Set<string>()
    let overlaps = 0
    receiver.answer = async (received) => {
      const key = `${received.url} ${String(received.headers['webhook-id'])}`
      if (inFlight.has(key)) overlaps++
      inFlight.add(key)
      await sleep(3)
      inFlight.delete(key)
      return 200
    }
    const users: string[] = []
    const creating = (async () => {
      for (let i = 0; i < 40; i++) users.push((await ctx.createUser(token, individualUser())).id)
    })()
    workers.push(await startWorker(env), await startWorker(env))
    await creating
    await waitUntil(async () => {
      const counts = await Promise.all(endpoints.map(async (endpoint) => (await messagesOf(ctx, portal, endpoint.id, '?status=delivered&limit=200')).length))
      return counts.every((count) => count === 40)
    }, 60_000, 'every message delivered by the two workers')

    assert.equal(overlaps, 0, 'no message was in flight twice at once')
    for (const endpoint of endpoints) {
      const path = new URL(endpoint.url).pathname
      assert.deepEqual(userIdsOf(receiver, path), users, `endpoint ${path}: every event once, in order`)
    }
  })
})
