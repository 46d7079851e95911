import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { eventsAbout } from '../src/modules/events/outbox.ts'
import { bearer, ENGINES, individualUser, PUBLIC_URL, useApp, type TestResponse } from './helpers.ts'

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const UNKNOWN_ID = '0190a8c1-0000-7000-8000-000000000000'

interface Account {
  id: string
  ownerId: string
  label: string
  asset: string
  balance: { total: string; available: string }
  createdAt: string
  updatedAt: string
}

function assertError(response: TestResponse, status: number, code: string): Record<string, unknown> | undefined {
  assert.equal(response.status, status, response.body)
  const body = response.json<{ code: string; details?: Record<string, unknown> }>()
  assert.equal(body.code, code, response.body)
  return body.details
}

for (const engine of ENGINES) {
  describe(`accounts [${engine}]`, () => {
    const suite = useApp(engine)

    async function newUser(token = suite.token): Promise<string> {
      return (await suite.ctx.createUser(token)).id
    }
    const create = (userId: string, body: unknown, token = suite.token, headers: Record<string, string> = {}) =>
      suite.ctx.request({ method: 'POST', url: '/core/accounts', headers: { ...bearer(token, userId), ...headers }, payload: body as Record<string, unknown> })
    async function open(userId: string, asset = 'BTC', label = `My ${asset} account`, token = suite.token): Promise<Account> {
      const response = await create(userId, { label, asset }, token)
      assert.equal(response.status, 201, response.body)
      return response.json<{ account: Account }>().account
    }
    const get = (userId: string, id: string, token = suite.token) => suite.ctx.request({ method: 'GET', url: `/core/accounts/${id}`, headers: bearer(token, userId) })
    const list = (userId: string, query = '', token = suite.token) => suite.ctx.request({ method: 'GET', url: `/core/accounts${query}`, headers: bearer(token, userId) })
    const patch = (userId: string, id: string, body: unknown, token = suite.token) =>
      suite.ctx.request({ method: 'PATCH', url: `/core/accounts/${id}`, headers: bearer(token, userId), payload: body as Record<string, unknown> })
    const archive = (userId: string, id: string, token = suite.token) => suite.ctx.request({ method: 'DELETE', url: `/core/accounts/${id}`, headers: bearer(token, userId) })
    const accountCount = async () => Number((await suite.ctx.database.db.selectFrom('accounts').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n)
    const events = (account: Account) => eventsAbout(suite.ctx.database.db, suite.ctx.client.organizationId, { type: 'account', id: account.id })

    /** Money into the account the way a settled deposit brings it: from the rail's clearing account. */
    async function deposit(account: Account, amount: string, network = 'bitcoin'): Promise<void> {
      const { ledger } = suite.ctx.services
      const organizationId = suite.ctx.client.organizationId
      const clearing = await ledger.systemAccount(organizationId, { kind: 'clearing', network, asset: account.asset })
      await ledger.transfer({ organizationId, type: 'deposit', from: clearing, to: account.id, amount })
    }

    test('creates an account with a zero balance and records core.account.created', async () => {
      const userId = await newUser()
      const response = await create(userId, { label: 'My BTC account', asset: 'BTC' })
      assert.equal(response.status, 201, response.body)
      const { account, errors } = response.json<{ account: Account; errors?: unknown }>()
      assert.equal(errors, undefined)
      assert.equal(account.ownerId, userId)
      assert.equal(account.label, 'My BTC account')
      assert.equal(account.asset, 'BTC')
      assert.deepEqual(account.balance, { total: '0', available: '0' })
      assert.match(account.createdAt, ISO_MS)
      assert.equal(account.createdAt, account.updatedAt)
      assert.deepEqual((await get(userId, account.id)).json(), { account })
      const recorded = await events(account)
      assert.deepEqual(recorded.map((e) => e.type), ['core.account.created'])
      assert.deepEqual(recorded[0]!.data, { account })
      assert.equal(recorded[0]!.user_id, userId)
    })

    test('metadata given at creation is stored; invalid metadata is reported and the account still created', async () => {
      const userId = await newUser()
      const response = await create(userId, { label: 'Savings', asset: 'EUR', metadata: { externalId: 123 } })
      assert.equal(response.status, 201, response.body)
      const { account } = response.json<{ account: Account }>()
      const metadata = await suite.ctx.request({ method: 'GET', url: `/core/accounts/${account.id}/metadata`, headers: bearer(suite.token, userId) })
      assert.equal(metadata.status, 200, metadata.body)
      assert.deepEqual(metadata.json().metadata, { externalId: 123 })

      const invalid = await create(userId, { label: 'Big', asset: 'EUR', metadata: { blob: 'x'.repeat(2000) } })
      assert.equal(invalid.status, 201, invalid.body)
      const body = invalid.json<{ account: Account; errors: { metadata: { code: string } } }>()
      assert.equal(body.errors.metadata.code, 'content_too_large')
      const none = await suite.ctx.request({ method: 'GET', url: `/core/accounts/${body.account.id}/metadata`, headers: bearer(suite.token, userId) })
      assert.equal(none.status, 404)
    })

    test('metadata can be written on an account and is gone with it once archived', async () => {
      const userId = await newUser()
      const account = await open(userId)
      const url = `/core/accounts/${account.id}/metadata`
      assert.equal((await suite.ctx.request({ method: 'PUT', url, headers: bearer(suite.token, userId), payload: { tag: 'a' } })).status, 201)
      assert.deepEqual((await suite.ctx.request({ method: 'GET', url, headers: bearer(suite.token, userId) })).json().metadata, { tag: 'a' })
      assert.equal((await archive(userId, account.id)).status, 204)
      assertError(await suite.ctx.request({ method: 'GET', url, headers: bearer(suite.token, userId) }), 404, 'entity_not_found')
    })

    test('an unknown asset is 404; an asset the user may not hold is 409 asset_not_supported; nothing is created', async () => {
      const userId = await newUser()
      const before = await accountCount()
      assert.deepEqual(assertError(await create(userId, { label: 'X', asset: 'NOPE' }), 404, 'entity_not_found'), { entity: 'asset' })
      assert.deepEqual(assertError(await create(userId, { label: 'X', asset: 'btc' }), 404, 'entity_not_found'), { entity: 'asset' })
      // BUSD is delisted; AED offers no feature at all.
      for (const asset of ['BUSD', 'AED']) {
        assert.deepEqual(assertError(await create(userId, { label: 'X', asset }), 409, 'asset_not_supported'), { context: 'body', property: 'asset' })
      }
      assert.equal(await accountCount(), before)
    })

    test('a user living where residents may not be served may hold no asset', async () => {
      const userId = (await suite.ctx.createUser(suite.token, individualUser({ address: { country: 'CU' } }))).id
      assertError(await create(userId, { label: 'X', asset: 'EUR' }), 409, 'asset_not_supported')
      assert.deepEqual((await list(userId)).json<{ accounts: unknown[] }>().accounts, [])
    })

    test('malformed bodies are 400 request_invalid naming the property, and create nothing', async () => {
      const userId = await newUser()
      const before = await accountCount()
      const cases: [unknown, string, string][] = [
        [{ asset: 'BTC' }, 'label', 'required'],
        [{ label: 'x' }, 'asset', 'required'],
        [{ label: 42, asset: 'BTC' }, 'label', 'type'],
        [{ label: ' padded', asset: 'BTC' }, 'label', 'pattern'],
        [{ label: 'x'.repeat(141), asset: 'BTC' }, 'label', 'maxLength'],
        [{ label: 'x', asset: '' }, 'asset', 'minLength'],
        [{ label: 'x', asset: ['BTC'] }, 'asset', 'type'],
      ]
      for (const [body, property, rule] of cases) {
        const details = assertError(await create(userId, body), 400, 'request_invalid') as { context: string; violations: { property: string; rule: string }[] }
        assert.equal(details.context, 'body')
        assert.ok(details.violations.some((v) => v.property === property && v.rule === rule), `${JSON.stringify(body)}: ${JSON.stringify(details.violations)}`)
      }
      assertError(await create(userId, [1, 2]), 400, 'request_invalid')
      const huge = await create(userId, { label: 'x', asset: 'BTC', metadata: { blob: 'x'.repeat(2_000_000) } })
      assert.equal(huge.status, 413, huge.body)
      const text = await suite.ctx.request({ method: 'POST', url: '/core/accounts', headers: { ...bearer(suite.token, userId), 'content-type': 'text/plain' }, payload: 'label=x' })
      assert.equal(text.status, 415)
      assert.equal(await accountCount(), before)
    })

    test('an Idempotency-Key retry replays the first creation', async () => {
      const userId = await newUser()
      const headers = { 'idempotency-key': `account-${userId}` }
      const first = await create(userId, { label: 'Once', asset: 'ETH' }, suite.token, headers)
      const second = await create(userId, { label: 'Once', asset: 'ETH' }, suite.token, headers)
      assert.equal(first.status, 201)
      assert.equal(second.status, 201)
      assert.deepEqual(second.json(), first.json())
      assert.equal((await list(userId)).json<{ accounts: unknown[] }>().accounts.length, 1)
    })

    test('lists the user\'s accounts newest first, filtered by asset, page by page', async () => {
      const userId = await newUser()
      const created: Account[] = []
      for (const asset of ['BTC', 'ETH', 'BTC', 'EUR', 'BTC']) created.push(await open(userId, asset))
      await open(await newUser(), 'BTC')

      const all = await list(userId)
      assert.equal(all.status, 200, all.body)
      assert.deepEqual(all.json<{ accounts: Account[] }>().accounts.map((a) => a.id), created.map((a) => a.id).reverse())
      assert.deepEqual(all.json<{ pagination: unknown }>().pagination, { first: `${PUBLIC_URL}/core/accounts?page=1&perPage=10&until=${created[4]!.id}` })

      const btc = await list(userId, '?asset=BTC&perPage=2')
      const firstPage = btc.json<{ accounts: Account[]; pagination: { next?: string; prev?: string } }>()
      assert.deepEqual(firstPage.accounts.map((a) => a.id), [created[4]!.id, created[2]!.id])
      assert.ok(firstPage.pagination.next?.includes('asset=BTC'))
      const next = new URL(firstPage.pagination.next!)
      const second = (await list(userId, next.search)).json<{ accounts: Account[]; pagination: { next?: string; prev?: string } }>()
      assert.deepEqual(second.accounts.map((a) => a.id), [created[0]!.id])
      assert.equal(second.pagination.next, undefined)
      assert.ok(second.pagination.prev)

      const several = await list(userId, '?asset=ETH,EUR')
      assert.deepEqual(several.json<{ accounts: Account[] }>().accounts.map((a) => a.asset).sort(), ['ETH', 'EUR'])
      assert.deepEqual((await list(userId, '?asset=SOL')).json<{ accounts: Account[] }>().accounts, [])

      for (const query of ['?asset=', '?asset=BTC,', '?perPage=0', '?perPage=101', '?page=x', '?until=nope']) {
        assert.equal(assertError(await list(userId, query), 400, 'request_invalid')?.context, 'query', query)
      }
    })

    test('default accounts: the oldest open account of each asset', async () => {
      const userId = await newUser()
      const btc1 = await open(userId, 'BTC')
      const eth = await open(userId, 'ETH')
      await open(userId, 'BTC')
      const response = await suite.ctx.request({ method: 'GET', url: '/core/accounts/defaults', headers: bearer(suite.token, userId) })
      assert.equal(response.status, 200, response.body)
      assert.deepEqual(response.json<{ accounts: Account[] }>().accounts.map((a) => a.id), [btc1.id, eth.id])
      const onlyEth = await suite.ctx.request({ method: 'GET', url: '/core/accounts/defaults?asset=ETH', headers: bearer(suite.token, userId) })
      assert.deepEqual(onlyEth.json<{ accounts: Account[] }>().accounts.map((a) => a.id), [eth.id])
      // Archiving the default makes the next oldest the default.
      assert.equal((await archive(userId, btc1.id)).status, 204)
      const after = await suite.ctx.request({ method: 'GET', url: '/core/accounts/defaults?asset=BTC', headers: bearer(suite.token, userId) })
      assert.equal(after.json<{ accounts: Account[] }>().accounts.length, 1)
      assert.notEqual(after.json<{ accounts: Account[] }>().accounts[0]!.id, btc1.id)
      const empty = await suite.ctx.request({ method: 'GET', url: '/core/accounts/defaults', headers: bearer(suite.token, await newUser()) })
      assert.deepEqual(empty.json(), { accounts: [] })
    })

    test('renames an account; bad updates are 400 and change nothing', async () => {
      const userId = await newUser()
      const account = await open(userId)
      const response = await patch(userId, account.id, { label: 'My BTC long-term' })
      assert.equal(response.status, 200, response.body)
      const updated = response.json<{ account: Account }>().account
      assert.equal(updated.label, 'My BTC long-term')
      assert.ok(updated.updatedAt >= account.updatedAt)
      for (const body of [{}, { label: '' }, { label: 7 }, { asset: 'ETH' }, { label: 'x', ownerId: UNKNOWN_ID }]) {
        assertError(await patch(userId, account.id, body), 400, 'request_invalid')
      }
      assert.equal((await get(userId, account.id)).json<{ account: Account }>().account.label, 'My BTC long-term')
      assertError(await patch(userId, UNKNOWN_ID, { label: 'x' }), 404, 'entity_not_found')
      assert.deepEqual(assertError(await patch(userId, 'not-a-uuid', { label: 'x' }), 404, 'entity_not_found'), { entity: 'account' })
    })

    test('balances follow the ledger, and every change records core.account.balance-changed', async () => {
      const userId = await newUser()
      const account = await open(userId)
      await deposit(account, '0.0015')
      const read = (await get(userId, account.id)).json<{ account: Account }>().account
      assert.deepEqual(read.balance, { total: '0.0015', available: '0.0015' })
      assert.ok(read.updatedAt >= account.updatedAt)
      const hold = await suite.ctx.services.ledger.placeHold({ organizationId: suite.ctx.client.organizationId, accountId: account.id, amount: '0.0005' })
      assert.deepEqual((await get(userId, account.id)).json<{ account: Account }>().account.balance, { total: '0.0015', available: '0.001' })
      const recorded = await events(account)
      assert.deepEqual(recorded.map((e) => e.type), ['core.account.created', 'core.account.balance-changed', 'core.account.balance-changed'])
      assert.deepEqual((recorded[2]!.data as { account: Account }).account.balance, { total: '0.0015', available: '0.001' })
      await suite.ctx.services.ledger.releaseHold({ organizationId: suite.ctx.client.organizationId, holdId: hold.id })
      assert.deepEqual((await list(userId)).json<{ accounts: Account[] }>().accounts[0]!.balance, { total: '0.0015', available: '0.0015' })
      // A refused movement records nothing.
      const recordedBefore = (await events(account)).length
      await assert.rejects(suite.ctx.services.ledger.placeHold({ organizationId: suite.ctx.client.organizationId, accountId: account.id, amount: '1' }), { code: 'insufficient_balance' })
      assert.equal((await events(account)).length, recordedBefore)
    })

    test('archiving: refused with a balance or a movement in flight, then 204, core.account.archived, and gone', async () => {
      const userId = await newUser()
      const account = await open(userId, 'GBP')
      await deposit(account, '10.00', 'fps')
      assertError(await archive(userId, account.id), 409, 'account_has_balance')
      const { ledger } = suite.ctx.services
      const organizationId = suite.ctx.client.organizationId
      const hold = await ledger.placeHold({ organizationId, accountId: account.id, amount: '10' })
      assertError(await archive(userId, account.id), 409, 'account_has_pending_transactions')
      const clearing = await ledger.systemAccount(organizationId, { kind: 'clearing', network: 'fps', asset: 'GBP' })
      await ledger.captureHold({ organizationId, holdId: hold.id, type: 'withdrawal', credits: [{ accountId: clearing, amount: '10' }] })
      assert.deepEqual((await get(userId, account.id)).json<{ account: Account }>().account.balance, { total: '0', available: '0' })

      const response = await archive(userId, account.id)
      assert.equal(response.status, 204, response.body)
      assert.equal(response.body, '')
      assert.equal((await events(account)).at(-1)!.type, 'core.account.archived')
      assertError(await get(userId, account.id), 404, 'entity_not_found')
      assertError(await archive(userId, account.id), 404, 'entity_not_found')
      assertError(await patch(userId, account.id, { label: 'x' }), 404, 'entity_not_found')
      assert.deepEqual((await list(userId)).json<{ accounts: Account[] }>().accounts, [])
      // An archived account takes no more movements.
      await assert.rejects(ledger.transfer({ organizationId, type: 'deposit', from: clearing, to: account.id, amount: '1' }), { code: 'account_archived' })
    })

    test('another user, or another organization, gets 404 and changes nothing', async () => {
      const ownerId = await newUser()
      const account = await open(ownerId, 'ETH', 'Mine')
      const neighbour = await newUser()
      const otherToken = await suite.ctx.token(await suite.ctx.newClient())
      const stranger = await newUser(otherToken)
      for (const [userId, token] of [[neighbour, suite.token], [stranger, otherToken]] as const) {
        assert.deepEqual(assertError(await get(userId, account.id, token), 404, 'entity_not_found'), { entity: 'account' })
        assertError(await patch(userId, account.id, { label: 'Stolen' }, token), 404, 'entity_not_found')
        assertError(await archive(userId, account.id, token), 404, 'entity_not_found')
        assertError(await suite.ctx.request({ method: 'PUT', url: `/core/accounts/${account.id}/metadata`, headers: bearer(token, userId), payload: { a: 1 } }), 404, 'entity_not_found')
        assert.deepEqual((await list(userId, '', token)).json<{ accounts: Account[] }>().accounts, [])
      }
      // Another organization's client cannot even name the owner.
      assertError(await get(ownerId, account.id, otherToken), 404, 'entity_not_found')
      assert.deepEqual((await get(ownerId, account.id)).json<{ account: Account }>().account, account)
      assert.equal((await events(account)).length, 1)
    })

    test('a malformed account id is 404 as an unknown one is', async () => {
      const userId = await newUser()
      assert.deepEqual(assertError(await get(userId, 'abc'), 404, 'entity_not_found'), { entity: 'account' })
      assert.deepEqual(assertError(await get(userId, UNKNOWN_ID), 404, 'entity_not_found'), { entity: 'account' })
      assertError(await archive(userId, UNKNOWN_ID), 404, 'entity_not_found')
    })
  })
}
