/**
 * Key rotation on PostgreSQL while two `tessera serve` processes take traffic: `tessera keys rotate` adds a sealing
 * and a signing key, `tessera keys reseal` moves every secret, and through it all nothing answers 5xx, every token
 * verifies on either process (old ones until they expire, new ones as soon as they are issued), the connector's
 * credentials and the webhook secret still open, and webhooks stay signed with the same secret. Then the old keys
 * retire once nothing needs them.
 */
import assert from 'node:assert/strict'
import { generateKeyPairSync, randomBytes } from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { decodeJwt, decodeProtectedHeader } from 'jose'
import pg from 'pg'
import { Webhook } from 'standardwebhooks'
import { sealingKeyId } from '../src/lib/sealing.ts'
import { SigningKey } from '../src/modules/auth/index.ts'
import type { KeyView, ResealReport } from '../src/modules/keys/index.ts'
import { POSTGRES_ONLY, REQUEST_TIMEOUT_MS, sleep, waitUntil } from './crash.ts'
import { basicAuth, individualUser, USER_IP } from './helpers.ts'
import { cli, freePort, scratchDatabase, serve, type Server } from './processes.ts'
import { Receiver } from './webhooks/receiver.ts'

const CONNECTOR = '/kyc-connector/veriff/config'
const REFRESH_MS = 250
const TOKEN_TTL_SECONDS = 60

interface Answer {
  status: number
  body: string
}

describe('key rotation while two API processes serve [postgres]', POSTGRES_ONLY, () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-keys-rotation-'))
  const root = randomBytes(32).toString('base64')
  const pem = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()
  const receiver = new Receiver()
  const servers: Server[] = []
  let dropDatabase = async () => {}
  let databaseUrl = ''
  let env: Record<string, string> = {}
  let urls: [string, string] = ['', '']
  let client: { clientId: string; clientSecret: string }

  before(async () => {
    const scratch = await scratchDatabase('keys_rotation')
    dropDatabase = scratch.drop
    databaseUrl = scratch.directUrl
    const ports = [await freePort(), await freePort()] as const
    urls = [`http://127.0.0.1:${ports[0]}`, `http://127.0.0.1:${ports[1]}`]
    env = {
      DATA_DIR: dataDir,
      DATABASE_URL: scratch.url,
      DATABASE_DIRECT_URL: scratch.directUrl,
      HOST: '127.0.0.1',
      // One deployment behind one address: both processes issue tokens for the same issuer.
      PUBLIC_URL: urls[0],
      LOG_LEVEL: 'silent',
      SEALING_KEY: root,
      TOKEN_SIGNING_KEY: pem,
      KEY_RING_REFRESH_MS: String(REFRESH_MS),
      ACCESS_TOKEN_TTL_SECONDS: String(TOKEN_TTL_SECONDS),
      WIDGET_SESSION_TTL_SECONDS: String(TOKEN_TTL_SECONDS),
      RATE_LIMIT_PER_MINUTE: '0',
      TOKEN_RATE_LIMIT_PER_MINUTE: '0',
      WORKER_POLL_INTERVAL_MS: '50',
      WEBHOOK_DISPATCH_INTERVAL_MS: '50',
      WEBHOOK_RETRY_SCHEDULE: '100ms,100ms,100ms,100ms,100ms',
    }
    const migrated = await cli(['migrate'], env)
    assert.equal(migrated.code, 0, migrated.stderr)
    const created = await cli(['clients', 'create', '--name', 'Rotation', '--scopes', '*'], env)
    assert.equal(created.code, 0, created.stderr)
    client = JSON.parse(created.stdout) as { clientId: string; clientSecret: string }
    for (const port of ports) servers.push(await serve({ ...env, PORT: String(port) }))
  })

  after(async () => {
    for (const server of servers) {
      if (server.child.exitCode === null && server.child.signalCode === null) {
        server.child.kill('SIGTERM')
        await server.exited
      }
    }
    await receiver.stop()
    await dropDatabase()
    fs.rmSync(dataDir, { recursive: true, force: true })
  })

  async function send(server: number, method: string, route: string, options: { token?: string; headers?: Record<string, string>; body?: unknown; form?: string } = {}): Promise<Answer> {
    const headers: Record<string, string> = { ...options.headers }
    if (options.token) headers.authorization = `Bearer ${options.token}`
    if (options.body !== undefined) headers['content-type'] = 'application/json'
    if (options.form !== undefined) headers['content-type'] = 'application/x-www-form-urlencoded'
    const response = await fetch(`${urls[server]}${route}`, {
      method,
      headers,
      body: options.form ?? (options.body === undefined ? undefined : JSON.stringify(options.body)),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    })
    return { status: response.status, body: await response.text() }
  }

  async function issue(server: number): Promise<string> {
    const answer = await send(server, 'POST', '/core/oauth2/token', { headers: { authorization: basicAuth(client) }, form: 'grant_type=client_credentials' })
    assert.equal(answer.status, 200, answer.body)
    return (JSON.parse(answer.body) as { access_token: string }).access_token
  }

  const jwks = async (server: number) => (JSON.parse((await send(server, 'GET', '/.well-known/jwks.json')).body) as { keys: { kid: string }[] }).keys.map((key) => key.kid).sort()
  const cli$ = async (args: string[]) => {
    const run = await cli(args, env)
    assert.equal(run.code, 0, `${args.join(' ')}: ${run.stderr}`)
    return JSON.parse(run.stdout) as unknown
  }

  test('rotate both keys and re-seal while both processes serve: no 5xx, every token verifies, every secret opens', async () => {
    const oldToken = await issue(0)
    assert.equal(decodeProtectedHeader(oldToken).kid, new SigningKey(pem).kid)
    const secrets = ['first', 'second'].map((name) => ({ name, apiKey: `${randomBytes(12).toString('hex')}-api`, sharedSecretKey: `${randomBytes(12).toString('hex')}-shared`, processes: ['profile', 'identity'] }))
    const saved = await send(0, 'PUT', CONNECTOR, { token: oldToken, body: { integrations: secrets } })
    assert.equal(saved.status, 200, saved.body)
    const masked = (body: string) => JSON.stringify((JSON.parse(body) as { config: { integrations: unknown[] } }).config.integrations)
    const expected = masked(saved.body)

    // The webhook portal: an endpoint on a local receiver, and its signing secret.
    const link = await send(0, 'POST', '/core/webhooks/management-link', { token: oldToken })
    assert.equal(link.status, 200, link.body)
    const linkToken = new URLSearchParams(new URL((JSON.parse(link.body) as { managementLink: { url: string } }).managementLink.url).hash.slice(1)).get('link')
    const session = await send(0, 'POST', '/hosted/webhooks/api/sessions', { body: { link: linkToken } })
    assert.equal(session.status, 201, session.body)
    const portal = { authorization: `Bearer ${(JSON.parse(session.body) as { session: { token: string } }).session.token}` }
    const endpoint = await send(0, 'POST', '/hosted/webhooks/api/endpoints', { headers: portal, body: { url: await receiver.start(), eventTypes: ['core.user.created'] } })
    assert.equal(endpoint.status, 201, endpoint.body)
    const endpointId = (JSON.parse(endpoint.body) as { endpoint: { id: string } }).endpoint.id
    const secretRoute = `/hosted/webhooks/api/endpoints/${endpointId}/secret`
    const webhookSecret = (JSON.parse((await send(0, 'GET', secretRoute, { headers: portal })).body) as { secret: string }).secret

    // Traffic on both processes until told to stop; whatever is not the expected answer is a failure.
    const failures: string[] = []
    const counts = { requests: 0, crossProcessNewTokens: 0, usersCreated: 0 }
    const rotation: { signingKid?: string } = {}
    let stopping = false
    const check = (what: string, answer: Answer, status: number, body?: (text: string) => boolean) => {
      counts.requests++
      if (answer.status !== status || (body && !body(answer.body))) failures.push(`${what}: ${answer.status} ${answer.body.slice(0, 300)}`)
    }
    const stream = async (n: number) => {
      for (let i = 0; !stopping; i++) {
        const server = (n + i) % 2
        const other = 1 - server
        try {
          switch (i % 5) {
            case 0:
              check(`old token, connector read on ${server}`, await send(server, 'GET', CONNECTOR, { token: oldToken }), 200, (body) => masked(body) === expected)
              break
            case 1:
              check(`webhook secret on ${server}`, await send(server, 'GET', secretRoute, { headers: portal }), 200, (body) => (JSON.parse(body) as { secret: string }).secret === webhookSecret)
              break
            case 2: {
              // A token from one process, used at once on the other.
              const issued = await send(server, 'POST', '/core/oauth2/token', { headers: { authorization: basicAuth(client) }, form: 'grant_type=client_credentials' })
              check(`token from ${server}`, issued, 200)
              if (issued.status !== 200) break
              const fresh = (JSON.parse(issued.body) as { access_token: string }).access_token
              check(`new token on ${other}`, await send(other, 'GET', CONNECTOR, { token: fresh }), 200, (body) => masked(body) === expected)
              if (rotation.signingKid !== undefined && decodeProtectedHeader(fresh).kid === rotation.signingKid) counts.crossProcessNewTokens++
              break
            }
            case 3: {
              // Sealed anew by whichever key that process seals with now.
              check(`connector write on ${server}`, await send(server, 'PUT', CONNECTOR, { token: oldToken, body: { integrations: secrets } }), 200)
              break
            }
            default: {
              const created = await send(server, 'POST', '/core/users', { token: oldToken, headers: { 'x-service-user-ip': USER_IP }, body: individualUser() })
              check(`user creation on ${server}`, created, 201)
              if (created.status === 201) counts.usersCreated++
            }
          }
        } catch (error) {
          failures.push(`stream ${n}: ${String(error)}`)
          return
        }
      }
    }
    const streams = [0, 1, 2, 3].map((n) => stream(n))
    let sealing: KeyView
    let signing: KeyView
    try {
      await sleep(500)
      ;[sealing, signing] = (await cli$(['keys', 'rotate'])) as [KeyView, KeyView]
      assert.deepEqual([sealing.purpose, signing.purpose], ['sealing', 'signing'])
      assert.equal(new Date(signing.activatesAt).getTime() - new Date(signing.createdAt).getTime(), 2 * REFRESH_MS, 'published at once, signing once every process has read it')
      rotation.signingKid = signing.id
      // Both processes publish the new key (each reads the ring on the change feed, or within REFRESH_MS) and sign with it.
      const both = [new SigningKey(pem).kid, signing.id].sort()
      for (const server of [0, 1]) await waitUntil(async () => JSON.stringify(await jwks(server)) === JSON.stringify(both), 5_000, `the key set of process ${server} to list both keys`)
      for (const server of [0, 1]) await waitUntil(async () => decodeProtectedHeader(await issue(server)).kid === signing.id, 5_000, `process ${server} to sign with the new key`)

      const report = (await cli$(['keys', 'reseal', '--batch-size', '1'])) as ResealReport
      assert.equal(report.key, sealing.id)
      assert.deepEqual(report.remaining, {})
      assert.ok(report.sets.every((set) => set.unopenable.length === 0))
      await sleep(1_000)
    } finally {
      stopping = true
      await Promise.all(streams)
    }

    assert.deepEqual(failures, [])
    assert.ok(counts.requests > 50, `traffic flowed (${counts.requests} requests)`)
    assert.ok(counts.crossProcessNewTokens > 0, 'tokens signed with the new key verified on the other process')

    // Every sealed value is under the new key, and still opens.
    const database = new pg.Client({ connectionString: databaseUrl })
    await database.connect()
    try {
      const { rows } = await database.query<{ key_id: string }>(`
        select split_part(v, '.', 2) as key_id from kyc_connector_configs, jsonb_array_elements(integrations) i, lateral (values (i->>'apiKey'), (i->>'sharedSecretKey')) f(v)
        union all select split_part(secret_sealed, '.', 2) from webhook_endpoints`)
      assert.deepEqual([...new Set(rows.map((row) => row.key_id))], [sealing.id])
    } finally {
      await database.end()
    }
    for (const server of [0, 1]) {
      assert.equal(masked((await send(server, 'GET', CONNECTOR, { token: oldToken })).body), expected)
      assert.equal((JSON.parse((await send(server, 'GET', secretRoute, { headers: portal })).body) as { secret: string }).secret, webhookSecret)
    }
    // The workers of both processes signed every delivery with the same secret, before and after the re-seal.
    await waitUntil(async () => receiver.received.length >= counts.usersCreated, 20_000, 'every user creation to be delivered')
    for (const received of receiver.received) new Webhook(webhookSecret).verify(received.body, received.headers as Record<string, string>)

    // The old sealing key retires once no process seals with it; the old signing key not while its tokens live.
    await sleep(REFRESH_MS)
    const firstSealing = sealingKeyId(root)
    assert.equal(((await cli$(['keys', 'retire', firstSealing])) as KeyView).status, 'retired')
    const early = await cli(['keys', 'retire', new SigningKey(pem).kid], env)
    assert.equal(early.code, 2)
    assert.match(early.stderr, /Tokens signed with key .* may be valid until/)

    // The old token verifies on both processes until it expires, then is refused as expired: never a 5xx.
    const expiresAt = decodeJwt(oldToken).exp! * 1000
    while (Date.now() < expiresAt - 1_000) {
      for (const server of [0, 1]) assert.equal((await send(server, 'GET', CONNECTOR, { token: oldToken })).status, 200)
      await sleep(2_000)
    }
    await sleep(Math.max(0, expiresAt + 1_000 - Date.now()))
    for (const server of [0, 1]) {
      const expired = await send(server, 'GET', CONNECTOR, { token: oldToken })
      assert.equal(expired.status, 401, expired.body)
      assert.equal((JSON.parse(expired.body) as { code: string }).code, 'token_expired')
    }

    // Once no token it signed can be valid, the old signing key retires and leaves the key set of both processes.
    await sleep(Math.max(0, new Date(signing.activatesAt).getTime() + REFRESH_MS + TOKEN_TTL_SECONDS * 1000 - Date.now() + 100))
    assert.equal(((await cli$(['keys', 'retire', new SigningKey(pem).kid])) as KeyView).status, 'retired')
    for (const server of [0, 1]) await waitUntil(async () => JSON.stringify(await jwks(server)) === JSON.stringify([signing.id]), 5_000, `process ${server} to drop the retired key`)
    const token = await issue(1)
    assert.equal(masked((await send(0, 'GET', CONNECTOR, { token })).body), expected)
  })
})
