import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { isValidIBAN } from 'ibantools'
import { validateAccountDetails } from 'uk-modulus-check'
import { buildApp } from '../src/app.ts'
import { migrateToLatest, openDatabase } from '../src/db/database.ts'
import { loadOrCreateSecrets } from '../src/lib/data-dir.ts'
import { isValidRoutingNumber } from '../src/lib/bank-numbers.ts'
import { bearer, ENGINES, testConfig, useApp, type TestContext, type TestResponse } from './helpers.ts'

const UNKNOWN_ID = '0190a8c1-0000-7000-8000-000000000000'

interface DepositMethod {
  type: 'crypto' | 'bank'
  status: 'processing' | 'ok' | 'failed'
  details: Record<string, unknown> & { network: string; asset: string }
}

function assertError(response: TestResponse, status: number, code: string): Record<string, unknown> | undefined {
  assert.equal(response.status, status, response.body)
  const body = response.json<{ code: string; details?: Record<string, unknown> }>()
  assert.equal(body.code, code, response.body)
  return body.details
}

/** Every crypto rail offering deposits, as shipped. */
const CRYPTO = [
  ['bitcoin', 'BTC'],
  ['litecoin', 'LTC'],
  ['ethereum', 'ETH'],
  ['ethereum', 'USDC'],
  ['solana', 'SOL'],
  ['solana', 'USDC'],
  ['xrp-ledger', 'XRP'],
] as const

for (const engine of ENGINES) {
  describe(`deposit methods [${engine}]`, () => {
    const suite = useApp(engine)

    const newUser = async (token = suite.token, body?: Record<string, unknown>) => (await suite.ctx.createUser(token, body)).id
    async function open(userId: string, asset: string, token = suite.token): Promise<string> {
      const response = await suite.ctx.request({ method: 'POST', url: '/core/accounts', headers: bearer(token, userId), payload: { label: `My ${asset}`, asset } })
      assert.equal(response.status, 201, response.body)
      return response.json<{ account: { id: string } }>().account.id
    }
    const url = (accountId: string, type: string, asset: string, network: string) =>
      `/core/accounts/${accountId}/deposit-method?type=${type}&asset=${asset}&network=${network}`
    const put = (userId: string, accountId: string, type: string, asset: string, network: string, token = suite.token) =>
      suite.ctx.request({ method: 'PUT', url: url(accountId, type, asset, network), headers: bearer(token, userId) })
    const get = (userId: string, accountId: string, type: string, asset: string, network: string, token = suite.token) =>
      suite.ctx.request({ method: 'GET', url: url(accountId, type, asset, network), headers: bearer(token, userId) })
    async function setUp(userId: string, accountId: string, type: string, asset: string, network: string): Promise<DepositMethod> {
      const response = await put(userId, accountId, type, asset, network)
      assert.equal(response.status, 201, response.body)
      return response.json<{ depositMethod: DepositMethod }>().depositMethod
    }
    const validate = (userId: string, network: string, address: string, reference?: string) =>
      suite.ctx.request({
        method: 'POST',
        url: `/core/networks/${network}/validate-address`,
        headers: bearer(suite.token, userId),
        payload: reference === undefined ? { address } : { address, reference },
      })
    const methodCount = async () => Number((await suite.ctx.database.db.selectFrom('deposit_methods').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n)

    test('a crypto method on every network: processing, then ok; every address form passes validate-address', async () => {
      const userId = await newUser()
      for (const [network, asset] of CRYPTO) {
        const accountId = await open(userId, asset)
        assertError(await get(userId, accountId, 'crypto', asset, network), 404, 'entity_not_found')
        const issued = await setUp(userId, accountId, 'crypto', asset, network)
        assert.equal(issued.type, 'crypto')
        assert.equal(issued.status, 'processing')
        const { details } = issued
        assert.equal(details.network, network)
        assert.equal(details.asset, asset)
        const formats = details.addressFormats as { format: string; value: string }[]
        assert.equal(formats[0]!.value, details.address)
        if (network === 'bitcoin' || network === 'litecoin') {
          assert.deepEqual(formats.map((f) => f.format), ['native-segwit', 'wrapped-segwit', 'pubkey-hash'])
          assert.match(details.address as string, network === 'bitcoin' ? /^tb1q/ : /^tltc1q/)
        } else {
          assert.deepEqual(formats.map((f) => f.format), ['pubkey-hash'])
        }
        if (network === 'xrp-ledger') assert.match(details.reference as string, /^[1-9][0-9]*$/)
        else assert.equal(details.reference, undefined)
        for (const { value } of formats) {
          const check = await validate(userId, network, value, details.reference as string | undefined)
          assert.equal(check.status, 200, check.body)
          assert.deepEqual(check.json(), { isValid: true }, `${network} ${value}`)
        }
        // Read again: provisioned, and the same details.
        const read = (await get(userId, accountId, 'crypto', asset, network)).json<{ depositMethod: DepositMethod }>().depositMethod
        assert.deepEqual(read, { ...issued, status: 'ok' })
        const again = await put(userId, accountId, 'crypto', asset, network)
        assert.equal(again.status, 200, again.body)
        assert.deepEqual(again.json<{ depositMethod: DepositMethod }>().depositMethod, read)
      }
    })

    test('addresses are never shared between accounts or users; XRP shares the address and tells accounts apart by tag', async () => {
      const [alice, bob] = [await newUser(), await newUser()]
      const seen = new Map<string, string>()
      for (const userId of [alice, bob]) {
        for (let i = 0; i < 2; i++) {
          for (const [network, asset] of CRYPTO) {
            const accountId = await open(userId, asset)
            const { details } = await setUp(userId, accountId, 'crypto', asset, network)
            const key = network === 'xrp-ledger' ? `${network}:${details.address}#${details.reference}` : `${network}:${details.address}`
            assert.ok(!seen.has(key), `${key} reused`)
            seen.set(key, accountId)
          }
        }
      }
      const xrpAddresses = new Set([...seen.keys()].filter((k) => k.startsWith('xrp-ledger:')).map((k) => k.split('#')[0]))
      assert.equal(xrpAddresses.size, 1)
    })

    test('bank methods: SEPA IBAN, FPS sort code and account number, one US account on every US rail', async () => {
      const userId = await newUser(suite.token, { type: 'individual', email: `iban-${Date.now()}@example.com`, termsOfService: 'general-gb-fca', primaryCitizenship: 'GB', address: { country: 'GB', subdivision: 'GB-MAN' }, fullName: 'Ada Lovelace' })
      const eur = await open(userId, 'EUR')
      const sepa = await setUp(userId, eur, 'bank', 'EUR', 'sepa')
      assert.equal(sepa.status, 'processing')
      assert.equal(sepa.details.network, 'sepa')
      assert.ok(isValidIBAN(sepa.details.iban as string), sepa.details.iban as string)
      assert.match(sepa.details.iban as string, /^NL[0-9]{2}TSRA[0-9]{10}$/)
      assert.equal(sepa.details.bic, 'TSRANL20')
      assert.match(sepa.details.reference as string, /^TS[0-9A-Z]{10}$/)
      assert.equal(typeof sepa.details.beneficiary, 'string')
      assert.equal(typeof (sepa.details.bankAddress as { line1: string }).line1, 'string')

      const gbp = await open(userId, 'GBP')
      const fps = await setUp(userId, gbp, 'bank', 'GBP', 'fps')
      assert.equal(fps.details.sortCode, '089999')
      assert.match(fps.details.accountNumber as string, /^[0-9]{8}$/)
      assert.ok(validateAccountDetails(fps.details.sortCode as string, fps.details.accountNumber as string))

      const usd = await open(userId, 'USD')
      const ach = await setUp(userId, usd, 'bank', 'USD', 'ach')
      assert.ok(isValidRoutingNumber(ach.details.routingNumber as string))
      assert.match(ach.details.accountNumber as string, /^[1-9][0-9]{11}$/)
      assert.equal(ach.details.accountType, 'checking')
      assert.deepEqual(ach.details.secondaryNetworks, ['fednow', 'rtp', 'wire'])
      // The other US rails show the same account.
      for (const network of ['wire', 'fednow', 'rtp']) {
        const response = await put(userId, usd, 'bank', 'USD', network)
        assert.equal(response.status, 200, response.body)
        const { details } = response.json<{ depositMethod: DepositMethod }>().depositMethod
        assert.equal(details.network, network)
        assert.equal(details.accountNumber, ach.details.accountNumber)
        assert.ok(!(details.secondaryNetworks as string[]).includes(network))
      }
    })

    test('bank numbers and references are unique per account', async () => {
      const ibans = new Set<string>()
      const references = new Set<string>()
      const accountNumbers = new Set<string>()
      for (let i = 0; i < 4; i++) {
        const userId = await newUser()
        for (let j = 0; j < 2; j++) {
          const sepa = await setUp(userId, await open(userId, 'EUR'), 'bank', 'EUR', 'sepa')
          ibans.add(sepa.details.iban as string)
          references.add(sepa.details.reference as string)
          const us = await setUp(userId, await open(userId, 'USD'), 'bank', 'USD', 'wire')
          accountNumbers.add(us.details.accountNumber as string)
        }
      }
      assert.equal(ibans.size, 8)
      assert.equal(references.size, 8)
      assert.equal(accountNumbers.size, 8)
    })

    test('the same account gets the same numbers when asked twice at once', async () => {
      const userId = await newUser()
      const accountId = await open(userId, 'BTC')
      const responses = await Promise.all(Array.from({ length: 5 }, () => put(userId, accountId, 'crypto', 'BTC', 'bitcoin')))
      assert.deepEqual(responses.map((r) => r.status).sort(), [200, 200, 200, 200, 201])
      const addresses = new Set(responses.map((r) => r.json<{ depositMethod: DepositMethod }>().depositMethod.details.address))
      assert.equal(addresses.size, 1)
    })

    test('rail and asset rules: unknown rail 404, another asset 409, missing or bad query 400', async () => {
      const userId = await newUser()
      const accountId = await open(userId, 'BTC')
      const before = await methodCount()
      assert.deepEqual(assertError(await put(userId, accountId, 'crypto', 'BTC', 'ethereum'), 404, 'entity_not_found'), { entity: 'rail' })
      assert.deepEqual(assertError(await put(userId, accountId, 'bank', 'BTC', 'bitcoin'), 404, 'entity_not_found'), { entity: 'rail' })
      assert.deepEqual(assertError(await put(userId, accountId, 'crypto', 'BTC', 'nowhere'), 404, 'entity_not_found'), { entity: 'rail' })
      assert.deepEqual(assertError(await get(userId, accountId, 'crypto', 'ETH', 'ethereum'), 409, 'asset_not_supported'), { context: 'query', property: 'asset' })
      assertError(await put(userId, accountId, 'crypto', 'ETH', 'ethereum'), 409, 'asset_not_supported')
      assertError(await put(userId, accountId, 'card', 'BTC', 'bitcoin'), 400, 'request_invalid')
      for (const query of ['', '?type=crypto', '?type=crypto&asset=BTC', `?type=crypto&asset=${'X'.repeat(40)}&network=bitcoin`]) {
        const response = await suite.ctx.request({ method: 'PUT', url: `/core/accounts/${accountId}/deposit-method${query}`, headers: bearer(suite.token, userId) })
        assertError(response, 400, 'request_invalid')
      }
      // A malformed id names no account, as an unknown one (src/http/path-ids.ts).
      assert.deepEqual(assertError(await put(userId, 'not-a-uuid', 'crypto', 'BTC', 'bitcoin'), 404, 'entity_not_found'), { entity: 'account' })
      assert.deepEqual(assertError(await put(userId, UNKNOWN_ID, 'crypto', 'BTC', 'bitcoin'), 404, 'entity_not_found'), { entity: 'account' })
      assert.equal(await methodCount(), before)
    })

    test('another user, or another organization, gets 404 and changes nothing', async () => {
      const ownerId = await newUser()
      const accountId = await open(ownerId, 'BTC')
      const method = await setUp(ownerId, accountId, 'crypto', 'BTC', 'bitcoin')
      const neighbour = await newUser()
      const otherToken = await suite.ctx.token(await suite.ctx.newClient())
      const stranger = await newUser(otherToken)
      const before = await methodCount()
      for (const [userId, token] of [[neighbour, suite.token], [stranger, otherToken]] as const) {
        assert.deepEqual(assertError(await get(userId, accountId, 'crypto', 'BTC', 'bitcoin', token), 404, 'entity_not_found'), { entity: 'account' })
        assert.deepEqual(assertError(await put(userId, accountId, 'crypto', 'BTC', 'bitcoin', token), 404, 'entity_not_found'), { entity: 'account' })
      }
      // Another organization's client cannot even name the owner.
      assertError(await put(ownerId, accountId, 'crypto', 'BTC', 'bitcoin', otherToken), 404, 'entity_not_found')
      assert.equal(await methodCount(), before)
      assert.equal((await get(ownerId, accountId, 'crypto', 'BTC', 'bitcoin')).json<{ depositMethod: DepositMethod }>().depositMethod.details.address, method.details.address)
    })

    test('destination lookup finds the owning account by any spelling, within the organization only', async () => {
      const userId = await newUser()
      const btc = await open(userId, 'BTC')
      const eth = await open(userId, 'ETH')
      const xrp = await open(userId, 'XRP')
      const eur = await open(userId, 'EUR')
      const usd = await open(userId, 'USD')
      const gbp = await open(userId, 'GBP')
      const bitcoin = await setUp(userId, btc, 'crypto', 'BTC', 'bitcoin')
      const ethereum = await setUp(userId, eth, 'crypto', 'ETH', 'ethereum')
      const ripple = await setUp(userId, xrp, 'crypto', 'XRP', 'xrp-ledger')
      const sepa = await setUp(userId, eur, 'bank', 'EUR', 'sepa')
      const us = await setUp(userId, usd, 'bank', 'USD', 'ach')
      const fps = await setUp(userId, gbp, 'bank', 'GBP', 'fps')
      const { depositMethods } = suite.ctx.services
      const db = suite.ctx.database.db
      const org = suite.ctx.client.organizationId
      const resolve = async (destination: Parameters<typeof depositMethods.resolveDestination>[2], organizationId = org) =>
        (await depositMethods.resolveDestination(db, organizationId, destination))?.accountId

      for (const { value } of bitcoin.details.addressFormats as { value: string }[]) assert.equal(await resolve({ type: 'crypto', network: 'bitcoin', address: value }), btc)
      assert.equal(await resolve({ type: 'crypto', network: 'bitcoin', address: (bitcoin.details.address as string).toUpperCase() }), btc)
      assert.equal(await resolve({ type: 'crypto', network: 'ethereum', address: (ethereum.details.address as string).toLowerCase() }), eth)
      assert.equal(await resolve({ type: 'crypto', network: 'litecoin', address: bitcoin.details.address as string }), undefined)
      assert.equal(await resolve({ type: 'crypto', network: 'xrp-ledger', address: ripple.details.address as string, reference: ripple.details.reference as string }), xrp)
      assert.equal(await resolve({ type: 'crypto', network: 'xrp-ledger', address: ripple.details.address as string }), undefined)
      assert.equal(await resolve({ type: 'bank', network: 'sepa', iban: (sepa.details.iban as string).toLowerCase().replace(/(.{4})/g, '$1 ') }), eur)
      assert.equal(await resolve({ type: 'bank', network: 'fps', sortCode: '089999', accountNumber: fps.details.accountNumber as string }), gbp)
      for (const network of ['ach', 'wire', 'fednow', 'rtp'] as const) assert.equal(await resolve({ type: 'bank', network, accountNumber: us.details.accountNumber as string }), usd)
      assert.equal(await resolve({ type: 'bank', network: 'ach', accountNumber: us.details.accountNumber as string, routingNumber: us.details.routingNumber as string }), usd)
      assert.equal(await resolve({ type: 'bank', network: 'ach', accountNumber: us.details.accountNumber as string, routingNumber: '021000021' }), undefined)
      // Another organization does not see them.
      const other = await suite.ctx.newClient()
      assert.equal(await resolve({ type: 'crypto', network: 'bitcoin', address: bitcoin.details.address as string }, other.organizationId), undefined)
      assert.equal(await resolve({ type: 'bank', network: 'sepa', iban: sepa.details.iban as string }, other.organizationId), undefined)
    })
  })
}

/** The first deposit method of an account, set up through the API. */
async function issue(ctx: TestContext, token: string, userId: string, asset: string, type: string, network: string): Promise<{ accountId: string; details: DepositMethod['details'] }> {
  const opened = await ctx.request({ method: 'POST', url: '/core/accounts', headers: bearer(token, userId), payload: { label: asset, asset } })
  assert.equal(opened.status, 201, opened.body)
  const accountId = opened.json<{ account: { id: string } }>().account.id
  const response = await ctx.request({ method: 'PUT', url: `/core/accounts/${accountId}/deposit-method?type=${type}&asset=${asset}&network=${network}`, headers: bearer(token, userId) })
  assert.equal(response.status, 201, response.body)
  return { accountId, details: response.json<{ depositMethod: DepositMethod }>().depositMethod.details }
}

for (const engine of ENGINES) {
  describe(`deposit test helpers [${engine}]`, () => {
    const suite = useApp(engine)
    const simulate = (kind: 'bank' | 'crypto', userId: string, payload: unknown, token = suite.token) =>
      suite.ctx.request({ method: 'POST', url: `/core/accounts/test-helpers/${kind}-deposits`, headers: bearer(token, userId), payload: payload as Record<string, unknown> })
    const transactionCount = async () => Number((await suite.ctx.database.db.selectFrom('transactions').select((eb) => eb.fn.countAll().as('n')).executeTakeFirstOrThrow()).n)

    /** Polls the account through the API until its balance is `total` (the worker settles in the background). */
    async function settled(userId: string, accountId: string, total: string): Promise<void> {
      const deadline = Date.now() + 10_000
      for (;;) {
        const account = (await suite.ctx.request({ method: 'GET', url: `/core/accounts/${accountId}`, headers: bearer(suite.token, userId) })).json<{ account: { balance: { total: string } } }>().account
        if (account.balance.total === total) break
        assert.ok(Date.now() < deadline, `balance still ${account.balance.total}, expected ${total}`)
        await new Promise((resolve) => setTimeout(resolve, 20))
      }
      const listed = await suite.ctx.request({ method: 'GET', url: `/core/accounts/${accountId}/transactions`, headers: bearer(suite.token, userId) })
      const transactions = listed.json<{ transactions: { type: string; status: string }[] }>().transactions
      assert.ok(transactions.length > 0 && transactions.every((t) => t.type === 'deposit' && t.status === 'completed'), listed.body)
    }

    test('a crypto deposit to any address form is accepted (202) and settles into the account', async () => {
      suite.ctx.services.worker.start()
      const userId = await suite.ctx.createUser(suite.token).then((u) => u.id)
      const { accountId, details } = await issue(suite.ctx, suite.token, userId, 'BTC', 'crypto', 'bitcoin')
      const formats = details.addressFormats as { value: string }[]
      const sender = 'tb1qxsy3qh8d44d5jkuvn98rxsjtxpmdlslg8d92cv'
      const response = await simulate('crypto', userId, { network: 'bitcoin', address: formats[1]!.value, asset: 'BTC', amount: '0.00100000', remitter: { addresses: [sender] } })
      assert.equal(response.status, 202, response.body)
      assert.deepEqual(response.json(), { cryptoDeposit: { network: 'bitcoin', address: formats[1]!.value, asset: 'BTC', amount: '0.001', remitter: { addresses: [sender] } } })
      await settled(userId, accountId, '0.001')
      // Below the travel rule's threshold, so that no request for information holds it (test/travel-rule.test.ts).
      assert.equal((await simulate('crypto', userId, { network: 'bitcoin', address: formats[2]!.value, asset: 'BTC', amount: '0.01' })).status, 202)
      await settled(userId, accountId, '0.011')
    })

    test('XRP Ledger: the destination tag picks the account; without it nothing is found', async () => {
      suite.ctx.services.worker.start()
      const userId = await suite.ctx.createUser(suite.token).then((u) => u.id)
      const first = await issue(suite.ctx, suite.token, userId, 'XRP', 'crypto', 'xrp-ledger')
      const second = await issue(suite.ctx, suite.token, userId, 'XRP', 'crypto', 'xrp-ledger')
      assert.equal(first.details.address, second.details.address)
      const payment = (reference?: string) => ({ network: 'xrp-ledger', address: first.details.address, asset: 'XRP', amount: '5', ...(reference ? { reference } : {}) })
      assert.equal((await simulate('crypto', userId, payment(second.details.reference as string))).status, 202)
      await settled(userId, second.accountId, '5')
      const before = await transactionCount()
      assert.deepEqual(assertError(await simulate('crypto', userId, payment()), 404, 'entity_not_found'), { entity: 'depositMethod' })
      const otherTag = String((Number(first.details.reference) % 4294967295) + 1)
      if (otherTag !== second.details.reference) assertError(await simulate('crypto', userId, payment(otherTag)), 404, 'entity_not_found')
      assertError(await simulate('crypto', userId, payment('-1')), 409, 'crypto_address_invalid')
      assert.equal(await transactionCount(), before)
    })

    test('bank deposits over SEPA, FPS and every US rail settle into the account that owns the details', async () => {
      suite.ctx.services.worker.start()
      const userId = await suite.ctx.createUser(suite.token).then((u) => u.id)
      const sepa = await issue(suite.ctx, suite.token, userId, 'EUR', 'bank', 'sepa')
      const response = await simulate('bank', userId, { network: 'sepa', iban: sepa.details.iban, asset: 'EUR', amount: '100.5', reference: sepa.details.reference })
      assert.equal(response.status, 202, response.body)
      const { bankDeposit } = response.json<{ bankDeposit: { remitter: { name: string; bic: string; iban: string } } & Record<string, unknown> }>()
      assert.equal(bankDeposit.iban, sepa.details.iban)
      assert.equal(bankDeposit.asset, 'EUR')
      assert.ok(isValidIBAN(bankDeposit.remitter.iban))
      await settled(userId, sepa.accountId, '100.5')

      const fps = await issue(suite.ctx, suite.token, userId, 'GBP', 'bank', 'fps')
      const fpsResponse = await simulate('bank', userId, { network: 'fps', sortCode: fps.details.sortCode, accountNumber: fps.details.accountNumber, asset: 'GBP', amount: '20' })
      assert.equal(fpsResponse.status, 202, fpsResponse.body)
      const fpsRemitter = fpsResponse.json<{ bankDeposit: { remitter: { sortCode: string; accountNumber: string } } }>().bankDeposit.remitter
      assert.ok(validateAccountDetails(fpsRemitter.sortCode, fpsRemitter.accountNumber))
      await settled(userId, fps.accountId, '20')

      const us = await issue(suite.ctx, suite.token, userId, 'USD', 'bank', 'ach')
      const achResponse = await simulate('bank', userId, { network: 'ach', accountNumber: us.details.accountNumber, routingNumber: us.details.routingNumber, amount: '1.25', remitter: { name: 'Jane Payer' } })
      assert.equal(achResponse.status, 202, achResponse.body)
      const achDeposit = achResponse.json<{ bankDeposit: { asset: string; remitter: Record<string, string> } }>().bankDeposit
      assert.equal(achDeposit.asset, 'USD')
      assert.deepEqual({ ...achDeposit.remitter, accountNumber: undefined }, { name: 'Jane Payer', accountNumber: undefined, routingNumber: '220000000', secCode: 'WEB', transactionType: 'Push', serviceType: 'SameDay' })
      const senders: Record<string, unknown>[] = []
      for (const network of ['wire', 'fednow', 'rtp']) {
        const answer = await simulate('bank', userId, { network, accountNumber: us.details.accountNumber, amount: '1' })
        assert.equal(answer.status, 202, answer.body)
        senders.push(answer.json<{ bankDeposit: { remitter: Record<string, unknown> } }>().bankDeposit.remitter)
      }
      // The answer's remitter has the fields of its network (the reference's shapes): a wire only what was given and the name.
      assert.deepEqual(senders.map((sender) => Object.keys(sender).sort()), [['name'], ['accountNumber', 'name', 'routingNumber'], ['accountNumber', 'name', 'routingNumber']])
      const wire = await simulate('bank', userId, { network: 'wire', accountNumber: us.details.accountNumber, amount: '1', remitter: { name: 'Jane Payer', address1: '1 Main Street', identifier: 'ID-1' } })
      assert.deepEqual(wire.json<{ bankDeposit: unknown }>().bankDeposit, {
        network: 'wire',
        accountNumber: us.details.accountNumber,
        asset: 'USD',
        amount: '1',
        remitter: { name: 'Jane Payer', address1: '1 Main Street', identifier: 'ID-1' },
      })
      await settled(userId, us.accountId, '5.25')
    })

    test('unknown destinations are 404, broken rules 409, malformed bodies 400; nothing is recorded', async () => {
      const userId = await suite.ctx.createUser(suite.token).then((u) => u.id)
      const eth = await issue(suite.ctx, suite.token, userId, 'ETH', 'crypto', 'ethereum')
      const btc = await issue(suite.ctx, suite.token, userId, 'BTC', 'crypto', 'bitcoin')
      const eur = await issue(suite.ctx, suite.token, userId, 'EUR', 'bank', 'sepa')
      const us = await issue(suite.ctx, suite.token, userId, 'USD', 'bank', 'wire')
      const before = await transactionCount()
      const crypto = (overrides: Record<string, unknown>) => simulate('crypto', userId, { network: 'ethereum', address: eth.details.address, asset: 'ETH', amount: '1', ...overrides })

      assert.deepEqual(assertError(await crypto({ network: 'nowhere' }), 404, 'entity_not_found'), { entity: 'rail' })
      assert.deepEqual(assertError(await crypto({ asset: 'BTC' }), 404, 'entity_not_found'), { entity: 'rail' })
      assert.deepEqual(assertError(await crypto({ address: '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed' }), 404, 'entity_not_found'), { entity: 'depositMethod' })
      assert.equal(assertError(await crypto({ address: '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD' }), 409, 'crypto_address_invalid')!.property, 'address')
      assert.equal(assertError(await crypto({ network: 'bitcoin', asset: 'BTC', address: 'bc1qxsy3qh8d44d5jkuvn98rxsjtxpmdlslgdt7erl' }), 409, 'crypto_address_invalid')!.property, 'address')
      assert.deepEqual(assertError(await crypto({ asset: 'USDC' }), 409, 'asset_not_supported'), { context: 'body', property: 'asset' })
      for (const [amount, rule] of [['0', 'positive'], ['0.000', 'positive'], ['-1', 'positive'], ['0.0000000000000000001', 'decimal-places'], ['abc', 'format'], ['1e5', 'format']] as const) {
        assert.equal(assertError(await crypto({ amount }), 409, 'transaction_amount_invalid')!.rule, rule, amount)
      }
      assert.equal(assertError(await simulate('crypto', userId, { network: 'bitcoin', address: btc.details.address, asset: 'BTC', amount: '0.000000001' }), 409, 'transaction_amount_invalid')!.rule, 'decimal-places')
      assertError(await crypto({ remitter: { addresses: [eth.details.address] } }), 409, 'remitter_and_recipient_cannot_match')
      assert.deepEqual(
        assertError(await crypto({ remitter: { addresses: ['0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed', '0x8617E340B3D01FA5F11F306F4090FD50E238070D'] } }), 409, 'crypto_address_invalid'),
        { context: 'body', property: 'remitter.addresses', threshold: { limit: 1 } },
      )
      assert.equal(assertError(await crypto({ remitter: { addresses: ['not-an-address'] } }), 409, 'crypto_address_invalid')!.property, 'remitter.addresses')
      for (const body of [{}, { network: 'ethereum' }, { network: 'ethereum', address: eth.details.address, asset: 'ETH', amount: 1 }, { network: 'ethereum', address: ` ${String(eth.details.address)}`, asset: 'ETH', amount: '1' }, { network: 'ethereum', address: eth.details.address, asset: 'ETH', amount: '1', extra: true }, { network: 'ethereum', address: eth.details.address, asset: 'ETH', amount: '1', remitter: {} }]) {
        assertError(await simulate('crypto', userId, body), 400, 'request_invalid')
      }
      const huge = await simulate('crypto', userId, { network: 'ethereum', address: eth.details.address, asset: 'ETH', amount: '1', padding: 'x'.repeat(2_000_000) })
      assert.equal(huge.status, 413, huge.body)

      const sepa = (overrides: Record<string, unknown>) => simulate('bank', userId, { network: 'sepa', iban: eur.details.iban, asset: 'EUR', amount: '10', ...overrides })
      const iban = eur.details.iban as string
      const wrongCheck = `${iban.slice(0, 2)}${String((Number(iban.slice(2, 4)) % 97) + 1).padStart(2, '0')}${iban.slice(4)}`
      assert.deepEqual(assertError(await sepa({ iban: wrongCheck }), 404, 'entity_not_found'), { entity: 'depositMethod' })
      assert.deepEqual(assertError(await sepa({ iban: 'NL91ABNA0417164300' }), 404, 'entity_not_found'), { entity: 'depositMethod' })
      assert.deepEqual(assertError(await sepa({ asset: 'GBP' }), 409, 'asset_not_supported'), { context: 'body', property: 'asset' })
      assert.deepEqual(assertError(await sepa({ remitter: { iban: 'NL92ABNA0417164300' } }), 409, 'invalid_number'), { context: 'body', property: 'remitter.iban' })
      assertError(await sepa({ remitter: { iban } }), 409, 'remitter_and_recipient_cannot_match')
      assert.equal(assertError(await sepa({ amount: '0.001' }), 409, 'transaction_amount_invalid')!.rule, 'decimal-places')
      assertError(await sepa({ iban: 'not an iban' }), 400, 'request_invalid')
      assertError(await sepa({ network: 'swift' }), 400, 'request_invalid')
      assertError(await simulate('bank', userId, { network: 'fps', sortCode: '089999', accountNumber: '66374958', asset: 'GBP', amount: '1' }), 404, 'entity_not_found')
      assertError(await simulate('bank', userId, { network: 'ach', accountNumber: us.details.accountNumber, routingNumber: '021000021', amount: '1' }), 404, 'entity_not_found')
      assertError(await simulate('bank', userId, { network: 'ach', accountNumber: us.details.accountNumber, routingNumber: '110000000', amount: '1', remitter: { routingNumber: '123456789' } }), 409, 'invalid_number')
      assertError(await simulate('bank', userId, { network: 'rtp', accountNumber: '000000', amount: '1' }), 400, 'request_invalid')
      assert.equal(await transactionCount(), before)
    })

    test('another organization cannot deposit to this one\'s destinations', async () => {
      const userId = await suite.ctx.createUser(suite.token).then((u) => u.id)
      const btc = await issue(suite.ctx, suite.token, userId, 'BTC', 'crypto', 'bitcoin')
      const eur = await issue(suite.ctx, suite.token, userId, 'EUR', 'bank', 'sepa')
      const otherToken = await suite.ctx.token(await suite.ctx.newClient())
      const stranger = await suite.ctx.createUser(otherToken).then((u) => u.id)
      const before = await transactionCount()
      assertError(await simulate('crypto', stranger, { network: 'bitcoin', address: btc.details.address, asset: 'BTC', amount: '1' }, otherToken), 404, 'entity_not_found')
      assertError(await simulate('bank', stranger, { network: 'sepa', iban: eur.details.iban, asset: 'EUR', amount: '1' }, otherToken), 404, 'entity_not_found')
      assert.equal(await transactionCount(), before)
    })
  })
}

describe('deposit methods in production', () => {
  test('the test helpers do not exist; crypto methods are main-chain; bank methods need the operator\'s bank', async () => {
    const config = testConfig({ TESSERA_ENV: 'production', TOKEN_SIGNING_KEY: loadOrCreateSecrets(null, testConfig()).tokenSigningKey, SEALING_KEY: Buffer.alloc(32, 1).toString('base64'), PRICE_FEED: 'simulated' })
    const database = await openDatabase({ ...config, databaseUrl: null, dataDir: null })
    await migrateToLatest(database)
    const { app } = await buildApp({ config, database, secrets: loadOrCreateSecrets(null, config) })
    try {
      for (const kind of ['bank', 'crypto']) {
        const response = await app.inject({ method: 'POST', url: `/core/accounts/test-helpers/${kind}-deposits`, payload: {} })
        assert.equal(response.statusCode, 404)
        assert.equal(response.json<{ code: string }>().code, 'route_not_found')
      }
      const document = app.swagger() as { paths: Record<string, unknown> }
      assert.ok(!Object.keys(document.paths).some((p) => p.includes('test-helpers/bank-deposits') || p.includes('test-helpers/crypto-deposits')))
      assert.ok(Object.keys(document.paths).includes('/core/accounts/{accountId}/deposit-method'))
    } finally {
      await app.close()
    }
  })
})

describe('deposit methods in production [pglite]', () => {
  const suite = useApp('pglite', {
    TESSERA_ENV: 'production',
    TOKEN_SIGNING_KEY: loadOrCreateSecrets(null, testConfig()).tokenSigningKey,
    SEALING_KEY: Buffer.alloc(32, 2).toString('base64'),
    PRICE_FEED: 'simulated',
  })

  test('crypto methods are main-chain addresses; bank methods wait for the operator\'s bank', async () => {
    const userId = await suite.ctx.createUser(suite.token).then((u) => u.id)
    for (const [network, asset, prefix] of [['bitcoin', 'BTC', /^bc1q/], ['litecoin', 'LTC', /^ltc1q/], ['ethereum', 'ETH', /^0x/]] as const) {
      const { details } = await issue(suite.ctx, suite.token, userId, asset, 'crypto', network)
      assert.match(details.address as string, prefix)
      for (const { value } of details.addressFormats as { value: string }[]) {
        const check = await suite.ctx.request({ method: 'POST', url: `/core/networks/${network}/validate-address`, headers: bearer(suite.token, userId), payload: { address: value } })
        assert.deepEqual(check.json(), { isValid: true }, value)
      }
    }
    const opened = await suite.ctx.request({ method: 'POST', url: '/core/accounts', headers: bearer(suite.token, userId), payload: { label: 'EUR', asset: 'EUR' } })
    const accountId = opened.json<{ account: { id: string } }>().account.id
    const response = await suite.ctx.request({ method: 'PUT', url: `/core/accounts/${accountId}/deposit-method?type=bank&asset=EUR&network=sepa`, headers: bearer(suite.token, userId) })
    assert.deepEqual(assertError(response, 409, 'rail_feature_not_available'), { feature: 'deposit' })
  })
})
