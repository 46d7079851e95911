/**
 * Card deposits through the HTTP API (src/flows/card-deposit.flow.ts, src/providers/cards): quotes from a linked
 * card, execution with the card issuer's 3-D Secure (frictionless, a challenge passed, failed, abandoned), the
 * sandbox issuer's declines and bounds, never charging twice, bad input, and the secrecy of the card number
 * (responses, trace-level logs, every column, the challenge page).
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import BigNumber from 'bignumber.js'
import { sql } from 'kysely'
import { eventsAbout } from '../src/modules/events/outbox.ts'
import { checkLedger } from '../src/modules/ledger/index.ts'
import { SANDBOX_CAPTURE_DECLINE_CARD, SANDBOX_CHALLENGE_CARD, SANDBOX_PAYMENT_BOUNDS, SANDBOX_PAYMENT_DECLINES } from '../src/providers/cards/sandbox.ts'
import { bearer, ENGINES, individualUser, useApp, type TestContext, type TestResponse } from './helpers.ts'
import { assertError, balanceOf, commit, openAccount, quoted, requestQuote, transactionOf, verifiedUser, type Quote, type Transaction } from './money.ts'
import { assertNoSecret, cardSecrets, dumpDatabase, startLoggedApp, type LoggedApp } from './secrecy.ts'

/** The sandbox's frictionless card (docs/sandbox.md): its payments authorize without a challenge. */
const FRICTIONLESS_CARD = '4242424242424242'
const EXPIRY = { month: 12, year: new Date().getUTCFullYear() + 3 }
const RETURN_URL = 'https://shop.example/checkout/paid?order=42'
const RETURN_ORIGIN = 'https://shop.example'
const FORM = { 'content-type': 'application/x-www-form-urlencoded' }

const threeDs = (returnUrl = RETURN_URL) => ({ params: { requirements: [{ name: 'authorize:3ds', returnUrl }] } })
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const spaced = (number: string) => number.replace(/(\d{4})(?=\d)/g, '$1 ')

/** What the app needs for card deposits: room for the test cards of one user, and rails that settle at once. */
const ENV = { CARDS_MAX_LINKED: '30', CARDS_MAX_DISTINCT: '100', SANDBOX_RAIL_SETTLE_MS: '0' }

/** The fixtures of a suite over its app. */
function cardFixtures(suite: { readonly ctx: TestContext; readonly token: string }) {
  const ctx = () => suite.ctx
  const org = () => suite.ctx.client.organizationId

  async function linkCard(userId: string, number: string, token = suite.token): Promise<string> {
    const response = await ctx().request({
      method: 'POST',
      url: '/core/external-accounts',
      headers: bearer(token, userId),
      payload: { type: 'card', label: `Card ${number.slice(-4)}`, number, securityCode: '123', expiryDate: EXPIRY },
    })
    assert.equal(response.status, 201, response.body)
    return response.json<{ externalAccount: { id: string } }>().externalAccount.id
  }

  /** A verified French user (cards issued where they live pay in EUR) with an EUR account and a linked card. */
  async function depositor(number = FRICTIONLESS_CARD): Promise<{ userId: string; eur: string; card: string }> {
    const userId = await verifiedUser(ctx(), suite.token)
    const eur = await openAccount(ctx(), suite.token, userId, 'EUR')
    const card = await linkCard(userId, number)
    return { userId, eur, card }
  }

  const depositBody = (card: string, account: string, amount: string, asset = 'EUR') => ({
    origin: { type: 'external-account', id: card },
    destination: { type: 'account', id: account },
    denomination: { asset, amount },
  })

  const cardQuote = (userId: string, card: string, account: string, amount = '100') => quoted(ctx(), suite.token, userId, depositBody(card, account, amount))

  /** Executes a quote with the 3-D Secure requirement met, as the API documents it. */
  async function execute(userId: string, quote: Quote, options: { key?: string; returnUrl?: string } = {}): Promise<{ response: TestResponse; transaction: Transaction }> {
    const response = await commit(ctx(), suite.token, userId, quote.id, { ...(options.key !== undefined ? { key: options.key } : {}), body: threeDs(options.returnUrl) })
    assert.equal(response.status, 201, response.body)
    return { response, transaction: response.json<{ transaction: Transaction }>().transaction }
  }

  /** The payments the sandbox processor holds for a transaction (its books, not the API). */
  async function paymentsOf(transactionId: string) {
    const processor = ctx().services.sandboxCardProcessor
    assert.ok(processor, 'the sandbox has a card processor')
    return (await processor.payments(org())).filter((payment) => payment.reference === transactionId)
  }

  /**
   * Runs the worker until the transaction leaves `processing` (a challenge's answer wakes its flow a moment after the
   * answer is given), or until `ms` passed; answers the transaction as it then stands.
   */
  async function settled(userId: string, id: string, ms = 10_000): Promise<Transaction> {
    const deadline = Date.now() + ms
    for (;;) {
      await ctx().services.worker.drain()
      const transaction = await transactionOf(ctx(), suite.token, userId, id)
      if (transaction.status !== 'processing' || Date.now() > deadline) return transaction
      await sleep(25)
    }
  }

  const challengePath = (transaction: Transaction) => {
    const url = (transaction.origin.node as { confirmationUrl?: string }).confirmationUrl
    assert.ok(url, `the transaction has a confirmation URL: ${JSON.stringify(transaction.origin.node)}`)
    return new URL(url).pathname
  }
  const challengePage = (path: string) => ctx().app.inject({ method: 'GET', url: path })
  const answer = (path: string, value: string) => ctx().app.inject({ method: 'POST', url: path, headers: FORM, payload: `answer=${value}` })

  /** Every payment the sandbox processor holds for the organization. */
  async function countPayments(): Promise<number> {
    return (await ctx().services.sandboxCardProcessor!.payments(org())).length
  }

  async function countTransactions(): Promise<number> {
    const row = await ctx().database.db.selectFrom('transactions').select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow()
    return Number(row.n)
  }

  async function ledgerBalances(): Promise<void> {
    const report = await checkLedger(ctx().database.db)
    assert.deepEqual(report.violations, [], JSON.stringify(report.violations))
  }

  async function statusEvents(id: string): Promise<string[]> {
    return (await eventsAbout(ctx().database.db, org(), { type: 'transaction', id })).map((event) => `${event.type}:${(event.data as { transaction: { status: string } }).transaction.status}`)
  }

  return { ctx, org, linkCard, depositor, depositBody, cardQuote, execute, paymentsOf, settled, challengePath, challengePage, answer, countPayments, countTransactions, ledgerBalances, statusEvents }
}

for (const engine of ENGINES) {
  describe(`card deposits [${engine}]`, () => {
    const suite = useApp(engine, ENV)
    const f = cardFixtures(suite)
    const { ctx } = f

    // --- Quotes ------------------------------------------------------------------------------------------------------

    describe('quotes from a card', () => {
      test('to an EUR account: the 3-D Secure requirement, the card deposit fee, the card node', async () => {
        const { userId, eur, card } = await f.depositor()
        const quote = await f.cardQuote(userId, card, eur, '100')
        assert.deepEqual(quote.requirements, ['authorize:3ds'])
        assert.deepEqual(quote.origin.node, { type: 'external-account', id: card, ownerId: userId, network: 'visa' })
        assert.deepEqual(quote.destination.node, { type: 'account', id: eur, ownerId: userId })
        assert.equal(quote.origin.asset, 'EUR')
        assert.equal(quote.origin.amount, '100')
        assert.deepEqual(quote.fees, [{ type: 'deposit', code: 'card-deposit-fee', asset: 'EUR', amount: '1.5', percentage: '1.5' }])
        assert.equal(quote.destination.asset, 'EUR')
        assert.equal(quote.destination.amount, '98.5')

        // Receiving an exact amount: the card pays the fee on top.
        const exact = await quoted(ctx(), suite.token, userId, { ...f.depositBody(card, eur, '98.5'), denomination: { asset: 'EUR', amount: '98.5', target: 'destination' } })
        assert.equal(exact.destination.amount, '98.5')
        assert.equal(exact.origin.amount, '100')

        // The upstream widget test app's sample spells the node `external_account`: the same card, the same quote.
        const underscored = await quoted(ctx(), suite.token, userId, { ...f.depositBody(card, eur, '100'), origin: { type: 'external_account', id: card } })
        assert.deepEqual(underscored.origin.node, quote.origin.node)
        assert.deepEqual(underscored.requirements, ['authorize:3ds'])
      })

      test('to a BTC account: an exchange, with the exchange fee and the card deposit fee, in the card\'s asset', async () => {
        const { userId, card } = await f.depositor()
        const btc = await openAccount(ctx(), suite.token, userId, 'BTC')
        const quote = await f.cardQuote(userId, card, btc, '100')
        assert.deepEqual(quote.requirements, ['authorize:3ds'])
        assert.deepEqual(quote.origin.node, { type: 'external-account', id: card, ownerId: userId, network: 'visa' })
        assert.equal(quote.origin.asset, 'EUR')
        assert.equal(quote.destination.asset, 'BTC')
        assert.deepEqual(
          quote.fees.map((fee) => [fee.code, fee.asset, fee.amount, fee.percentage]),
          [['exchange-fee', 'EUR', '0.5', '0.5'], ['card-deposit-fee', 'EUR', '1.5', '1.5']],
        )
        // What is exchanged is what the card pays less the fees, at the quoted rate.
        const expected = new BigNumber(100).minus(2).times(quote.destination.rate)
        assert.ok(new BigNumber(quote.destination.amount).minus(expected).abs().isLessThanOrEqualTo('0.00000001'), `${quote.destination.amount} vs ${expected.toFixed()}`)
      })

      test('a user without the deposits capability is refused (409 user_capability_failure)', async () => {
        // Identity and address: enough to link a card (capability `cards`), not to deposit (due diligence, proof of address).
        const userId = (await ctx().createUser(suite.token, individualUser({ address: { country: 'FR' }, primaryCitizenship: 'FR', termsOfService: 'general-lt-fcs' }))).id
        const kyc = async (process: string, payload: Record<string, unknown>) => {
          const response = await ctx().request({ method: 'PATCH', url: `/core/kyc/processes/${process}`, headers: bearer(suite.token, userId), payload })
          assert.equal(response.status, 200, response.body)
        }
        await kyc('address', { input: { address: { city: 'Paris', line1: '1 rue de Rivoli', postalCode: '75001' } } })
        await kyc('identity', { type: 'electronic-verification', input: { data: { givenName: 'Jane', familyName: 'Doe', birthdate: '1990-02-02', citizenshipCountry: 'FR' } } })
        const card = await f.linkCard(userId, FRICTIONLESS_CARD)
        const eur = await openAccount(ctx(), suite.token, userId, 'EUR')
        const refused = await requestQuote(ctx(), suite.token, userId, f.depositBody(card, eur, '10'))
        const details = assertError(refused, 409, 'user_capability_failure') as { capability: { code: string } }
        assert.equal(details.capability.code, 'deposits')
      })

      test('another user\'s card is not found (404, entity external-account)', async () => {
        const { userId, eur } = await f.depositor()
        const stranger = await f.depositor()
        const refused = await requestQuote(ctx(), suite.token, userId, f.depositBody(stranger.card, eur, '10'))
        assert.deepEqual(assertError(refused, 404, 'entity_not_found'), { context: 'body', property: 'origin', entity: 'external-account' })
      })
    })

    // --- Execution: the return URL ---------------------------------------------------------------------------------

    test('without a returnUrl: 409 missing-return-url, nothing created, and the quote can still be executed', async () => {
      const { userId, eur, card } = await f.depositor()
      const quote = await f.cardQuote(userId, card, eur, '20')
      const before = await f.countTransactions()
      const payments = await f.countPayments()
      for (const body of [{}, { params: {} }, { params: { requirements: [] } }, { params: { requirements: [{ name: 'authorize:3ds' }] } }, { params: { requirements: [{ name: 'travel-rule', returnUrl: RETURN_URL }] } }]) {
        const refused = await commit(ctx(), suite.token, userId, quote.id, { body })
        assert.deepEqual(assertError(refused, 409, 'operation_not_allowed'), { reasons: ['missing-return-url'] }, JSON.stringify(body))
      }
      assert.equal(await f.countTransactions(), before)
      assert.equal(await f.countPayments(), payments, 'the issuer was not asked')

      const { transaction } = await f.execute(userId, quote)
      assert.equal(transaction.status, 'processing')
      assert.equal((await f.settled(userId, transaction.id)).status, 'completed')
    })

    test('the deprecated params.returnUrl is still accepted', async () => {
      const { userId, eur, card } = await f.depositor()
      const quote = await f.cardQuote(userId, card, eur, '20')
      const response = await commit(ctx(), suite.token, userId, quote.id, { body: { params: { returnUrl: RETURN_URL } } })
      assert.equal(response.status, 201, response.body)
      const transaction = response.json<{ transaction: Transaction }>().transaction
      const [payment] = await f.paymentsOf(transaction.id)
      assert.equal(payment?.return_url, RETURN_URL)
      assert.equal((await f.settled(userId, transaction.id)).status, 'completed')
    })

    // --- Frictionless ------------------------------------------------------------------------------------------------

    test('frictionless: processing, then captured once and credited less the fee; ledger balanced; events in order', async () => {
      const { userId, eur, card } = await f.depositor()
      const quote = await f.cardQuote(userId, card, eur, '100')
      const { transaction } = await f.execute(userId, quote)
      assert.equal(transaction.status, 'processing')
      assert.equal(transaction.type, 'deposit')
      assert.equal((transaction.origin.node as { confirmationUrl?: string }).confirmationUrl, undefined, 'no challenge')
      assert.deepEqual(transaction.origin.node, { type: 'external-account', id: card, ownerId: userId, network: 'visa' })
      assert.deepEqual(await balanceOf(ctx(), suite.token, userId, eur), { total: '0', available: '0' }, 'nothing credited before the capture')

      await ctx().services.worker.drain()
      const done = await transactionOf(ctx(), suite.token, userId, transaction.id)
      assert.equal(done.status, 'completed')
      assert.ok(done.completedAt)
      assert.equal(done.destination.amount, '98.5')
      assert.deepEqual(await balanceOf(ctx(), suite.token, userId, eur), { total: '98.5', available: '98.5' })
      await f.ledgerBalances()
      assert.deepEqual(await f.statusEvents(transaction.id), ['core.transaction.created:processing', 'core.transaction.status-changed:completed'])

      const payments = await f.paymentsOf(transaction.id)
      assert.equal(payments.length, 1)
      const [payment] = payments
      assert.equal(payment!.status, 'captured')
      assert.equal(payment!.amount, '100')
      assert.equal(payment!.asset, 'EUR')
      assert.equal(payment!.last_four, '4242')
      assert.equal(payment!.return_url, RETURN_URL)
      assert.deepEqual(payment!.operations.map((operation) => operation.kind), ['capture'])

      // Draining again changes nothing.
      await ctx().services.worker.drain()
      assert.deepEqual(await balanceOf(ctx(), suite.token, userId, eur), { total: '98.5', available: '98.5' })
      assert.equal((await f.paymentsOf(transaction.id))[0]!.operations.length, 1)

      // Listed with the user's deposits and the account's transactions.
      const listed = await ctx().request({ method: 'GET', url: `/core/accounts/${eur}/transactions`, headers: bearer(suite.token, userId) })
      assert.deepEqual(listed.json<{ transactions: { id: string }[] }>().transactions.map((t) => t.id), [transaction.id])
    })

    test('frictionless into a BTC account: the account receives the quoted BTC, the ledger balances', async () => {
      const { userId, card } = await f.depositor()
      const btc = await openAccount(ctx(), suite.token, userId, 'BTC')
      const quote = await f.cardQuote(userId, card, btc, '50')
      const { transaction } = await f.execute(userId, quote)
      const done = await f.settled(userId, transaction.id)
      assert.equal(done.status, 'completed')
      assert.deepEqual(await balanceOf(ctx(), suite.token, userId, btc), { total: quote.destination.amount, available: quote.destination.amount })
      await f.ledgerBalances()
    })

    // --- 3-D Secure challenge ----------------------------------------------------------------------------------------

    describe('3-D Secure challenge', () => {
      test('the page, then pass: 303 to the return URL, then captured and credited', async () => {
        const { userId, eur, card } = await f.depositor(SANDBOX_CHALLENGE_CARD)
        const quote = await f.cardQuote(userId, card, eur, '100')
        const { transaction } = await f.execute(userId, quote)
        assert.equal(transaction.status, 'processing')
        const confirmationUrl = (transaction.origin.node as { confirmationUrl?: string }).confirmationUrl
        assert.ok(confirmationUrl?.startsWith(`${ctx().config.publicUrl}/sandbox/3ds/`), confirmationUrl)
        const path = f.challengePath(transaction)

        const page = await f.challengePage(path)
        assert.equal(page.statusCode, 200)
        assert.match(String(page.headers['content-type']), /^text\/html/)
        const csp = String(page.headers['content-security-policy'])
        assert.ok(csp.includes(`form-action 'self' ${RETURN_ORIGIN}`), csp)
        assert.ok(csp.includes("default-src 'none'"), csp)
        assert.equal(page.headers['cache-control'], 'no-store')
        assert.match(page.body, /<p class="amount" id="amount">100 EUR<\/p>/)
        assert.match(page.body, /ending in <strong>3220<\/strong>/)
        assert.ok(!page.body.includes(SANDBOX_CHALLENGE_CARD) && !page.body.includes(spaced(SANDBOX_CHALLENGE_CARD)), 'the page shows the last four digits only')
        assert.ok(page.body.includes(`action="${path}"`), 'the form answers the same page')

        // While nobody answers, the flow waits and nothing is credited.
        await ctx().services.worker.drain()
        assert.equal((await transactionOf(ctx(), suite.token, userId, transaction.id)).status, 'processing')
        assert.deepEqual(await balanceOf(ctx(), suite.token, userId, eur), { total: '0', available: '0' })
        assert.equal((await f.paymentsOf(transaction.id))[0]?.status, 'challenge')

        const passed = await f.answer(path, 'pass')
        assert.equal(passed.statusCode, 303)
        assert.equal(passed.headers.location, RETURN_URL)

        const done = await f.settled(userId, transaction.id)
        assert.equal(done.status, 'completed')
        assert.deepEqual(await balanceOf(ctx(), suite.token, userId, eur), { total: '98.5', available: '98.5' })
        const [payment] = await f.paymentsOf(transaction.id)
        assert.equal(payment!.status, 'captured')
        assert.deepEqual(payment!.operations.map((operation) => operation.kind), ['capture'])
        assert.deepEqual(await f.statusEvents(transaction.id), ['core.transaction.created:processing', 'core.transaction.status-changed:completed'])
        await f.ledgerBalances()

        // The page is closed now.
        const closed = await f.challengePage(path)
        assert.equal(closed.statusCode, 200)
        assert.ok(!closed.body.includes('<form'), 'no form on a closed page')
        assert.match(closed.body, /This authentication is closed/)
      })

      test('fail: the deposit fails with card-unauthorized, nothing credited or captured', async () => {
        const { userId, eur, card } = await f.depositor(SANDBOX_CHALLENGE_CARD)
        const { transaction } = await f.execute(userId, await f.cardQuote(userId, card, eur, '30'))
        const path = f.challengePath(transaction)
        await ctx().services.worker.drain()

        const failed = await f.answer(path, 'fail')
        assert.equal(failed.statusCode, 303)
        assert.equal(failed.headers.location, RETURN_URL)

        const done = await f.settled(userId, transaction.id)
        assert.equal(done.status, 'failed')
        assert.equal(done.statusDetails?.reason, 'card-unauthorized')
        assert.deepEqual(await balanceOf(ctx(), suite.token, userId, eur), { total: '0', available: '0' })
        const [payment] = await f.paymentsOf(transaction.id)
        assert.equal(payment!.status, 'declined')
        assert.deepEqual(payment!.operations, [], 'nothing captured')
        assert.deepEqual(await f.statusEvents(transaction.id), ['core.transaction.created:processing', 'core.transaction.status-changed:failed'])
        await f.ledgerBalances()

        const closed = await f.challengePage(path)
        assert.match(closed.body, /data-status="not-authenticated"/)
        assert.match(closed.body, /not authenticated/)
      })

      test('answering twice changes nothing: the first answer holds', async () => {
        const { userId, eur, card } = await f.depositor(SANDBOX_CHALLENGE_CARD)
        const { transaction } = await f.execute(userId, await f.cardQuote(userId, card, eur, '40'))
        const path = f.challengePath(transaction)
        assert.equal((await f.answer(path, 'pass')).statusCode, 303)
        const second = await f.answer(path, 'fail')
        assert.equal(second.statusCode, 303)
        assert.equal(second.headers.location, RETURN_URL)
        assert.equal((await f.answer(path, 'pass')).statusCode, 303)

        const done = await f.settled(userId, transaction.id)
        assert.equal(done.status, 'completed')
        assert.deepEqual(await balanceOf(ctx(), suite.token, userId, eur), { total: '39.4', available: '39.4' })
        const payments = await f.paymentsOf(transaction.id)
        assert.equal(payments.length, 1)
        assert.deepEqual(payments[0]!.operations.map((operation) => operation.kind), ['capture'])

        // And a failed challenge stays failed whatever comes after.
        const other = await f.execute(userId, await f.cardQuote(userId, card, eur, '41'))
        const otherPath = f.challengePath(other.transaction)
        assert.equal((await f.answer(otherPath, 'fail')).statusCode, 303)
        assert.equal((await f.answer(otherPath, 'pass')).statusCode, 303)
        const otherDone = await f.settled(userId, other.transaction.id)
        assert.equal(otherDone.status, 'failed')
        assert.equal(otherDone.statusDetails?.reason, 'card-unauthorized')
        assert.deepEqual(await balanceOf(ctx(), suite.token, userId, eur), { total: '39.4', available: '39.4' })
      })

      test('the challenge page refuses what is not an answer, and knows no other id', async () => {
        const { userId, eur, card } = await f.depositor(SANDBOX_CHALLENGE_CARD)
        const { transaction } = await f.execute(userId, await f.cardQuote(userId, card, eur, '12'))
        const path = f.challengePath(transaction)
        for (const payload of ['answer=maybe', '', 'other=pass']) {
          const refused = await ctx().app.inject({ method: 'POST', url: path, headers: FORM, payload })
          assert.equal(refused.statusCode, 400, payload)
        }
        assert.equal((await f.challengePage('/sandbox/3ds/0190a8c1-0000-7000-8000-000000000000')).statusCode, 404)
        assert.equal((await f.challengePage('/sandbox/3ds/not-an-id')).statusCode, 404)
        assert.equal((await f.answer('/sandbox/3ds/0190a8c1-0000-7000-8000-000000000000', 'pass')).statusCode, 404)
        // Still waiting for a real answer.
        await ctx().services.worker.drain()
        assert.equal((await transactionOf(ctx(), suite.token, userId, transaction.id)).status, 'processing')
        assert.equal((await f.paymentsOf(transaction.id))[0]?.status, 'challenge')
      })
    })

    // --- Declines and bounds -------------------------------------------------------------------------------------------

    describe('the issuer\'s declines', () => {
      for (const [number, reason] of Object.entries(SANDBOX_PAYMENT_DECLINES)) {
        test(`${number}: failed with ${reason}, nothing credited or captured`, async () => {
          const { userId, eur, card } = await f.depositor(number)
          const { transaction } = await f.execute(userId, await f.cardQuote(userId, card, eur, '25'))
          // The issuer is asked during the request: the decline may already show.
          assert.ok(['processing', 'failed'].includes(transaction.status), transaction.status)
          const done = await f.settled(userId, transaction.id)
          assert.equal(done.status, 'failed')
          assert.equal(done.statusDetails?.reason, reason)
          assert.deepEqual(await balanceOf(ctx(), suite.token, userId, eur), { total: '0', available: '0' })
          const [payment] = await f.paymentsOf(transaction.id)
          assert.equal(payment?.status, 'declined')
          assert.deepEqual(payment?.operations, [])
          assert.deepEqual(await f.statusEvents(transaction.id), ['core.transaction.created:processing', 'core.transaction.status-changed:failed'])
        })
      }

      test('a capture the issuer refuses: failed with card-declined-by-bank after the worker ran, nothing credited', async () => {
        const { userId, eur, card } = await f.depositor(SANDBOX_CAPTURE_DECLINE_CARD)
        const { transaction } = await f.execute(userId, await f.cardQuote(userId, card, eur, '25'))
        assert.equal(transaction.status, 'processing', 'the authorization went through')
        await ctx().services.worker.drain()
        const done = await transactionOf(ctx(), suite.token, userId, transaction.id)
        assert.equal(done.status, 'failed')
        assert.equal(done.statusDetails?.reason, 'card-declined-by-bank')
        assert.deepEqual(await balanceOf(ctx(), suite.token, userId, eur), { total: '0', available: '0' })
        const [payment] = await f.paymentsOf(transaction.id)
        assert.equal(payment?.status, 'declined')
        assert.deepEqual(payment?.operations, [])
        await f.ledgerBalances()
      })

      test(`below the processor's minimum (${SANDBOX_PAYMENT_BOUNDS.minimum}): amount-limit-exceed; above its maximum: provider-maximum-limit-exceeded`, async () => {
        const { userId, eur, card } = await f.depositor()
        // 0.99 EUR is above the quote's own minimum (0.5 USD): the processor's bound is what refuses it.
        const small = await f.cardQuote(userId, card, eur, '0.99')
        assert.equal(small.origin.amount, '0.99')
        const smallDone = await f.settled(userId, (await f.execute(userId, small)).transaction.id)
        assert.equal(smallDone.status, 'failed')
        assert.equal(smallDone.statusDetails?.reason, 'amount-limit-exceed')

        // The bounds themselves are inside.
        const leastQuote = await f.cardQuote(userId, card, eur, SANDBOX_PAYMENT_BOUNDS.minimum)
        const least = await f.settled(userId, (await f.execute(userId, leastQuote)).transaction.id)
        assert.equal(least.status, 'completed')

        const large = await f.cardQuote(userId, card, eur, '10000.01')
        const largeDone = await f.settled(userId, (await f.execute(userId, large)).transaction.id)
        assert.equal(largeDone.status, 'failed')
        assert.equal(largeDone.statusDetails?.reason, 'provider-maximum-limit-exceeded')

        const mostQuote = await f.cardQuote(userId, card, eur, SANDBOX_PAYMENT_BOUNDS.maximum)
        const most = await f.settled(userId, (await f.execute(userId, mostQuote)).transaction.id)
        assert.equal(most.status, 'completed')
        // The two at the bounds, each less its fee (1.5 %, rounded up to the cent: 0.02 of 1 EUR).
        assert.equal(leastQuote.destination.amount, '0.98')
        assert.equal(mostQuote.destination.amount, '9850')
        assert.deepEqual(await balanceOf(ctx(), suite.token, userId, eur), { total: '9850.98', available: '9850.98' })
        await f.ledgerBalances()
      })
    })

    // --- Never charged twice -------------------------------------------------------------------------------------------

    describe('never charged twice', () => {
      test('the same Idempotency-Key twice: the same transaction, one payment; the quote cannot be executed again', async () => {
        const { userId, eur, card } = await f.depositor()
        const quote = await f.cardQuote(userId, card, eur, '60')
        const key = `card-deposit-${quote.id}`
        const first = await f.execute(userId, quote, { key })
        const again = await commit(ctx(), suite.token, userId, quote.id, { key, body: threeDs() })
        assert.equal(again.status, 201, again.body)
        assert.equal(again.json<{ transaction: Transaction }>().transaction.id, first.transaction.id)
        assert.equal(again.headers['idempotent-replayed'], 'true')

        // Another key, the same quote: it was used.
        const reused = await commit(ctx(), suite.token, userId, quote.id, { key: `${key}-other`, body: threeDs() })
        const details = assertError(reused, 404, 'entity_not_found') as { entity: string; reasons: string[] }
        assert.equal(details.entity, 'quote')
        assert.deepEqual(details.reasons, ['quote-already-used'])

        const done = await f.settled(userId, first.transaction.id)
        assert.equal(done.status, 'completed')
        await ctx().services.worker.drain()
        const payments = await f.paymentsOf(first.transaction.id)
        assert.equal(payments.length, 1)
        assert.deepEqual(payments[0]!.operations.map((operation) => operation.kind), ['capture'])
        assert.deepEqual(await balanceOf(ctx(), suite.token, userId, eur), { total: '59.1', available: '59.1' })
        const listed = await ctx().request({ method: 'GET', url: '/core/transactions?type=deposit', headers: bearer(suite.token, userId) })
        assert.equal(listed.json<{ transactions: unknown[] }>().transactions.length, 1)
      })

      test('a replay answers what the first request answered: the challenge\'s confirmation URL, a decline\'s failure', async () => {
        const { userId, eur, card } = await f.depositor(SANDBOX_CHALLENGE_CARD)
        const confirmationUrlOf = (transaction: Transaction) => (transaction.origin.node as { confirmationUrl?: string }).confirmationUrl
        const quote = await f.cardQuote(userId, card, eur, '15')
        const first = await f.execute(userId, quote, { key: `replay-${quote.id}` })
        assert.ok(confirmationUrlOf(first.transaction))
        const again = await commit(ctx(), suite.token, userId, quote.id, { key: `replay-${quote.id}`, body: threeDs() })
        assert.equal(again.status, 201)
        assert.equal(again.headers['idempotent-replayed'], 'true')

        const declining = await f.linkCard(userId, '4000000000000200')
        const declined = await f.cardQuote(userId, declining, eur, '15')
        const firstDecline = await f.execute(userId, declined, { key: `replay-${declined.id}` })
        assert.equal(firstDecline.transaction.status, 'failed', 'the issuer declined during the request')
        const againDecline = await commit(ctx(), suite.token, userId, declined.id, { key: `replay-${declined.id}`, body: threeDs() })
        assert.equal(againDecline.status, 201)

        // A client that lost the first answer must still learn where the cardholder authenticates, and not be told
        // that a declined payment is still under way.
        assert.deepEqual(
          { challenge: confirmationUrlOf(again.json<{ transaction: Transaction }>().transaction), decline: againDecline.json<{ transaction: Transaction }>().transaction.status },
          { challenge: confirmationUrlOf(first.transaction), decline: 'failed' },
        )
      })

      test('a capture already made when the flow reaches its capture step (a crash after the call) is not made again', async () => {
        const { userId, eur, card } = await f.depositor()
        const { transaction } = await f.execute(userId, await f.cardQuote(userId, card, eur, '70'))
        const [authorized] = await f.paymentsOf(transaction.id)
        assert.equal(authorized?.status, 'authorized')
        // The capture the flow's step would make, made by a worker that died before committing the step.
        const processor = ctx().services.sandboxCardProcessor!
        const early = await processor.capture({ organizationId: f.org(), authorizationId: authorized.id, key: `${transaction.id}:capture` })
        assert.equal(early.status, 'captured')

        await ctx().services.worker.drain()
        assert.equal((await transactionOf(ctx(), suite.token, userId, transaction.id)).status, 'completed')
        const [payment] = await f.paymentsOf(transaction.id)
        assert.deepEqual(payment!.operations.map((operation) => operation.kind), ['capture'])
        assert.equal(payment!.operations[0]!.id, (early as { captureId: string }).captureId)
        assert.deepEqual(await balanceOf(ctx(), suite.token, userId, eur), { total: '68.95', available: '68.95' })

        // The flow's job run again (a duplicated job): nothing happens.
        const db = ctx().database.db
        const job = await db.selectFrom('jobs').selectAll().where('type', '=', 'flow:card-deposit').where(sql<string>`payload->>'flowId'`, '=', transaction.id).executeTakeFirstOrThrow()
        await db.updateTable('jobs').set({ status: 'pending', run_at: new Date(), attempts: 0 }).where('id', '=', job.id).execute()
        await ctx().services.worker.drain()
        await ctx().services.worker.drain()
        assert.equal((await f.paymentsOf(transaction.id))[0]!.operations.length, 1)
        assert.deepEqual(await balanceOf(ctx(), suite.token, userId, eur), { total: '68.95', available: '68.95' })
        assert.deepEqual(await f.statusEvents(transaction.id), ['core.transaction.created:processing', 'core.transaction.status-changed:completed'])
        await f.ledgerBalances()
      })

      test('parallel commits of one quote: one transaction, one payment', async () => {
        const { userId, eur, card } = await f.depositor()
        const quote = await f.cardQuote(userId, card, eur, '33')
        const paymentsBefore = await f.countPayments()
        const responses = await Promise.all(Array.from({ length: 6 }, () => commit(ctx(), suite.token, userId, quote.id, { body: threeDs() })))
        const created = responses.filter((response) => response.status === 201)
        assert.equal(created.length, 1, responses.map((response) => response.status).join(','))
        for (const response of responses.filter((r) => r.status !== 201)) assertError(response, 404, 'entity_not_found')
        const id = created[0]!.json<{ transaction: Transaction }>().transaction.id
        assert.equal((await f.settled(userId, id)).status, 'completed')
        assert.equal((await f.paymentsOf(id)).length, 1)
        assert.equal(await f.countPayments(), paymentsBefore + 1)
        assert.deepEqual(await balanceOf(ctx(), suite.token, userId, eur), { total: '32.5', available: '32.5' })
      })
    })

    // --- Bad input -----------------------------------------------------------------------------------------------------

    test('bad input: malformed params, another user\'s quote, a client acting for nobody; nothing is created', async () => {
      const { userId, eur, card } = await f.depositor()
      const quote = await f.cardQuote(userId, card, eur, '10')
      const before = await f.countTransactions()
      const payments = await f.countPayments()

      const invalid: [string, Record<string, unknown>, string, string][] = [
        ['returnUrl not a URL', threeDs('not a url'), 'params.requirements[0].returnUrl', 'format'],
        ['returnUrl without a scheme', threeDs('shop.example/paid'), 'params.requirements[0].returnUrl', 'pattern'],
        ['deprecated returnUrl not a URL', { params: { returnUrl: 'nope' } }, 'params.returnUrl', 'format'],
        ['requirements not an array', { params: { requirements: 'authorize:3ds' } }, 'params.requirements', 'type'],
        ['a requirement without a name', { params: { requirements: [{ returnUrl: RETURN_URL }] } }, 'params.requirements[0].name', 'required'],
        ['a requirement that is a string', { params: { requirements: ['authorize:3ds'] } }, 'params.requirements[0]', 'type'],
        ['a requirement name not a string', { params: { requirements: [{ name: 3, returnUrl: RETURN_URL }] } }, 'params.requirements[0].name', 'type'],
        ['too many requirements', { params: { requirements: Array.from({ length: 11 }, () => ({ name: 'authorize:3ds', returnUrl: RETURN_URL })) } }, 'params.requirements', 'maxItems'],
      ]
      for (const [label, body, property, rule] of invalid) {
        const response = await commit(ctx(), suite.token, userId, quote.id, { body })
        const details = assertError(response, 400, 'request_invalid') as { context: string; violations: { property: string; rule: string }[] }
        assert.equal(details.context, 'body')
        assert.ok(details.violations.some((violation) => violation.property === property && violation.rule === rule), `${label}: ${JSON.stringify(details.violations)}`)
      }

      // Another user's quote does not exist for this one.
      const stranger = await f.depositor()
      const foreign = await commit(ctx(), suite.token, stranger.userId, quote.id, { body: threeDs() })
      assert.equal((assertError(foreign, 404, 'entity_not_found') as { entity: string }).entity, 'quote')

      // A client token must act for a user.
      const asClient = await ctx().request({ method: 'POST', url: '/core/transactions', headers: bearer(suite.token), payload: { quoteId: quote.id, ...threeDs() } })
      assertError(asClient, 403, 'subject_not_allowed')

      assert.equal(await f.countTransactions(), before)
      assert.equal(await f.countPayments(), payments, 'the issuer was not asked')
      // The quote was never used.
      const { transaction } = await f.execute(userId, quote)
      assert.equal((await f.settled(userId, transaction.id)).status, 'completed')
    })
  })

  describe(`card deposits whose challenge is abandoned [${engine}]`, () => {
    const suite = useApp(engine, { ...ENV, SANDBOX_3DS_CHALLENGE_TTL_MS: '1000', CARD_CHALLENGE_POLL_MS: '200' })
    const f = cardFixtures(suite)
    const { ctx } = f

    test('nobody answers: past the challenge\'s expiry the deposit fails with card-unauthorized; a late answer authorizes nothing', async () => {
      const { userId, eur, card } = await f.depositor(SANDBOX_CHALLENGE_CARD)
      const { transaction } = await f.execute(userId, await f.cardQuote(userId, card, eur, '20'))
      const path = f.challengePath(transaction)
      await ctx().services.worker.drain()
      assert.equal((await transactionOf(ctx(), suite.token, userId, transaction.id)).status, 'processing')

      await sleep(1_200)
      const done = await f.settled(userId, transaction.id)
      assert.equal(done.status, 'failed')
      assert.equal(done.statusDetails?.reason, 'card-unauthorized')
      assert.deepEqual(await balanceOf(ctx(), suite.token, userId, eur), { total: '0', available: '0' })

      const page = await f.challengePage(path)
      assert.equal(page.statusCode, 200)
      assert.ok(!page.body.includes('<form'), 'the page takes no answer')
      assert.match(page.body, /This authentication is closed/)
      assert.match(page.body, /not authenticated/)

      const late = await f.answer(path, 'pass')
      assert.equal(late.statusCode, 303)
      await ctx().services.worker.drain()
      const [payment] = await f.paymentsOf(transaction.id)
      assert.equal(payment?.status, 'declined')
      assert.equal(payment?.reason, 'card-unauthorized')
      assert.deepEqual(payment?.operations, [])
      const after = await transactionOf(ctx(), suite.token, userId, transaction.id)
      assert.equal(after.status, 'failed')
      assert.deepEqual(await balanceOf(ctx(), suite.token, userId, eur), { total: '0', available: '0' })
      assert.deepEqual(await f.statusEvents(transaction.id), ['core.transaction.created:processing', 'core.transaction.status-changed:failed'])
    })

    test('an answer after the expiry, before the flow looked again, authorizes nothing either', async () => {
      const { userId, eur, card } = await f.depositor(SANDBOX_CHALLENGE_CARD)
      const { transaction } = await f.execute(userId, await f.cardQuote(userId, card, eur, '21'))
      const path = f.challengePath(transaction)
      await sleep(1_200)

      // The page is closed as soon as the challenge expired, and says the payment was not authenticated.
      const page = await f.challengePage(path)
      assert.ok(!page.body.includes('<form'), 'the page takes no answer')
      assert.match(page.body, /not authenticated/, 'an abandoned authentication is not an authenticated payment')

      assert.equal((await f.answer(path, 'pass')).statusCode, 303)
      const done = await f.settled(userId, transaction.id)
      assert.equal(done.status, 'failed')
      assert.equal(done.statusDetails?.reason, 'card-unauthorized')
      assert.deepEqual(await balanceOf(ctx(), suite.token, userId, eur), { total: '0', available: '0' })
      assert.equal((await f.paymentsOf(transaction.id))[0]?.status, 'declined')
    })
  })

  // --- Card secrecy ------------------------------------------------------------------------------------------------

  describe(`card deposits keep the card number secret [${engine}]`, () => {
    let logged: LoggedApp
    before(async () => {
      logged = await startLoggedApp(engine, ENV)
    })
    after(() => logged?.ctx.close())

    test('the number (whole and spaced) appears in no response, no log line and no column; the challenge page shows the last four only', async () => {
      const { ctx } = logged
      const token = await ctx.token()
      const suite = { ctx, token }
      const f = cardFixtures(suite)
      const { userId, eur, card } = await f.depositor(SANDBOX_CHALLENGE_CARD)
      const frictionless = await f.linkCard(userId, FRICTIONLESS_CARD)

      // A challenge passed, one failed, a frictionless deposit, a decline, and refusals.
      const passed = await f.execute(userId, await f.cardQuote(userId, card, eur, '80'), { key: `secret-${userId}` })
      const passedPath = f.challengePath(passed.transaction)
      const pages = [await f.challengePage(passedPath), await f.answer(passedPath, 'pass')]
      const failed = await f.execute(userId, await f.cardQuote(userId, card, eur, '81'))
      const failedPath = f.challengePath(failed.transaction)
      pages.push(await f.answer(failedPath, 'fail'), await f.challengePage(failedPath))
      await f.execute(userId, await f.cardQuote(userId, frictionless, eur, '82'))
      assertError(await commit(ctx, token, userId, (await f.cardQuote(userId, card, eur, '83')).id), 409, 'operation_not_allowed')
      assert.equal((await f.settled(userId, passed.transaction.id)).status, 'completed')
      assert.equal((await f.settled(userId, failed.transaction.id)).status, 'failed')
      await ctx.services.worker.drain()
      assert.equal(pages[0]!.statusCode, 200)
      assert.match(pages[0]!.body, /<strong>3220<\/strong>/)

      const secrets = [...cardSecrets(SANDBOX_CHALLENGE_CARD), ...cardSecrets(FRICTIONLESS_CARD)]
      // (a) Every response, API and pages, bodies and headers.
      assert.ok(logged.responses.length > 20)
      for (const response of [...logged.responses, ...pages.map((page) => ({ body: page.body, headers: page.headers }))]) {
        assertNoSecret(response.body, secrets, 'a response body')
        assertNoSecret(JSON.stringify(response.headers), secrets, 'response headers')
      }
      // (b) Every log line, at trace level (the worker's too).
      const log = logged.lines.join('')
      assert.ok(log.includes('/core/transactions'), 'the deposits were logged')
      assert.ok(log.includes('/sandbox/3ds/'), 'the challenge pages were logged')
      assertNoSecret(log, secrets, 'the log')
      // (c) Every column of every table.
      const dump = await dumpDatabase(ctx.database.db)
      assert.ok(dump.some((cell) => cell.table === 'sandbox_card_payments' && cell.column === 'last_four' && cell.value === '3220'), 'the last four digits are kept')
      for (const cell of dump) assertNoSecret(cell.value, secrets, `${cell.table}.${cell.column}`)
    })
  })
}

