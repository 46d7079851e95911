import assert from 'node:assert/strict'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { describe, test } from 'node:test'
import { RailsService } from '../src/modules/reference/rails.service.ts'
import { bearer, ENGINES, startApp, useApp } from './helpers.ts'

type RailOut = { type: string; network: string; method: string; asset: string; decimals: number; features: string[]; contractAddress?: string }

for (const engine of ENGINES) {
  describe(`rails [${engine}]`, () => {
    const suite = useApp(engine)

    const list = async (query = '') => {
      const response = await suite.ctx.request({ method: 'GET', url: `/core/rails${query}`, headers: bearer(suite.token) })
      assert.equal(response.status, 200, response.body)
      return response.json<{ rails: RailOut[] }>().rails
    }

    test('lists the rails of the catalogue over networks it knows, with sandbox contracts', async () => {
      const rails = await list()
      assert.ok(rails.length >= 15)
      const networks = new Set(suite.ctx.services.networks.list().map((n) => n.code))
      for (const rail of rails) assert.ok(networks.has(rail.network), rail.network)
      const usdc = rails.find((r) => r.network === 'ethereum' && r.asset === 'USDC')
      assert.equal(usdc?.contractAddress, '0x1c7D4B196Cb0C7B01d743Fbc6116a902379C7238', 'the Sepolia contract in sandbox')
      assert.equal(rails.find((r) => r.network === 'ethereum' && r.asset === 'USDT'), undefined, 'no test-chain contract, no sandbox rail')
      assert.deepEqual(rails.find((r) => r.network === 'ach')?.features, ['deposit', 'withdraw'])
    })

    test('filters combine, values are comma-separated, asset codes are case-insensitive', async () => {
      const crypto = await list('?type=crypto')
      assert.ok(crypto.length > 0 && crypto.every((r) => r.type === 'crypto'))
      const usdc = await list('?asset=usdc')
      assert.deepEqual(usdc.map((r) => r.network).sort(), ['ethereum', 'solana'])
      const mixed = await list('?type=bank,card&asset=USD&method=bank-transfer')
      assert.ok(mixed.length > 0 && mixed.every((r) => r.type === 'bank' && r.asset === 'USD'))
      assert.deepEqual(await list('?network=fps'), [{ type: 'bank', network: 'fps', method: 'bank-transfer', asset: 'GBP', decimals: 2, features: ['deposit', 'withdraw'] }])
      assert.deepEqual(await list('?network=nowhere'), [])
    })

    test('malformed filters are 400', async () => {
      for (const query of ['?type=rocket', '?method=carrier-pigeon', '?type=', '?asset=US$']) {
        const response = await suite.ctx.request({ method: 'GET', url: `/core/rails${query}`, headers: bearer(suite.token) })
        assert.equal(response.status, 400, query)
      }
    })
  })
}

describe('rails catalogue checks', () => {
  const networkType = (code: string) => ({ bitcoin: 'crypto', sepa: 'bank' })[code]

  test('a rail over an unknown network, a network of another type or an unknown asset stops the start', () => {
    const rail = { type: 'crypto' as const, network: 'bitcoin', method: 'crypto-transaction' as const, asset: 'BTC', decimals: 8, features: ['deposit' as const] }
    assert.throws(() => new RailsService([{ ...rail, network: 'dogecoin' }], 'test', { networkType }), /unknown network dogecoin/)
    assert.throws(() => new RailsService([{ ...rail, network: 'sepa' }], 'test', { networkType }), /sepa is bank, not crypto/)
    assert.throws(() => new RailsService([rail], 'test', { networkType, hasAsset: () => false }), /unknown asset BTC/)
    assert.throws(() => new RailsService([rail, rail], 'test', { networkType }), /defined twice/)
  })

  test('production offers the main-chain contracts', () => {
    const token = { type: 'crypto' as const, network: 'bitcoin', method: 'crypto-transaction' as const, asset: 'X', decimals: 6, features: ['deposit' as const], chains: { main: { contractAddress: 'M' }, test: { contractAddress: 'T' } } }
    assert.equal((new RailsService([token], 'main', { networkType }).list()[0] as RailOut).contractAddress, 'M')
    assert.equal((new RailsService([token], 'test', { networkType }).list()[0] as RailOut).contractAddress, 'T')
  })

  test('an operator file replaces the shipped rails', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tessera-rails-'))
    try {
      fs.writeFileSync(path.join(dir, 'rails.json'), JSON.stringify({ rails: [{ type: 'bank', network: 'sepa', method: 'bank-transfer', asset: 'EUR', decimals: 2, features: ['deposit'] }] }))
      const ctx = await startApp('pglite', { REFERENCE_DATA_DIR: dir })
      try {
        const token = await ctx.token()
        const response = await ctx.request({ method: 'GET', url: '/core/rails', headers: bearer(token) })
        assert.deepEqual(response.json<{ rails: RailOut[] }>().rails.map((r) => r.network), ['sepa'])
      } finally {
        await ctx.close()
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })
})
