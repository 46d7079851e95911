import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { describe, test } from 'node:test'
import { sql } from 'kysely'
import { buildApp } from '../src/app.ts'
import { migrateToLatest, openDatabase } from '../src/db/database.ts'
import { enqueue } from '../src/jobs/queue.ts'
import { loadOrCreateSecrets } from '../src/lib/data-dir.ts'
import { ASSET_EVENTS, COOLDOWN_END_JOB } from '../src/modules/reference/index.ts'
import { bearer, ENGINES, individualUser, testConfig, useApp } from './helpers.ts'

interface Asset {
  code: string
  name: string
  type: string
  symbol?: string
  decimals: number
  delisted: boolean
  logo: string
  features: string[]
  cooldowns: { rule: string; features: string[]; endsAt: string }[]
}

const referenceData = path.resolve(import.meta.dirname, '../reference-data')
const shipped = JSON.parse(fs.readFileSync(path.join(referenceData, 'assets.json'), 'utf8')) as { assets: Asset[] }
const ALL_FEATURES = ['buy', 'deposit', 'sell', 'transfer', 'withdraw']
const DAY_MS = 24 * 3_600_000

describe('asset catalogue', () => {
  test('holds the required fiat currencies and crypto assets', () => {
    const codes = new Set(shipped.assets.map((a) => a.code))
    for (const code of ['USD', 'EUR', 'GBP', 'JPY', 'CHF', 'BTC', 'ETH', 'XRP', 'SOL', 'LTC', 'USDC', 'USDT']) assert.ok(codes.has(code), code)
  })

  const countriesFile = path.join(referenceData, 'countries.json')
  test('names every currency of the countries list', { skip: !fs.existsSync(countriesFile) && 'reference-data/countries.json does not exist yet' }, () => {
    const raw = JSON.parse(fs.readFileSync(countriesFile, 'utf8')) as { countries?: { code: string; asset?: string }[] } | { code: string; asset?: string }[]
    const countries = Array.isArray(raw) ? raw : (raw.countries ?? [])
    assert.ok(countries.length > 0)
    const codes = new Set(shipped.assets.map((a) => a.code))
    const missing = countries.filter((c) => c.asset !== undefined && !codes.has(c.asset)).map((c) => `${c.code}: ${c.asset}`)
    assert.deepEqual(missing, [])
  })
})

for (const engine of ENGINES) {
  describe(`assets [${engine}]`, () => {
    const suite = useApp(engine)

    const get = (url: string, headers: Record<string, string> = bearer(suite.token)) => suite.ctx.request({ method: 'GET', url, headers })

    test('lists the catalogue, filtered by type', async () => {
      const all = await get('/core/assets')
      assert.equal(all.status, 200)
      const assets = all.json<{ assets: Asset[] }>().assets
      assert.deepEqual(assets.map((a) => a.code), shipped.assets.map((a) => a.code).sort())
      const btc = assets.find((a) => a.code === 'BTC')!
      assert.deepEqual(btc, {
        code: 'BTC',
        name: 'Bitcoin',
        type: 'crypto',
        symbol: '₿',
        decimals: 8,
        delisted: false,
        logo: 'http://tessera.test/core/assets/BTC/logo.svg',
        features: ALL_FEATURES,
        cooldowns: [],
      })
      const crypto = (await get('/core/assets?type=crypto')).json<{ assets: Asset[] }>().assets
      assert.ok(crypto.length >= 7 && crypto.every((a) => a.type === 'crypto'))
      const both = (await get('/core/assets?type=fiat,crypto')).json<{ assets: Asset[] }>().assets
      assert.equal(both.length, assets.length)
      assert.equal((await get('/core/assets?type=stock')).status, 400)
    })

    test('sorts by every criterion of the reference', async () => {
      const codes = async (sort: string) => {
        const response = await get(`/core/assets?type=crypto&sort=${sort}`)
        assert.equal(response.status, 200, `${sort}: ${response.body}`)
        return response.json<{ assets: Asset[] }>().assets.map((a) => a.code)
      }
      const byCode = await codes('code:asc')
      assert.deepEqual(byCode, [...byCode].sort())
      assert.deepEqual(await codes('code:desc'), [...byCode].reverse())
      assert.deepEqual(await codes('name:asc'), ['BUSD', 'BTC', 'ETH', 'LTC', 'SOL', 'USDT', 'USDC', 'XRP'].sort((a, b) => {
        const name = (c: string) => shipped.assets.find((x) => x.code === c)!.name
        return name(a).localeCompare(name(b), 'en')
      }))
      const byPrice = await codes('price:desc')
      assert.equal(byPrice[0], 'BTC')
      assert.equal(byPrice.at(-1), 'BUSD', 'an asset without a price comes last')
      assert.equal((await codes('price:asc')).at(-1), 'BUSD')
      assert.equal((await codes('market-cap:desc'))[0], 'BTC')
      for (const order of ['asc', 'desc']) {
        for (const window of ['one-hour', 'one-day', 'one-week', 'one-month', 'one-year', 'five-years']) {
          const sorted = await codes(`price-delta:${order}:${window}`)
          assert.equal(sorted.length, byCode.length)
          assert.equal(sorted.at(-1), 'BUSD')
        }
      }
      assert.notDeepEqual(await codes('price-delta:asc:one-day'), await codes('price-delta:desc:one-day'))
      assert.equal((await get('/core/assets?sort=price-delta:up:one-day')).status, 400)
    })

    test('gets one asset; an unknown code is 404', async () => {
      const response = await get('/core/assets/GBP')
      assert.equal(response.status, 200)
      assert.deepEqual(response.json<{ asset: Asset }>().asset, {
        code: 'GBP',
        name: 'British Pound',
        type: 'fiat',
        symbol: '£',
        decimals: 2,
        delisted: false,
        logo: 'http://tessera.test/core/assets/GBP/logo.svg',
        features: ALL_FEATURES,
        cooldowns: [],
      })
      assert.equal((await get('/core/assets/BUSD')).json<{ asset: Asset }>().asset.delisted, true)
      const missing = await get('/core/assets/DOGE')
      assert.equal(missing.status, 404)
      assert.deepEqual(missing.json(), { code: 'entity_not_found', message: 'The asset cannot be found', details: { entity: 'asset' } })
      assert.equal((await get('/core/assets/BTC', {})).status, 401)
    })

    test('gets many assets by code, leaving unknown codes out', async () => {
      const mget = (payload: unknown) => suite.ctx.request({ method: 'POST', url: '/core/assets/_mget', headers: bearer(suite.token), payload: payload as Record<string, unknown> })
      const response = await mget({ codes: ['BTC', 'ETH', 'NOPE', 'BTC'] })
      assert.equal(response.status, 200)
      const { assets } = response.json<{ assets: Record<string, Asset> }>()
      assert.deepEqual(Object.keys(assets), ['BTC', 'ETH'])
      assert.equal(assets.ETH!.decimals, 18)
      for (const bad of [{ codes: 'BTC' }, { codes: [] }, {}, { codes: [''] }, { codes: Array.from({ length: 101 }, (_, i) => `C${i}`) }]) {
        const rejected = await mget(bad)
        assert.equal(rejected.status, 400, JSON.stringify(bad).slice(0, 60))
        assert.equal(rejected.json().code, 'request_invalid')
      }
    })

    test('serves every logo itself, publicly', async () => {
      for (const code of ['BTC', 'GBP', 'XOF']) {
        const logo = await suite.ctx.app.inject({ method: 'GET', url: `/core/assets/${code}/logo.svg` })
        assert.equal(logo.statusCode, 200)
        assert.equal(logo.headers['content-type'], 'image/svg+xml')
        assert.match(logo.body, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"[\s\S]*<\/svg>$/)
        assert.doesNotMatch(logo.body, /https?:\/\/(?!www\.w3\.org)/, 'nothing from elsewhere')
        assert.equal(logo.body, (await suite.ctx.app.inject({ method: 'GET', url: `/core/assets/${code}/logo.svg` })).body, 'deterministic')
      }
      assert.equal((await suite.ctx.app.inject({ method: 'GET', url: '/core/assets/NOPE/logo.svg' })).statusCode, 404)
      const document = suite.ctx.app.swagger() as { paths: Record<string, unknown> }
      assert.ok(!Object.keys(document.paths).some((p) => p.includes('logo')))
    })

    test('acting for a user, features are narrowed by residence and cooldowns, which the test helper skips', async () => {
      const gb = await suite.ctx.createUser(suite.token)
      const asGb = (await get('/core/assets/BTC', bearer(suite.token, gb.id))).json<{ asset: Asset }>().asset
      assert.deepEqual(asGb.features, ['sell', 'transfer', 'withdraw'])
      assert.equal(asGb.cooldowns.length, 1)
      assert.deepEqual({ ...asGb.cooldowns[0], endsAt: undefined }, { rule: 'financial-promotions', features: ['buy', 'deposit'], endsAt: undefined })
      const endsAt = Date.parse(asGb.cooldowns[0]!.endsAt)
      assert.ok(Math.abs(endsAt - (Date.parse(String(gb.createdAt)) + 24 * 3_600_000)) < 1000)
      assert.deepEqual((await get('/core/assets/GBP', bearer(suite.token, gb.id))).json<{ asset: Asset }>().asset.features, ALL_FEATURES)
      const listed = (await get('/core/assets?type=crypto', bearer(suite.token, gb.id))).json<{ assets: Asset[] }>().assets
      assert.ok(listed.filter((a) => !a.delisted).every((a) => a.cooldowns.length === 1))

      const skip = await suite.ctx.request({ method: 'PUT', url: '/core/assets/test-helpers/skip-assets-cooldowns', headers: bearer(suite.token, gb.id) })
      assert.equal(skip.status, 204)
      assert.equal(skip.body, '')
      const after = (await suite.ctx.request({ method: 'POST', url: '/core/assets/_mget', headers: bearer(suite.token, gb.id), payload: { codes: ['BTC'] } })).json<{ assets: Record<string, Asset> }>()
      assert.deepEqual(after.assets.BTC!.features, ALL_FEATURES)
      assert.deepEqual(after.assets.BTC!.cooldowns, [])
      // Another user of the organization still cools down.
      const other = await suite.ctx.createUser(suite.token)
      assert.equal((await get('/core/assets/BTC', bearer(suite.token, other.id))).json<{ asset: Asset }>().asset.cooldowns.length, 1)

      const ny = await suite.ctx.createUser(suite.token, individualUser({ address: { country: 'US', subdivision: 'US-NY' } }))
      assert.deepEqual((await get('/core/assets/ETH', bearer(suite.token, ny.id))).json<{ asset: Asset }>().asset.features, ['deposit', 'transfer', 'withdraw'])
      const ca = await suite.ctx.createUser(suite.token, individualUser({ address: { country: 'US', subdivision: 'US-CA' } }))
      assert.deepEqual((await get('/core/assets/ETH', bearer(suite.token, ca.id))).json<{ asset: Asset }>().asset.features, ALL_FEATURES)
    })

    test('a user living where residents may not be served has no features on any asset', async () => {
      for (const address of [{ country: 'KP' }, { country: 'UA', subdivision: 'UA-43' }]) {
        const resident = await suite.ctx.createUser(suite.token, individualUser({ address }))
        const assets = (await get('/core/assets', bearer(suite.token, resident.id))).json<{ assets: Asset[] }>().assets
        assert.ok(assets.length > 0)
        assert.ok(assets.every((asset) => asset.features.length === 0), JSON.stringify(address))
      }
      const elsewhere = await suite.ctx.createUser(suite.token, individualUser({ address: { country: 'UA', subdivision: 'UA-30' } }))
      assert.deepEqual((await get('/core/assets/USD', bearer(suite.token, elsewhere.id))).json<{ asset: Asset }>().asset.features, ALL_FEATURES)
    })

    // --- core.assets.cooldown-ended ----------------------------------------------------------------------------

    const db = () => suite.ctx.database.db
    const cooldownJobs = (userId: string) =>
      db().selectFrom('jobs').selectAll().where('type', '=', COOLDOWN_END_JOB).where(sql<string>`payload->>'userId'`, '=', userId).orderBy('id').execute()
    const cooldownEvents = (userId: string) =>
      db().selectFrom('outbox_events').selectAll().where('organization_id', '=', suite.ctx.client.organizationId).where('user_id', '=', userId).where('type', '=', ASSET_EVENTS.cooldownEnded).orderBy('id').execute()
    /** A day passes for the user: their creation, their cooldown skip and their cooldown's job move a day back; the job is due. */
    async function dayPasses(userId: string): Promise<string> {
      const [job] = await cooldownJobs(userId)
      const endsAt = new Date(Date.parse((job!.payload as { endsAt: string }).endsAt) - DAY_MS)
      await db().updateTable('users').set({ created_at: sql`created_at - interval '1 day'` }).where('id', '=', userId).execute()
      await db().updateTable('asset_cooldown_skips').set({ skipped_at: sql`skipped_at - interval '1 day'` }).where('user_id', '=', userId).execute()
      await db().updateTable('jobs').set({ run_at: endsAt, payload: JSON.stringify({ userId, endsAt: endsAt.toISOString() }) }).where('id', '=', job!.id).execute()
      return endsAt.toISOString()
    }
    /** The crypto assets whose buy or deposit a UK cooldown holds back: those that offer either. */
    const heldBack = shipped.assets.filter((a) => a.type === 'crypto' && a.features.some((f) => f === 'buy' || f === 'deposit')).map((a) => a.code).sort()

    test('a UK user\'s cooldown ending records core.assets.cooldown-ended once, when it ends: the assets and features it held back', async () => {
      const gb = await suite.ctx.createUser(suite.token)
      const shown = (await get('/core/assets/BTC', bearer(suite.token, gb.id))).json<{ asset: Asset }>().asset.cooldowns[0]!
      // Creating the user scheduled the end of their cooldown, due when GET /core/assets says it ends.
      const [job] = await cooldownJobs(gb.id)
      assert.deepEqual(job!.payload, { userId: gb.id, endsAt: shown.endsAt })
      assert.equal(job!.run_at.toISOString(), shown.endsAt)
      assert.equal(Date.parse(shown.endsAt), Date.parse(String(gb.createdAt)) + DAY_MS)
      assert.equal(job!.organization_id, suite.ctx.client.organizationId)

      // Run early, it waits for the end and records nothing.
      await db().updateTable('jobs').set({ run_at: new Date() }).where('id', '=', job!.id).execute()
      await suite.ctx.services.worker.drain()
      assert.deepEqual(await cooldownEvents(gb.id), [])
      assert.deepEqual(await db().selectFrom('jobs').select(['status', 'run_at']).where('id', '=', job!.id).executeTakeFirstOrThrow(), { status: 'pending', run_at: job!.run_at })

      const endsAt = await dayPasses(gb.id)
      await suite.ctx.services.worker.drain()
      const events = await cooldownEvents(gb.id)
      assert.equal(events.length, 1)
      assert.deepEqual(events[0]!.data, { userId: gb.id, assets: heldBack, cooldown: { rule: 'financial-promotions', features: ['buy', 'deposit'], endsAt } })
      assert.ok(heldBack.includes('BTC') && !heldBack.includes('BUSD') && !heldBack.includes('GBP'), heldBack.join())
      assert.deepEqual([events[0]!.subject_type, events[0]!.subject_id, events[0]!.occurred_at.toISOString()], ['user', gb.id, endsAt])
      assert.equal((await db().selectFrom('jobs').select('status').where('id', '=', job!.id).executeTakeFirstOrThrow()).status, 'completed')

      // The job run again (at least once) records nothing more.
      await enqueue(db(), { type: COOLDOWN_END_JOB, organizationId: suite.ctx.client.organizationId, payload: { userId: gb.id, endsAt } })
      await suite.ctx.services.worker.drain()
      assert.equal((await cooldownEvents(gb.id)).length, 1)
    })

    test('no core.assets.cooldown-ended for a cooldown skipped, a user deleted meanwhile, or a user no rule cools down', async () => {
      const skipped = await suite.ctx.createUser(suite.token)
      const skip = await suite.ctx.request({ method: 'PUT', url: '/core/assets/test-helpers/skip-assets-cooldowns', headers: bearer(suite.token, skipped.id) })
      assert.equal(skip.status, 204)
      const deleted = await suite.ctx.createUser(suite.token)
      const gone = await suite.ctx.request({ method: 'DELETE', url: '/core/users/me', headers: bearer(suite.token, deleted.id), payload: { review: { reason: 'closure-per-user-request' } } })
      assert.equal(gone.status, 204, gone.body)
      const kept = await suite.ctx.createUser(suite.token)
      for (const user of [skipped, deleted, kept]) await dayPasses(user.id)
      await suite.ctx.services.worker.drain()
      assert.deepEqual(await cooldownEvents(skipped.id), [])
      assert.deepEqual(await cooldownEvents(deleted.id), [])
      assert.equal((await cooldownEvents(kept.id)).length, 1, 'a user whose cooldown ran to its end, in the same run')
      for (const user of [skipped, deleted]) assert.deepEqual((await cooldownJobs(user.id)).map((j) => j.status), ['completed'])

      // Residents of places no cooldown rule names have nothing scheduled.
      for (const address of [{ country: 'US', subdivision: 'US-CA' }, { country: 'FR' }]) {
        const elsewhere = await suite.ctx.createUser(suite.token, individualUser({ address }))
        assert.deepEqual(await cooldownJobs(elsewhere.id), [], JSON.stringify(address))
      }
    })

    test('the cooldown helper acts for users only, with its scope', async () => {
      const user = await suite.ctx.createUser(suite.token)
      const put = (headers: Record<string, string>) => suite.ctx.request({ method: 'PUT', url: '/core/assets/test-helpers/skip-assets-cooldowns', headers })
      assert.equal((await put(bearer(suite.token))).status, 403)
      const narrow = await suite.ctx.token(suite.ctx.client, 'core.users:act-on-behalf-of')
      const denied = await put(bearer(narrow, user.id))
      assert.equal(denied.status, 403)
      assert.equal(denied.json().code, 'token_insufficient_scopes')
      const allowed = await suite.ctx.token(suite.ctx.client, 'core.users:act-on-behalf-of core.assets:use-test-helpers')
      assert.equal((await put(bearer(allowed, user.id))).status, 204)
    })
  })
}

describe('assets in production', () => {
  test('the cooldown helper does not exist', async () => {
    const config = testConfig({ TESSERA_ENV: 'production', TOKEN_SIGNING_KEY: loadOrCreateSecrets(null, testConfig()).tokenSigningKey, SEALING_KEY: Buffer.alloc(32, 1).toString('base64'), PRICE_FEED: 'simulated' })
    const database = await openDatabase({ ...config, databaseUrl: null, dataDir: null })
    await migrateToLatest(database)
    const { app } = await buildApp({ config, database, secrets: loadOrCreateSecrets(null, config) })
    try {
      const response = await app.inject({ method: 'PUT', url: '/core/assets/test-helpers/skip-assets-cooldowns' })
      assert.equal(response.statusCode, 404)
      const document = app.swagger() as { paths: Record<string, unknown> }
      assert.ok(!Object.keys(document.paths).some((p) => p.includes('test-helpers/skip-assets-cooldowns')))
      assert.ok(Object.keys(document.paths).includes('/core/assets/{asset}'))
    } finally {
      await app.close()
    }
  })
})
