/**
 * The travel-rule widget end to end, in Chromium: a host page (http://127.0.0.1:A) imports Tessera's SDK from Tessera
 * (http://localhost:T/hosted/assets/sdk.js) and mounts a `TravelRuleWidget` with a session the client created
 * through the API; the hosted widget (localhost:T, another origin) asks who the other party of a crypto movement is,
 * looks the address up at the sandbox travel-rule node, has the node describe the transfer, answers the request for
 * information at Tessera, and tells the host. The money then moves (or not) as the answer says. A third origin
 * (127.0.0.1:F) plays a foreign frame that tries to speak for the widget and to hand it another session.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { Page } from 'playwright-core'
import { checkLedger } from '../../src/modules/ledger/index.ts'
import { SANDBOX_VASP, SANDBOX_VASP_ADDRESSES } from '../../src/providers/travel-rule/sandbox.ts'
import { bearer, type TestContext } from '../helpers.ts'
import { balanceOf, commit, fund, openAccount, quoted, transactionOf, verifiedUser, chainDeposit } from '../money.ts'
import { signMessage, testKeys } from '../signing.ts'
import { assertCancelled, events, eventsUntil, mount, screenshot, terminalOf, WidgetSuite } from './harness.ts'

/** A sender on the sandbox's bitcoin test chain that nobody declared and the directory does not know. */
const SENDER = 'tb1qxsy3qh8d44d5jkuvn98rxsjtxpmdlslg8d92cv'
/** An address of the test key: a wallet the user controls and can sign with (test/signing.ts). */
const OWN_WALLET = testKeys.primary.addresses.bitcoin.test.p2wpkh
/** An address the sandbox directory knows as hosted by Sandbox Exchange. */
const EXCHANGE_WALLET = SANDBOX_VASP_ADDRESSES.bitcoin![0]!

interface Session {
  flow: string
  url: string
  token: string
  data: { provider: string; parameters: { transaction: Record<string, unknown> } }
}

interface Rfi {
  id: string
  status: string
  data?: Record<string, unknown>
  statusDetails?: { reason: string }
}

interface Completion {
  value: Record<string, unknown> & { valid: boolean; ivms101?: Record<string, unknown>; proof?: Record<string, unknown> }
  requestForInformation: Rfi
}

describe('travel-rule widget in a client page, with Tessera\'s SDK, in Chromium', { timeout: 300_000 }, () => {
  let suite: WidgetSuite
  let ctx: TestContext
  let token: string

  before(async () => {
    suite = await WidgetSuite.start({ VELOCITY_MAX_MOVEMENTS: '0', SANDBOX_RAIL_SETTLE_MS: '0' }, {
      title: 'My exchange: travel rule',
      widgetClass: 'TravelRuleWidget',
      height: '820px',
      forgedComplete: { value: { valid: true, status: 'verified' }, requestForInformation: { status: 'ok' } },
    })
    ;({ ctx, token } = suite)
  })
  after(() => suite?.close())

  const openHost = () => suite.open({ width: 560, height: 880 })

  async function btcHolder(): Promise<{ userId: string; btc: string }> {
    const userId = await verifiedUser(ctx, token)
    return { userId, btc: await openAccount(ctx, token, userId, 'BTC') }
  }

  /** A crypto deposit from `sender`, as the chain rail reports it: at this value it waits on hold for information. */
  async function heldDeposit(userId: string, accountId: string, amount = '0.1', sender = SENDER): Promise<string> {
    const transactionId = await chainDeposit(ctx, { userId, accountId, amount, sender })
    assert.equal((await transactionOf(ctx, token, userId, transactionId)).status, 'on-hold')
    return transactionId
  }

  async function createSession(userId: string, body: Record<string, unknown>): Promise<Session> {
    const response = await ctx.request({ method: 'POST', url: '/widgets/travel-rule/sessions', headers: bearer(token, userId), payload: body })
    assert.equal(response.status, 201, response.body)
    return response.json<{ session: Session }>().session
  }

  async function requestsOf(userId: string, transactionId: string): Promise<Rfi[]> {
    const response = await ctx.request({ method: 'GET', url: `/core/transactions/${transactionId}/requests-for-information`, headers: bearer(token, userId) })
    assert.equal(response.status, 200, response.body)
    return response.json<{ requestsForInformation: Rfi[] }>().requestsForInformation
  }

  async function completion(page: Page): Promise<Completion> {
    const received = await eventsUntil(page)
    assert.deepEqual(received.map((event) => event.name), ['ready', 'complete'], JSON.stringify(received))
    const detail = terminalOf(received).detail as Completion & { type: string }
    assert.equal(detail.type, 'complete')
    return detail
  }

  async function assertLedger(): Promise<void> {
    const report = await checkLedger(ctx.database.db)
    assert.deepEqual(report.violations, [], JSON.stringify(report.violations))
  }

  test('deposit form, a person sent it (after a missing name and the network down): complete carries the network\'s description; the deposit is released and credited', async () => {
    const { userId, btc } = await btcHolder()
    const transactionId = await heldDeposit(userId, btc)
    const [pending] = await requestsOf(userId, transactionId)
    const session = await createSession(userId, { flow: 'deposit-form', data: { requestForInformationId: pending!.id } })
    const { context, page } = await openHost()
    const frame = await mount(page, session, { debug: true })

    await frame.locator('#travel-rule-form').waitFor()
    assert.equal(await frame.locator('#question').innerText(), 'Who sent this deposit?')
    assert.match(await frame.locator('#amount').innerText(), /0\.1 BTC/)
    assert.equal(await frame.locator(`#addresses li[data-address="${SENDER}"]`).count(), 1)
    await frame.locator('#vasp-0[data-vasp="none"]').waitFor()
    assert.match(await frame.locator('#vasp-0').innerText(), /not known to the travel-rule directory/i)

    // Nothing chosen: the question says so, and takes the focus.
    await frame.locator('#submit').click()
    assert.match(await frame.locator('#who-error').innerText(), /choose who sent this deposit/i)
    assert.match(String(await frame.locator('#who').getAttribute('aria-describedby')), /who-error/)
    assert.equal(await frame.locator(':focus').getAttribute('id'), 'who-self')
    // A person, without a last name: the field says so.
    await frame.getByLabel('A person').check()
    await frame.getByLabel('First name').fill('Ada')
    await frame.locator('#submit').click()
    assert.equal(await frame.locator('#last-name').getAttribute('aria-invalid'), 'true')
    assert.match(await frame.locator('#last-name-error').innerText(), /last name/i)
    assert.equal(await frame.locator(':focus').getAttribute('id'), 'last-name')
    assert.deepEqual((await events(page)).map((event) => event.name), ['ready'])

    // The network is down (the sandbox's "unavailable"): the widget says so above the button; the user sends again.
    await frame.getByLabel('Last name').fill('Unavailable')
    assert.equal(await frame.locator('#last-name').getAttribute('aria-invalid'), null, 'typing clears the error')
    await frame.locator('#submit').click()
    await frame.locator('#form-error:not([hidden])').waitFor()
    assert.match(await frame.locator('#form-error').innerText(), /cannot be reached right now/)
    assert.equal(await frame.locator('#submit').isEnabled(), true)
    assert.equal((await requestsOf(userId, transactionId))[0]!.status, 'pending')
    assert.deepEqual((await events(page)).map((event) => event.name), ['ready'])

    await frame.getByLabel('Last name').fill('Lovelace')
    await screenshot(page, 'travel-rule-widget-deposit')
    await frame.locator('#submit').click()

    const { value, requestForInformation } = await completion(page)
    assert.equal(value.valid, true)
    assert.deepEqual(value.ivms101, { originator: { originatorPersons: [{ naturalPerson: { name: { nameIdentifier: [{ primaryIdentifier: 'Lovelace', secondaryIdentifier: 'Ada', nameIdentifierType: 'LEGL' }] } } }] } })
    assert.equal(value.originatorEqualsBeneficiary, false)
    assert.equal(requestForInformation.id, pending!.id)
    assert.equal(requestForInformation.status, 'ok')
    assert.deepEqual(requestForInformation.data, value, 'the request was answered with what complete carries')
    await frame.locator('#outcome[data-status="ok"]').waitFor()
    assert.match(await frame.locator('#outcome').innerText(), /accepted: sent by Ada Lovelace/)
    assert.equal(await frame.locator('#cancel').count(), 0)
    await screenshot(page, 'travel-rule-widget-complete')

    assert.equal((await requestsOf(userId, transactionId))[0]!.status, 'ok')
    await ctx.services.worker.drain()
    assert.equal((await transactionOf(ctx, token, userId, transactionId)).status, 'completed')
    assert.deepEqual(await balanceOf(ctx, token, userId, btc), { total: '0.1', available: '0.1' })
    await assertLedger()
    await context.close()
  })

  test('deposit form, from the user\'s own wallet: at this value a signed message is asked for up front, a wrong signature is refused next to its field, the right one is accepted', async () => {
    const { userId, btc } = await btcHolder()
    const transactionId = await heldDeposit(userId, btc, '0.1', OWN_WALLET)
    const session = await createSession(userId, { flow: 'deposit-form', data: { transactionId } })
    const { context, page } = await openHost()
    const frame = await mount(page, session)
    await frame.locator('#travel-rule-form').waitFor()

    await frame.getByLabel('Me (my own wallet)').check()
    // 0.1 BTC is worth more than the deminimis (the session gives the price): a confirmation is not offered.
    assert.equal(await frame.locator('#proof-declaration').isDisabled(), true)
    assert.match(await frame.locator('#proof').innerText(), /a signed message is needed/i)
    await frame.locator('#proof-signature').check()

    const message = await frame.locator('#message').inputValue()
    assert.match(message, new RegExp(`^I confirm that I control the address ${OWN_WALLET} on bitcoin\\. Request [0-9a-f-]{36}\\.$`))
    // Another message signed: the proof is refused, next to the signature.
    await frame.locator('#signature').fill(signMessage({ family: 'bitcoin', chain: 'test', message: 'Something else' }).signature)
    await frame.locator('#submit').click()
    await frame.locator('#signature-error:not([hidden])').waitFor()
    assert.match(await frame.locator('#signature-error').innerText(), /does not match the message/i)
    assert.equal(await frame.locator('#signature').getAttribute('aria-invalid'), 'true')
    assert.equal(await frame.locator(':focus').getAttribute('id'), 'signature')
    assert.equal((await requestsOf(userId, transactionId))[0]!.status, 'pending')

    const signed = signMessage({ family: 'bitcoin', chain: 'test', message })
    assert.equal(signed.address, OWN_WALLET)
    await frame.locator('#signature').fill(signed.signature)
    await frame.locator('#submit').click()
    const { value, requestForInformation } = await completion(page)
    assert.equal(value.originatorEqualsBeneficiary, true)
    assert.deepEqual(value.proof, { type: 'bip-322', attestation: message, proof: signed.signature, address: OWN_WALLET })
    assert.equal(requestForInformation.status, 'ok')
    await ctx.services.worker.drain()
    assert.equal((await transactionOf(ctx, token, userId, transactionId)).status, 'completed')
    await context.close()
  })

  test('withdrawal form, to the user\'s own wallet with a signed message (dark theme): the quote, executed, is not held and completes', async () => {
    const { userId, btc } = await btcHolder()
    await fund(ctx, userId, btc, 'BTC', '1')
    const quote = await quoted(ctx, token, userId, { origin: { type: 'account', id: btc }, destination: { type: 'crypto-address', network: 'bitcoin', asset: 'BTC', address: OWN_WALLET }, denomination: { asset: 'BTC', amount: '0.1' } })
    assert.deepEqual(quote.requirements, ['travel-rule'])
    const session = await createSession(userId, { flow: 'withdrawal-form', data: { quoteId: quote.id } })
    const { context, page } = await openHost()
    const frame = await mount(page, session, { theme: { appearance: 'dark' } })
    await frame.locator('#travel-rule-form').waitFor()
    assert.match(String(await frame.locator('body').getAttribute('class')), /theme-dark/)
    assert.equal(await frame.locator('#question').innerText(), 'Who receives this withdrawal?')
    assert.equal(await frame.locator('#title').innerText(), 'About this withdrawal')

    await frame.getByLabel('Me (my own wallet)').check()
    await frame.getByLabel('Sign a message with this wallet').check()
    assert.equal(await frame.locator('#public-key').count(), 0, 'bitcoin signatures carry their key')
    const message = await frame.locator('#message').inputValue()
    const signed = signMessage({ family: 'bitcoin', chain: 'test', message })
    await frame.locator('#signature').fill(signed.signature)
    await screenshot(page, 'travel-rule-widget-withdrawal')
    await frame.locator('#submit').click()

    const { value, requestForInformation } = await completion(page)
    assert.equal(value.originatorEqualsBeneficiary, true)
    assert.equal((value.value as { destination: string }).destination, OWN_WALLET)
    assert.equal(requestForInformation.status, 'ok')

    const created = await commit(ctx, token, userId, quote.id)
    assert.equal(created.status, 201, created.body)
    const id = created.json<{ transaction: { id: string } }>().transaction.id
    await ctx.services.worker.drain()
    const done = await transactionOf(ctx, token, userId, id)
    assert.equal(done.status, 'completed')
    const [claimed] = await requestsOf(userId, id)
    assert.equal(claimed!.id, requestForInformation.id, 'the answered request is the transaction\'s')
    const statuses = await ctx.database.db.selectFrom('outbox_events').select('data').where('subject_id', '=', id).orderBy('id').execute()
    assert.ok(!statuses.some((row) => (row.data as { transaction: { status: string } }).transaction.status === 'on-hold'), 'never held')
    await assertLedger()
    await context.close()
  })

  test('the node refuses the party (a name with "refused"): the page shows it and completes with the failed request; the deposit fails', async () => {
    const { userId, btc } = await btcHolder()
    const transactionId = await heldDeposit(userId, btc, '0.1', EXCHANGE_WALLET)
    const session = await createSession(userId, { flow: 'deposit-form', data: { transactionId } })
    const { context, page } = await openHost()
    const frame = await mount(page, session)
    await frame.locator(`#vasp-0[data-vasp="${SANDBOX_VASP.did}"]`).waitFor()
    assert.equal(await frame.locator('#vasp-0').innerText(), 'Hosted by Sandbox Exchange')
    await frame.getByLabel('A company').check()
    await frame.getByLabel('Company name').fill('Refused Trading Ltd')
    await frame.locator('#submit').click()

    const { value, requestForInformation } = await completion(page)
    assert.equal(value.originatorVASPdid, SANDBOX_VASP.did)
    assert.deepEqual(value.ivms101, { originator: { originatorPersons: [{ legalPerson: { name: { nameIdentifier: [{ legalPersonName: 'Refused Trading Ltd', legalPersonNameIdentifierType: 'LEGL' }] } } }] } })
    assert.equal(requestForInformation.status, 'failed')
    assert.deepEqual(requestForInformation.statusDetails, { reason: 'counterparty-refused' })
    await frame.locator('#outcome[data-status="failed"]').waitFor()
    assert.match(await frame.locator('#outcome').innerText(), /not accepted/i)
    await screenshot(page, 'travel-rule-widget-refused')

    await ctx.services.worker.drain()
    const failed = await transactionOf(ctx, token, userId, transactionId)
    assert.equal(failed.status, 'failed')
    assert.deepEqual(failed.statusDetails, { reason: 'travel-rule-verification-failed' })
    assert.deepEqual(await balanceOf(ctx, token, userId, btc), { total: '0', available: '0' })
    await assertLedger()
    await context.close()
  })

  test('cancel: the host gets cancel (no detail); nothing was answered', async () => {
    const { userId, btc } = await btcHolder()
    const transactionId = await heldDeposit(userId, btc)
    const session = await createSession(userId, { flow: 'deposit-form', data: { transactionId } })
    const { context, page } = await openHost()
    const frame = await mount(page, session)
    await frame.getByLabel('A person').check()
    await frame.getByLabel('First name').fill('Not')
    await frame.getByLabel('Last name').fill('Sent')
    await frame.locator('#cancel').click()
    await assertCancelled(page)
    await frame.locator('#outcome[data-status="cancelled"]').waitFor()
    assert.equal((await requestsOf(userId, transactionId))[0]!.status, 'pending')
    assert.equal((await transactionOf(ctx, token, userId, transactionId)).status, 'on-hold')
    await context.close()
  })

  test('messages from another origin are ignored: no forged event reaches the host, no forged session reaches the widget', async () => {
    const real = await btcHolder()
    const victim = await btcHolder()
    const realDeposit = await heldDeposit(real.userId, real.btc, '0.1')
    const victimDeposit = await heldDeposit(victim.userId, victim.btc, '0.25')
    const forged = await createSession(victim.userId, { flow: 'deposit-form', data: { transactionId: victimDeposit } })
    const { context, page } = await openHost()
    // The foreign frame is posting before the widget exists, and keeps posting.
    await suite.pages.frameForeign(page, forged)
    const frame = await mount(page, await createSession(real.userId, { flow: 'deposit-form', data: { transactionId: realDeposit } }))
    await frame.locator('#travel-rule-form').waitFor()
    // The widget runs the host's session: the real deposit, not the victim's.
    assert.match(await frame.locator('#amount').innerText(), /^0\.1 BTC/)
    await suite.pages.foreignPosted(page, 20)
    assert.deepEqual((await events(page)).map((event) => event.name), ['ready'], 'the foreign complete and cancel were dropped')

    await frame.getByLabel('A person').check()
    await frame.getByLabel('First name').fill('Grace')
    await frame.getByLabel('Last name').fill('Hopper')
    await frame.locator('#submit').click()
    const { requestForInformation } = await completion(page)
    assert.equal(requestForInformation.status, 'ok')
    assert.equal((await requestsOf(victim.userId, victimDeposit))[0]!.status, 'pending', 'the victim\'s request was not answered')
    await context.close()
  })

  test('a request already answered, an expired session: error, with the API\'s code; a session for another site: silence', async () => {
    const { userId, btc } = await btcHolder()
    const transactionId = await heldDeposit(userId, btc)
    const [pending] = await requestsOf(userId, transactionId)
    const session = await createSession(userId, { flow: 'deposit-form', data: { transactionId } })
    const answered = await ctx.request({
      method: 'PUT',
      url: `/core/transactions/${transactionId}/requests-for-information/${pending!.id}`,
      headers: bearer(token, userId),
      payload: { data: { ivms101: { originator: { originatorPersons: [{ naturalPerson: { name: { nameIdentifier: [{ primaryIdentifier: 'Doe' }] } } }] } } } },
    })
    assert.equal(answered.status, 200, answered.body)
    {
      const { context, page } = await openHost()
      const frame = await mount(page, session)
      const error = terminalOf(await eventsUntil(page))
      assert.equal(error.name, 'error')
      const detail = error.detail as { error: { code: string; details: { reasons: string[] } } }
      assert.equal(detail.error.code, 'operation_not_allowed')
      assert.deepEqual(detail.error.details.reasons, ['request-for-information-update-not-allowed'])
      assert.match(await frame.locator('#error').innerText(), /already given/i)
      await context.close()
    }

    // A session token past its time: Tessera says token_expired, and so does the widget.
    const again = await heldDeposit(userId, btc)
    const [open] = await requestsOf(userId, again)
    const fresh = await createSession(userId, { flow: 'deposit-form', data: { transactionId: again } })
    const expired = await ctx.services.signer.sign({
      clientId: ctx.client.clientId,
      organizationId: ctx.client.organizationId,
      scopes: ['core.transactions.requests-for-information:read', 'core.transactions.requests-for-information:update'],
      ttlSeconds: -60,
      userId,
      widget: { kind: 'travel-rule', flow: 'deposit-form', requestForInformationId: open!.id },
    })
    {
      const { context, page } = await openHost()
      const frame = await mount(page, { ...fresh, token: expired })
      const error = terminalOf(await eventsUntil(page))
      assert.equal(error.name, 'error')
      assert.equal((error.detail as { error: { code: string } }).error.code, 'token_expired')
      assert.match(await frame.locator('#error').innerText(), /expired/i)
      await context.close()
    }

    // A session opened for another site's page: the widget says so, and tells this host nothing.
    const elsewhere = await createSession(userId, { flow: 'deposit-form', data: { transactionId: again, domain: 'shop.example' } })
    {
      const { context, page } = await openHost()
      const frame = await mount(page, elsewhere)
      await frame.locator('#error:not([hidden])').waitFor()
      assert.match(await frame.locator('#error').innerText(), /cannot be used from this website/)
      assert.equal(await frame.locator('#travel-rule-form').count(), 0)
      assert.deepEqual(await events(page), [])
      await context.close()
    }
    assert.equal((await requestsOf(userId, again))[0]!.status, 'pending')
  })

  test('nothing loaded from outside, no script error, no CSP violation', () => {
    suite.watch.assertClean()
  })
})
