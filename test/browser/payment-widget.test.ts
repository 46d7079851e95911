/**
 * The payment widget end to end, in Chromium: the example merchant page (served by Tessera in sandbox) embeds the
 * hosted widget through the SDK, the widget executes a card deposit, shows the sandbox issuer's 3-D Secure page,
 * polls, and tells the page what happened. The page is opened at http://127.0.0.1:PORT while Tessera's public URL
 * (the widget's and the API's origin) is http://localhost:PORT: two origins, as for a real merchant, so CORS and
 * cross-origin messaging are what a merchant's page meets. Each scenario checks the events the page received and
 * the ledger afterwards.
 */
import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import type { Browser, BrowserContext, FrameLocator, Page } from 'playwright-core'
import { checkLedger } from '../../src/modules/ledger/index.ts'
import { bearer, startApp, type TestContext } from '../helpers.ts'
import { openAccount, verifiedUser } from '../money.ts'
import { freePort, launchChromium, PageWatch, screenshot } from './harness.ts'

const EXPIRY = { month: 12, year: new Date().getUTCFullYear() + 3 }

interface Received {
  event: string
  detail: Record<string, unknown> | null
}

/** A Tessera listening on a real port, its public URL on `localhost`, the example page reached on `127.0.0.1`. */
interface Server {
  ctx: TestContext
  token: string
  /** The example page, on the merchant's origin. */
  exampleUrl: string
  close(): Promise<void>
}

async function serve(env: Record<string, string>): Promise<Server> {
  const port = await freePort()
  const ctx = await startApp('pglite', {
    PUBLIC_URL: `http://localhost:${port}`,
    VELOCITY_MAX_MOVEMENTS: '0',
    WIDGET_POLL_INTERVAL_MS: '200',
    CARD_CHALLENGE_POLL_MS: '200',
    ...env,
  })
  await ctx.app.listen({ host: '127.0.0.1', port })
  // As `serve` does: the flows run in the background while the widget polls.
  ctx.services.worker.start()
  return { ctx, token: await ctx.token(), exampleUrl: `http://127.0.0.1:${port}/examples/payment-widget/`, close: () => ctx.close() }
}

describe('payment widget on the example merchant page, in Chromium', { timeout: 240_000 }, () => {
  let browser: Browser
  let server: Server
  let limited: Server
  const watch = new PageWatch()

  before(async () => {
    ;[browser, server, limited] = await Promise.all([
      launchChromium(),
      serve({ SANDBOX_3DS_CHALLENGE_TTL_MS: '4000' }),
      // Polling gives up after three looks; quotes last two seconds.
      serve({ WIDGET_POLL_MAX_ATTEMPTS: '3', QUOTE_TTL_MS: '2000' }),
    ])
  })
  after(async () => {
    await browser?.close()
    await server?.close()
    await limited?.close()
  })

  async function openPage(target: Server): Promise<{ context: BrowserContext; page: Page }> {
    const { context, page } = await watch.newPage(browser, { width: 1100, height: 900 })
    const response = await page.goto(target.exampleUrl, { waitUntil: 'load' })
    assert.equal(response?.status(), 200)
    await page.fill('#client-id', target.ctx.client.clientId)
    await page.fill('#client-secret', target.ctx.client.clientSecret)
    await page.click('#connect')
    await page.waitForFunction(() => /connected|token/i.test(document.querySelector('#setup-status')?.textContent ?? ''))
    return { context, page }
  }

  /** A verified user with an EUR account and a linked card, made through the API. */
  async function customer(target: Server, cardNumber: string): Promise<{ userId: string; accountId: string; cardId: string }> {
    const { ctx, token } = target
    const userId = await verifiedUser(ctx, token)
    const accountId = await openAccount(ctx, token, userId, 'EUR')
    const response = await ctx.request({
      method: 'POST',
      url: '/core/external-accounts',
      headers: bearer(token, userId),
      payload: { type: 'card', label: 'My card', number: cardNumber, securityCode: '123', expiryDate: EXPIRY },
    })
    assert.equal(response.status, 201, response.body)
    return { userId, accountId, cardId: response.json<{ externalAccount: { id: string } }>().externalAccount.id }
  }

  async function fillPayment(page: Page, who: { userId: string; accountId: string; cardId: string }, amount = '25.00'): Promise<void> {
    await page.fill('#user-id', who.userId)
    await page.fill('#account-id', who.accountId)
    await page.fill('#card-id', who.cardId)
    await page.fill('#amount', amount)
    await page.fill('#asset', 'EUR')
  }

  const widget = (page: Page): FrameLocator => page.frameLocator('#widget iframe')

  /** The events the page listed, once one of `terminal` is among them. */
  async function eventsUntil(page: Page, terminal: readonly string[] = ['complete', 'cancel', 'error'], timeout = 30_000): Promise<Received[]> {
    await page.waitForFunction(
      (names) => [...document.querySelectorAll('#events li[data-event]')].some((li) => names.includes(li.getAttribute('data-event') ?? '')),
      terminal,
      { timeout },
    )
    return page.$$eval('#events li[data-event]', (items) =>
      items.map((li) => ({ event: li.getAttribute('data-event') ?? '', detail: JSON.parse(li.textContent ?? 'null') as Record<string, unknown> | null })),
    )
  }

  async function balance(target: Server, who: { userId: string; accountId: string }): Promise<string> {
    const response = await target.ctx.request({ method: 'GET', url: `/core/accounts/${who.accountId}`, headers: bearer(target.token, who.userId) })
    assert.equal(response.status, 200, response.body)
    return response.json<{ account: { balance: { total: string } } }>().account.balance.total
  }

  async function assertLedger(target: Server): Promise<void> {
    const report = await checkLedger(target.ctx.database.db)
    assert.deepEqual(report.violations, [], JSON.stringify(report.violations))
  }

  function completion(events: Received[]): { transaction: { status: string; statusDetails?: { reason?: string }; id: string }; trigger: { reason: string } } {
    const complete = events.filter((e) => e.event === 'complete')
    assert.equal(complete.length, 1, JSON.stringify(events))
    assert.deepEqual(events.filter((e) => ['complete', 'cancel', 'error'].includes(e.event)).length, 1, 'exactly one terminal event')
    return (complete[0]!.detail as { value: never }).value
  }

  test('success without 3-D Secure: complete with the completed transaction; the account is credited', async () => {
    const who = await customer(server, '4242424242424242')
    const { context, page } = await openPage(server)
    await fillPayment(page, who)
    await page.click('#pay')
    await widget(page).locator('#quote-summary').waitFor()
    await screenshot(page, 'payment-widget-authorize')
    const events = await eventsUntil(page)
    assert.ok(events.some((e) => e.event === 'ready'), 'the widget said it was ready')
    const { transaction, trigger } = completion(events)
    assert.equal(trigger.reason, 'transaction-status-changed')
    assert.equal(transaction.status, 'completed')
    await page.waitForFunction(() => document.querySelector('#balance')?.getAttribute('data-total') !== null)
    assert.equal(await page.getAttribute('#balance', 'data-total'), '24.62')
    assert.equal(await balance(server, who), '24.62')
    await screenshot(page, 'example-payment-widget', 'page')
    await assertLedger(server)
    await context.close()
  })

  test('success after a 3-D Secure challenge, answered on the issuer page inside the widget', async () => {
    const who = await customer(server, '4000000000003220')
    const { context, page } = await openPage(server)
    await fillPayment(page, who, '40.00')
    await page.click('#pay')
    const challenge = widget(page).frameLocator('iframe#challenge')
    await challenge.locator('#pass').waitFor()
    assert.match(await challenge.locator('#amount').innerText(), /40(\.00)? EUR/)
    await challenge.locator('#pass').scrollIntoViewIfNeeded()
    await screenshot(page, 'sandbox-3ds-challenge')
    assert.equal(await balance(server, who), '0', 'nothing credited before the authentication')
    await challenge.locator('#pass').click()
    const { transaction, trigger } = completion(await eventsUntil(page))
    assert.equal(trigger.reason, 'transaction-status-changed')
    assert.equal(transaction.status, 'completed')
    assert.equal(await balance(server, who), '39.4')
    await assertLedger(server)
    await context.close()
  })

  test('challenge failed: complete with the failed transaction (card-unauthorized); nothing credited', async () => {
    const who = await customer(server, '4000000000003220')
    const { context, page } = await openPage(server)
    await fillPayment(page, who)
    await page.click('#pay')
    const challenge = widget(page).frameLocator('iframe#challenge')
    await challenge.locator('#fail').click()
    const { transaction, trigger } = completion(await eventsUntil(page))
    assert.equal(trigger.reason, 'transaction-status-changed')
    assert.equal(transaction.status, 'failed')
    assert.equal(transaction.statusDetails?.reason, 'card-unauthorized')
    assert.equal(await balance(server, who), '0')
    await assertLedger(server)
    await context.close()
  })

  test('challenge abandoned: nobody answers, the challenge expires, the transaction fails', async () => {
    const who = await customer(server, '4000000000003220')
    const { context, page } = await openPage(server)
    await fillPayment(page, who)
    await page.click('#pay')
    await widget(page).frameLocator('iframe#challenge').locator('#pass').waitFor()
    const { transaction } = completion(await eventsUntil(page))
    assert.equal(transaction.status, 'failed')
    assert.equal(transaction.statusDetails?.reason, 'card-unauthorized')
    assert.equal(await balance(server, who), '0')
    const payments = await server.ctx.services.sandboxCardProcessor!.payments(server.ctx.client.organizationId)
    assert.equal(payments.find((payment) => payment.reference === transaction.id)?.status, 'declined')
    await context.close()
  })

  const declines: [string, string][] = [
    ['4000000000000200', 'card-declined-by-bank'],
    ['4000000000000218', 'card-expired'],
    ['4000000000000226', 'card-permanently-declined-by-bank'],
    ['4000000000000234', 'card-unauthorized'],
    ['4000000000000242', 'card-unsupported'],
    ['4000000000000259', 'insufficient-funds'],
    ['4000000000000267', 'velocity'],
    ['4000000000000275', 'unspecified-error'],
    ['4000000000000283', 'card-declined-by-bank'],
  ]
  test('each decline reason of the issuer: complete with the failed transaction and its reason; nothing credited', async () => {
    const { context, page } = await openPage(server)
    for (const [number, reason] of declines) {
      const who = await customer(server, number)
      await page.evaluate(() => document.querySelector('#events')?.replaceChildren())
      await fillPayment(page, who)
      await page.click('#pay')
      const { transaction, trigger } = completion(await eventsUntil(page))
      assert.equal(trigger.reason, 'transaction-status-changed', number)
      assert.equal(transaction.status, 'failed', number)
      assert.equal(transaction.statusDetails?.reason, reason, number)
      assert.equal(await balance(server, who), '0', number)
    }
    // The processor's bounds, selected by the amount.
    for (const [amount, reason] of [['0.99', 'amount-limit-exceed'], ['10000.01', 'provider-maximum-limit-exceeded']] as const) {
      const who = await customer(server, '4242424242424242')
      await page.evaluate(() => document.querySelector('#events')?.replaceChildren())
      await fillPayment(page, who, amount)
      await page.click('#pay')
      const { transaction } = completion(await eventsUntil(page))
      assert.equal(transaction.statusDetails?.reason, reason, amount)
      assert.equal(await balance(server, who), '0', amount)
    }
    await assertLedger(server)
    await context.close()
  })

  test('cancel during the challenge: the page gets cancel; nothing is credited', async () => {
    const who = await customer(server, '4000000000003220')
    const { context, page } = await openPage(server)
    await fillPayment(page, who)
    await page.click('#pay')
    await widget(page).frameLocator('iframe#challenge').locator('#pass').waitFor()
    await widget(page).locator('#cancel').click()
    const events = await eventsUntil(page)
    assert.deepEqual(events.filter((e) => e.event !== 'ready').map((e) => e.event), ['cancel'])
    assert.equal(events.find((e) => e.event === 'cancel')!.detail, null)
    assert.equal(await balance(server, who), '0')
    await context.close()
  })

  test('quote expired before the widget executed it: error entity_not_found; nothing created', async () => {
    const who = await customer(limited, '4242424242424242')
    const { context, page } = await openPage(limited)
    // The widget's commit reaches Tessera after the quote's two seconds.
    await page.route(/\/core\/transactions$/, async (route) => {
      if (route.request().method() !== 'POST') return route.continue()
      await new Promise((resolve) => setTimeout(resolve, 2_500))
      return route.continue()
    })
    await fillPayment(page, who)
    await page.click('#pay')
    const events = await eventsUntil(page)
    const error = events.find((e) => e.event === 'error')
    assert.ok(error, JSON.stringify(events))
    assert.equal((error.detail as { error: { code: string } }).error.code, 'entity_not_found')
    const created = await limited.ctx.database.db.selectFrom('transactions').select('id').where('owner_id', '=', who.userId).execute()
    assert.equal(created.length, 0)
    await context.close()
  })

  test('retry limit reached: complete with max-retries-reached while the transaction is still processing', async () => {
    const who = await customer(limited, '4000000000003220')
    const { context, page } = await openPage(limited)
    await fillPayment(page, who)
    await page.click('#pay')
    const { transaction, trigger } = completion(await eventsUntil(page))
    assert.equal(trigger.reason, 'max-retries-reached')
    assert.equal(transaction.status, 'processing')
    assert.equal(await balance(limited, who), '0')
    await context.close()
  })

  test('server stopped while polling: error (no connectivity); nothing credited', async () => {
    const lonely = await serve({})
    try {
      const who = await customer(lonely, '4000000000003220')
      const { context, page } = await openPage(lonely)
      await fillPayment(page, who)
      await page.click('#pay')
      await widget(page).frameLocator('iframe#challenge').locator('#pass').waitFor()
      const organizationId = lonely.ctx.client.organizationId
      const db = lonely.ctx.database.db
      await lonely.ctx.app.server.close()
      // Connections the browser keeps open would keep answering: the server is gone for them too.
      lonely.ctx.app.server.closeAllConnections()
      const events = await eventsUntil(page)
      const error = events.find((e) => e.event === 'error')
      assert.ok(error, JSON.stringify(events))
      assert.equal((error.detail as { error: { code: string } }).error.code, 'network_error')
      const [row] = await db.selectFrom('transactions').select(['status']).where('organization_id', '=', organizationId).where('owner_id', '=', who.userId).execute()
      assert.equal(row?.status, 'processing')
      await context.close()
    } finally {
      await lonely.close().catch(() => {})
    }
  })

  test('select-for-deposit: the user adds a card in the widget; the page receives the external account, never the number', async () => {
    const { userId } = await customer(server, '4242424242424242')
    const { context, page } = await openPage(server)
    const bodies: string[] = []
    page.on('response', async (response) => {
      if (response.url().startsWith('http://')) bodies.push(await response.text().catch(() => ''))
    })
    await page.fill('#user-id', userId)
    await page.click('#choose-card')
    const frame = widget(page)
    await frame.locator('form#add-card').waitFor()
    await frame.locator('#card-label').fill('Second card')
    await frame.locator('#card-number').fill('5200 8282 8282 8210')
    await frame.locator('#card-expiry-month').fill('12')
    await frame.locator('#card-expiry-year').fill(String(EXPIRY.year))
    await frame.locator('#card-security-code').fill('321')
    await screenshot(page, 'payment-widget-select')
    await frame.locator('#add-card-submit').click()
    const events = await eventsUntil(page)
    const value = (events.find((e) => e.event === 'complete')!.detail as { value: { via: string; selection: { id: string; type: string } } }).value
    assert.equal(value.via, 'external-account')
    assert.equal(value.selection.type, 'card')
    assert.equal(await page.inputValue('#card-id'), value.selection.id)
    const pageText = JSON.stringify(events) + (await page.content())
    assert.ok(!pageText.includes('5200828282828210') && !pageText.includes('5200 8282 8282 8210'), 'the host page never sees the card number')
    assert.ok(!bodies.some((body) => body.includes('5200828282828210')), 'no response carries the card number')
    await context.close()
  })

  test('nothing loaded from outside, no script error, no CSP violation', () => {
    watch.assertClean()
  })
})
