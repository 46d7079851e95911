import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import BigNumber from 'bignumber.js'
import { flowState } from '../src/flows/runner.ts'
import { eventsAbout } from '../src/modules/events/outbox.ts'
import { bearer, ENGINES, TEST_DATABASE_URL, useApp, type TestContext } from './helpers.ts'
import {
  assertError,
  balanceOf,
  commit,
  fund,
  openAccount,
  quoteBody,
  quoted,
  requestQuote,
  transactionOf,
  verifiedUser,
  type Quote,
  type Transaction,
} from './money.ts'

const UNKNOWN_ID = '0190a8c1-0000-7000-8000-000000000000'

/** Rows of the tables a refused request must not touch, to compare before and after. */
async function snapshot(ctx: TestContext): Promise<string> {
  const db = ctx.database.db
  const count = async (table: 'quotes' | 'transactions' | 'ledger_holds' | 'ledger_entries' | 'flows' | 'idempotency_keys') =>
    Number((await db.selectFrom(table).select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow()).n)
  return JSON.stringify(await Promise.all((['quotes', 'transactions', 'ledger_holds', 'ledger_entries', 'flows', 'idempotency_keys'] as const).map(count)))
}

for (const engine of ENGINES) {
  describe(`quotes and trades [${engine}]`, () => {
    const suite = useApp(engine, { VELOCITY_MAX_MOVEMENTS: '0' })
    const org = () => suite.ctx.client.organizationId

    /** A verified user with a funded EUR account and an empty BTC account. */
    async function trader(eur = '1000') {
      const userId = await verifiedUser(suite.ctx, suite.token)
      const eurAccount = await openAccount(suite.ctx, suite.token, userId, 'EUR')
      const btcAccount = await openAccount(suite.ctx, suite.token, userId, 'BTC')
      if (eur !== '0') await fund(suite.ctx, userId, eurAccount, 'EUR', eur)
      return { userId, eurAccount, btcAccount }
    }

    test('a trade: quote, commit, hold, exchange against liquidity, fees booked; amounts balance exactly', async () => {
      const { userId, eurAccount, btcAccount } = await trader()
      const quote = await quoted(suite.ctx, suite.token, userId, quoteBody(eurAccount, btcAccount, 'EUR', '100.00'))
      assert.equal(quote.origin.asset, 'EUR')
      assert.equal(quote.origin.amount, '100')
      assert.deepEqual(quote.origin.node, { type: 'account', id: eurAccount, ownerId: userId })
      assert.equal(quote.destination.asset, 'BTC')
      assert.deepEqual(quote.destination.node, { type: 'account', id: btcAccount, ownerId: userId })
      assert.deepEqual(quote.denomination, { asset: 'EUR', amount: '100', rate: '1', target: 'origin' })
      assert.deepEqual(quote.fees, [{ type: 'exchange', code: 'exchange-fee', asset: 'EUR', amount: '0.5', percentage: '0.5' }])
      assert.deepEqual(quote.requirements, [])
      // 99.50 EUR exchanged at the quoted rate, rounded down to satoshis; the origin's rate is its inverse.
      const expected = new BigNumber('99.5').times(quote.destination.rate).decimalPlaces(8, BigNumber.ROUND_DOWN).toFixed()
      assert.equal(quote.destination.amount, expected)
      assert.ok(new BigNumber(quote.origin.rate).times(quote.destination.rate).minus(1).abs().isLessThan('1e-9'))
      const expiresIn = Date.parse(quote.expiresAt) - Date.now()
      assert.ok(expiresIn > 20_000 && expiresIn <= 30_000, `expires in ${expiresIn} ms`)

      const created = await commit(suite.ctx, suite.token, userId, quote.id)
      assert.equal(created.status, 201, created.body)
      const transaction = created.json<{ transaction: Transaction }>().transaction
      assert.equal(transaction.status, 'processing')
      assert.equal(transaction.type, 'trade')
      assert.deepEqual([transaction.origin, transaction.destination, transaction.denomination, transaction.fees], [quote.origin, quote.destination, quote.denomination, quote.fees])
      assert.ok(Date.parse(transaction.quotedAt) <= Date.parse(transaction.createdAt))
      // The origin's money is held at once: available drops, the total stays until the exchange.
      assert.deepEqual(await balanceOf(suite.ctx, suite.token, userId, eurAccount), { total: '1000', available: '900' })

      await suite.ctx.services.worker.drain()
      const done = await transactionOf(suite.ctx, suite.token, userId, transaction.id)
      assert.equal(done.status, 'completed')
      assert.ok(done.completedAt)
      assert.deepEqual(await balanceOf(suite.ctx, suite.token, userId, eurAccount), { total: '900', available: '900' })
      assert.deepEqual(await balanceOf(suite.ctx, suite.token, userId, btcAccount), { total: expected, available: expected })
      const feeAccount = await suite.ctx.services.ledger.systemAccount(org(), { kind: 'fees', asset: 'EUR' })
      const liquidity = await suite.ctx.services.ledger.systemAccount(org(), { kind: 'liquidity', asset: 'EUR' })
      const balances = await suite.ctx.services.ledger.balances(suite.ctx.database.db, org(), [feeAccount, liquidity])
      assert.ok(new BigNumber(balances.get(feeAccount)!.total).isGreaterThanOrEqualTo('0.5'))
      const events = await eventsAbout(suite.ctx.database.db, org(), { type: 'transaction', id: transaction.id })
      assert.deepEqual(events.map((event) => event.type), ['core.transaction.created', 'core.transaction.status-changed'])
      assert.equal((events[1]!.data as { transaction: Transaction }).transaction.status, 'completed')
      const flow = await flowState(suite.ctx.database.db, org(), transaction.id)
      assert.deepEqual(flow, { status: 'completed', step: 3, history: [{ step: 'reserve', action: 'run', error: null }, { step: 'screen', action: 'run', error: null }, { step: 'exchange', action: 'run', error: null }] })
      assert.deepEqual(await suite.ctx.services.ledger.check(), [])
    })

    test('target destination: the destination receives exactly the amount, the origin pays what buys it plus fees', async () => {
      const { userId, eurAccount, btcAccount } = await trader()
      const quote = await quoted(suite.ctx, suite.token, userId, quoteBody(eurAccount, btcAccount, 'BTC', '0.001', 'destination'))
      assert.equal(quote.destination.amount, '0.001')
      assert.deepEqual(quote.denomination, { asset: 'BTC', amount: '0.001', rate: '1', target: 'destination' })
      const fee = new BigNumber(quote.fees[0]!.amount)
      const exchanged = new BigNumber(quote.origin.amount).minus(fee)
      assert.ok(exchanged.times(quote.destination.rate).isGreaterThanOrEqualTo('0.001'), 'what the origin exchanges buys the whole amount')
      assert.ok(fee.isGreaterThanOrEqualTo(new BigNumber(quote.origin.amount).times('0.005').minus('0.01')))
      const created = await commit(suite.ctx, suite.token, userId, quote.id)
      assert.equal(created.status, 201, created.body)
      await suite.ctx.services.worker.drain()
      assert.equal((await balanceOf(suite.ctx, suite.token, userId, btcAccount)).total, '0.001')
      assert.equal((await balanceOf(suite.ctx, suite.token, userId, eurAccount)).total, new BigNumber('1000').minus(quote.origin.amount).toFixed())
    })

    test('a denomination in a third asset is converted at the mid; a transfer between accounts of one asset moves it as it is', async () => {
      const { userId, eurAccount, btcAccount } = await trader()
      const gbp = await quoted(suite.ctx, suite.token, userId, quoteBody(eurAccount, btcAccount, 'GBP', '50'))
      assert.equal(gbp.denomination.asset, 'GBP')
      assert.equal(gbp.origin.amount, new BigNumber('50').times(gbp.denomination.rate).decimalPlaces(2, BigNumber.ROUND_UP).toFixed())

      const second = await openAccount(suite.ctx, suite.token, userId, 'EUR')
      const transfer = await quoted(suite.ctx, suite.token, userId, quoteBody(eurAccount, second, 'EUR', '12.34', 'destination'))
      assert.deepEqual([transfer.origin.amount, transfer.origin.rate, transfer.destination.amount, transfer.destination.rate, transfer.fees], ['12.34', '1', '12.34', '1', []])
      const created = await commit(suite.ctx, suite.token, userId, transfer.id)
      assert.equal(created.json<{ transaction: Transaction }>().transaction.type, 'transfer')
      await suite.ctx.services.worker.drain()
      assert.equal((await balanceOf(suite.ctx, suite.token, userId, second)).total, '12.34')
      assert.equal((await balanceOf(suite.ctx, suite.token, userId, eurAccount)).total, '987.66')

      // Both accounts list it; the type filter finds it.
      for (const account of [eurAccount, second]) {
        const listed = await suite.ctx.request({ method: 'GET', url: `/core/accounts/${account}/transactions?type=transfer`, headers: bearer(suite.token, userId) })
        assert.deepEqual(listed.json<{ transactions: Transaction[] }>().transactions.map((t) => t.id), [created.json<{ transaction: Transaction }>().transaction.id])
      }
      const deposits = await suite.ctx.request({ method: 'GET', url: '/core/transactions?type=deposit', headers: bearer(suite.token, userId) })
      assert.ok(deposits.json<{ transactions: Transaction[] }>().transactions.every((t) => t.type === 'deposit'))
      assert.deepEqual(await suite.ctx.services.ledger.check(), [])
    })

    test('the quote path of the specification answers the same', async () => {
      const { userId, eurAccount, btcAccount } = await trader()
      const response = await suite.ctx.request({ method: 'POST', url: '/transactions/quote', headers: bearer(suite.token, userId), payload: quoteBody(eurAccount, btcAccount, 'EUR', '10') })
      assert.equal(response.status, 201, response.body)
      assert.equal(response.json<{ quote: Quote }>().quote.origin.amount, '10')
    })

    test('bad quote requests get their documented error and change nothing', async () => {
      const { userId, eurAccount, btcAccount } = await trader('100')
      const other = await trader('0')
      const foreignToken = await suite.ctx.token(await suite.ctx.newClient())
      const foreignUser = await verifiedUser(suite.ctx, foreignToken)
      const foreignAccount = await openAccount(suite.ctx, foreignToken, foreignUser, 'BTC')
      const unverified = (await suite.ctx.createUser(suite.token)).id
      const unverifiedEur = await openAccount(suite.ctx, suite.token, unverified, 'EUR')
      const unverifiedBtc = await openAccount(suite.ctx, suite.token, unverified, 'BTC')
      const before = await snapshot(suite.ctx)
      const quote = (body: Record<string, unknown>, user = userId) => requestQuote(suite.ctx, suite.token, user, body)
      const cases: [string, Record<string, unknown>, number, string, Record<string, unknown>?][] = [
        ['another user\'s account', quoteBody(eurAccount, other.btcAccount, 'EUR', '10'), 404, 'entity_not_found', { entity: 'account', context: 'body', property: 'destination' }],
        ['another organization\'s account', quoteBody(eurAccount, foreignAccount, 'EUR', '10'), 404, 'entity_not_found', { entity: 'account', context: 'body', property: 'destination' }],
        ['an unknown origin', quoteBody(UNKNOWN_ID, btcAccount, 'EUR', '10'), 404, 'entity_not_found', { entity: 'account', context: 'body', property: 'origin' }],
        ['the same account on both ends', quoteBody(eurAccount, eurAccount, 'EUR', '10'), 409, 'transaction_node_invalid'],
        ['zero', quoteBody(eurAccount, btcAccount, 'EUR', '0'), 400, 'request_invalid'],
        ['zero with decimals', quoteBody(eurAccount, btcAccount, 'EUR', '0.00'), 400, 'request_invalid'],
        ['a negative amount', quoteBody(eurAccount, btcAccount, 'EUR', '-5'), 400, 'request_invalid'],
        ['an amount as a number', { ...quoteBody(eurAccount, btcAccount, 'EUR', '1'), denomination: { asset: 'EUR', amount: 5 } }, 400, 'request_invalid'],
        ['an exponent', quoteBody(eurAccount, btcAccount, 'EUR', '1e3'), 400, 'request_invalid'],
        ['more decimals than the asset has', quoteBody(eurAccount, btcAccount, 'EUR', '10.001'), 409, 'transaction_amount_invalid', { context: 'body', property: 'denomination', rule: 'decimal-places', decimals: 2 }],
        ['a 1,000-digit amount', quoteBody(eurAccount, btcAccount, 'EUR', '9'.repeat(1000)), 400, 'request_invalid'],
        ['an amount above the limit', quoteBody(eurAccount, btcAccount, 'EUR', '5000000'), 409, 'transaction_amount_invalid'],
        ['an amount below the limit', quoteBody(eurAccount, btcAccount, 'EUR', '0.01'), 409, 'transaction_amount_invalid'],
        ['more than the origin holds', quoteBody(eurAccount, btcAccount, 'EUR', '100.01'), 409, 'insufficient_balance', { context: 'body', property: 'origin' }],
        ['an unknown denomination asset', quoteBody(eurAccount, btcAccount, 'NOPE', '10'), 404, 'entity_not_found', { entity: 'asset', context: 'body', property: 'denomination.asset' }],
        ['a delisted denomination asset', quoteBody(eurAccount, btcAccount, 'BUSD', '10'), 409, 'asset_not_supported'],
        ['an unknown external-account origin', { ...quoteBody(eurAccount, btcAccount, 'EUR', '10'), origin: { type: 'external-account', id: UNKNOWN_ID } }, 404, 'entity_not_found', { entity: 'external-account', property: 'origin' }],
        ['a main-chain address in the sandbox', { ...quoteBody(eurAccount, btcAccount, 'EUR', '10'), destination: { type: 'crypto-address', asset: 'BTC', network: 'bitcoin', address: 'bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq' } }, 409, 'crypto_address_invalid', { property: 'destination.address' }],
        ['an apm destination', { ...quoteBody(eurAccount, btcAccount, 'EUR', '10'), destination: { type: 'apm', method: 'paypal' } }, 409, 'user_capability_failure'],
        ['an unknown node type', { ...quoteBody(eurAccount, btcAccount, 'EUR', '10'), origin: { type: 'card', id: UNKNOWN_ID } }, 400, 'request_invalid'],
        ['a ttl beyond the maximum', { ...quoteBody(eurAccount, btcAccount, 'EUR', '10'), ttl: 3_600_000 }, 409, 'number_invalid', { context: 'body', property: 'ttl', rule: 'less-than-or-equal-to-threshold', threshold: { limit: 600_000 } }],
        ['a ttl below the minimum', { ...quoteBody(eurAccount, btcAccount, 'EUR', '10'), ttl: 10 }, 409, 'number_invalid'],
        ['a ttl that is not an integer', { ...quoteBody(eurAccount, btcAccount, 'EUR', '10'), ttl: '5000' }, 400, 'request_invalid'],
        ['no denomination', { origin: { type: 'account', id: eurAccount }, destination: { type: 'account', id: btcAccount } }, 400, 'request_invalid'],
        ['a malformed account id', quoteBody('not-a-uuid', btcAccount, 'EUR', '10'), 400, 'request_invalid'],
      ]
      for (const [name, body, status, code, details] of cases) {
        const response = await quote(body)
        const got = assertError(response, status, code)
        if (details) for (const [key, value] of Object.entries(details)) assert.deepEqual(got?.[key], value, `${name}: details.${key}`)
      }
      // A user whose KYC does not allow trades.
      const refused = assertError(await quote(quoteBody(unverifiedEur, unverifiedBtc, 'EUR', '10'), unverified), 409, 'user_capability_failure')
      assert.equal((refused?.capability as { code: string }).code, 'trades')
      // A body that is not JSON, and a huge one.
      assertError(await suite.ctx.request({ method: 'POST', url: '/core/transactions/quote', headers: { ...bearer(suite.token, userId), 'content-type': 'application/json' }, payload: '{"origin":' }), 400, 'request_invalid')
      assertError(await suite.ctx.request({ method: 'POST', url: '/core/transactions/quote', headers: bearer(suite.token, userId), payload: { ...quoteBody(eurAccount, btcAccount, 'EUR', '10'), pad: 'x'.repeat(1_100_000) } }), 413, 'content_too_large')
      assert.equal(await snapshot(suite.ctx), before)
    })

    test('scopes and subjects: quoting and committing need core.transactions:create and a user', async () => {
      const { userId, eurAccount, btcAccount } = await trader('10')
      const readOnly = await suite.ctx.token(undefined, 'core.transactions:read core.users:act-on-behalf-of')
      assertError(await requestQuote(suite.ctx, readOnly, userId, quoteBody(eurAccount, btcAccount, 'EUR', '1')), 403, 'token_insufficient_scopes')
      assertError(await commit(suite.ctx, readOnly, userId, UNKNOWN_ID), 403, 'token_insufficient_scopes')
      const asClient = await suite.ctx.request({ method: 'POST', url: '/core/transactions/quote', headers: bearer(suite.token), payload: quoteBody(eurAccount, btcAccount, 'EUR', '1') })
      assert.equal(asClient.status, 403, asClient.body)
    })

    test('a quote is executed once; an unknown, foreign or expired quote is 404; nothing is created', async () => {
      const { userId, eurAccount, btcAccount } = await trader('100')
      const quote = await quoted(suite.ctx, suite.token, userId, quoteBody(eurAccount, btcAccount, 'EUR', '10'))
      assert.equal((await commit(suite.ctx, suite.token, userId, quote.id)).status, 201)
      const before = await snapshot(suite.ctx)
      assert.deepEqual(assertError(await commit(suite.ctx, suite.token, userId, quote.id), 404, 'entity_not_found'), { entity: 'quote', reasons: ['quote-already-used'] })
      assertError(await commit(suite.ctx, suite.token, userId, UNKNOWN_ID), 404, 'entity_not_found')
      const stranger = await trader('0')
      assertError(await commit(suite.ctx, suite.token, stranger.userId, quote.id), 404, 'entity_not_found')
      assertError(await commit(suite.ctx, suite.token, userId, 'not-a-uuid'), 400, 'request_invalid')
      assertError(await suite.ctx.request({ method: 'POST', url: '/core/transactions', headers: bearer(suite.token, userId), payload: {} }), 400, 'request_invalid')
      assertError(await commit(suite.ctx, suite.token, userId, quote.id, { body: { metadata: 'nope' } }), 404, 'entity_not_found')
      assert.equal(await snapshot(suite.ctx), before)

      const short = await quoted(suite.ctx, suite.token, userId, { ...quoteBody(eurAccount, btcAccount, 'EUR', '10'), ttl: 1000 })
      await new Promise((resolve) => setTimeout(resolve, 1100))
      const expiredBefore = await snapshot(suite.ctx)
      assert.deepEqual(assertError(await commit(suite.ctx, suite.token, userId, short.id), 404, 'entity_not_found'), { entity: 'quote', reasons: ['quote-expired'] })
      assert.equal(await snapshot(suite.ctx), expiredBefore)
    })

    test('a commit the origin can no longer fund is 409 insufficient_balance and creates nothing', async () => {
      const { userId, eurAccount, btcAccount } = await trader('100')
      const first = await quoted(suite.ctx, suite.token, userId, quoteBody(eurAccount, btcAccount, 'EUR', '80'))
      const second = await quoted(suite.ctx, suite.token, userId, quoteBody(eurAccount, btcAccount, 'EUR', '80'))
      assert.equal((await commit(suite.ctx, suite.token, userId, first.id)).status, 201)
      const before = await snapshot(suite.ctx)
      assert.deepEqual(assertError(await commit(suite.ctx, suite.token, userId, second.id), 409, 'insufficient_balance'), { context: 'body', property: 'origin' })
      assert.equal(await snapshot(suite.ctx), before)
      // The quote was not used up by the refusal: once funded, it executes.
      await fund(suite.ctx, userId, eurAccount, 'EUR', '100')
      assert.equal((await commit(suite.ctx, suite.token, userId, second.id)).status, 201)
    })

    test('metadata at creation: stored with the transaction; invalid metadata is reported and does not fail it', async () => {
      const { userId, eurAccount, btcAccount } = await trader('100')
      const withMetadata = await commit(suite.ctx, suite.token, userId, (await quoted(suite.ctx, suite.token, userId, quoteBody(eurAccount, btcAccount, 'EUR', '5'))).id, { body: { metadata: { orderId: 'A-1' } } })
      assert.equal(withMetadata.status, 201, withMetadata.body)
      const id = withMetadata.json<{ transaction: Transaction }>().transaction.id
      const stored = await suite.ctx.request({ method: 'GET', url: `/core/transactions/${id}/metadata`, headers: bearer(suite.token, userId) })
      assert.deepEqual(stored.json(), { metadata: { orderId: 'A-1' } })
      const tooLarge = await commit(suite.ctx, suite.token, userId, (await quoted(suite.ctx, suite.token, userId, quoteBody(eurAccount, btcAccount, 'EUR', '5'))).id, { body: { metadata: { note: 'x'.repeat(2000) } } })
      assert.equal(tooLarge.status, 201, tooLarge.body)
      assert.equal(tooLarge.json<{ errors: { metadata: { code: string } } }>().errors.metadata.code, 'content_too_large')
    })

    test('Idempotency-Key: a retry answers the first response and moves nothing again; another body is 422', async () => {
      const { userId, eurAccount, btcAccount } = await trader('100')
      const quote = await quoted(suite.ctx, suite.token, userId, quoteBody(eurAccount, btcAccount, 'EUR', '10'))
      const key = `trade-${quote.id}`
      const first = await commit(suite.ctx, suite.token, userId, quote.id, { key })
      assert.equal(first.status, 201, first.body)
      const again = await commit(suite.ctx, suite.token, userId, quote.id, { key })
      assert.equal(again.status, 201, again.body)
      assert.equal(again.headers['idempotent-replayed'], 'true')
      assert.deepEqual(again.json(), first.json())
      assertError(await commit(suite.ctx, suite.token, userId, UNKNOWN_ID, { key }), 422, 'idempotency_key_reused')
      assert.equal((await balanceOf(suite.ctx, suite.token, userId, eurAccount)).available, '90')
      // A refusal is the key's answer too: the retry gets the same 404.
      const refusedKey = `refused-${quote.id}`
      assertError(await commit(suite.ctx, suite.token, userId, UNKNOWN_ID, { key: refusedKey }), 404, 'entity_not_found')
      const replayed = await commit(suite.ctx, suite.token, userId, UNKNOWN_ID, { key: refusedKey })
      assertError(replayed, 404, 'entity_not_found')
      assert.equal(replayed.headers['idempotent-replayed'], 'true')
      assertError(await commit(suite.ctx, suite.token, userId, quote.id, { key: 'bad key with spaces' }), 400, 'request_invalid')
    })

    test('a flow that fails for good compensates: the hold is released and the transaction fails with its reason', async () => {
      const { userId, eurAccount, btcAccount } = await trader('100')
      const quote = await quoted(suite.ctx, suite.token, userId, quoteBody(eurAccount, btcAccount, 'EUR', '10'))
      const created = (await commit(suite.ctx, suite.token, userId, quote.id)).json<{ transaction: Transaction }>().transaction
      // The destination closes before the exchange runs (empty accounts can be archived).
      assert.equal((await suite.ctx.request({ method: 'DELETE', url: `/core/accounts/${btcAccount}`, headers: bearer(suite.token, userId) })).status, 204)
      await suite.ctx.services.worker.drain()
      const failed = await transactionOf(suite.ctx, suite.token, userId, created.id)
      assert.equal(failed.status, 'failed')
      assert.deepEqual(failed.statusDetails, { reason: 'unspecified-error' })
      assert.deepEqual(await balanceOf(suite.ctx, suite.token, userId, eurAccount), { total: '100', available: '100' })
      const flow = await flowState(suite.ctx.database.db, org(), created.id)
      assert.equal(flow?.status, 'failed')
      assert.deepEqual(flow?.history.map(({ step, action }) => `${step}:${action}`), ['reserve:run', 'screen:run', 'reserve:compensate', 'exchange:fail'])
      const events = await eventsAbout(suite.ctx.database.db, org(), { type: 'transaction', id: created.id })
      assert.deepEqual(events.map((event) => event.type), ['core.transaction.created', 'core.transaction.status-changed'])
      assert.deepEqual(await suite.ctx.services.ledger.check(), [])
    })
  })

  describe(`velocity [${engine}]`, () => {
    const suite = useApp(engine, { VELOCITY_MAX_MOVEMENTS: '2', VELOCITY_WINDOW_SECONDS: '3600' })

    test('movements beyond the limit in the window fail with reason velocity, their hold released', async () => {
      const userId = await verifiedUser(suite.ctx, suite.token)
      const eur = await openAccount(suite.ctx, suite.token, userId, 'EUR')
      const btc = await openAccount(suite.ctx, suite.token, userId, 'BTC')
      await fund(suite.ctx, userId, eur, 'EUR', '100')
      const ids = []
      for (let i = 0; i < 3; i++) {
        const quote = await quoted(suite.ctx, suite.token, userId, quoteBody(eur, btc, 'EUR', '10'))
        ids.push((await commit(suite.ctx, suite.token, userId, quote.id)).json<{ transaction: Transaction }>().transaction.id)
      }
      await suite.ctx.services.worker.drain()
      const done = await Promise.all(ids.map((id) => transactionOf(suite.ctx, suite.token, userId, id)))
      assert.deepEqual(done.map((t) => [t.status, t.statusDetails?.reason]), [['completed', undefined], ['completed', undefined], ['failed', 'velocity']])
      assert.deepEqual(await balanceOf(suite.ctx, suite.token, userId, eur), { total: '80', available: '80' })
      assert.deepEqual(await suite.ctx.services.ledger.check(), [])
    })
  })
}

if (TEST_DATABASE_URL) {
  describe('trades under concurrency [postgres]', () => {
    const suite = useApp('postgres', { VELOCITY_MAX_MOVEMENTS: '0', DATABASE_POOL_SIZE: '20' })

    test('200 parallel commits of different quotes against an account that funds half: exactly half complete', async () => {
      const userId = await verifiedUser(suite.ctx, suite.token)
      const eur = await openAccount(suite.ctx, suite.token, userId, 'EUR')
      const btc = await openAccount(suite.ctx, suite.token, userId, 'BTC')
      await fund(suite.ctx, userId, eur, 'EUR', '1000')
      const quotes = []
      for (let i = 0; i < 200; i++) quotes.push(await quoted(suite.ctx, suite.token, userId, quoteBody(eur, btc, 'EUR', '10')))
      const responses = await Promise.all(quotes.map((quote) => commit(suite.ctx, suite.token, userId, quote.id)))
      const statuses = responses.map((response) => response.status)
      assert.equal(statuses.filter((status) => status === 201).length, 100, JSON.stringify(statuses))
      for (const response of responses.filter((r) => r.status !== 201)) assertError(response, 409, 'insufficient_balance')
      await suite.ctx.services.worker.drain()
      const rows = await suite.ctx.database.db.selectFrom('transactions').select('status').where('origin_account_id', '=', eur).execute()
      assert.equal(rows.length, 100)
      assert.ok(rows.every((row) => row.status === 'completed'))
      assert.deepEqual(await balanceOf(suite.ctx, suite.token, userId, eur), { total: '0', available: '0' })
      assert.deepEqual(await suite.ctx.services.ledger.check(), [])
    })

    test('50 parallel commits of one quote make one transaction; 50 parallel requests with one key make one', async () => {
      const userId = await verifiedUser(suite.ctx, suite.token)
      const eur = await openAccount(suite.ctx, suite.token, userId, 'EUR')
      const btc = await openAccount(suite.ctx, suite.token, userId, 'BTC')
      await fund(suite.ctx, userId, eur, 'EUR', '1000')
      const quote = await quoted(suite.ctx, suite.token, userId, quoteBody(eur, btc, 'EUR', '10'))
      const sameQuote = await Promise.all(Array.from({ length: 50 }, () => commit(suite.ctx, suite.token, userId, quote.id)))
      assert.equal(sameQuote.filter((r) => r.status === 201).length, 1)
      for (const response of sameQuote.filter((r) => r.status !== 201)) assertError(response, 404, 'entity_not_found')

      const keyed = await quoted(suite.ctx, suite.token, userId, quoteBody(eur, btc, 'EUR', '10'))
      const sameKey = await Promise.all(Array.from({ length: 50 }, () => commit(suite.ctx, suite.token, userId, keyed.id, { key: `one-key-${keyed.id}` })))
      assert.ok(sameKey.every((r) => r.status === 201), JSON.stringify(sameKey.map((r) => r.status)))
      const ids = new Set(sameKey.map((r) => r.json<{ transaction: Transaction }>().transaction.id))
      assert.equal(ids.size, 1)
      assert.equal(sameKey.filter((r) => r.headers['idempotent-replayed'] === 'true').length, 49)
      const rows = await suite.ctx.database.db.selectFrom('transactions').select('id').where('origin_account_id', '=', eur).execute()
      assert.equal(rows.length, 2)
      await suite.ctx.services.worker.drain()
      assert.deepEqual(await balanceOf(suite.ctx, suite.token, userId, eur), { total: '980', available: '980' })
      assert.deepEqual(await suite.ctx.services.ledger.check(), [])
    })
  })
}
