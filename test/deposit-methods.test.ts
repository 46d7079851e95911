import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { isValidIBAN } from 'ibantools'
import { validateAccountDetails } from 'uk-modulus-check'
import { isValidRoutingNumber } from '../src/modules/deposit-methods/bank-numbers.ts'
import { bearer, ENGINES, useApp, type TestResponse } from './helpers.ts'

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
      assertError(await put(userId, 'not-a-uuid', 'crypto', 'BTC', 'bitcoin'), 400, 'request_invalid')
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
