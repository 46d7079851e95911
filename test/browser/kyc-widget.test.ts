/**
 * The KYC widget end to end, in Chromium: a host page (http://127.0.0.1:A) imports Tessera's SDK from Tessera
 * (http://localhost:T/hosted/assets/sdk.js) and mounts a `KycWidget` with a session the client created through the
 * API; the hosted widget (localhost:T, another origin) walks the user through profile, identity and proof of address
 * against the sandbox KYC provider, and tells the host what happened. A third origin (127.0.0.1:F) plays a foreign
 * frame on the host page that tries to speak for the widget and to hand it another session.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, test } from 'node:test'
import type { FrameLocator } from 'playwright-core'
import { bearer, individualUser, type TestContext } from '../helpers.ts'
import { assertCancelled, events, eventsUntil, mount, screenshot, terminalOf, WidgetSuite } from './harness.ts'

interface Session {
  flow: string
  url: string
  token: string
  data: { processes: string[] }
}

interface Outcome {
  code: string
  status: string
  reason?: string
}

describe('KYC widget in a client page, with Tessera\'s SDK, in Chromium', { timeout: 240_000 }, () => {
  let suite: WidgetSuite
  let ctx: TestContext
  let token: string

  before(async () => {
    suite = await WidgetSuite.start({}, {
      title: 'My app: verify',
      widgetClass: 'KycWidget',
      height: '760px',
      forgedComplete: { value: { processes: [{ code: 'identity', status: 'ok' }] } },
    })
    ;({ ctx, token } = suite)
  })
  after(() => suite?.close())

  const openHost = () => suite.open({ width: 560, height: 820 })

  async function createSession(userId: string, body: Record<string, unknown> = { flow: 'verify' }): Promise<Session> {
    const response = await ctx.request({ method: 'POST', url: '/widgets/kyc/sessions', headers: bearer(token, userId), payload: body })
    assert.equal(response.status, 201, response.body)
    return response.json<{ session: Session }>().session
  }

  async function overview(userId: string): Promise<Record<string, { status: string; type?: string; verification?: { model: string }; output?: { reason?: string } }>> {
    const response = await ctx.request({ method: 'GET', url: '/core/kyc', headers: bearer(token, userId) })
    assert.equal(response.status, 200, response.body)
    return response.json<{ processes: Record<string, never> }>().processes
  }

  const image = (name: string) => ({ name, mimeType: 'image/png', buffer: randomBytes(4096) })
  const pdf = (name: string) => ({ name, mimeType: 'application/pdf', buffer: Buffer.concat([Buffer.from('%PDF-1.4\n'), randomBytes(4096)]) })

  async function uploadIdentity(frame: FrameLocator): Promise<void> {
    await frame.locator('#identity-form').waitFor()
    await frame.locator('#file-photo-document-front').setInputFiles(image('passport.png'))
    await frame.locator('#file-photo-selfie').setInputFiles(image('selfie.png'))
  }

  test('profile → identity → proof of address: complete reaches the host, and the processes changed', async () => {
    const userId = (await ctx.createUser(token, individualUser())).id
    const session = await createSession(userId)
    assert.deepEqual(session.data.processes, ['profile', 'identity', 'proof-of-address'])
    const { context, page } = await openHost()
    const frame = await mount(page, session, { debug: true })

    // Profile: what the user declared at creation is there; the rest is asked.
    await frame.locator('#profile-form').waitFor()
    assert.equal(await frame.locator('#citizenship').inputValue(), 'GB')
    assert.equal(await frame.locator('#progress li[aria-current="step"]').getAttribute('data-process'), 'profile')
    assert.equal(await frame.locator(':focus').getAttribute('id'), 'step-title', 'the focus starts on the step')
    // Nothing filled in: each required field says so, and the focus goes to the first.
    await frame.locator('#profile-submit').click()
    assert.equal(await frame.locator('#full-name').getAttribute('aria-invalid'), 'true')
    assert.match(await frame.locator('#full-name-error').innerText(), /full name/i)
    assert.equal(await frame.locator(':focus').getAttribute('id'), 'full-name')
    assert.match(String(await frame.locator('#full-name').getAttribute('aria-describedby')), /full-name-error/)
    assert.deepEqual((await events(page)).map((event) => event.name), ['ready'])

    await frame.getByLabel('Full legal name').fill('Ada Lovelace')
    await frame.getByLabel('Date of birth').fill('1990-05-17')
    await frame.getByLabel('Address line 1').fill('1 Deansgate')
    await frame.getByLabel('City').fill('Manchester')
    await frame.getByLabel('Postal code').fill('M3 1AZ')
    await frame.locator('#title').evaluate(() => window.scrollTo(0, 0))
    await screenshot(page, 'kyc-widget-profile')
    await frame.locator('#profile-submit').click()

    // Identity: the document and a selfie.
    await uploadIdentity(frame)
    assert.equal(await frame.locator('#progress li[data-process="profile"]').getAttribute('data-state'), 'ok')
    assert.equal(await frame.locator('#progress li[aria-current="step"]').getAttribute('data-process'), 'identity')
    await screenshot(page, 'kyc-widget-identity')
    await frame.locator('#identity-submit').click()

    // Proof of address: one document.
    await frame.locator('#proof-of-address-form').waitFor()
    await frame.locator('#file-address-proof').setInputFiles(pdf('bill.pdf'))
    await frame.locator('#proof-of-address-submit').click()

    const received = await eventsUntil(page)
    const complete = terminalOf(received)
    assert.equal(complete.name, 'complete', JSON.stringify(received))
    assert.deepEqual((complete.detail as { value: { processes: Outcome[] } }).value, {
      processes: [
        { code: 'profile', status: 'ok' },
        { code: 'identity', status: 'ok' },
        { code: 'proof-of-address', status: 'ok' },
      ],
    })
    assert.deepEqual(received.map((event) => event.name), ['ready', 'complete'])
    await frame.locator('#summary').waitFor()
    assert.equal(await frame.locator('#summary li').count(), 3)
    await screenshot(page, 'kyc-widget-complete')

    const processes = await overview(userId)
    assert.equal(processes.profile!.status, 'ok')
    for (const key of ['identity', 'proofOfAddress']) {
      assert.equal(processes[key]!.status, 'ok', key)
      assert.equal(processes[key]!.type, 'document-submission', key)
      assert.equal(processes[key]!.verification?.model, 'service-verified', key)
    }
    assert.equal(processes.screening!.status, 'ok')
    const user = await ctx.request({ method: 'GET', url: '/core/users/me', headers: bearer(token, userId) })
    assert.match(user.body, /Ada Lovelace/)
    await context.close()
  })

  test('a rejected document: the widget says why, the user moves on; complete lists it as failed', async () => {
    // The sandbox rejects the identity of anyone whose family name is "Rejected".
    const userId = (await ctx.createUser(token, individualUser({ fullName: 'Ada Rejected', birthdate: '1990-05-17', address: { country: 'GB', city: 'Leeds', line1: '2 Park Row', postalCode: 'LS1 5HD' } }))).id
    const session = await createSession(userId)
    assert.deepEqual(session.data.processes, ['identity', 'proof-of-address'])
    const { context, page } = await openHost()
    const frame = await mount(page, session)
    await uploadIdentity(frame)
    await frame.locator('#identity-submit').click()
    await frame.locator('#identity-skip').waitFor({ state: 'visible' })
    assert.match(await frame.locator('#error').innerText(), /not verified: the document could not be verified/)
    assert.equal((await overview(userId)).identity!.status, 'failed')
    await frame.locator('#identity-skip').click()
    await frame.locator('#file-address-proof').setInputFiles(pdf('statement.pdf'))
    await frame.locator('#proof-of-address-submit').click()
    const complete = terminalOf(await eventsUntil(page))
    assert.deepEqual((complete.detail as { value: { processes: Outcome[] } }).value.processes, [
      { code: 'identity', status: 'failed', reason: 'provider-verification-rejected' },
      { code: 'proof-of-address', status: 'ok' },
    ])
    await context.close()
  })

  test('cancel: the host gets cancel (no detail); nothing was submitted', async () => {
    const userId = (await ctx.createUser(token, individualUser())).id
    const before = await overview(userId)
    const { context, page } = await openHost()
    const frame = await mount(page, await createSession(userId))
    await frame.locator('#profile-form').waitFor()
    await frame.getByLabel('Full legal name').fill('Not Sent')
    await frame.locator('#cancel').click()
    await assertCancelled(page)
    await frame.locator('#outcome').waitFor()
    assert.deepEqual(await overview(userId), before)
    await context.close()
  })

  test('messages from another origin are ignored: no forged event reaches the host, no forged session reaches the widget', async () => {
    const userId = (await ctx.createUser(token, individualUser({ fullName: 'Real User' }))).id
    const victim = (await ctx.createUser(token, individualUser({ fullName: 'Victim User' }))).id
    const victimBefore = await overview(victim)
    const forged = await createSession(victim)
    const { context, page } = await openHost()
    // The foreign frame is posting before the widget exists, and keeps posting.
    await suite.pages.frameForeign(page, forged)
    const frame = await mount(page, await createSession(userId, { flow: 'verify', processes: ['profile'] }))
    await frame.locator('#profile-form').waitFor()
    // The widget runs the host's session: the real user's name, not the victim's.
    assert.equal(await frame.locator('#full-name').inputValue(), 'Real User')
    await suite.pages.foreignPosted(page, 20)
    assert.deepEqual((await events(page)).map((event) => event.name), ['ready'], 'the foreign complete and cancel were dropped')

    await frame.getByLabel('Date of birth').fill('1991-02-03')
    await frame.getByLabel('Address line 1').fill('3 Quay Street')
    await frame.getByLabel('City').fill('Manchester')
    await frame.getByLabel('Postal code').fill('M3 3JE')
    await frame.locator('#profile-submit').click()
    const received = await eventsUntil(page)
    assert.deepEqual(received.map((event) => event.name), ['ready', 'complete'])
    assert.deepEqual((terminalOf(received).detail as { value: unknown }).value, { processes: [{ code: 'profile', status: 'ok' }] })
    assert.equal((await overview(userId)).profile!.status, 'ok')
    assert.deepEqual(await overview(victim), victimBefore, 'the victim\'s processes did not change')
    await context.close()
  })

  test('nothing loaded from outside, no script error, no CSP violation', () => {
    suite.watch.assertClean()
  })
})
