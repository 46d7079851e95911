import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import BigNumber from 'bignumber.js'
import { sql } from 'kysely'
import { checkLedger } from '../src/modules/ledger/index.ts'
import { eventsAbout } from '../src/modules/events/outbox.ts'
import { receivedOrders } from '../src/providers/rails/sandbox-payouts.ts'
import { bearer, ENGINES, useApp } from './helpers.ts'
import { assertError, balanceOf, commit, fund, openAccount, quoted, requestQuote, transactionOf, verifiedUser, type Quote, withoutTravelRule } from './money.ts'

/** Sandbox test values (docs/sandbox.md): IBANs whose last four digits select the rail's outcome. */
const IBAN = {
  completes: 'DE67370400440532010001',
  holderMismatch: 'DE40370400440532010002',
  countryRestricted: 'DE13370400440532010003',
  unspecified: 'DE83370400440532010004',
}
const BTC_ADDRESS = 'tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx'
const BTC_SCREENED = 'tb1qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq0l98cr'
const EXPIRY = { month: 12, year: new Date().getUTCFullYear() + 3 }

for (const engine of ENGINES) {
  describe(`withdrawals and bank pulls [${engine}]`, () => {
    // The sandbox rail settles at once here; a test that needs an order pending moves its settlement time itself.
    // Withdrawals here are about the rail, not the travel rule (test/travel-rule.test.ts).
    const suite = useApp(engine, { VELOCITY_MAX_MOVEMENTS: '0', SANDBOX_RAIL_SETTLE_MS: '0', ...withoutTravelRule() })
    const ctx = () => suite.ctx

    async function linked(userId: string, payload: Record<string, unknown>): Promise<string> {
      const response = await ctx().request({ method: 'POST', url: '/core/external-accounts', headers: bearer(suite.token, userId), payload: { label: 'Mine', ...payload } })
      assert.equal(response.status, 201, response.body)
      return response.json<{ externalAccount: { id: string } }>().externalAccount.id
    }
    const sepa = (userId: string, iban = IBAN.completes) => linked(userId, { type: 'bank', asset: 'EUR', network: 'sepa', iban, bic: 'COBADEFFXXX' })
    const ach = (userId: string, accountNumber = '9876540001') =>
      linked(userId, {
        type: 'bank',
        asset: 'USD',
        network: 'ach',
        routingNumber: '121000248',
        accountNumber,
        accountType: 'checking',
        address: { country: 'US', subdivision: 'US-CA', city: 'San Francisco', line1: '1 Main Street', postalCode: '94102' },
      })
    const card = (userId: string, number: string) => linked(userId, { type: 'card', number, securityCode: '123', expiryDate: EXPIRY })

    /** A verified user with a funded EUR account. */
    async function withEuros(amount = '1000') {
      const userId = await verifiedUser(ctx(), suite.token)
      const eurAccount = await openAccount(ctx(), suite.token, userId, 'EUR')
      await fund(ctx(), userId, eurAccount, 'EUR', amount)
      return { userId, eurAccount }
    }

    const withdrawal = (originId: string, destination: Record<string, unknown>, asset: string, amount: string) => ({
      origin: { type: 'account', id: originId },
      destination,
      denomination: { asset, amount },
    })

    async function execute(userId: string, quote: Quote) {
      const response = await commit(ctx(), suite.token, userId, quote.id)
      assert.equal(response.status, 201, response.body)
      const id = response.json<{ transaction: { id: string; status: string; type: string } }>().transaction
      assert.equal(id.status, 'processing')
      assert.equal(id.type, quote.destination.node.type === 'account' ? 'deposit' : 'withdrawal')
      await ctx().services.worker.drain()
      return transactionOf(ctx(), suite.token, userId, id.id)
    }

    async function ledgerBalances(): Promise<void> {
      const report = await checkLedger(ctx().database.db)
      assert.deepEqual(report.violations, [], JSON.stringify(report.violations))
    }

    test('to a SEPA account: held, sent to the rail once, captured to the clearing account; balance and events follow', async () => {
      const { userId, eurAccount } = await withEuros()
      const bank = await sepa(userId)
      const quote = await quoted(ctx(), suite.token, userId, withdrawal(eurAccount, { type: 'external-account', id: bank }, 'EUR', '100'))
      assert.deepEqual(quote.origin.node, { type: 'account', id: eurAccount, ownerId: userId })
      assert.deepEqual(quote.destination.node, { type: 'external-account', id: bank, ownerId: userId, network: 'sepa' })
      assert.equal(quote.origin.amount, '100')
      assert.equal(quote.destination.amount, '100')
      assert.deepEqual(quote.fees, [])

      const transaction = await execute(userId, quote)
      assert.equal(transaction.status, 'completed')
      assert.deepEqual(await balanceOf(ctx(), suite.token, userId, eurAccount), { total: '900', available: '900' })
      const orders = (await receivedOrders(ctx().database.db, ctx().client.organizationId)).filter((order) => order.key.startsWith(transaction.id))
      assert.equal(orders.length, 1)
      assert.equal(orders[0]!.received, 1)
      assert.equal(orders[0]!.amount, '100')
      const clearing = await ctx().services.ledger.systemAccount(ctx().client.organizationId, { kind: 'clearing', network: 'sepa', asset: 'EUR' })
      const entries = await ctx().database.db.selectFrom('ledger_entries').select('amount').where('account_id', '=', clearing).execute()
      assert.ok(entries.some((entry) => new BigNumber(entry.amount).isEqualTo(100)), 'the clearing account received the withdrawal')
      const statuses = (await eventsAbout(ctx().database.db, ctx().client.organizationId, { type: 'transaction', id: transaction.id })).map((event) => `${event.type}:${(event.data as { transaction: { status: string } }).transaction.status}`)
      assert.deepEqual(statuses, ['core.transaction.created:processing', 'core.transaction.status-changed:completed'])
      const listed = await ctx().request({ method: 'GET', url: '/core/transactions?type=withdrawal', headers: bearer(suite.token, userId) })
      assert.deepEqual(listed.json<{ transactions: { id: string }[] }>().transactions.map((t) => t.id), [transaction.id])
      await ledgerBalances()
    })

    for (const [label, iban, reason] of [
      ['returned by the bank', IBAN.holderMismatch, 'bank-account-holder-name-mismatch'],
      ['refused by the rail', IBAN.countryRestricted, 'beneficiary-country-restricted'],
      ['failed by the rail', IBAN.unspecified, 'unspecified-error'],
    ] as const) {
      test(`a withdrawal ${label} fails with ${reason} and its hold is released`, async () => {
        const { userId, eurAccount } = await withEuros()
        const bank = await sepa(userId, iban)
        const quote = await quoted(ctx(), suite.token, userId, withdrawal(eurAccount, { type: 'external-account', id: bank }, 'EUR', '250'))
        const transaction = await execute(userId, quote)
        assert.equal(transaction.status, 'failed')
        assert.equal(transaction.statusDetails?.reason, reason)
        assert.deepEqual(await balanceOf(ctx(), suite.token, userId, eurAccount), { total: '1000', available: '1000' })
        const holds = await ctx().database.db.selectFrom('ledger_holds').select('status').where('account_id', '=', eurAccount).execute()
        assert.ok(holds.every((hold) => hold.status !== 'open'), 'no hold is left open')
        await ledgerBalances()
      })
    }

    test('a refusal among a batch of orders fails that withdrawal alone: the others are sent once', async () => {
      const { userId, eurAccount } = await withEuros()
      const good = await sepa(userId)
      const refused = await sepa(userId, IBAN.countryRestricted)
      const ids: string[] = []
      for (const [bank, amount] of [[good, '1'], [good, '2'], [refused, '3'], [good, '4']] as const) {
        const quote = await quoted(ctx(), suite.token, userId, withdrawal(eurAccount, { type: 'external-account', id: bank }, 'EUR', amount))
        ids.push((await commit(ctx(), suite.token, userId, quote.id)).json<{ transaction: { id: string } }>().transaction.id)
      }
      await ctx().services.worker.drain()
      const statuses = await Promise.all(ids.map(async (id) => (await transactionOf(ctx(), suite.token, userId, id)).status))
      assert.deepEqual(statuses, ['completed', 'completed', 'failed', 'completed'])
      const orders = (await receivedOrders(ctx().database.db, ctx().client.organizationId)).filter((order) => ids.some((id) => order.key.startsWith(id)))
      assert.equal(orders.length, 4)
      assert.deepEqual(orders.map((order) => order.received), [1, 1, 1, 1], 'no order was sent twice')
      assert.deepEqual(await balanceOf(ctx(), suite.token, userId, eurAccount), { total: '993', available: '993' })
    })

    test('an order above the rail\'s maximum fails with provider-maximum-limit-exceeded', async () => {
      const { userId, eurAccount } = await withEuros('60000')
      const bank = await sepa(userId)
      const quote = await quoted(ctx(), suite.token, userId, withdrawal(eurAccount, { type: 'external-account', id: bank }, 'EUR', '50000.01'))
      const transaction = await execute(userId, quote)
      assert.equal(transaction.statusDetails?.reason, 'provider-maximum-limit-exceeded')
      assert.deepEqual(await balanceOf(ctx(), suite.token, userId, eurAccount), { total: '60000', available: '60000' })
    })

    test('to a card: push-to-card cards only, with the card fee; a declined credit fails', async () => {
      const { userId, eurAccount } = await withEuros()
      const good = await card(userId, '4242424242424242')
      const quote = await quoted(ctx(), suite.token, userId, withdrawal(eurAccount, { type: 'external-account', id: good }, 'EUR', '100'))
      assert.deepEqual(quote.fees, [{ type: 'withdrawal', code: 'card-withdrawal-fee', asset: 'EUR', amount: '1', percentage: '1' }])
      assert.equal(quote.destination.amount, '99')
      assert.equal((await execute(userId, quote)).status, 'completed')
      assert.deepEqual(await balanceOf(ctx(), suite.token, userId, eurAccount), { total: '900', available: '900' })
      const orders = await receivedOrders(ctx().database.db, ctx().client.organizationId)
      assert.ok(orders.every((order) => !JSON.stringify(order).includes('4242424242424242')))

      const noPush = await card(userId, '4000056655665556')
      const refused = await requestQuote(ctx(), suite.token, userId, withdrawal(eurAccount, { type: 'external-account', id: noPush }, 'EUR', '10'))
      assert.deepEqual(assertError(refused, 409, 'operation_not_allowed'), { reasons: ['card-withdrawals-unsupported'] })

      const declining = await card(userId, '4000000000000127')
      const declined = await execute(userId, await quoted(ctx(), suite.token, userId, withdrawal(eurAccount, { type: 'external-account', id: declining }, 'EUR', '10')))
      assert.equal(declined.statusDetails?.reason, 'card-declined-by-bank')
      assert.deepEqual(await balanceOf(ctx(), suite.token, userId, eurAccount), { total: '900', available: '900' })
    })

    test('to a crypto address: the network fee is charged; a screened address fails; a bad address is refused', async () => {
      const userId = await verifiedUser(ctx(), suite.token)
      const btcAccount = await openAccount(ctx(), suite.token, userId, 'BTC')
      await fund(ctx(), userId, btcAccount, 'BTC', '1')
      const to = (address: string) => ({ type: 'crypto-address', asset: 'BTC', network: 'bitcoin', address })
      const quote = await quoted(ctx(), suite.token, userId, withdrawal(btcAccount, to(BTC_ADDRESS), 'BTC', '0.1'))
      assert.deepEqual(quote.destination.node, { type: 'crypto-address', network: 'bitcoin', address: BTC_ADDRESS })
      assert.deepEqual(quote.fees, [{ type: 'network', code: 'network-fee', asset: 'BTC', amount: '0.00002' }])
      assert.equal(quote.destination.amount, '0.09998')
      const sent = await execute(userId, quote)
      assert.equal(sent.status, 'completed')
      const execution = (sent.destination.node as { execution?: { mode: string; transactionHash: string } }).execution
      assert.equal(execution?.mode, 'simulated')
      assert.match(execution?.transactionHash ?? '', /^[0-9a-f]{64}$/)
      assert.deepEqual(await balanceOf(ctx(), suite.token, userId, btcAccount), { total: '0.9', available: '0.9' })

      const screened = await execute(userId, await quoted(ctx(), suite.token, userId, withdrawal(btcAccount, to(BTC_SCREENED), 'BTC', '0.1')))
      assert.equal(screened.statusDetails?.reason, 'screening-verification-failed')

      const wrongNetwork = await requestQuote(ctx(), suite.token, userId, withdrawal(btcAccount, to('0x000000000000000000000000000000000000dEaD'), 'BTC', '0.1'))
      assert.deepEqual(assertError(wrongNetwork, 409, 'crypto_address_invalid'), { context: 'body', property: 'destination.address' })
      const noRail = await requestQuote(ctx(), suite.token, userId, withdrawal(btcAccount, { ...to(BTC_ADDRESS), network: 'ethereum' }, 'BTC', '0.1'))
      assertError(noRail, 409, 'transaction_node_invalid')
    })

    test('a withdrawal that changes the asset: BTC sold for EUR at the quoted rate, paid to the bank account', async () => {
      const userId = await verifiedUser(ctx(), suite.token)
      const btcAccount = await openAccount(ctx(), suite.token, userId, 'BTC')
      await fund(ctx(), userId, btcAccount, 'BTC', '1')
      const bank = await sepa(userId)
      const quote = await quoted(ctx(), suite.token, userId, withdrawal(btcAccount, { type: 'external-account', id: bank }, 'EUR', '100'))
      assert.equal(quote.origin.asset, 'BTC')
      assert.equal(quote.destination.asset, 'EUR')
      assert.equal(quote.fees[0]?.code, 'exchange-fee')
      const transaction = await execute(userId, quote)
      assert.equal(transaction.status, 'completed')
      const left = new BigNumber(1).minus(quote.origin.amount).toFixed()
      assert.deepEqual(await balanceOf(ctx(), suite.token, userId, btcAccount), { total: left, available: left })
      await ledgerBalances()
    })

    test('the same amount to the same place twice within two minutes: the second is a duplicate withdrawal', async () => {
      const { userId, eurAccount } = await withEuros()
      const bank = await sepa(userId)
      const body = withdrawal(eurAccount, { type: 'external-account', id: bank }, 'EUR', '10')
      const first = await quoted(ctx(), suite.token, userId, body)
      const second = await quoted(ctx(), suite.token, userId, body)
      assert.equal((await commit(ctx(), suite.token, userId, first.id)).status, 201)
      const refused = await commit(ctx(), suite.token, userId, second.id)
      assert.deepEqual(assertError(refused, 409, 'operation_not_allowed'), { reasons: ['duplicate-withdrawal'] })
      // Another amount, or the same amount elsewhere, goes through.
      const other = await quoted(ctx(), suite.token, userId, { ...body, denomination: { asset: 'EUR', amount: '11' } })
      assert.equal((await commit(ctx(), suite.token, userId, other.id)).status, 201)
      assert.deepEqual(await balanceOf(ctx(), suite.token, userId, eurAccount), { total: '1000', available: '979' })
      await ctx().services.worker.drain()
    })

    test('20 identical withdrawals at once: exactly one proceeds, the others are duplicates and hold nothing', async () => {
      const { userId, eurAccount } = await withEuros()
      const bank = await sepa(userId)
      const body = withdrawal(eurAccount, { type: 'external-account', id: bank }, 'EUR', '25')
      const quotes = await Promise.all(Array.from({ length: 20 }, () => quoted(ctx(), suite.token, userId, body)))
      const responses = await Promise.all(quotes.map((quote) => commit(ctx(), suite.token, userId, quote.id)))
      const created = responses.filter((response) => response.status === 201)
      assert.equal(created.length, 1, responses.map((response) => response.status).join(','))
      for (const response of responses.filter((r) => r.status !== 201)) assert.deepEqual(assertError(response, 409, 'operation_not_allowed'), { reasons: ['duplicate-withdrawal'] })
      assert.deepEqual(await balanceOf(ctx(), suite.token, userId, eurAccount), { total: '1000', available: '975' })
      await ctx().services.worker.drain()
      assert.deepEqual(await balanceOf(ctx(), suite.token, userId, eurAccount), { total: '975', available: '975' })
    })

    test('insufficient balance at commit leaves nothing behind; capabilities and ownership are checked', async () => {
      const { userId, eurAccount } = await withEuros('100')
      const bank = await sepa(userId)
      const quote = await quoted(ctx(), suite.token, userId, withdrawal(eurAccount, { type: 'external-account', id: bank }, 'EUR', '80'))
      // Spend most of it elsewhere first.
      const other = await quoted(ctx(), suite.token, userId, withdrawal(eurAccount, { type: 'external-account', id: bank }, 'EUR', '50'))
      assert.equal((await commit(ctx(), suite.token, userId, other.id)).status, 201)
      const before = await ctx().database.db.selectFrom('transactions').select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow()
      assertError(await commit(ctx(), suite.token, userId, quote.id), 409, 'insufficient_balance')
      const after = await ctx().database.db.selectFrom('transactions').select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow()
      assert.equal(after.n, before.n)
      await ctx().services.worker.drain()

      // Another user's external account is not found, as if it did not exist.
      const stranger = await verifiedUser(ctx(), suite.token)
      const strangersBank = await sepa(stranger)
      const foreign = await requestQuote(ctx(), suite.token, userId, withdrawal(eurAccount, { type: 'external-account', id: strangersBank }, 'EUR', '1'))
      assert.deepEqual(assertError(foreign, 404, 'entity_not_found'), { context: 'body', property: 'destination', entity: 'external-account' })

      // A user who has not passed KYC may not withdraw.
      const fresh = (await ctx().createUser(suite.token)).id
      const freshAccount = await openAccount(ctx(), suite.token, fresh, 'EUR')
      const freshBank = await sepa(fresh)
      const refused = await requestQuote(ctx(), suite.token, fresh, withdrawal(freshAccount, { type: 'external-account', id: freshBank }, 'EUR', '1'))
      assertError(refused, 409, 'user_capability_failure')
      const toAddress = await requestQuote(ctx(), suite.token, fresh, withdrawal(freshAccount, { type: 'crypto-address', asset: 'BTC', network: 'bitcoin', address: BTC_ADDRESS }, 'EUR', '1'))
      assert.equal((assertError(toAddress, 409, 'user_capability_failure')?.capability as { code: string }).code, 'crypto-withdrawals')
    })

    test('a deposit pulled from a linked ACH account: the rail collects, then the account is credited', async () => {
      const userId = await verifiedUser(ctx(), suite.token)
      const usdAccount = await openAccount(ctx(), suite.token, userId, 'USD')
      const bank = await ach(userId)
      const body = { origin: { type: 'external-account', id: bank }, destination: { type: 'account', id: usdAccount }, denomination: { asset: 'USD', amount: '75' } }
      const quote = await quoted(ctx(), suite.token, userId, body)
      assert.deepEqual(quote.origin.node, { type: 'external-account', id: bank, ownerId: userId, network: 'ach' })
      const transaction = await execute(userId, quote)
      assert.equal(transaction.status, 'completed')
      assert.deepEqual(await balanceOf(ctx(), suite.token, userId, usdAccount), { total: '75', available: '75' })
      const orders = (await receivedOrders(ctx().database.db, ctx().client.organizationId)).filter((order) => order.key.startsWith(transaction.id))
      assert.equal(orders[0]?.direction, 'collection')

      const empty = await ach(userId, '9876540005')
      const bounced = await execute(userId, await quoted(ctx(), suite.token, userId, { ...body, origin: { type: 'external-account', id: empty } }))
      assert.equal(bounced.status, 'failed')
      assert.equal(bounced.statusDetails?.reason, 'insufficient-funds')
      assert.deepEqual(await balanceOf(ctx(), suite.token, userId, usdAccount), { total: '75', available: '75' })
      await ledgerBalances()

      // Withdrawals to the same account may take one of its secondary networks; other networks are refused.
      await fund(ctx(), userId, usdAccount, 'USD', '100')
      const instant = await quoted(ctx(), suite.token, userId, withdrawal(usdAccount, { type: 'external-account', id: bank, network: 'fednow' }, 'USD', '20'))
      assert.equal((instant.destination.node as { network: string }).network, 'fednow')
      const sent = await execute(userId, instant)
      assert.equal(sent.status, 'completed')
      const [order] = (await receivedOrders(ctx().database.db, ctx().client.organizationId)).filter((o) => o.key.startsWith(sent.id))
      assert.equal(order?.network, 'fednow')
      const wrongNetwork = await requestQuote(ctx(), suite.token, userId, withdrawal(usdAccount, { type: 'external-account', id: bank, network: 'sepa' }, 'USD', '20'))
      assertError(wrongNetwork, 409, 'transaction_node_invalid')

      // Nothing can be pulled from a crypto address.
      const wallet = await linked(userId, { type: 'crypto', asset: 'BTC', network: 'bitcoin', address: BTC_ADDRESS })
      const btcAccount = await openAccount(ctx(), suite.token, userId, 'BTC')
      const fromWallet = await requestQuote(ctx(), suite.token, userId, { origin: { type: 'external-account', id: wallet }, destination: { type: 'account', id: btcAccount }, denomination: { asset: 'BTC', amount: '0.1' } })
      assertError(fromWallet, 409, 'transaction_node_invalid')

      const sepaOrigin = await sepa(userId)
      const noPull = await requestQuote(ctx(), suite.token, userId, { ...body, origin: { type: 'external-account', id: sepaOrigin } })
      assertError(noPull, 409, 'transaction_node_invalid')
    })
  })

  describe(`a rail that takes its time [${engine}]`, () => {
    const suite = useApp(engine, { VELOCITY_MAX_MOVEMENTS: '0', SANDBOX_RAIL_SETTLE_MS: '3600000', ...withoutTravelRule() })

    /** A verified user's SEPA withdrawal of `amount` EUR from `funding`, committed and sent to the rail, whose answer is an hour away. */
    async function underWay(funding: string, amount: string) {
      const ctx = suite.ctx
      const userId = await verifiedUser(ctx, suite.token)
      const eurAccount = await openAccount(ctx, suite.token, userId, 'EUR')
      await fund(ctx, userId, eurAccount, 'EUR', funding)
      const bank = await ctx.request({
        method: 'POST',
        url: '/core/external-accounts',
        headers: bearer(suite.token, userId),
        payload: { type: 'bank', asset: 'EUR', network: 'sepa', label: 'Mine', iban: IBAN.completes, bic: 'COBADEFFXXX' },
      })
      const bankId = bank.json<{ externalAccount: { id: string } }>().externalAccount.id
      const quote = await quoted(ctx, suite.token, userId, { origin: { type: 'account', id: eurAccount }, destination: { type: 'external-account', id: bankId }, denomination: { asset: 'EUR', amount } })
      const id = (await commit(ctx, suite.token, userId, quote.id)).json<{ transaction: { id: string } }>().transaction.id
      await ctx.services.worker.drain()
      return { ctx, userId, eurAccount, id }
    }

    test('while the rail has no outcome the money stays held and the flow waits, spending no attempt', async () => {
      const { ctx, userId, eurAccount, id } = await underWay('1000', '40')

      assert.equal((await transactionOf(ctx, suite.token, userId, id)).status, 'processing')
      assert.deepEqual(await balanceOf(ctx, suite.token, userId, eurAccount), { total: '1000', available: '960' })
      const db = ctx.database.db
      const job = await db.selectFrom('jobs').selectAll().where('type', '=', 'flow:withdrawal').where(sql<string>`payload->>'flowId'`, '=', id).executeTakeFirstOrThrow()
      assert.equal(job.status, 'pending')
      assert.equal(job.attempts, 0, 'waiting spends no attempt')
      assert.ok(job.run_at.getTime() > Date.now() + 3_000_000, 'the job comes back when the rail said it would settle')
      assert.equal((await receivedOrders(db, ctx.client.organizationId)).filter((order) => order.key.startsWith(id)).length, 1)

      // The rail settles; the flow resumes when its job comes due, and the order is not sent again.
      await db.updateTable('sandbox_rail_orders').set({ settles_at: new Date() }).where('reference', '=', id).execute()
      await db.updateTable('jobs').set({ run_at: new Date() }).where('id', '=', job.id).execute()
      await ctx.services.worker.drain()
      assert.equal((await transactionOf(ctx, suite.token, userId, id)).status, 'completed')
      assert.deepEqual(await balanceOf(ctx, suite.token, userId, eurAccount), { total: '960', available: '960' })
      const [order] = (await receivedOrders(db, ctx.client.organizationId)).filter((o) => o.key.startsWith(id))
      assert.equal(order?.received, 1)
    })

    test('once the rail took the order, an error never releases the money: the flow keeps trying, the error on record', async () => {
      const { ctx, userId, eurAccount, id } = await underWay('100', '30')
      const db = ctx.database.db
      // The rail loses the order (it answers with an error for it from now on), and the job is at its last attempt.
      await db.deleteFrom('sandbox_rail_orders').where('reference', '=', id).execute()
      const job = await db.selectFrom('jobs').selectAll().where('type', '=', 'flow:withdrawal').where(sql<string>`payload->>'flowId'`, '=', id).executeTakeFirstOrThrow()
      await db.updateTable('jobs').set({ attempts: job.max_attempts - 1, run_at: new Date() }).where('id', '=', job.id).execute()
      await ctx.services.worker.drain()

      assert.equal((await transactionOf(ctx, suite.token, userId, id)).status, 'processing', 'not failed: the money may have left')
      assert.deepEqual(await balanceOf(ctx, suite.token, userId, eurAccount), { total: '100', available: '70' }, 'still held')
      const after = await db.selectFrom('jobs').selectAll().where('id', '=', job.id).executeTakeFirstOrThrow()
      assert.equal(after.status, 'pending')
      assert.match(after.last_error ?? '', /step confirm of withdrawal flow/)
      assert.ok(after.run_at.getTime() > Date.now() + 30_000)
    })
  })
}
