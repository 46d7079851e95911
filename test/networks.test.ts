import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { describe, test } from 'node:test'
import { bearer, ENGINES, startApp, testConfig, useApp } from './helpers.ts'
import { buildApp } from '../src/app.ts'
import { migrateToLatest, openDatabase } from '../src/db/database.ts'
import { loadOrCreateSecrets } from '../src/lib/data-dir.ts'

const shipped = JSON.parse(fs.readFileSync(path.resolve(import.meta.dirname, '../reference-data/networks.json'), 'utf8')) as {
  networks: { code: string; type: string; chains?: { main: { exampleAddress: string }; test: { exampleAddress: string } } }[]
}

for (const engine of ENGINES) {
  describe(`networks [${engine}]`, () => {
    const suite = useApp(engine)

    const validate = (network: string, body: unknown, headers: Record<string, string> = {}) =>
      suite.ctx.request({ method: 'POST', url: `/core/networks/${network}/validate-address`, headers: { ...bearer(suite.token), ...headers }, payload: body as Record<string, unknown> })

    test('lists every network of the catalogue, filtered by type', async () => {
      const all = await suite.ctx.request({ method: 'GET', url: '/core/networks', headers: bearer(suite.token) })
      assert.equal(all.status, 200)
      const codes = all.json<{ networks: { code: string }[] }>().networks.map((n) => n.code)
      assert.deepEqual(codes, shipped.networks.map((n) => n.code))
      for (const required of ['bitcoin', 'ethereum', 'xrp-ledger', 'solana', 'litecoin', 'ach', 'fps', 'sepa', 'wire', 'fednow', 'rtp']) assert.ok(codes.includes(required), required)

      const some = await suite.ctx.request({ method: 'GET', url: '/core/networks?type=crypto,card', headers: bearer(suite.token) })
      const types = new Set(some.json<{ networks: { type: string }[] }>().networks.map((n) => n.type))
      assert.deepEqual([...types].sort(), ['card', 'crypto'])
      assert.equal((await suite.ctx.request({ method: 'GET', url: '/core/networks?type=rocket', headers: bearer(suite.token) })).status, 400)
    })

    test('a sandbox shows test-chain example addresses and explorers', async () => {
      const response = await suite.ctx.request({ method: 'GET', url: '/core/networks/bitcoin', headers: bearer(suite.token) })
      assert.equal(response.status, 200)
      const { network } = response.json<{ network: { exampleAddress: string; explorer: { addressUrl: string } } }>()
      assert.match(network.exampleAddress, /^tb1/)
      assert.match(network.explorer.addressUrl, /testnet/)
      const xrp = (await suite.ctx.request({ method: 'GET', url: '/core/networks/xrp-ledger', headers: bearer(suite.token) })).json<{ network: unknown }>()
      assert.deepEqual((xrp.network as { reference: unknown }).reference, { type: 'destination-tag' })
    })

    test('an unknown network is 404', async () => {
      const response = await suite.ctx.request({ method: 'GET', url: '/core/networks/dogecoin', headers: bearer(suite.token) })
      assert.equal(response.status, 404)
      assert.deepEqual(response.json(), { code: 'entity_not_found', message: 'The network cannot be found', details: { entity: 'network' } })
      assert.equal((await validate('dogecoin', { address: 'D5' })).status, 404)
    })

    test('validates addresses on the sandbox chain', async () => {
      for (const network of shipped.networks.filter((n) => n.type === 'crypto')) {
        const valid = await validate(network.code, { address: network.chains!.test.exampleAddress })
        assert.deepEqual(valid.json(), { isValid: true }, network.code)
      }
      const mainnet = await validate('bitcoin', { address: shipped.networks[0]!.chains!.main.exampleAddress })
      assert.equal(mainnet.json().isValid, false, 'a main-chain address cannot receive on the sandbox chain')
      const corrupted = await validate('ethereum', { address: '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD' })
      assert.deepEqual(corrupted.json<{ isValid: boolean; error: { code: string } }>().error.code, 'address_invalid')
    })

    test('destination tags are checked as references', async () => {
      const address = 'rHb9CJAWyB4rj91VRWn96DkukG4bwdtyTh'
      assert.deepEqual((await validate('xrp-ledger', { address, reference: '12345' })).json(), { isValid: true })
      const bad = await validate('xrp-ledger', { address, reference: '4294967296' })
      assert.deepEqual(bad.json<{ error: { code: string; details: unknown } }>().error.code, 'reference_invalid')
      const notTaken = await validate('bitcoin', { address: shipped.networks[0]!.chains!.test.exampleAddress, reference: '1' })
      assert.equal(notTaken.json<{ error: { code: string } }>().error.code, 'reference_invalid')
    })

    test('a network without addresses is 409; bad bodies are 400', async () => {
      const bank = await validate('sepa', { address: 'DE89370400440532013000' })
      assert.equal(bank.status, 409)
      assert.deepEqual(bank.json(), { code: 'operation_not_allowed', message: 'Network must be a crypto network' })
      for (const body of [{}, { address: 42 }, { address: ' padded' }, { address: 'x', reference: 7 }]) {
        const response = await validate('bitcoin', body)
        assert.equal(response.status, 400, JSON.stringify(body))
      }
    })

    test('users may use reference data too', async () => {
      const user = await suite.ctx.createUser(suite.token)
      assert.equal((await suite.ctx.request({ method: 'GET', url: '/core/networks', headers: bearer(suite.token, user.id) })).status, 200)
    })
  })
}

describe('networks in production and from operator files', () => {
  test('production shows and accepts main-chain addresses', async () => {
    const config = testConfig({ TESSERA_ENV: 'production', TOKEN_SIGNING_KEY: loadOrCreateSecrets(null, testConfig()).tokenSigningKey, SEALING_KEY: Buffer.alloc(32, 1).toString('base64'), PRICE_FEED: 'simulated' })
    const database = await openDatabase({ ...config, databaseUrl: null, dataDir: null })
    await migrateToLatest(database)
    const { services, app } = await buildApp({ config, database, secrets: loadOrCreateSecrets(null, config) })
    try {
      assert.match(String((services.networks.get('bitcoin') as { exampleAddress: string }).exampleAddress), /^bc1/)
      assert.deepEqual(services.networks.validateAddress('bitcoin', shipped.networks[0]!.chains!.main.exampleAddress), { isValid: true })
      assert.equal(services.networks.validateAddress('bitcoin', shipped.networks[0]!.chains!.test.exampleAddress).isValid, false)
    } finally {
      await app.close()
    }
  })

  test('an operator file replaces the shipped one, and a broken one stops the start naming it', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-reference-'))
    try {
      fs.writeFileSync(path.join(dir, 'networks.json'), JSON.stringify({ networks: [{ code: 'sepa', name: 'SEPA', type: 'bank' }] }))
      // Rails name networks, so a catalogue with fewer networks comes with its own rails.
      fs.writeFileSync(path.join(dir, 'rails.json'), JSON.stringify({ rails: [{ type: 'bank', network: 'sepa', method: 'bank-transfer', asset: 'EUR', decimals: 2, features: ['deposit'] }] }))
      const ctx = await startApp('pglite', { REFERENCE_DATA_DIR: dir })
      try {
        assert.deepEqual(ctx.services.networks.list().map((n) => n.code), ['sepa'])
      } finally {
        await ctx.close()
      }
      fs.writeFileSync(path.join(dir, 'networks.json'), JSON.stringify({ networks: [{ code: 'BTC!', type: 'crypto' }] }))
      await assert.rejects(startApp('pglite', { REFERENCE_DATA_DIR: dir }), /networks\.json is invalid/)
      fs.writeFileSync(path.join(dir, 'networks.json'), JSON.stringify({ networks: [{ code: 'btc', name: 'B', type: 'crypto', addressFamily: 'bitcoin', chains: { main: { exampleAddress: 'nope' }, test: { exampleAddress: 'nope' } } }] }))
      await assert.rejects(startApp('pglite', { REFERENCE_DATA_DIR: dir }), /example address is not valid/)
      fs.writeFileSync(path.join(dir, 'networks.json'), JSON.stringify({ networks: [{ code: 'ach', name: 'ACH', type: 'bank' }] }))
      await assert.rejects(startApp('pglite', { REFERENCE_DATA_DIR: dir }), /rails:[\s\S]*unknown network sepa/)
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })
})
