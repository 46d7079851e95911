/**
 * External accounts through the HTTP API (src/modules/external-accounts): creation of every kind with real checks of
 * the details, duplicates, card limits, the list and its pages, renaming, deletion, metadata, authorization and
 * isolation, features narrowed by capabilities, and the secrecy of card numbers and security codes (responses,
 * trace-level logs, every column of the database).
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { after, before, describe, test } from 'node:test'
import { requestHash } from '../src/http/idempotency.ts'
import { derivePurposeKey } from '../src/lib/sealing.ts'
import { sha256Hex } from '../src/lib/secrets.ts'
import { sql } from 'kysely'
import { enqueue } from '../src/jobs/queue.ts'
import { eventsAbout } from '../src/modules/events/outbox.ts'
import { STATUS_CHANGE_JOB } from '../src/modules/external-accounts/index.ts'
import { SANDBOX_VERIFICATION_DECLINES, SANDBOX_WRONG_SECURITY_CODE } from '../src/providers/cards/sandbox.ts'
import { bearer, ENGINES, individualUser, PUBLIC_URL, useApp, type TestContext, type TestResponse } from './helpers.ts'
import { assertError, commit, fund, openAccount, quoted, requestQuote, transactionOf, verifiedUser, withoutTravelRule } from './money.ts'
import { assertNoSecret, cardSecrets, dumpDatabase, startLoggedApp, type LoggedApp } from './secrecy.ts'

const URL_ = '/core/external-accounts'
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/
const UNKNOWN_ID = '0190a8c1-0000-7000-8000-000000000000'
const EXTERNAL_ACCOUNT_KEYS = ['asset', 'createdAt', 'details', 'features', 'id', 'label', 'network', 'ownerId', 'status', 'type', 'updatedAt']

const NOW = new Date()
const FUTURE = { month: 12, year: NOW.getUTCFullYear() + 3 }
const THIS_MONTH = { month: NOW.getUTCMonth() + 1, year: NOW.getUTCFullYear() }
const LAST_MONTH = NOW.getUTCMonth() === 0 ? { month: 12, year: NOW.getUTCFullYear() - 1 } : { month: NOW.getUTCMonth(), year: NOW.getUTCFullYear() }

const US_ADDRESS = { country: 'US', subdivision: 'US-CA', city: 'San Francisco', line1: '1 Market Street', postalCode: '94102' }
const BTC_TESTNET = 'tb1qxsy3qh8d44d5jkuvn98rxsjtxpmdlslg8d92cv'
const ETH_ADDRESS = '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed'
const XRP_ADDRESS = 'rHb9CJAWyB4rj91VRWn96DkukG4bwdtyTh'

/** Sandbox card numbers (reference-data/card-bins.json, src/providers/cards/sandbox.ts). */
const VISA_SANDBOX = '4242424242424242'
const MASTERCARD_CREDIT = '5555555555554444'
const MASTERCARD_DEBIT = '5200828282828210'
const VISA_GB = '4000008260000000'
const VISA_FR = '4000002500000003'
const VISA_NO_OCT = '4000056655665556'
const DISCOVER = '6011111111111117'

interface ExternalAccount {
  id: string
  ownerId: string
  type: string
  status: string
  label: string
  asset: string
  network: string
  features: string[]
  details: Record<string, unknown>
  verifications?: unknown[]
  createdAt: string
  updatedAt: string
}

interface Page {
  externalAccounts: ExternalAccount[]
  pagination: { first: string; prev?: string; next?: string }
}

// --- Card numbers -------------------------------------------------------------------------------------------------

/** The Luhn check, written here apart from src/ so that the tests do not trust the code under test. */
function luhnValid(digits: string): boolean {
  let sum = 0
  for (let i = 0; i < digits.length; i++) {
    let digit = Number(digits[digits.length - 1 - i])
    if (i % 2 === 1) digit = digit * 2 > 9 ? digit * 2 - 9 : digit * 2
    sum += digit
  }
  return sum % 10 === 0
}

/** A card number of the sandbox 424242 range (visa debit, issued where the user lives), with its check digit. */
function sandboxCard(middle: string): string {
  const partial = `424242${middle}`.padEnd(15, '0').slice(0, 15)
  for (let check = 0; check < 10; check++) if (luhnValid(`${partial}${check}`)) return `${partial}${check}`
  throw new Error('unreachable')
}

/** The same number with its last digit changed: fails the Luhn check. */
function withWrongCheckDigit(number: string): string {
  const last = Number(number.at(-1))
  return `${number.slice(0, -1)}${(last + 1) % 10}`
}

// --- Request bodies -----------------------------------------------------------------------------------------------

const cardBody = (number: string, overrides: Record<string, unknown> = {}) => ({
  type: 'card',
  label: `Card ${number.slice(-4)}`,
  number,
  securityCode: '123',
  expiryDate: FUTURE,
  ...overrides,
})
const achBody = (overrides: Record<string, unknown> = {}) => ({
  type: 'bank',
  asset: 'USD',
  network: 'ach',
  label: 'US checking',
  address: US_ADDRESS,
  routingNumber: '121000248',
  accountNumber: '9876543210',
  accountType: 'checking',
  ...overrides,
})
const fpsBody = (overrides: Record<string, unknown> = {}) => ({ type: 'bank', asset: 'GBP', network: 'fps', label: 'UK current', sortCode: '089999', accountNumber: '66374958', ...overrides })
const sepaBody = (overrides: Record<string, unknown> = {}) => ({ type: 'bank', asset: 'EUR', network: 'sepa', label: 'Compte courant', iban: 'DE89370400440532013000', bic: 'COBADEFFXXX', ...overrides })
const bitcoinBody = (overrides: Record<string, unknown> = {}) => ({ type: 'crypto', asset: 'BTC', network: 'bitcoin', label: 'Cold wallet', address: BTC_TESTNET, ...overrides })
const xrpBody = (overrides: Record<string, unknown> = {}) => ({ type: 'crypto', asset: 'XRP', network: 'xrp-ledger', label: 'Exchange', address: XRP_ADDRESS, reference: '12345', ...overrides })

/** The USD bank rails other than ACH that withdraw: where the same numbers reach (reference-data/rails.json). */
function usdWithdrawRailsBesidesAch(): string[] {
  const file = JSON.parse(fs.readFileSync(path.resolve(import.meta.dirname, '../reference-data/rails.json'), 'utf8')) as {
    rails: { type: string; network: string; asset: string; features: string[] }[]
  }
  return file.rails.filter((r) => r.type === 'bank' && r.asset === 'USD' && r.network !== 'ach' && r.features.includes('withdraw')).map((r) => r.network)
}

// --- Users --------------------------------------------------------------------------------------------------------

/**
 * A French resident whose KYC is complete (test/money.ts `verifiedUser`) and whose residential address is complete
 * too: what the `cards` capability needs (identity + address).
 */
async function cardholder(ctx: TestContext, token: string): Promise<string> {
  const userId = await verifiedUser(ctx, token)
  const response = await ctx.request({
    method: 'PATCH',
    url: '/core/kyc/processes/address',
    headers: bearer(token, userId),
    payload: { input: { address: { city: 'Paris', line1: '1 rue de Rivoli', postalCode: '75001' } } },
  })
  assert.equal(response.status, 200, response.body)
  return userId
}


for (const engine of ENGINES) {
  describe(`external accounts [${engine}]`, () => {
    const suite = useApp(engine)
    const db = () => suite.ctx.database.db
    const org = () => suite.ctx.client.organizationId

    const create = (userId: string, body: unknown, token = suite.token, headers: Record<string, string> = {}) =>
      suite.ctx.request({ method: 'POST', url: URL_, headers: { ...bearer(token, userId), ...headers }, payload: body as Record<string, unknown> })
    async function link(userId: string, body: Record<string, unknown>, token = suite.token): Promise<ExternalAccount> {
      const response = await create(userId, body, token)
      assert.equal(response.status, 201, response.body)
      const created = response.json<{ externalAccount: ExternalAccount; errors?: unknown }>()
      assert.equal(created.errors, undefined)
      return created.externalAccount
    }
    const get = (userId: string, id: string, token = suite.token) => suite.ctx.request({ method: 'GET', url: `${URL_}/${id}`, headers: bearer(token, userId) })
    const list = (userId: string, query = '', token = suite.token) => suite.ctx.request({ method: 'GET', url: `${URL_}${query}`, headers: bearer(token, userId) })
    const patch = (userId: string, id: string, body: unknown, token = suite.token) =>
      suite.ctx.request({ method: 'PATCH', url: `${URL_}/${id}`, headers: bearer(token, userId), payload: body as Record<string, unknown> })
    const remove = (userId: string, id: string, token = suite.token) => suite.ctx.request({ method: 'DELETE', url: `${URL_}/${id}`, headers: bearer(token, userId) })
    const metadata = (method: 'GET' | 'PUT', userId: string, id: string, body?: unknown, token = suite.token) =>
      suite.ctx.request({ method, url: `${URL_}/${id}/metadata`, headers: bearer(token, userId), ...(body === undefined ? {} : { payload: body as Record<string, unknown> }) })

    async function listed(userId: string, query = ''): Promise<ExternalAccount[]> {
      const response = await list(userId, query)
      assert.equal(response.status, 200, response.body)
      return response.json<Page>().externalAccounts
    }
    const eventsOf = (account: { id: string }) => eventsAbout(db(), org(), { type: 'external-account', id: account.id })
    /** Every external account event about the user's accounts, oldest first. */
    const eventsOfUser = (userId: string) =>
      db().selectFrom('outbox_events').select(['type', 'subject_id']).where('user_id', '=', userId).where('type', 'like', 'core.external-account.%').orderBy('id').execute()
    /** Rows of the user's external accounts, deleted ones included. */
    const rowsOf = (userId: string) => db().selectFrom('external_accounts').selectAll().where('owner_id', '=', userId).execute()
    const newUser = async (body = individualUser(), token = suite.token) => (await suite.ctx.createUser(token, body)).id
    const holder = () => cardholder(suite.ctx, suite.token)

    // --- 1. Creation of every kind ---------------------------------------------------------------------------------

    test('a card: 201 with the exact shape (EUR visa debit for a French resident, last four digits only), and core.external-account.created', async () => {
      const userId = await holder()
      const response = await create(userId, cardBody(VISA_SANDBOX, { label: 'My Visa' }))
      assert.equal(response.status, 201, response.body)
      const body = response.json<{ externalAccount: ExternalAccount }>()
      assert.deepEqual(Object.keys(body), ['externalAccount'], 'no errors member without metadata errors')
      const account = body.externalAccount
      assert.deepEqual(Object.keys(account).sort(), EXTERNAL_ACCOUNT_KEYS)
      assert.match(account.id, UUID)
      assert.match(account.createdAt, ISO_MS)
      assert.equal(account.updatedAt, account.createdAt)
      assert.deepEqual(
        { ...account, id: undefined, createdAt: undefined, updatedAt: undefined, features: [...account.features].sort() },
        {
          id: undefined,
          ownerId: userId,
          type: 'card',
          status: 'ok',
          label: 'My Visa',
          asset: 'EUR',
          network: 'visa',
          features: ['deposit', 'withdraw'],
          details: { type: 'debit', last4Digits: '4242', expiryDate: FUTURE, octSupport: 'supported' },
          createdAt: undefined,
          updatedAt: undefined,
        },
      )
      assert.deepEqual((await get(userId, account.id)).json(), { externalAccount: account })

      const events = await eventsOf(account)
      assert.deepEqual(events.map((e) => e.type), ['core.external-account.created'])
      assert.deepEqual(events[0]!.data, { externalAccount: account })
      assert.equal(events[0]!.user_id, userId)
    })

    test('cards by issuer range: credit without a rail for the currency, issuer country, unknown issuer, no push-to-card, expiring this month', async () => {
      const userId = await holder()
      const credit = await create(userId, cardBody(MASTERCARD_CREDIT))
      assert.deepEqual(credit.json(), { code: 'card_type_not_allowed', message: 'The card type is not allowed', details: { type: 'credit' } })
      assert.equal(credit.status, 409)

      const britishCard = await create(userId, cardBody(VISA_GB))
      assert.equal(britishCard.status, 409)
      assert.deepEqual(britishCard.json(), {
        code: 'operation_not_allowed',
        message: 'The card issuer country does not match the user country of residence',
        details: { reasons: ['card-issuer-country-mismatch'] },
      })
      assert.deepEqual(assertError(await create(userId, cardBody(DISCOVER)), 409, 'operation_not_allowed'), { reasons: ['card-unsupported'] })
      assert.deepEqual(await rowsOf(userId), [], 'refused cards store nothing')

      const french = await link(userId, cardBody(VISA_FR))
      assert.deepEqual([french.asset, french.network, french.details], ['EUR', 'visa', { type: 'debit', last4Digits: '0003', expiryDate: FUTURE, octSupport: 'supported' }])
      assert.deepEqual([...french.features].sort(), ['deposit', 'withdraw'])

      const mastercard = await link(userId, cardBody(MASTERCARD_DEBIT))
      assert.deepEqual([mastercard.asset, mastercard.network, (mastercard.details as { type: string }).type], ['EUR', 'mastercard', 'debit'])

      // An issuer that takes no push-to-card credits: the card can be a deposit source, never a withdrawal destination.
      const noOct = await link(userId, cardBody(VISA_NO_OCT))
      assert.equal(noOct.details.octSupport, 'unsupported')
      assert.deepEqual(noOct.features, ['deposit'])

      // A card is valid through the last day of its expiry month.
      const expiring = await link(userId, cardBody(sandboxCard('1000000'), { expiryDate: THIS_MONTH }))
      assert.deepEqual(expiring.details.expiryDate, THIS_MONTH)

      assert.deepEqual((await listed(userId)).map((a) => a.id), [expiring.id, noOct.id, mastercard.id, french.id])
      assert.deepEqual((await eventsOfUser(userId)).map((e) => e.type), Array(4).fill('core.external-account.created'))
    })

    test('a US bank account over ACH: the other USD rails that withdraw are its secondary networks; ACH pulls make it a deposit source', async () => {
      const userId = await verifiedUser(suite.ctx, suite.token)
      const account = await link(userId, achBody())
      const secondary = usdWithdrawRailsBesidesAch()
      assert.ok(secondary.length > 0 && !secondary.includes('ach'))
      assert.deepEqual(
        { ...account, id: undefined, createdAt: undefined, updatedAt: undefined, features: [...account.features].sort() },
        {
          id: undefined,
          ownerId: userId,
          type: 'bank',
          status: 'ok',
          label: 'US checking',
          asset: 'USD',
          network: 'ach',
          features: ['deposit', 'withdraw'],
          details: { address: US_ADDRESS, routingNumber: '121000248', accountNumber: '9876543210', accountType: 'checking', secondaryNetworks: { withdraw: secondary } },
          createdAt: undefined,
          updatedAt: undefined,
        },
      )
      assert.deepEqual(Object.keys(account).sort(), EXTERNAL_ACCOUNT_KEYS)
      // ZIP+4 is a ZIP code too.
      const zipPlus4 = await link(userId, achBody({ accountNumber: '12345678', accountType: 'savings', address: { ...US_ADDRESS, postalCode: '94102-1234' } }))
      assert.equal((zipPlus4.details as { address: { postalCode: string } }).address.postalCode, '94102-1234')
      assert.deepEqual((await eventsOf(account)).map((e) => e.type), ['core.external-account.created'])
    })

    test('a UK bank account over Faster Payments (GBP) and a SEPA account (EUR), its IBAN and BIC normalised', async () => {
      const userId = await verifiedUser(suite.ctx, suite.token)
      const fps = await link(userId, fpsBody())
      assert.deepEqual([fps.type, fps.asset, fps.network, fps.status], ['bank', 'GBP', 'fps', 'ok'])
      assert.deepEqual(fps.details, { accountNumber: '66374958', sortCode: '089999' })
      // Tessera cannot pull from a Faster Payments account: money comes in by the user's own transfer.
      assert.deepEqual(fps.features, ['withdraw'])

      const sepa = await link(userId, sepaBody({ iban: 'de89 3704 0044 0532 0130 00', bic: 'cobadeffxxx' }))
      assert.deepEqual([sepa.type, sepa.asset, sepa.network], ['bank', 'EUR', 'sepa'])
      assert.deepEqual(sepa.details, { iban: 'DE89370400440532013000', bic: 'COBADEFFXXX' })
      assert.deepEqual(sepa.features, ['withdraw'])
      // The normalised form is what identifies it.
      assert.deepEqual(assertError(await create(userId, sepaBody()), 409, 'duplicate'), { context: 'body', property: 'iban' })
      for (const account of [fps, sepa]) {
        assert.deepEqual(Object.keys(account).sort(), EXTERNAL_ACCOUNT_KEYS)
        const [event] = await eventsOf(account)
        assert.deepEqual(event?.data, { externalAccount: account })
      }
    })

    test('crypto addresses: bitcoin testnet, XRP Ledger with its destination tag; the network\'s rules apply to the reference', async () => {
      const userId = await verifiedUser(suite.ctx, suite.token)
      const bitcoin = await link(userId, bitcoinBody())
      assert.deepEqual(Object.keys(bitcoin).sort(), [...EXTERNAL_ACCOUNT_KEYS, 'verifications'].sort())
      assert.deepEqual(
        { type: bitcoin.type, asset: bitcoin.asset, network: bitcoin.network, status: bitcoin.status, details: bitcoin.details, verifications: bitcoin.verifications },
        { type: 'crypto', asset: 'BTC', network: 'bitcoin', status: 'ok', details: { address: BTC_TESTNET }, verifications: [] },
      )
      assert.deepEqual([...bitcoin.features].sort(), ['deposit', 'withdraw'])

      const xrp = await link(userId, xrpBody())
      assert.deepEqual([xrp.asset, xrp.network, xrp.details], ['XRP', 'xrp-ledger', { address: XRP_ADDRESS, reference: '12345' }])
      // The same address with another tag is another destination.
      const otherTag = await link(userId, xrpBody({ reference: '67890' }))
      assert.notEqual(otherTag.id, xrp.id)

      assert.deepEqual(assertError(await create(userId, xrpBody({ reference: 'abc' })), 409, 'crypto_address_invalid'), { context: 'body', property: 'reference' })
      assert.deepEqual(assertError(await create(userId, bitcoinBody({ reference: '1' })), 409, 'crypto_address_invalid'), { context: 'body', property: 'reference' })
      assert.equal((await listed(userId, '?type=crypto')).length, 3)
    })

    test('payment apps: PayPal and Venmo are disabled in the shipped catalogue, 409 user_capability_failure', async () => {
      const userId = await holder()
      for (const [network, identifier] of [['paypal', 'jane@example.com'], ['venmo', '@jane-doe']] as const) {
        const details = assertError(await create(userId, { type: 'apm', asset: 'USD', network, label: 'App', identifier }), 409, 'user_capability_failure') as {
          capability: { code: string; restrictions: string[] }
        }
        assert.equal(details.capability.code, network)
        assert.ok(details.capability.restrictions.includes('temporarily-disabled'), JSON.stringify(details))
      }
      assert.deepEqual(await rowsOf(userId), [])
    })

    // --- 2. Bad details store nothing ------------------------------------------------------------------------------

    test('details that fail their checks are 409 naming the field, as the reference shapes them; nothing is stored or announced', async () => {
      const userId = await holder()
      const cases: [string, Record<string, unknown>, number, string, Record<string, unknown>][] = [
        ['Luhn', cardBody('4242424242424241'), 409, 'number_invalid', { context: 'body', property: 'number' }],
        ['expired', cardBody(VISA_SANDBOX, { expiryDate: LAST_MONTH }), 409, 'date_invalid', {
          context: 'body',
          property: 'expiryDate',
          rule: 'difference-less-than-or-equal-to-threshold',
          threshold: { limit: 0, unit: 'milliseconds' },
        }],
        ['routing checksum', achBody({ routingNumber: '121000249' }), 409, 'number_invalid', { context: 'body', property: 'routingNumber' }],
        ['ACH outside the US', achBody({ address: { ...US_ADDRESS, country: 'CA', subdivision: 'CA-ON' } }), 409, 'country_not_supported', { context: 'body', property: 'address.country' }],
        ['ZIP code', achBody({ address: { ...US_ADDRESS, postalCode: 'SW1A 1AA' } }), 409, 'postal_code_invalid', { context: 'body', property: 'address.postalCode' }],
        ['UK modulus', fpsBody({ accountNumber: '66374959' }), 409, 'number_invalid', { context: 'body', property: 'accountNumber' }],
        ['IBAN checksum', sepaBody({ iban: 'DE89370400440532013001' }), 409, 'number_invalid', { context: 'body', property: 'iban' }],
        ['BIC', sepaBody({ bic: '12345678' }), 409, 'number_invalid', { context: 'body', property: 'bic' }],
        ['IBAN outside the SEPA area', sepaBody({ iban: 'TR330006100519786457841326' }), 409, 'country_not_supported', { context: 'body', property: 'iban' }],
        ['address of another network', bitcoinBody({ address: ETH_ADDRESS }), 409, 'crypto_address_invalid', { context: 'body', property: 'address' }],
        ['mainnet address in sandbox', bitcoinBody({ address: 'bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq' }), 409, 'crypto_address_invalid', { context: 'body', property: 'address' }],
        ['no rail', bitcoinBody({ network: 'ethereum', address: ETH_ADDRESS }), 404, 'entity_not_found', { entity: 'rail' }],
        ['no rail (asset case)', bitcoinBody({ asset: 'btc' }), 404, 'entity_not_found', { entity: 'rail' }],
        ['wrong security code', cardBody(VISA_SANDBOX, { securityCode: SANDBOX_WRONG_SECURITY_CODE }), 409, 'operation_not_allowed', { reasons: ['card-declined'] }],
      ]
      // Every test number the sandbox issuer declines, with the reason the reference gives.
      const declineReasons: Record<string, string> = { 'card-permanently-declined-by-bank': 'card-permanently-declined', 'card-unsupported': 'card-unsupported' }
      for (const [number, reason] of Object.entries(SANDBOX_VERIFICATION_DECLINES)) {
        cases.push([`declined ${number}`, cardBody(number), 409, 'operation_not_allowed', { reasons: [declineReasons[reason] ?? 'card-declined'] }])
      }
      assert.ok(cases.some(([, body]) => body.number === '4000000000000002'))
      assert.ok(cases.some(([, , , , details]) => JSON.stringify(details) === '{"reasons":["card-permanently-declined"]}'), '4000000000000036')

      for (const [name, body, status, code, details] of cases) {
        const response = await create(userId, body)
        assert.equal(response.status, status, `${name}: ${response.body}`)
        assert.equal(response.json().code, code, name)
        assert.deepEqual(response.json().details, details, name)
      }
      const declined = await create(userId, cardBody('4000000000000036'))
      assert.equal(declined.json().message, 'The card was permanently declined')
      assert.deepEqual(await listed(userId), [])
      assert.deepEqual(await rowsOf(userId), [])
      assert.deepEqual(await eventsOfUser(userId), [])
    })

    test('malformed bodies are 400 request_invalid with the envelope, a huge one 413, and create nothing', async () => {
      const userId = await holder()
      const cases: [string, unknown, string | null][] = [
        ['card without a number', { type: 'card', label: 'x', securityCode: '123', expiryDate: FUTURE }, 'number'],
        ['card without a security code', { type: 'card', label: 'x', number: VISA_SANDBOX, expiryDate: FUTURE }, 'securityCode'],
        ['number with spaces', cardBody('4242 4242 4242 4242'), 'number'],
        ['number too short', cardBody('42424242424'), 'number'],
        ['four-digit security code', cardBody(VISA_SANDBOX, { securityCode: '1234' }), 'securityCode'],
        ['month as text', cardBody(VISA_SANDBOX, { expiryDate: { month: '12', year: FUTURE.year } }), 'expiryDate.month'],
        ['month 13', cardBody(VISA_SANDBOX, { expiryDate: { month: 13, year: FUTURE.year } }), 'expiryDate.month'],
        ['number as a number', cardBody(VISA_SANDBOX, { number: 4242424242424242 }), 'number'],
        ['label with edge spaces', sepaBody({ label: ' padded' }), 'label'],
        ['no label', { ...sepaBody(), label: undefined }, 'label'],
        ['ACH without address', { ...achBody(), address: undefined }, 'address'],
        ['ACH account number of zeros', achBody({ accountNumber: '0000' }), 'accountNumber'],
        ['ACH account type', achBody({ accountType: 'brokerage' }), 'accountType'],
        ['sort code with dashes', fpsBody({ sortCode: '08-99-99' }), 'sortCode'],
        ['bank over an unknown network', sepaBody({ network: 'swift' }), null],
        ['unknown type', { type: 'cheque', label: 'x' }, null],
        ['no type', { label: 'x', iban: 'DE89370400440532013000', bic: 'COBADEFFXXX' }, null],
        ['array', [sepaBody()], null],
        ['string', 'card', null],
        ['null', null, null],
      ]
      for (const [name, body, property] of cases) {
        // Sent as JSON text, whatever it is.
        const response = await suite.ctx.request({ method: 'POST', url: URL_, headers: { ...bearer(suite.token, userId), 'content-type': 'application/json' }, payload: JSON.stringify(body) })
        assert.equal(response.status, 400, `${name}: ${response.body}`)
        const error = response.json<{ code: string; message: string; details: { context: string; violations: { property: string; rule: string }[] } }>()
        assert.equal(error.code, 'request_invalid', name)
        assert.equal(typeof error.message, 'string')
        assert.equal(error.details.context, 'body', name)
        assert.ok(error.details.violations.length > 0, name)
        if (property !== null) assert.ok(error.details.violations.some((v) => v.property === property), `${name}: ${JSON.stringify(error.details.violations)}`)
      }
      const huge = await create(userId, sepaBody({ metadata: { blob: 'x'.repeat(2_000_000) } }))
      assert.equal(huge.status, 413, huge.body)
      assert.equal(huge.json().code, 'content_too_large')
      const text = await suite.ctx.request({ method: 'POST', url: URL_, headers: { ...bearer(suite.token, userId), 'content-type': 'text/plain' }, payload: 'type=card' })
      assert.equal(text.status, 415)
      const notJson = await suite.ctx.request({ method: 'POST', url: URL_, headers: { ...bearer(suite.token, userId), 'content-type': 'application/json' }, payload: '{"type":"card",' })
      assertError(notJson, 400, 'request_invalid')
      assert.deepEqual(await rowsOf(userId), [])
      assert.deepEqual(await eventsOfUser(userId), [])
    })

    // --- 3. Duplicates -----------------------------------------------------------------------------------------------

    test('the same details twice for one user are 409 duplicate naming the identifying field; another user may link them', async () => {
      const userId = await holder()
      const originals = {
        card: cardBody(VISA_SANDBOX),
        ach: achBody(),
        fps: fpsBody(),
        sepa: sepaBody(),
        bitcoin: bitcoinBody(),
        ethereum: { type: 'crypto', asset: 'ETH', network: 'ethereum', label: 'Hot wallet', address: ETH_ADDRESS },
      }
      const again: [keyof typeof originals, Record<string, unknown>, string, string][] = [
        // What identifies a card is its number: another label, expiry or security code is the same card.
        ['card', cardBody(VISA_SANDBOX, { label: 'Again', securityCode: '456', expiryDate: { month: 1, year: FUTURE.year + 1 } }), 'number', 'The card is already registered'],
        ['ach', achBody({ label: 'Again', accountType: 'savings' }), 'accountNumber', 'The bank account is already registered'],
        ['fps', fpsBody({ label: 'Again' }), 'accountNumber', 'The bank account is already registered'],
        ['sepa', sepaBody({ iban: 'DE89 3704 0044 0532 0130 00' }), 'iban', 'The bank account is already registered'],
        // Bech32 and hex addresses are case-insensitive.
        ['bitcoin', bitcoinBody({ address: BTC_TESTNET.toUpperCase() }), 'address', 'The crypto address is already registered'],
        ['ethereum', { ...originals.ethereum, address: ETH_ADDRESS.toLowerCase() }, 'address', 'The crypto address is already registered'],
      ]
      const first: Record<string, ExternalAccount> = {}
      for (const [kind, body] of Object.entries(originals)) first[kind] = await link(userId, body)
      for (const [kind, body, property, message] of again) {
        const response = await create(userId, body)
        assert.equal(response.status, 409, `${kind}: ${response.body}`)
        assert.deepEqual(response.json(), { code: 'duplicate', message, details: { context: 'body', property } }, kind)
      }
      assert.equal((await listed(userId)).length, Object.keys(originals).length)
      assert.equal((await eventsOfUser(userId)).length, Object.keys(originals).length)
      // The same address for another asset of its network is another external account.
      const usdc = await link(userId, { ...originals.ethereum, asset: 'USDC', label: 'Stablecoins' })
      assert.equal(usdc.asset, 'USDC')
      assert.equal((await remove(userId, usdc.id)).status, 204)

      // Another user of the organization links the same details.
      const neighbour = await holder()
      for (const body of Object.values(originals)) await link(neighbour, body)

      // Once deleted, the same details can be linked again: a new external account.
      for (const kind of ['card', 'ach', 'bitcoin'] as const) {
        assert.equal((await remove(userId, first[kind]!.id)).status, 204)
        const relinked = await link(userId, originals[kind])
        assert.notEqual(relinked.id, first[kind]!.id)
        assertError(await create(userId, originals[kind]), 409, 'duplicate')
      }
    })

    test('two links of the same details at once: one is created, the other is 409 duplicate', async () => {
      const userId = await verifiedUser(suite.ctx, suite.token)
      const responses = await Promise.all([create(userId, sepaBody()), create(userId, sepaBody())])
      assert.deepEqual(responses.map((r) => r.status).sort(), [201, 409], responses.map((r) => r.body).join('\n'))
      assert.equal(responses.find((r) => r.status === 409)!.json().code, 'duplicate')
      assert.equal((await rowsOf(userId)).length, 1)
    })

    // --- 5. List, get, rename, delete, metadata ---------------------------------------------------------------------

    test('lists the user\'s external accounts newest first, filtered by type, page by page', async () => {
      const userId = await holder()
      const created: ExternalAccount[] = []
      for (const body of [sepaBody(), bitcoinBody(), cardBody(VISA_SANDBOX), achBody(), fpsBody(), xrpBody()]) created.push(await link(userId, body))
      await link(await verifiedUser(suite.ctx, suite.token), sepaBody())
      const newestFirst = created.map((a) => a.id).reverse()

      const all = await list(userId)
      assert.equal(all.status, 200, all.body)
      const page = all.json<Page>()
      assert.deepEqual(page.externalAccounts.map((a) => a.id), newestFirst)
      assert.deepEqual(page.externalAccounts, [...created].reverse(), 'listed as created')
      assert.deepEqual(page.pagination, { first: `${PUBLIC_URL}${URL_}?page=1&perPage=10&until=${newestFirst[0]}` })

      assert.deepEqual((await listed(userId, '?type=crypto')).map((a) => a.id), [created[5]!.id, created[1]!.id])
      assert.deepEqual((await listed(userId, '?type=card')).map((a) => a.id), [created[2]!.id])
      assert.deepEqual((await listed(userId, '?type=bank')).map((a) => a.id), [created[4]!.id, created[3]!.id, created[0]!.id])
      assert.deepEqual(await listed(userId, '?type=apm'), [])

      // Pages of two, walked by their links.
      const seen: string[] = []
      let query = '?perPage=2'
      const pages: Page[] = []
      for (;;) {
        const response = await list(userId, query)
        assert.equal(response.status, 200, response.body)
        const current = response.json<Page>()
        pages.push(current)
        seen.push(...current.externalAccounts.map((a) => a.id))
        if (!current.pagination.next) break
        const next = new URL(current.pagination.next)
        assert.equal(next.origin, PUBLIC_URL)
        query = next.search
      }
      assert.deepEqual(seen, newestFirst)
      assert.equal(pages.length, 3)
      assert.equal(pages[0]!.pagination.prev, undefined)
      assert.ok(pages[2]!.pagination.prev)
      assert.equal(new URL(pages[0]!.pagination.next!).searchParams.get('until'), newestFirst[0])

      const banks = (await list(userId, '?type=bank&perPage=2')).json<Page>()
      assert.equal(banks.externalAccounts.length, 2)
      assert.equal(new URL(banks.pagination.next!).searchParams.get('type'), 'bank')
      const lastBank = (await list(userId, new URL(banks.pagination.next!).search)).json<Page>()
      assert.deepEqual(lastBank.externalAccounts.map((a) => a.id), [created[0]!.id])

      for (const bad of ['?type=cheque', '?type=', '?perPage=0', '?perPage=101', '?page=x', '?until=nope']) {
        assert.equal(assertError(await list(userId, bad), 400, 'request_invalid')?.context, 'query', bad)
      }
      assert.deepEqual(await listed(await newUser()), [], 'a user without external accounts')
    })

    test('gets one external account; its id is case-insensitive', async () => {
      const userId = await verifiedUser(suite.ctx, suite.token)
      const account = await link(userId, fpsBody())
      const response = await get(userId, account.id)
      assert.equal(response.status, 200, response.body)
      assert.deepEqual(response.json(), { externalAccount: account })
      assert.deepEqual((await get(userId, account.id.toUpperCase())).json(), { externalAccount: account })
      assert.deepEqual(assertError(await get(userId, UNKNOWN_ID), 404, 'entity_not_found'), { entity: 'external-account' })
    })

    test('renames an external account (200); other changes and empty bodies are 400 and change nothing', async () => {
      const userId = await holder()
      const account = await link(userId, cardBody(VISA_SANDBOX, { label: 'Old name' }))
      const response = await patch(userId, account.id, { label: 'Everyday card' })
      assert.equal(response.status, 200, response.body)
      const updated = response.json<{ externalAccount: ExternalAccount }>().externalAccount
      assert.deepEqual({ ...updated, updatedAt: account.updatedAt }, { ...account, label: 'Everyday card' }, 'only the label and updatedAt change')
      assert.ok(updated.updatedAt >= account.updatedAt)
      assert.match(updated.updatedAt, ISO_MS)
      assert.deepEqual((await get(userId, account.id)).json(), { externalAccount: updated })

      const bad: [unknown, string | null][] = [
        [{}, null],
        [{ label: '' }, 'label'],
        [{ label: ' spaced ' }, 'label'],
        [{ label: 7 }, 'label'],
        [{ label: 'x'.repeat(141) }, 'label'],
        [{ label: 'x', unknown: true }, null],
        [{ network: 'mastercard' }, null],
        [{ details: { last4Digits: '0000' } }, null],
      ]
      for (const [body, property] of bad) {
        const details = assertError(await patch(userId, account.id, body), 400, 'request_invalid') as { context: string; violations: { property: string }[] }
        assert.equal(details.context, 'body', JSON.stringify(body))
        if (property !== null) assert.ok(details.violations.some((v) => v.property === property), JSON.stringify(details))
      }
      assert.deepEqual((await get(userId, account.id)).json(), { externalAccount: updated })
      assert.deepEqual((await eventsOf(account)).map((e) => e.type), ['core.external-account.created'])
      assert.deepEqual(assertError(await patch(userId, UNKNOWN_ID, { label: 'x' }), 404, 'entity_not_found'), { entity: 'external-account' })
    })

    test('deletes an external account: 204, then 404 everywhere, gone from the list, core.external-account.deleted', async () => {
      const userId = await holder()
      const kept = await link(userId, sepaBody())
      const account = await link(userId, cardBody(VISA_SANDBOX))
      assert.equal((await metadata('PUT', userId, account.id, { crm: 'c-1' })).status, 201)

      const response = await remove(userId, account.id)
      assert.equal(response.status, 204, response.body)
      assert.equal(response.body, '')
      for (const gone of [await get(userId, account.id), await patch(userId, account.id, { label: 'x' }), await remove(userId, account.id), await metadata('GET', userId, account.id)]) {
        assert.deepEqual(assertError(gone, 404, 'entity_not_found'), { entity: 'external-account' })
      }
      assert.deepEqual(await listed(userId), [kept])
      assert.deepEqual(await listed(userId, '?type=card'), [])

      const events = await eventsOf(account)
      assert.deepEqual(events.map((e) => e.type), ['core.external-account.created', 'core.external-account.deleted'])
      const deleted = (events[1]!.data as { externalAccount: ExternalAccount }).externalAccount
      assert.deepEqual({ ...deleted, updatedAt: account.updatedAt }, account)
      assert.ok(deleted.updatedAt >= account.updatedAt)
      assert.equal(events[1]!.user_id, userId)
      assert.deepEqual((await eventsOf(kept)).map((e) => e.type), ['core.external-account.created'])
    })

    test('metadata: set and read on /core/external-accounts/{id}/metadata; given at creation it is stored, too large it is reported and the account still created', async () => {
      const userId = await verifiedUser(suite.ctx, suite.token)
      const account = await link(userId, sepaBody())
      assertError(await metadata('GET', userId, account.id), 404, 'entity_not_found')
      const put = await metadata('PUT', userId, account.id, { crm: 'c-1', tags: ['salary'] })
      assert.equal(put.status, 201, put.body)
      assert.deepEqual(put.json(), { metadata: { crm: 'c-1', tags: ['salary'] } })
      const read = await metadata('GET', userId, account.id)
      assert.equal(read.status, 200)
      assert.deepEqual(read.json(), { metadata: { crm: 'c-1', tags: ['salary'] } })
      assert.equal(read.headers.etag, put.headers.etag)
      assert.equal((await metadata('PUT', userId, account.id, { crm: 'c-2' })).status, 200)

      const withMetadata = await create(userId, fpsBody({ metadata: { externalId: 42 } }))
      assert.equal(withMetadata.status, 201, withMetadata.body)
      const created = withMetadata.json<{ externalAccount: ExternalAccount }>()
      assert.deepEqual(Object.keys(created), ['externalAccount'])
      assert.deepEqual((await metadata('GET', userId, created.externalAccount.id)).json(), { metadata: { externalId: 42 } })

      const tooLarge = await create(userId, bitcoinBody({ metadata: { blob: 'x'.repeat(2000) } }))
      assert.equal(tooLarge.status, 201, tooLarge.body)
      const body = tooLarge.json<{ externalAccount: ExternalAccount; errors: { metadata: { code: string; details: { threshold: unknown } } } }>()
      assert.equal(body.errors.metadata.code, 'content_too_large')
      assert.deepEqual(body.errors.metadata.details.threshold, { unit: 'characters', limit: '1024' })
      assert.deepEqual((await get(userId, body.externalAccount.id)).json(), { externalAccount: body.externalAccount })
      assertError(await metadata('GET', userId, body.externalAccount.id), 404, 'entity_not_found')
    })

    // --- 6. Authorization and isolation -----------------------------------------------------------------------------

    test('a token without the operation\'s scope is 403 token_insufficient_scopes, and changes nothing', async () => {
      const userId = await verifiedUser(suite.ctx, suite.token)
      const account = await link(userId, sepaBody())
      const readOnly = await suite.ctx.token(await suite.ctx.newClient('core.users:act-on-behalf-of core.external-accounts:read', org()))
      const refusals: [TestResponse, string][] = [
        [await create(userId, fpsBody(), readOnly), 'core.external-accounts:create'],
        [await patch(userId, account.id, { label: 'x' }, readOnly), 'core.external-accounts:update'],
        [await remove(userId, account.id, readOnly), 'core.external-accounts:delete'],
        [await metadata('PUT', userId, account.id, { a: 1 }, readOnly), 'core.external-accounts.metadata:write'],
        [await metadata('GET', userId, account.id, undefined, readOnly), 'core.external-accounts.metadata:read'],
      ]
      for (const [response, scope] of refusals) {
        const details = assertError(response, 403, 'token_insufficient_scopes') as { security: { schemeScopes: string[]; tokenScopes: string[] }[] }
        assert.ok(details.security[0]!.schemeScopes.includes(scope), JSON.stringify(details))
        assert.deepEqual([...details.security[0]!.tokenScopes].sort(), ['core.external-accounts:read', 'core.users:act-on-behalf-of'])
      }
      // The scope it has works.
      assert.deepEqual((await get(userId, account.id, readOnly)).json(), { externalAccount: account })
      assert.deepEqual((await list(userId, '', readOnly)).json<Page>().externalAccounts, [account])

      const withoutActing = await suite.ctx.token(await suite.ctx.newClient('core.external-accounts:create core.external-accounts:read', org()))
      assertError(await create(userId, fpsBody(), withoutActing), 403, 'token_insufficient_scopes')
      assertError(await list(userId, '', withoutActing), 403, 'token_insufficient_scopes')

      assert.deepEqual(await listed(userId), [account])
      assert.deepEqual((await eventsOfUser(userId)).map((e) => e.type), ['core.external-account.created'])
    })

    test('the client itself (no X-On-Behalf-Of) is 403 subject_not_allowed on every operation', async () => {
      const userId = await verifiedUser(suite.ctx, suite.token)
      const account = await link(userId, sepaBody())
      const asClient = bearer(suite.token)
      const responses = [
        await suite.ctx.request({ method: 'POST', url: URL_, headers: asClient, payload: fpsBody() }),
        await suite.ctx.request({ method: 'GET', url: URL_, headers: asClient }),
        await suite.ctx.request({ method: 'GET', url: `${URL_}/${account.id}`, headers: asClient }),
        await suite.ctx.request({ method: 'PATCH', url: `${URL_}/${account.id}`, headers: asClient, payload: { label: 'x' } }),
        await suite.ctx.request({ method: 'DELETE', url: `${URL_}/${account.id}`, headers: asClient }),
      ]
      for (const response of responses) {
        const details = assertError(response, 403, 'subject_not_allowed') as { subject: string; allowedSubjects: string[] }
        assert.equal(details.subject, 'client')
        assert.deepEqual([...details.allowedSubjects].sort(), ['user:business', 'user:individual'])
      }
      assert.deepEqual(await listed(userId), [account])
    })

    test('another user of the organization, or another organization, gets 404 external-account and changes nothing', async () => {
      const ownerId = await holder()
      const account = await link(ownerId, cardBody(VISA_SANDBOX, { label: 'Mine' }))
      assert.equal((await metadata('PUT', ownerId, account.id, { owner: true })).status, 201)
      const neighbour = await newUser()
      const otherToken = await suite.ctx.token(await suite.ctx.newClient())
      const stranger = await newUser(individualUser(), otherToken)
      for (const [userId, token] of [[neighbour, suite.token], [stranger, otherToken]] as const) {
        const attempts = [
          await get(userId, account.id, token),
          await patch(userId, account.id, { label: 'Stolen' }, token),
          await remove(userId, account.id, token),
          await metadata('GET', userId, account.id, undefined, token),
          await metadata('PUT', userId, account.id, { stolen: true }, token),
        ]
        for (const response of attempts) assert.deepEqual(assertError(response, 404, 'entity_not_found'), { entity: 'external-account' })
        assert.deepEqual((await list(userId, '', token)).json<Page>().externalAccounts, [])
      }
      // Another organization's client cannot even name the owner.
      assert.deepEqual(assertError(await get(ownerId, account.id, otherToken), 404, 'entity_not_found'), { entity: 'user' })
      assert.deepEqual((await get(ownerId, account.id)).json(), { externalAccount: account })
      assert.deepEqual((await metadata('GET', ownerId, account.id)).json(), { metadata: { owner: true } })
      assert.deepEqual((await eventsOf(account)).map((e) => e.type), ['core.external-account.created'])
    })

    test('a malformed id is 404 as an unknown one is (metadata too), never 500', async () => {
      const userId = await verifiedUser(suite.ctx, suite.token)
      for (const id of ['abc', '123', `${UNKNOWN_ID}0`, 'null', '%20', UNKNOWN_ID.replaceAll('-', '')]) {
        for (const response of [await get(userId, id), await patch(userId, id, { label: 'x' }), await remove(userId, id), await metadata('GET', userId, id)]) {
          assert.deepEqual(assertError(response, 404, 'entity_not_found'), { entity: 'external-account' }, id)
        }
      }
    })

    // --- 8. Features narrowed by capabilities ------------------------------------------------------------------------

    test('features follow the user\'s capabilities as asset features do: pending KYC keeps them, a restriction removes them, at every read', async () => {
      const userId = await newUser(individualUser({ address: { country: 'FR', city: 'Paris', line1: '2 rue de Rivoli', postalCode: '75001' }, primaryCitizenship: 'FR', termsOfService: 'general-lt-fcs' }))
      const capabilities = new Map(
        (await suite.ctx.request({ method: 'GET', url: '/core/capabilities', headers: bearer(suite.token, userId) }))
          .json<{ capabilities: { code: string; enabled: boolean; requirements: string[] }[] }>()
          .capabilities.map((c) => [c.code, c]),
      )
      // Nothing restricted yet, KYC still to submit: a feature is removed only when its capability is disabled
      // (docs/capabilities.md `enabled`), as asset features are (src/modules/reference/asset-rules.ts).
      assert.equal(capabilities.get('bank-withdrawals')!.enabled, true)
      assert.ok(capabilities.get('bank-withdrawals')!.requirements.length > 0)
      const sepa = await link(userId, sepaBody())
      const bitcoin = await link(userId, bitcoinBody())
      assert.deepEqual(sepa.features, ['withdraw'])
      assert.deepEqual([...bitcoin.features].sort(), ['deposit', 'withdraw'])

      // The proof of address fails: every capability that needs it is restricted, and the features go, on every read.
      const failed = await suite.ctx.request({
        method: 'PATCH',
        url: '/core/kyc/processes/proof-of-address',
        headers: bearer(suite.token, userId),
        payload: { type: 'electronic-verification', input: { data: { givenName: 'John', familyName: 'Doe', address: { country: 'FR', city: 'Paris', line1: '1 Rejected Street', postalCode: '75001' } } } },
      })
      assert.equal(failed.status, 200, failed.body)
      await suite.ctx.services.worker.drain()
      assert.equal((await suite.ctx.request({ method: 'GET', url: '/core/capabilities/bank-withdrawals', headers: bearer(suite.token, userId) })).json<{ capability: { enabled: boolean } }>().capability.enabled, false)
      assert.deepEqual((await get(userId, sepa.id)).json<{ externalAccount: ExternalAccount }>().externalAccount.features, [])
      assert.deepEqual((await listed(userId)).map((a) => a.features), [[], []])
      assert.deepEqual((await link(userId, achBody())).features, [])

      // A user living where residents may not be served: every capability is restricted.
      const refused = await newUser(individualUser({ address: { country: 'CU' } }))
      assert.deepEqual((await link(refused, sepaBody())).features, [])
    })

    test('linking a card needs the cards capability: a user without KYC, or a business, is 409 user_capability_failure', async () => {
      const fresh = await newUser()
      const response = await create(fresh, cardBody(VISA_SANDBOX))
      assert.equal(response.status, 409, response.body)
      assert.deepEqual(response.json(), {
        code: 'user_capability_failure',
        message: 'The user has capability constraints',
        details: { capability: { code: 'cards', requirements: ['user-must-submit-identity', 'user-must-submit-residential-address'], restrictions: [] } },
      })
      // The same user may link a bank account.
      await link(fresh, fpsBody())

      const business = await newUser({ type: 'business', email: `biz-${Date.now()}@example.com`, country: 'GB', legalEntityType: 'private-limited-company', termsOfService: 'general-gb-fca' })
      const details = assertError(await create(business, cardBody(VISA_SANDBOX)), 409, 'user_capability_failure') as { capability: { code: string; restrictions: string[] } }
      assert.equal(details.capability.code, 'cards')
      assert.ok(details.capability.restrictions.includes('user-type-not-supported'))
      assert.equal((await link(business, fpsBody())).ownerId, business)
      assert.deepEqual((await rowsOf(fresh)).map((r) => r.type), ['bank'])
      assert.deepEqual((await rowsOf(business)).map((r) => r.type), ['bank'])
    })

    // --- 4. Card limits ----------------------------------------------------------------------------------------------

    describe('card limits (CARDS_MAX_LINKED=2, CARDS_MAX_DISTINCT=3)', () => {
      const limited = useApp(engine, { CARDS_MAX_LINKED: '2', CARDS_MAX_DISTINCT: '3' })
      const post = (userId: string, number: string) =>
        limited.ctx.request({ method: 'POST', url: URL_, headers: bearer(limited.token, userId), payload: cardBody(number) })
      async function linkCard(userId: string, number: string): Promise<ExternalAccount> {
        const response = await post(userId, number)
        assert.equal(response.status, 201, response.body)
        return response.json<{ externalAccount: ExternalAccount }>().externalAccount
      }
      const unlink = async (userId: string, id: string) => assert.equal((await limited.ctx.request({ method: 'DELETE', url: `${URL_}/${id}`, headers: bearer(limited.token, userId) })).status, 204)
      const liveCards = async (userId: string) =>
        (await limited.ctx.request({ method: 'GET', url: `${URL_}?type=card`, headers: bearer(limited.token, userId) })).json<Page>().externalAccounts.map((a) => a.details.last4Digits)
      const [A, B, C, D] = ['1000001', '2000002', '3000003', '4000004'].map(sandboxCard) as [string, string, string, string]

      test('a third live card must wait for one to be deleted; a fourth distinct card ever is refused, a known one comes back', async () => {
        const userId = await cardholder(limited.ctx, limited.token)
        const a = await linkCard(userId, A)
        const b = await linkCard(userId, B)
        const third = await post(userId, C)
        assert.equal(third.status, 409)
        assert.deepEqual(third.json(), {
          code: 'user_capability_failure',
          message: 'The user has capability constraints',
          details: { capability: { code: 'cards', requirements: ['user-must-delete-card'], restrictions: [] } },
        })

        await unlink(userId, a.id)
        await linkCard(userId, C)
        await unlink(userId, b.id)
        // Three distinct cards were linked (A, B, C): a fourth is refused for good, whatever is deleted.
        const fourth = await post(userId, D)
        assert.equal(fourth.status, 409)
        assert.deepEqual(fourth.json().details, { capability: { code: 'cards', requirements: [], restrictions: ['user-unique-card-limit-reached'] } })
        // A card linked before does not count again.
        await linkCard(userId, A)
        assert.deepEqual((await liveCards(userId)).sort(), [A.slice(-4), C.slice(-4)].sort())

        // Other users have limits of their own.
        const other = await cardholder(limited.ctx, limited.token)
        await linkCard(other, D)
        // Bank accounts and addresses do not count.
        const response = await limited.ctx.request({ method: 'POST', url: URL_, headers: bearer(limited.token, userId), payload: sepaBody() })
        assert.equal(response.status, 201, response.body)
      })

      test('two cards linked at once for the last place: one is linked, the other refused', async () => {
        const userId = await cardholder(limited.ctx, limited.token)
        await linkCard(userId, A)
        const responses = await Promise.all([post(userId, B), post(userId, C)])
        assert.deepEqual(responses.map((r) => r.status).sort(), [201, 409], responses.map((r) => r.body).join('\n'))
        assert.deepEqual(responses.find((r) => r.status === 409)!.json().details, { capability: { code: 'cards', requirements: ['user-must-delete-card'], restrictions: [] } })
        assert.equal((await liveCards(userId)).length, 2)
      })

      test('a card already linked, at the limit, is a duplicate (not a card to delete)', async () => {
        const userId = await cardholder(limited.ctx, limited.token)
        await linkCard(userId, A)
        await linkCard(userId, B)
        // The duplicate is told first: being told to delete a card, then that the card is a duplicate, would mislead.
        assert.deepEqual((await post(userId, A)).json(), { code: 'duplicate', message: 'The card is already registered', details: { context: 'body', property: 'number' } })
      })
    })

    // --- 7. Card secrecy ---------------------------------------------------------------------------------------------

    // --- 9. Status changes ---------------------------------------------------------------------------------------

    describe('status changes: a card expires, or its issuer refuses it for good; core.external-account.status-changed', () => {
      // Payments settle at once here, and are not about the travel rule.
      const paying = useApp(engine, { SANDBOX_RAIL_SETTLE_MS: '0', VELOCITY_MAX_MOVEMENTS: '0', ...withoutTravelRule() })
      const pdb = () => paying.ctx.database.db
      const porg = () => paying.ctx.client.organizationId
      async function linkCard(userId: string, number: string, expiryDate = FUTURE): Promise<ExternalAccount> {
        const response = await paying.ctx.request({ method: 'POST', url: URL_, headers: bearer(paying.token, userId), payload: cardBody(number, { expiryDate }) })
        assert.equal(response.status, 201, response.body)
        return response.json<{ externalAccount: ExternalAccount }>().externalAccount
      }
      async function read(userId: string, id: string): Promise<ExternalAccount> {
        const response = await paying.ctx.request({ method: 'GET', url: `${URL_}/${id}`, headers: bearer(paying.token, userId) })
        assert.equal(response.status, 200, response.body)
        return response.json<{ externalAccount: ExternalAccount }>().externalAccount
      }
      const statusEvents = async (id: string) =>
        (await eventsAbout(pdb(), porg(), { type: 'external-account', id })).filter((event) => event.type === 'core.external-account.status-changed')
      const statusJobs = (id: string) =>
        pdb().selectFrom('jobs').selectAll().where('type', '=', STATUS_CHANGE_JOB).where(sql<string>`payload->>'externalAccountId'`, '=', id).orderBy('id').execute()
      /** The card's expiry month is over: its stored expiry date moves to last month, and its job is due. */
      async function monthPasses(id: string): Promise<void> {
        const [row] = await pdb().selectFrom('external_accounts').select('details').where('id', '=', id).execute()
        await pdb().updateTable('external_accounts').set({ details: JSON.stringify({ ...row!.details, expiryDate: LAST_MONTH }) }).where('id', '=', id).execute()
        await pdb().updateTable('jobs').set({ run_at: new Date() }).where('type', '=', STATUS_CHANGE_JOB).where(sql<string>`payload->>'externalAccountId'`, '=', id).execute()
      }
      /** The one status change announced about the account: the account as GET shows it after the change. */
      async function announcedOnce(userId: string, account: ExternalAccount): Promise<ExternalAccount> {
        const shown = await read(userId, account.id)
        const events = await statusEvents(account.id)
        assert.equal(events.length, 1, 'one status-changed event')
        assert.deepEqual(events[0]!.data, { externalAccount: shown })
        assert.equal(events[0]!.user_id, userId)
        assert.equal(events[0]!.occurred_at.toISOString(), shown.updatedAt)
        assert.ok(shown.updatedAt > account.updatedAt)
        return shown
      }

      test('a card expires once its expiry month has passed: expired (card-expired), announced once as GET then shows it', async () => {
        const userId = await cardholder(paying.ctx, paying.token)
        const card = await linkCard(userId, sandboxCard('5000005'), THIS_MONTH)
        // Linking it scheduled its expiry: due the first instant after its expiry month.
        const [job] = await statusJobs(card.id)
        assert.deepEqual(job!.payload, { externalAccountId: card.id, status: 'expired', reason: 'card-expired' })
        assert.equal(job!.status, 'pending')
        assert.equal(job!.run_at.toISOString(), new Date(Date.UTC(THIS_MONTH.year, THIS_MONTH.month, 1)).toISOString())

        // Run early, it waits for the expiry again and changes nothing.
        await pdb().updateTable('jobs').set({ run_at: new Date() }).where('id', '=', job!.id).execute()
        await paying.ctx.services.worker.drain()
        assert.equal((await read(userId, card.id)).status, 'ok')
        assert.deepEqual(await statusEvents(card.id), [])
        const waiting = await pdb().selectFrom('jobs').select(['status', 'run_at']).where('id', '=', job!.id).executeTakeFirstOrThrow()
        assert.deepEqual(waiting, { status: 'pending', run_at: job!.run_at })

        await monthPasses(card.id)
        await paying.ctx.services.worker.drain()
        const expired = await announcedOnce(userId, card)
        assert.equal(expired.status, 'expired')
        assert.deepEqual((expired as ExternalAccount & { statusDetails?: unknown }).statusDetails, { reason: 'card-expired' })
        assert.deepEqual({ ...expired, status: 'ok', statusDetails: undefined, updatedAt: card.updatedAt, details: card.details }, { ...card, statusDetails: undefined })

        // The job run again (at least once) changes and announces nothing more.
        await enqueue(pdb(), { type: STATUS_CHANGE_JOB, organizationId: porg(), payload: { externalAccountId: card.id, status: 'expired', reason: 'card-expired' } })
        await paying.ctx.services.worker.drain()
        assert.equal((await statusEvents(card.id)).length, 1)
        assert.deepEqual(await read(userId, card.id), expired)

        // A deleted card does not expire: nothing to announce about an account nobody can read.
        const deleted = await linkCard(userId, sandboxCard('6000006'), THIS_MONTH)
        assert.equal((await paying.ctx.request({ method: 'DELETE', url: `${URL_}/${deleted.id}`, headers: bearer(paying.token, userId) })).status, 204)
        await monthPasses(deleted.id)
        await paying.ctx.services.worker.drain()
        assert.deepEqual(await statusEvents(deleted.id), [])
        assert.equal((await pdb().selectFrom('external_accounts').select('status').where('id', '=', deleted.id).executeTakeFirstOrThrow()).status, 'ok')

        // Bank accounts and crypto addresses do not expire; a card valid through December 9999 never does here.
        const bank = await paying.ctx.request({ method: 'POST', url: URL_, headers: bearer(paying.token, userId), payload: sepaBody() })
        assert.deepEqual(await statusJobs(bank.json<{ externalAccount: ExternalAccount }>().externalAccount.id), [])
        assert.deepEqual(await statusJobs((await linkCard(userId, sandboxCard('7000007'), { month: 12, year: 9999 })).id), [])
      })

      test('a payment the issuer refuses for good fails the card (withdrawal or card deposit), announced once; a decline leaves it ok', async () => {
        const userId = await cardholder(paying.ctx, paying.token)
        const eur = await openAccount(paying.ctx, paying.token, userId, 'EUR')
        await fund(paying.ctx, userId, eur, 'EUR', '1000')
        // Push-to-card outcomes of the sandbox rail (docs/sandbox.md): refused at once, failed later, declined.
        const refused = await linkCard(userId, '4000000000000143')
        const expiredAtIssuer = await linkCard(userId, '4000000000000135')
        const declining = await linkCard(userId, '4000000000000127')
        const withdrawals: string[] = []
        for (const card of [refused, expiredAtIssuer, declining]) {
          const quote = await quoted(paying.ctx, paying.token, userId, { origin: { type: 'account', id: eur }, destination: { type: 'external-account', id: card.id }, denomination: { asset: 'EUR', amount: '10' } })
          const committed = await commit(paying.ctx, paying.token, userId, quote.id)
          assert.equal(committed.status, 201, committed.body)
          withdrawals.push(committed.json<{ transaction: { id: string } }>().transaction.id)
        }
        await paying.ctx.services.worker.drain()
        const reasons = await Promise.all(withdrawals.map(async (id) => (await transactionOf(paying.ctx, paying.token, userId, id)).statusDetails?.reason))
        assert.deepEqual(reasons, ['card-permanently-declined-by-bank', 'card-expired', 'card-declined-by-bank'])

        for (const [card, reason] of [[refused, 'card-permanently-declined-by-bank'], [expiredAtIssuer, 'card-expired']] as const) {
          const failed = await announcedOnce(userId, card)
          assert.equal(failed.status, 'failed')
          assert.deepEqual((failed as ExternalAccount & { statusDetails?: unknown }).statusDetails, { reason })
          // A failed card takes no more payments.
          const again = await requestQuote(paying.ctx, paying.token, userId, { origin: { type: 'account', id: eur }, destination: { type: 'external-account', id: card.id }, denomination: { asset: 'EUR', amount: '11' } })
          assertError(again, 409, 'transaction_node_invalid')
        }
        assert.equal((await read(userId, declining.id)).status, 'ok')
        assert.deepEqual(await statusEvents(declining.id), [])

        // A card deposit the issuer declines for good fails the card the same way.
        const deposit = await linkCard(userId, '4000000000000226')
        const quote = await quoted(paying.ctx, paying.token, userId, { origin: { type: 'external-account', id: deposit.id }, destination: { type: 'account', id: eur }, denomination: { asset: 'EUR', amount: '20' } })
        const committed = await commit(paying.ctx, paying.token, userId, quote.id, { body: { params: { requirements: [{ name: 'authorize:3ds', returnUrl: 'https://shop.example/paid' }] } } })
        assert.equal(committed.status, 201, committed.body)
        await paying.ctx.services.worker.drain()
        const payment = await transactionOf(paying.ctx, paying.token, userId, committed.json<{ transaction: { id: string } }>().transaction.id)
        assert.deepEqual([payment.status, payment.statusDetails?.reason], ['failed', 'card-permanently-declined-by-bank'])
        const failed = await announcedOnce(userId, deposit)
        assert.deepEqual([failed.status, (failed as ExternalAccount & { statusDetails?: unknown }).statusDetails], ['failed', { reason: 'card-permanently-declined-by-bank' }])
      })
    })

    describe('card secrecy (trace-level logs, every response, every column)', () => {
      let logged: LoggedApp
      before(async () => {
        logged = await startLoggedApp(engine)
      })
      after(() => logged?.ctx.close())

      // A number of the sandbox range used nowhere else, and an uncommon security code.
      const NUMBER = sandboxCard('739150862')
      const CODE = '737'
      const LUHN_FAILURE = withWrongCheckDigit(NUMBER)

      test('the card number and security code appear in no response, no log line and no column; only the last four digits do', async () => {
        const { ctx } = logged
        const token = await ctx.token()
        const userId = await cardholder(ctx, token)
        const post = (body: Record<string, unknown>, headers: Record<string, string> = {}) =>
          ctx.request({ method: 'POST', url: URL_, headers: { ...bearer(token, userId), ...headers }, payload: body })
        const secretBody = cardBody(NUMBER, { securityCode: CODE, label: 'Secret card' })

        // Failures first, with the same number and code: checks, the issuer's refusal, malformed bodies.
        assertError(await post(cardBody(LUHN_FAILURE, { securityCode: CODE })), 409, 'number_invalid')
        assertError(await post(cardBody(NUMBER, { securityCode: CODE, expiryDate: LAST_MONTH })), 409, 'date_invalid')
        assertError(await post(cardBody('4000000000000002', { securityCode: CODE })), 409, 'operation_not_allowed')
        assertError(await post(cardBody(NUMBER, { securityCode: SANDBOX_WRONG_SECURITY_CODE })), 409, 'operation_not_allowed')
        assertError(await post(cardBody(NUMBER.replace(/(\d{4})(?=\d)/g, '$1 '), { securityCode: CODE })), 400, 'request_invalid')
        assertError(await post(cardBody(NUMBER, { securityCode: `${CODE}9` })), 400, 'request_invalid')
        assertError(await post({ ...secretBody, expiryDate: 'soon' }), 400, 'request_invalid')
        assert.equal((await ctx.request({ method: 'POST', url: URL_, headers: { ...bearer(token, userId), 'content-type': 'application/json' }, payload: `{"number":"${NUMBER}","securityCode":"${CODE}"` })).status, 400)

        // Linked (with an Idempotency-Key, replayed), read, listed, renamed, its metadata set, a duplicate refused, deleted.
        const key = { 'idempotency-key': `card-${userId}` }
        const created = await post(secretBody, key)
        assert.equal(created.status, 201, created.body)
        const account = created.json<{ externalAccount: ExternalAccount }>().externalAccount
        assert.deepEqual(account.details, { type: 'debit', last4Digits: NUMBER.slice(-4), expiryDate: FUTURE, octSupport: 'supported' })
        const replayed = await post(secretBody, key)
        assert.equal(replayed.status, 201)
        assert.equal(replayed.body, created.body)
        assertError(await post({ ...secretBody, securityCode: '738' }, key), 422, 'idempotency_key_reused')
        assertError(await post(secretBody), 409, 'duplicate')
        assert.equal((await ctx.request({ method: 'GET', url: `${URL_}/${account.id}`, headers: bearer(token, userId) })).status, 200)
        assert.equal((await ctx.request({ method: 'GET', url: URL_, headers: bearer(token, userId) })).status, 200)
        assert.equal((await ctx.request({ method: 'PATCH', url: `${URL_}/${account.id}`, headers: bearer(token, userId), payload: { label: 'Renamed' } })).status, 200)
        assert.equal((await ctx.request({ method: 'PUT', url: `${URL_}/${account.id}/metadata`, headers: bearer(token, userId), payload: { note: 'x' } })).status, 201)
        // A second card stays linked; the first is deleted.
        const other = await post(cardBody(MASTERCARD_DEBIT, { securityCode: CODE }))
        assert.equal(other.status, 201, other.body)
        assert.equal((await ctx.request({ method: 'DELETE', url: `${URL_}/${account.id}`, headers: bearer(token, userId) })).status, 204)

        // The number is kept, sealed: what a payout to the card opens.
        const counterparty = (await ctx.services.externalAccounts.counterparties(ctx.client.organizationId, [{ id: account.id, network: 'visa' }])).get(`${account.id}|visa`)
        assert.equal((counterparty as { number?: string }).number, NUMBER)

        const secrets = [...cardSecrets(NUMBER), LUHN_FAILURE, `"${CODE}"`, `:${CODE},`, `=${CODE}`]
        // (a) Every response of the test, bodies and headers.
        assert.ok(logged.responses.length > 20)
        for (const response of logged.responses) {
          assertNoSecret(response.body, secrets, 'a response body')
          assertNoSecret(JSON.stringify(response.headers), secrets, 'response headers')
        }

        // (b) Every log line, at trace level.
        const log = logged.lines.join('')
        assert.ok(logged.lines.length > 0)
        const creations = logged.lines.filter((line) => line.includes('"method":"POST"') && line.includes(`"url":"${URL_}"`))
        assert.ok(creations.length >= 13, `the card requests were logged (${creations.length} lines)`)
        assert.ok(log.includes('"statusCode":409') && log.includes('"statusCode":400') && log.includes('"statusCode":201'), 'failures and successes were logged')
        assertNoSecret(log, [...secrets, '4000000000000002'], 'the log')
        assert.ok(!log.includes('securityCode'), 'the log names the security code')

        // (c) Every column of every table.
        const dump = await dumpDatabase(ctx.database.db)
        assert.ok(dump.some((cell) => cell.table === 'external_accounts' && cell.value.includes(`"last4Digits": "${NUMBER.slice(-4)}"`)), 'the last four digits are kept')
        for (const cell of dump) {
          const where = `${cell.table}.${cell.column}`
          assertNoSecret(cell.value, [...cardSecrets(NUMBER), LUHN_FAILURE, `"${CODE}"`], where)
          assert.notEqual(cell.value, CODE, `${where} holds the security code`)
          assert.ok(!cell.value.includes('securityCode'), `${where} names the security code`)
        }
        const row = await ctx.database.db.selectFrom('external_accounts').selectAll().where('id', '=', account.id).executeTakeFirstOrThrow()
        assert.match(row.sealed_number!, /^v1\./)
        assert.notEqual(row.fingerprint, NUMBER)
      })

      test('no stored digest lets one confirm a guess of the security code', async () => {
        const { ctx } = logged
        const token = await ctx.token()
        const userId = await cardholder(ctx, token)
        const body = cardBody(sandboxCard('5551234'), { securityCode: CODE, label: 'Hashed' })
        const created = await ctx.request({ method: 'POST', url: URL_, headers: { ...bearer(token, userId), 'idempotency-key': `hash-${userId}` }, payload: body })
        assert.equal(created.status, 201, created.body)
        const stored = (await ctx.database.db.selectFrom('idempotency_keys').select('request_hash').execute()).map((r) => r.request_hash)
        // What someone who reads the database (and knows the card number, e.g. from a payout) could try: the 1000
        // codes under a plain digest of the request. The stored digest is keyed (HMAC under a key derived from the
        // sealing key, which is not in the database), so no guess can be confirmed.
        const confirmed: string[] = []
        for (let guess = 0; guess < 1000; guess++) {
          const securityCode = String(guess).padStart(3, '0')
          const plain = sha256Hex(`POST ${URL_}\nuser ${userId}\n${JSON.stringify({ ...body, securityCode })}`)
          if (stored.includes(plain)) confirmed.push(securityCode)
        }
        assert.deepEqual(confirmed, [], `the security code ${confirmed.join(', ')} is confirmed by idempotency_keys.request_hash`)
        // The digest stored is the keyed one: with the deployment's key, the request is recognised.
        assert.ok(stored.includes(requestHash(derivePurposeKey(ctx.secrets.sealingKey, 'idempotency/request-digest'), `POST ${URL_}`, `user ${userId}`, body)))
      })
    })
  })
}
