/**
 * The webhook portal in Chromium: a management link (requested through the API with a client token) opens
 * `/hosted/webhooks/` once; there the organization adds an endpoint pointing at a local receiver, sees the deliveries
 * of its events and their attempts, resends one, sends a test event, replays, reveals and rotates the signing secret,
 * disables, enables, edits and deletes the endpoint. A link altered, expired or opened a second time, and a session
 * that is not valid, leave nothing of the organization on the page; another organization's endpoints never show.
 * No script error, no CSP violation, nothing loaded from outside the loopback servers.
 * `UPDATE_SCREENSHOTS=1` refreshes docs/images/webhook-portal.png.
 */
import assert from 'node:assert/strict'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, test } from 'node:test'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { Webhook } from 'standardwebhooks'
import { signPortalToken } from '../../src/modules/webhooks/portal-tokens.ts'
import { bearer, startApp, type TestContext } from '../helpers.ts'
import { Receiver } from '../webhooks/receiver.ts'
import { closeServer, freePort, launchChromium, PageWatch, screenshot } from './harness.ts'

const VIEWPORT = { width: 1200, height: 900 }
const SESSION_KEY = 'tessera.webhook-portal.session'

interface Endpoint {
  id: string
  url: string
  description: string
  eventTypes: string[]
  status: string
}

/** A receiver whose answers carry markup: the portal must show it as text. */
function markupReceiver(): Promise<{ server: http.Server; url: string }> {
  const server = http.createServer((request, response) => {
    request.resume()
    request.on('end', () => {
      response.writeHead(200, { 'content-type': 'text/html' }).end('<b id="injected">bold</b><img src="/x.png" id="injected-image">')
    })
  })
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/markup` })))
}

describe('webhook portal in Chromium', { timeout: 300_000 }, () => {
  let ctx: TestContext
  let browser: Browser
  let baseUrl: string
  let token: string
  let otherToken: string
  let otherOrganizationId: string
  let otherEndpoint: Endpoint
  const receiver = new Receiver()
  let receiverUrl: string
  let markup: { server: http.Server; url: string }
  const watch = new PageWatch()
  const consoleErrors: string[] = []
  const assertClean = () => {
    watch.assertClean()
    assert.deepEqual(consoleErrors, [])
  }

  // The first organization's portal, opened once and used by the tests in order.
  let firstLink: string
  let context: BrowserContext
  let page: Page
  let endpointId: string
  let firstSecret: string

  async function managementLink(clientToken: string): Promise<string> {
    const response = await ctx.request({ method: 'POST', url: '/core/webhooks/management-link', headers: bearer(clientToken) })
    assert.equal(response.status, 200, response.body)
    const { url } = response.json<{ managementLink: { url: string } }>().managementLink
    assert.ok(url.startsWith(`${baseUrl}/hosted/webhooks/#link=`), url)
    return url
  }

  /** Moves the outbox's events into the endpoints' queues and delivers what is due. */
  async function deliver(): Promise<void> {
    await ctx.services.webhooks.dispatch()
    await ctx.services.worker.drain()
  }

  /** The rows of the messages table: [event type, origin, status, attempts]. */
  async function messageRows(): Promise<string[][]> {
    return page.locator('tr.wp-message').evaluateAll((rows) =>
      rows.map((row) => Array.from(row.querySelectorAll('td')).slice(0, 4).map((cell) => (cell.textContent ?? '').trim())),
    )
  }

  async function refreshDeliveries(): Promise<void> {
    const updated = await page.locator('.wp-deliveries [aria-live] time').getAttribute('datetime')
    await page.locator('.wp-deliveries').getByRole('button', { name: 'Refresh' }).click()
    await page.waitForFunction((before) => document.querySelector('.wp-deliveries [aria-live] time')?.getAttribute('datetime') !== before, updated)
    await page.waitForFunction(() => document.querySelector('.wp-deliveries')?.getAttribute('aria-busy') === 'false')
  }

  /** A fresh context on the portal page at `url`, watched; `requests` gets the paths it asks for. */
  async function openPortal(url: string, requests: string[] = []): Promise<{ context: BrowserContext; page: Page }> {
    const opened = await watch.newPage(browser, VIEWPORT)
    opened.page.on('request', (request) => requests.push(new URL(request.url()).pathname))
    // Beside the watch's: any console error, but the browser's own line for each refusal the page expects (4xx).
    opened.page.on('console', (message) => {
      if (message.type() === 'error' && !/^Failed to load resource: the server responded with a status of 4\d\d/.test(message.text())) consoleErrors.push(message.text())
    })
    const response = await opened.page.goto(url, { waitUntil: 'load' })
    assert.equal(response?.status(), 200)
    return opened
  }

  /** What the portal API answers for a request made from the page with its session (the page's CSP allows it). */
  function fromPage(target: Page, path: string): Promise<{ status: number; body: string }> {
    return target.evaluate(
      async ([p, key]) => {
        const session = JSON.parse(sessionStorage.getItem(key) ?? '{}') as { token?: string }
        const response = await fetch(p, { headers: { authorization: `Bearer ${session.token ?? ''}` } })
        return { status: response.status, body: await response.text() }
      },
      [path, SESSION_KEY] as const,
    )
  }

  before(async () => {
    const port = await freePort()
    baseUrl = `http://127.0.0.1:${port}`
    const [started, launched, url, markupServer] = await Promise.all([startApp('pglite', { PUBLIC_URL: baseUrl }), launchChromium(), receiver.start(), markupReceiver()])
    ctx = started
    browser = launched
    receiverUrl = url
    markup = markupServer
    await ctx.app.listen({ host: '127.0.0.1', port })
    token = await ctx.token()

    // Another organization, with an endpoint of its own, made through its own portal session.
    const other = await ctx.newClient('*')
    otherToken = await ctx.token(other)
    const otherLink = new URL(await managementLink(otherToken)).hash.replace('#link=', '')
    const session = await ctx.request({ method: 'POST', url: '/hosted/webhooks/api/sessions', payload: { link: otherLink } })
    assert.equal(session.status, 201, session.body)
    const otherSession = session.json<{ session: { token: string } }>().session.token
    const created = await ctx.request({
      method: 'POST',
      url: '/hosted/webhooks/api/endpoints',
      headers: bearer(otherSession),
      payload: { url: 'http://127.0.0.1:9/other-organization-hooks', description: 'Other organization endpoint' },
    })
    assert.equal(created.status, 201, created.body)
    otherEndpoint = created.json<{ endpoint: Endpoint }>().endpoint
    otherOrganizationId = JSON.parse(Buffer.from(otherLink.split('.')[0]!, 'base64url').toString('utf8')).o as string
  })

  after(async () => {
    await browser?.close()
    await receiver.stop()
    await closeServer(markup?.server)
    await ctx?.close()
  })

  /** Nothing of the other organization is on the page. */
  async function assertNoForeignData(target: Page): Promise<void> {
    const text = await target.locator('body').innerText()
    assert.ok(!text.includes('other-organization-hooks'), 'the other organization\'s endpoint is not shown')
    assert.ok(!text.includes('Other organization endpoint'))
    assert.ok(!(await target.content()).includes(otherEndpoint.id))
  }

  test('the management link opens the portal once, leaves the address bar, and a reload keeps the session', async () => {
    firstLink = await managementLink(token)
    ;({ context, page } = await openPortal(firstLink))
    await page.getByRole('heading', { level: 2, name: 'Endpoints' }).waitFor()
    assert.equal(new URL(page.url()).hash, '', 'the link is taken out of the address bar')
    assert.equal(await page.title(), 'Webhooks')
    const csp = (await page.request.get(`${baseUrl}/hosted/webhooks/`)).headers()['content-security-policy'] ?? ''
    assert.match(csp, /frame-ancestors 'none'/)
    assert.match(csp, /form-action 'none'/)
    assert.match(csp, new RegExp(`connect-src 'self' ${baseUrl.replace(/[.]/g, '\\.')}`))
    assert.equal(await page.locator('.wp-endpoint').count(), 0)
    await page.getByText('No endpoint yet').waitFor()

    await page.reload({ waitUntil: 'load' })
    await page.getByRole('heading', { level: 2, name: 'Endpoints' }).waitFor()
    assert.equal(await page.locator('#error').isHidden(), true)
    await assertNoForeignData(page)
    assertClean()
  })

  test('adds an endpoint pointing at a local receiver, with the keyboard, and event types from the catalogue', async () => {
    await page.getByRole('button', { name: 'Add endpoint' }).focus()
    await page.keyboard.press('Enter')
    // The focus is in the URL field.
    await page.keyboard.type(receiverUrl)
    await page.keyboard.press('Tab')
    await page.keyboard.type('Order service')
    await page.getByRole('checkbox', { name: 'core.user.created', exact: true }).check()
    await page.getByRole('checkbox', { name: 'core.user.deleted', exact: true }).check()
    await page.getByLabel('Description (optional)').focus()
    await page.keyboard.press('Enter')

    const heading = page.getByRole('heading', { level: 2, name: receiverUrl })
    await heading.waitFor()
    await page.locator('.wp-deliveries[aria-busy="false"]').waitFor()
    assert.equal(await page.evaluate(() => document.activeElement?.tagName), 'H2', 'the focus moved to the endpoint\'s heading')
    const summary = await page.locator('.wp-summary').innerText()
    assert.match(summary, /Enabled/)
    assert.match(summary, /Order service/)
    assert.match(summary, /core\.user\.created, core\.user\.deleted/)
    endpointId = (await page.locator('section[data-endpoint-id]').getAttribute('data-endpoint-id'))!
    assert.match(endpointId, /^[0-9a-f-]{36}$/)

    await page.getByRole('button', { name: '← All endpoints' }).click()
    const item = page.locator(`.wp-endpoint[data-endpoint-id="${endpointId}"]`)
    await item.waitFor()
    assert.match(await item.innerText(), /Order service[\s\S]*Enabled/)
    await assertNoForeignData(page)
    await item.getByRole('button', { name: 'Manage' }).click()
    await page.locator('.wp-deliveries[aria-busy="false"]').waitFor()
    await page.getByText('No message.').waitFor()
    assertClean()
  })

  test('an event reaches the receiver, and its message and attempt show once refreshed', async () => {
    await ctx.createUser(token)
    await deliver()
    await receiver.waitFor(1)
    assert.equal(receiver.events()[0]!.type, 'core.user.created')

    await refreshDeliveries()
    assert.deepEqual(await messageRows(), [['core.user.created', 'Event', 'Delivered', '1']])
    const row = page.locator('tr.wp-message').first()
    const messageId = (await row.getAttribute('data-message-id'))!
    await row.getByRole('button', { name: 'Attempts' }).click()
    const attempts = page.locator(`tr.wp-attempts-row[data-message-id="${messageId}"] .wp-attempt`)
    await attempts.first().waitFor()
    assert.equal(await attempts.count(), 1)
    const attempt = await attempts.first().innerText()
    assert.match(attempt, /Attempt 1/)
    assert.match(attempt, /Succeeded/)
    assert.match(attempt, /HTTP 200/)
    assert.match(attempt, /\d+ ms/)
    assert.equal(await attempts.first().locator('pre.wp-excerpt').textContent(), 'ok')
    assert.equal(await row.getByRole('button', { name: 'Hide attempts' }).getAttribute('aria-expanded'), 'true')
    assert.equal(await page.locator('.wp-recent .wp-attempt').count(), 1)
    assertClean()
  })

  test('resending a message queues it again, and a second attempt appears', async () => {
    await page.locator('tr.wp-message').first().getByRole('button', { name: 'Resend' }).click()
    await page.getByRole('status').filter({ hasText: 'queued again' }).waitFor()
    await page.waitForFunction(() => document.querySelectorAll('tr.wp-message').length === 2)
    assert.deepEqual((await messageRows())[0], ['core.user.created', 'Resend', 'Pending', '0'])

    await deliver()
    await receiver.waitFor(2)
    await refreshDeliveries()
    assert.deepEqual(await messageRows(), [
      ['core.user.created', 'Resend', 'Delivered', '1'],
      ['core.user.created', 'Event', 'Delivered', '1'],
    ])
    assert.equal(await page.locator('.wp-recent .wp-attempt').count(), 2)
    // The message opened before stays open across refreshes.
    assert.equal(await page.locator('tr.wp-attempts-row:not([hidden]) .wp-attempt').count(), 1)
    // The same event, with the same webhook-id.
    assert.equal(receiver.received[1]!.headers['webhook-id'], receiver.received[0]!.headers['webhook-id'])
    assertClean()
  })

  test('a test event of the chosen type is sent to the endpoint', async () => {
    await page.getByLabel('Event type', { exact: true }).selectOption('core.user.deleted')
    await page.getByRole('button', { name: 'Send test event' }).click()
    await page.waitForFunction(() => document.querySelectorAll('tr.wp-message').length === 3)
    assert.deepEqual((await messageRows())[0], ['core.user.deleted', 'Test', 'Pending', '0'])
    await deliver()
    await receiver.waitFor(3)
    assert.equal(receiver.events()[2]!.type, 'core.user.deleted')
    await refreshDeliveries()
    assert.deepEqual((await messageRows())[0], ['core.user.deleted', 'Test', 'Delivered', '1'])

    // The status filter.
    await page.getByLabel('Show messages').selectOption('pending')
    await page.getByText('No message.').waitFor()
    await page.getByLabel('Show messages').selectOption('delivered')
    await page.waitForFunction(() => document.querySelectorAll('tr.wp-message').length === 3)
    await page.getByLabel('Show messages').selectOption('')
    await page.waitForFunction(() => document.querySelectorAll('tr.wp-message').length === 3)
    assertClean()
  })

  test('a replay since a time queues the events the endpoint receives again', async () => {
    // The default: an hour ago. Test events are not replayed.
    await page.getByRole('button', { name: 'Replay', exact: true }).click()
    await page.getByText('1 message queued.').waitFor()
    await page.waitForFunction(() => document.querySelectorAll('tr.wp-message').length === 4)
    assert.deepEqual((await messageRows())[0], ['core.user.created', 'Replay', 'Pending', '0'])
    await deliver()
    await receiver.waitFor(4)
    await refreshDeliveries()
    assert.deepEqual((await messageRows())[0], ['core.user.created', 'Replay', 'Delivered', '1'])
    await screenshot(page, 'webhook-portal', 'page')
    assertClean()
  })

  test('the secret is hidden until revealed, and a rotation shows the new secret beside the previous one', async () => {
    assert.equal(await page.locator('input.wp-secret').count(), 0, 'no secret on the page before it is asked for')
    const reveal = page.getByRole('button', { name: 'Reveal secret' })
    assert.equal(await reveal.getAttribute('aria-expanded'), 'false')
    await reveal.click()
    const current = page.getByLabel('Current secret')
    await current.waitFor()
    firstSecret = await current.inputValue()
    assert.match(firstSecret, /^whsec_/)
    assert.equal(await current.getAttribute('readonly'), '')
    await page.getByText('No previous secret signs beside it.').waitFor()
    // The secret shown is the one the messages were signed with.
    const verifier = new Webhook(firstSecret)
    for (const received of receiver.received) verifier.verify(received.body, received.headers as Record<string, string>)

    await page.getByRole('button', { name: 'Hide secret' }).click()
    assert.equal(await page.locator('input.wp-secret').count(), 0, 'hidden secrets leave the page')

    await page.getByLabel('Grace period, in seconds (optional)').fill('3600')
    await page.getByRole('button', { name: 'Rotate secret' }).click()
    await page.getByLabel('Previous secret').waitFor()
    const rotated = await page.getByLabel('Current secret').inputValue()
    assert.match(rotated, /^whsec_/)
    assert.notEqual(rotated, firstSecret)
    assert.equal(await page.getByLabel('Previous secret').inputValue(), firstSecret)
    assert.match(await page.locator('.wp-secrets').innerText(), /Still signs beside the current one until \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC/)
    await page.waitForFunction(() => !/Secret rotated\s*Never/.test(document.querySelector('.wp-summary')?.textContent ?? ''))

    // A message now carries both signatures.
    await page.getByRole('button', { name: 'Send test event' }).click()
    await page.waitForFunction(() => document.querySelectorAll('tr.wp-message').length === 5)
    await deliver()
    await receiver.waitFor(5)
    const last = receiver.received[4]!
    new Webhook(rotated).verify(last.body, last.headers as Record<string, string>)
    new Webhook(firstSecret).verify(last.body, last.headers as Record<string, string>)
    assertClean()
  })

  test('disables and enables the endpoint, and edits it', async () => {
    await page.getByRole('button', { name: 'Disable' }).click()
    await page.locator('section[data-endpoint-id][data-status="disabled"]').waitFor()
    assert.match(await page.locator('#endpoint-status').innerText(), /^Disabled by hand since /)
    // A disabled endpoint receives nothing; it keeps its place, so what happened meanwhile comes once it is enabled.
    await ctx.createUser(token)
    await deliver()
    assert.equal(receiver.received.length, 5, 'a disabled endpoint receives nothing')

    await page.getByRole('button', { name: 'Enable' }).click()
    await page.locator('section[data-endpoint-id][data-status="enabled"]').waitFor()
    assert.equal(await page.locator('#endpoint-status').innerText(), 'Enabled')
    await deliver()
    assert.equal(receiver.received.length, 6)

    await page.getByRole('button', { name: 'Edit' }).click()
    await page.getByLabel('Description (optional)').fill('Order service (v2)')
    await page.getByRole('checkbox', { name: 'core.user.deleted', exact: true }).uncheck()
    await page.getByRole('button', { name: 'Save changes' }).click()
    await page.getByRole('status').filter({ hasText: 'Changes saved.' }).waitFor()
    const summary = await page.locator('.wp-summary').innerText()
    assert.match(summary, /Order service \(v2\)/)
    assert.match(summary, /Event types\s+core\.user\.created\s/)

    // A refused change says why, in the form.
    await page.getByRole('button', { name: 'Edit' }).click()
    await page.getByLabel('URL').fill('http://user:password@127.0.0.1/hooks')
    await page.getByRole('button', { name: 'Save changes' }).click()
    await page.getByRole('alert').filter({ hasText: 'must not contain a user name or password' }).waitFor()
    await page.getByRole('button', { name: 'Cancel' }).click()
    assertClean()
  })

  test('an answer\'s body is shown as text, never as markup', async () => {
    await page.getByRole('button', { name: 'Endpoints', exact: true }).click()
    await page.getByRole('button', { name: 'Add endpoint' }).click()
    await page.getByLabel('URL').fill(markup.url)
    await page.getByRole('button', { name: 'Add endpoint' }).click()
    await page.getByRole('heading', { level: 2, name: markup.url }).waitFor()
    await page.locator('.wp-deliveries[aria-busy="false"]').waitFor()
    await page.getByRole('button', { name: 'Send test event' }).click()
    await page.waitForFunction(() => document.querySelectorAll('tr.wp-message').length === 1)
    await deliver()
    await refreshDeliveries()
    await page.locator('tr.wp-message').first().getByRole('button', { name: 'Attempts' }).click()
    const excerpt = page.locator('tr.wp-attempts-row pre.wp-excerpt')
    await excerpt.waitFor()
    assert.equal(await excerpt.textContent(), '<b id="injected">bold</b><img src="/x.png" id="injected-image">')
    assert.equal(await page.locator('#injected, #injected-image').count(), 0)
    assertClean()
  })

  test('another organization\'s endpoints never show, nor answer to this session', async () => {
    await page.getByRole('button', { name: 'Endpoints', exact: true }).click()
    await page.locator('.wp-endpoint').nth(1).waitFor()
    assert.equal(await page.locator('.wp-endpoint').count(), 2)
    await assertNoForeignData(page)
    const foreign = await fromPage(page, `/hosted/webhooks/api/endpoints/${otherEndpoint.id}`)
    assert.equal(foreign.status, 404)
    assert.equal(JSON.parse(foreign.body).code, 'entity_not_found')
    const foreignSecret = await fromPage(page, `/hosted/webhooks/api/endpoints/${otherEndpoint.id}/secret`)
    assert.equal(foreignSecret.status, 404)
    assertClean()
  })

  test('the event catalogue shows each type with its example as JSON text', async () => {
    await page.getByRole('button', { name: 'Event catalogue' }).click()
    await page.getByRole('heading', { level: 2, name: 'Event catalogue' }).waitFor()
    const types = page.locator('.wp-event-type')
    assert.ok((await types.count()) > 20)
    const userCreated = page.locator('.wp-event-type[data-type="core.user.created"]')
    await userCreated.locator('summary').focus()
    await page.keyboard.press('Enter')
    const example = JSON.parse((await userCreated.locator('pre.wp-json').textContent())!) as { type: string; data: { user: { id: string } } }
    assert.equal(example.type, 'core.user.created')
    assert.ok(example.data.user.id)
    assert.match(await page.locator('.wp-event-type[data-type="core.kyb.onboarding.status-changed"] summary').innerText(), /Never sent/)
    assertClean()
  })

  test('deletes the endpoint after a confirmation', async () => {
    await page.getByRole('button', { name: 'Endpoints', exact: true }).click()
    await page.locator(`.wp-endpoint[data-endpoint-id="${endpointId}"]`).getByRole('button', { name: 'Manage' }).click()
    await page.locator('.wp-deliveries[aria-busy="false"]').waitFor()
    await page.getByRole('button', { name: 'Delete', exact: true }).click()
    // Not yet: "Keep it" keeps it.
    const keep = page.getByRole('button', { name: 'Keep it' })
    assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Keep it')
    await keep.click()
    assert.equal(await page.getByRole('button', { name: 'Delete endpoint' }).count(), 0)
    await page.getByRole('button', { name: 'Delete', exact: true }).click()
    await page.getByRole('button', { name: 'Delete endpoint' }).click()
    await page.getByRole('heading', { level: 2, name: 'Endpoints' }).waitFor()
    await page.getByRole('status').filter({ hasText: 'deleted' }).waitFor()
    await page.locator('.wp-endpoint').first().waitFor()
    assert.equal(await page.locator(`.wp-endpoint[data-endpoint-id="${endpointId}"]`).count(), 0)
    assert.equal(await page.locator('.wp-endpoint').count(), 1)
    const gone = await fromPage(page, `/hosted/webhooks/api/endpoints/${endpointId}`)
    assert.equal(gone.status, 404)
    await context.close()
    assertClean()
  })

  /** Opens the portal at `url` in a new context and expects the refusal banner, with nothing of any organization. */
  async function assertRefused(url: string, banner: RegExp): Promise<Page> {
    const requests: string[] = []
    const opened = await openPortal(url, requests)
    const alert = opened.page.locator('#error')
    await alert.waitFor()
    assert.match(await alert.innerText(), banner)
    assert.equal(new URL(opened.page.url()).hash, '')
    assert.equal(await opened.page.locator('.wp-nav').count(), 0)
    assert.equal(await opened.page.locator('#content').innerText(), '')
    assert.equal(await opened.page.evaluate(() => document.body.dataset.state), 'refused')
    assert.equal(await opened.page.evaluate((key) => sessionStorage.getItem(key), SESSION_KEY), null)
    assert.deepEqual(requests.filter((path) => path.startsWith('/hosted/webhooks/api/') && !path.endsWith('/sessions')), [])
    return opened.page
  }

  test('a link opened a second time, in another browser, is refused as already opened', async () => {
    const refused = await assertRefused(firstLink, /already opened.*request a new management link/i)
    await refused.context().close()
    assertClean()
  })

  test('an altered link is refused, and shows nothing', async () => {
    const link = new URL(await managementLink(token))
    const [payload, signature] = link.hash.replace('#link=', '').split('.') as [string, string]
    // The other organization's id in this link's payload: the signature no longer matches.
    const decoded = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>
    const forged = Buffer.from(JSON.stringify({ ...decoded, o: otherOrganizationId })).toString('base64url')
    const refused = await assertRefused(`${baseUrl}/hosted/webhooks/#link=${forged}.${signature}`, /not valid/)
    await refused.context().close()
    // The genuine link was not spent by the forgery.
    const genuine = await ctx.request({ method: 'POST', url: '/hosted/webhooks/api/sessions', payload: { link: `${payload}.${signature}` } })
    assert.equal(genuine.status, 201)
    assertClean()
  })

  test('an expired link is refused as expired', async () => {
    const key = (ctx.services.webhooks as unknown as { portalKey: Buffer }).portalKey
    const expired = signPortalToken(key, { kind: 'link', linkId: '01a21047-6226-7150-a3ff-e4b5b492dc27', organizationId: otherOrganizationId, expiresAt: new Date(Date.now() - 1000) })
    const refused = await assertRefused(`${baseUrl}/hosted/webhooks/#link=${expired}`, /has expired.*new management link/i)
    await refused.context().close()
    assertClean()
  })

  test('without a link the page says how to open the portal; a session that is not valid or has expired shows nothing', async () => {
    const refused = await assertRefused(`${baseUrl}/hosted/webhooks/`, /management link/)
    const key = (ctx.services.webhooks as unknown as { portalKey: Buffer }).portalKey
    const expiredSession = signPortalToken(key, { kind: 'session', linkId: '01a21047-6226-7150-a3ff-e4b5b492dc27', organizationId: otherOrganizationId, expiresAt: new Date(Date.now() - 1000) })
    for (const [sessionToken, banner] of [
      ['not.a-valid-session-token', /session is not valid any more\. Open a new management link/],
      [expiredSession, /session has expired\. Open a new management link/],
    ] as const) {
      // The tab's stored session says it lasts an hour more; the server knows better.
      await refused.evaluate(([k, t]) => sessionStorage.setItem(k, JSON.stringify({ token: t, expiresAt: new Date(Date.now() + 3_600_000).toISOString() })), [SESSION_KEY, sessionToken] as const)
      await refused.reload({ waitUntil: 'load' })
      await refused.waitForFunction(() => document.body.dataset.state === 'ended')
      assert.match(await refused.locator('#error').innerText(), banner)
      assert.equal(await refused.locator('#content').innerText(), '')
      assert.equal(await refused.locator('.wp-nav').count(), 0)
      assert.equal(await refused.evaluate((k) => sessionStorage.getItem(k), SESSION_KEY), null, 'the dead session is forgotten')
      await assertNoForeignData(refused)
    }
    await refused.context().close()
    assertClean()
  })
})
