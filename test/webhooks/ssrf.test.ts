import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { buildApp, type Services } from '../../src/app.ts'
import { migrateToLatest, openDatabase } from '../../src/db/database.ts'
import { loadOrCreateSecrets } from '../../src/lib/data-dir.ts'
import type { Resolver } from '../../src/lib/outbound-address.ts'
import type { App } from '../../src/http/types.ts'
import { basicAuth, testConfig } from '../helpers.ts'
import { Receiver } from './receiver.ts'

const PORTAL_API = '/hosted/webhooks/api'

/**
 * Production refuses endpoints on loopback, private and link-local addresses: when they are added, and again at every
 * delivery, so that a name which resolved to a public address when it was saved and to a private one later
 * (DNS rebinding) still reaches nothing. The names resolve through a resolver the test controls.
 */
describe('webhook endpoints in production reach public addresses only', () => {
  const answers = new Map<string, string[]>()
  const resolver: Resolver = async (host) => {
    const addresses = answers.get(host)
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' })
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }))
  }
  let app: App
  let services: Services
  let portal: Record<string, string>
  const receiver = new Receiver()
  let receiverPort: string

  before(async () => {
    const config = testConfig({
      TESSERA_ENV: 'production',
      TOKEN_SIGNING_KEY: loadOrCreateSecrets(null, testConfig()).tokenSigningKey,
      SEALING_KEY: Buffer.alloc(32, 5).toString('base64'),
      PRICE_FEED: 'simulated',
      WEBHOOK_RETRY_SCHEDULE: '10ms',
    })
    const database = await openDatabase({ ...config, databaseUrl: null, dataDir: null })
    await migrateToLatest(database)
    const built = await buildApp({ config, database, secrets: loadOrCreateSecrets(null, config), outboundResolver: resolver })
    app = built.app
    services = built.services
    receiverPort = new URL(await receiver.start()).port
    const client = await services.clients.create({ name: 'Production client', scopes: '*' })
    const token = (await app.inject({
      method: 'POST',
      url: '/core/oauth2/token',
      headers: { authorization: basicAuth(client), 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'grant_type=client_credentials',
    })).json<{ access_token: string }>().access_token
    const link = (await app.inject({ method: 'POST', url: '/core/webhooks/management-link', headers: { authorization: `Bearer ${token}` } })).json<{ managementLink: { url: string } }>().managementLink.url
    const session = await app.inject({ method: 'POST', url: `${PORTAL_API}/sessions`, payload: { link: new URLSearchParams(new URL(link).hash.slice(1)).get('link') } })
    portal = { authorization: `Bearer ${session.json<{ session: { token: string } }>().session.token}` }
  })
  after(async () => {
    await receiver.stop()
    await app?.close()
  })

  const add = (url: string) => app.inject({ method: 'POST', url: `${PORTAL_API}/endpoints`, headers: portal, payload: { url, eventTypes: ['core.user.created'] } })

  test('an endpoint on a loopback, private, link-local or metadata address is refused when it is added', async () => {
    answers.set('internal.example.com', ['10.20.30.40'])
    answers.set('mixed.example.com', ['93.184.216.34', '192.168.1.10'])
    answers.set('metadata.example.com', ['169.254.169.254'])
    answers.set('localhost', ['127.0.0.1', '::1'])
    for (const url of [
      `http://127.0.0.1:${receiverPort}/hooks`,
      'http://localhost/hooks',
      'http://10.0.0.1/hooks',
      'http://10.255.255.254/hooks',
      'http://169.254.169.254/latest/meta-data/',
      'http://[::1]/hooks',
      'http://[::ffff:127.0.0.1]/hooks',
      'http://[fd00::1]/hooks',
      'http://0.0.0.0/hooks',
      'https://internal.example.com/hooks',
      'https://mixed.example.com/hooks',
      'https://metadata.example.com/hooks',
      'https://unresolvable.example.com/hooks',
    ]) {
      const response = await add(url)
      assert.equal(response.statusCode, 400, `${url}: ${response.body}`)
      assert.deepEqual(response.json<{ details: { violations: unknown[] } }>().details.violations, [{ property: 'url', rule: 'publicAddress' }], url)
    }
    const listed = (await app.inject({ method: 'GET', url: `${PORTAL_API}/endpoints`, headers: portal })).json<{ endpoints: unknown[] }>().endpoints
    assert.deepEqual(listed, [])
  })

  test('a name that resolved to a public address when added and to a private one at delivery is refused then, and recorded', async () => {
    answers.set('rebinding.example.com', ['93.184.216.34'])
    const added = await add(`http://rebinding.example.com:${receiverPort}/hooks`)
    assert.equal(added.statusCode, 201, added.body)
    const endpointId = added.json<{ endpoint: { id: string } }>().endpoint.id
    for (const address of ['127.0.0.1', '10.0.0.7', '169.254.169.254', '::1']) {
      answers.set('rebinding.example.com', [address])
      const tested = await app.inject({ method: 'POST', url: `${PORTAL_API}/endpoints/${endpointId}/test`, headers: portal, payload: { type: 'core.user.created' } })
      assert.equal(tested.statusCode, 202, tested.body)
      const enabled = await app.inject({ method: 'PATCH', url: `${PORTAL_API}/endpoints/${endpointId}`, headers: portal, payload: { enabled: true } })
      assert.equal(enabled.statusCode, 200)
      for (let i = 0; i < 20; i++) {
        await services.webhooks.dispatch()
        await services.worker.drain()
        await new Promise((resolve) => setTimeout(resolve, 15))
      }
    }
    assert.equal(receiver.received.length, 0, 'the receiver on loopback was never reached')
    const attempts = (await app.inject({ method: 'GET', url: `${PORTAL_API}/endpoints/${endpointId}/attempts?limit=200`, headers: portal })).json<{ attempts: { succeeded: boolean; error: string; responseStatus?: number }[] }>().attempts
    assert.ok(attempts.length >= 4, `attempts: ${attempts.length}`)
    assert.ok(attempts.every((attempt) => !attempt.succeeded && attempt.error === 'address-refused' && attempt.responseStatus === undefined))
  })
})
