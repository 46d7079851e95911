import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { Webhook } from 'standardwebhooks'
import { webhookMessageId } from '../../src/lib/webhook-signatures.ts'
import { bearer, ENGINES, individualUser, useApp, type TestContext } from '../helpers.ts'
import { attemptsOf, createEndpoint, deliverUntil, messagesOf, openPortal, PORTAL_API, secretOf } from './portal.ts'
import { Receiver, type Received } from './receiver.ts'

const headersOf = (received: Received) => received.headers as Record<string, string>

for (const engine of ENGINES) {
  describe(`webhook delivery [${engine}]`, () => {
    // Retries a few milliseconds apart: the schedule's shape, not its length, is what these tests exercise.
    const suite = useApp(engine, { WEBHOOK_RETRY_SCHEDULE: '20ms,20ms,20ms,20ms' })
    const ctx = (): TestContext => suite.ctx
    const receivers: Receiver[] = []
    const receiver = async (): Promise<{ receiver: Receiver; url: string }> => {
      const created = new Receiver()
      receivers.push(created)
      return { receiver: created, url: await created.start() }
    }
    let portal: Record<string, string>
    before(async () => {
      portal = await openPortal(ctx(), suite.token)
    })
    after(async () => {
      for (const created of receivers) await created.stop()
    })

    test('events reach the endpoint signed as Standard Webhooks, in the reference\'s envelope', async () => {
      const { receiver: hooks, url } = await receiver()
      const endpoint = await createEndpoint(ctx(), portal, { url, description: 'users', eventTypes: ['core.user.created', 'core.user.deleted'] })
      const { secret } = await secretOf(ctx(), portal, endpoint.id)
      assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/)
      const user = await ctx().createUser(suite.token)
      await deliverUntil(ctx(), () => hooks.received.length >= 1)

      const [received] = hooks.received
      const verified = new Webhook(secret).verify(received!.body, headersOf(received!)) as { id: string; type: string; createdAt: string; data: { user: { id: string } } }
      assert.equal(verified.type, 'core.user.created')
      assert.equal(verified.data.user.id, user.id)
      assert.deepEqual(Object.keys(verified).sort(), ['createdAt', 'data', 'id', 'type'])
      assert.match(verified.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
      assert.equal(received!.headers['webhook-id'], webhookMessageId(verified.id))
      assert.equal(received!.headers['content-type'], 'application/json')
      assert.ok(Math.abs(Number(received!.headers['webhook-timestamp']) - Date.now() / 1000) < 60)
      assert.throws(() => new Webhook(secret).verify(received!.body.replace(user.id, '00000000-0000-4000-8000-000000000000'), headersOf(received!)))

      const [attempt] = await attemptsOf(ctx(), portal, endpoint.id)
      assert.equal(attempt!.succeeded, true)
      assert.equal(attempt!.responseStatus, 200)
      assert.equal(attempt!.responseExcerpt, 'ok')
      assert.equal(attempt!.eventId, verified.id)
      const [message] = await messagesOf(ctx(), portal, endpoint.id)
      assert.equal(message!.status, 'delivered')
      assert.equal(message!.webhookId, received!.headers['webhook-id'])
    })

    test('an endpoint receives the types it subscribes to, of its own organization only', async () => {
      const { receiver: hooks, url } = await receiver()
      const endpoint = await createEndpoint(ctx(), portal, { url, eventTypes: ['core.user.deleted'] })
      const otherClient = await ctx().newClient('*')
      const otherToken = await ctx().token(otherClient)
      const { receiver: otherHooks, url: otherUrl } = await receiver()
      const otherPortal = await openPortal(ctx(), otherToken)
      await createEndpoint(ctx(), otherPortal, { url: otherUrl })

      const user = await ctx().createUser(suite.token)
      const deleted = await ctx().request({ method: 'DELETE', url: '/core/users/me', headers: bearer(suite.token, user.id), payload: { review: { reason: 'closure-per-user-request' } } })
      assert.equal(deleted.status, 204, deleted.body)
      await deliverUntil(ctx(), () => hooks.received.length >= 1)
      assert.deepEqual(hooks.events().map((event) => [event.type, (event.data.user as { id: string }).id]), [['core.user.deleted', user.id]])
      assert.deepEqual(otherHooks.received, [], 'another organization hears nothing of this one')
      assert.equal((await messagesOf(ctx(), portal, endpoint.id)).length, 1)
    })

    test('a receiver that fails for a while, then recovers, gets every event in order, each under one webhook-id', async () => {
      const { receiver: hooks, url } = await receiver()
      const endpoint = await createEndpoint(ctx(), portal, { url, eventTypes: ['core.user.created'] })
      let failures = 3
      hooks.answer = () => (failures-- > 0 ? 503 : 200)
      const users: string[] = []
      for (let i = 0; i < 5; i++) users.push((await ctx().createUser(suite.token, individualUser())).id)
      await deliverUntil(ctx(), async () => (await messagesOf(ctx(), portal, endpoint.id, '?status=delivered')).length === 5)

      // The first message was tried four times before the others went out; nothing overtook it.
      const order = hooks.events().map((event) => (event.data.user as { id: string }).id)
      assert.deepEqual(order, [users[0], users[0], users[0], ...users])
      const ids = hooks.received.map((received) => received.headers['webhook-id'])
      assert.equal(new Set(ids).size, 5)
      assert.equal(ids[0], ids[3])
      const attempts = await attemptsOf(ctx(), portal, endpoint.id)
      assert.equal(attempts.length, 8)
      const first = attempts.filter((attempt) => attempt.messageId === attempts.at(-1)!.messageId).reverse()
      assert.deepEqual(first.map((attempt) => [attempt.attempt, attempt.succeeded, attempt.responseStatus, attempt.error ?? null]), [
        [1, false, 503, 'http-status'],
        [2, false, 503, 'http-status'],
        [3, false, 503, 'http-status'],
        [4, true, 200, null],
      ])
      assert.equal(first[0]!.responseExcerpt, 'refused with 503')
    })

    test('after a secret rotation, messages verify with the new secret, and with the old one during its grace period', async () => {
      const { receiver: hooks, url } = await receiver()
      const endpoint = await createEndpoint(ctx(), portal, { url, eventTypes: ['core.user.created'] })
      const { secret: old } = await secretOf(ctx(), portal, endpoint.id)
      const rotated = await ctx().request({ method: 'POST', url: `${PORTAL_API}/endpoints/${endpoint.id}/secret/rotate`, headers: portal, payload: {} })
      assert.equal(rotated.status, 200, rotated.body)
      const secrets = rotated.json<{ secret: string; previousSecret: string; previousSecretExpiresAt: string }>()
      assert.notEqual(secrets.secret, old)
      assert.equal(secrets.previousSecret, old)
      assert.ok(Math.abs(Date.parse(secrets.previousSecretExpiresAt) - Date.now() - 86_400_000) < 60_000, 'a day of grace by default')

      await ctx().createUser(suite.token)
      await deliverUntil(ctx(), () => hooks.received.length >= 1)
      const during = hooks.received[0]!
      assert.equal(String(during.headers['webhook-signature']).split(' ').length, 2)
      new Webhook(secrets.secret).verify(during.body, headersOf(during))
      new Webhook(old).verify(during.body, headersOf(during))

      // A rotation without grace: the replaced secret stops signing at once.
      const again = await ctx().request({ method: 'POST', url: `${PORTAL_API}/endpoints/${endpoint.id}/secret/rotate`, headers: portal, payload: { graceSeconds: 0 } })
      const latest = again.json<{ secret: string; previousSecret?: string }>()
      assert.equal(latest.previousSecret, undefined)
      await ctx().createUser(suite.token)
      await deliverUntil(ctx(), () => hooks.received.length >= 2)
      const afterwards = hooks.received[1]!
      assert.equal(String(afterwards.headers['webhook-signature']).split(' ').length, 1)
      new Webhook(latest.secret).verify(afterwards.body, headersOf(afterwards))
      assert.throws(() => new Webhook(secrets.secret).verify(afterwards.body, headersOf(afterwards)))
      assert.throws(() => new Webhook(old).verify(afterwards.body, headersOf(afterwards)))
    })

    test('a message that fails every attempt fails, disables its endpoint with an event, and what waits goes out once it is enabled', async () => {
      const { receiver: hooks, url } = await receiver()
      const endpoint = await createEndpoint(ctx(), portal, { url, eventTypes: ['core.user.created'] })
      const { receiver: watcher, url: watcherUrl } = await receiver()
      await createEndpoint(ctx(), portal, { url: watcherUrl, eventTypes: ['core.webhook-endpoint.disabled'] })
      hooks.answer = () => 500
      // Both are queued before the first fails: the second waits behind it.
      const first = await ctx().createUser(suite.token)
      const second = await ctx().createUser(suite.token)
      await deliverUntil(ctx(), async () => (await messagesOf(ctx(), portal, endpoint.id, '?status=failed')).length === 1 && watcher.received.length >= 1)

      assert.equal(hooks.received.length, 5, 'the first attempt and the schedule\'s four retries')
      assert.ok(hooks.events().every((event) => (event.data.user as { id: string }).id === first.id), 'nothing overtook the failing message')
      const disabled = (await ctx().request({ method: 'GET', url: `${PORTAL_API}/endpoints/${endpoint.id}`, headers: portal })).json<{ endpoint: { status: string; disabledReason: string } }>().endpoint
      assert.deepEqual([disabled.status, disabled.disabledReason], ['disabled', 'delivery-failing'])
      const [announced] = watcher.events()
      assert.equal(announced!.type, 'core.webhook-endpoint.disabled')
      assert.deepEqual((announced!.data.endpoint as { id: string; disabledReason: string }).id, endpoint.id)
      assert.deepEqual((await messagesOf(ctx(), portal, endpoint.id, '?status=pending')).map((message) => message.status), ['pending'])

      // Disabled, it is sent nothing; it keeps its place in the stream: enabled again, it gets what waited, in order,
      // what happened meanwhile included.
      const third = await ctx().createUser(suite.token)
      await deliverUntil(ctx(), () => true)
      assert.equal(hooks.received.length, 5)
      hooks.answer = () => 200
      const enabled = await ctx().request({ method: 'PATCH', url: `${PORTAL_API}/endpoints/${endpoint.id}`, headers: portal, payload: { enabled: true } })
      assert.equal(enabled.status, 200, enabled.body)
      assert.equal(enabled.json<{ endpoint: { status: string } }>().endpoint.status, 'enabled')
      await deliverUntil(ctx(), () => hooks.received.length >= 7)
      await deliverUntil(ctx(), () => true)
      assert.deepEqual(hooks.events().slice(5).map((event) => (event.data.user as { id: string }).id), [second.id, third.id])
      const eventOf = async (userId: string) =>
        (await ctx().database.db.selectFrom('outbox_events').select('id').where('type', '=', 'core.user.created').where('subject_id', '=', userId).executeTakeFirstOrThrow()).id
      const messages = await messagesOf(ctx(), portal, endpoint.id)
      assert.deepEqual(messages.map((message) => [message.eventId, message.status, message.attempts]).sort(), [
        [await eventOf(first.id), 'failed', 5],
        [await eventOf(second.id), 'delivered', 1],
        [await eventOf(third.id), 'delivered', 1],
      ].sort())
    })

    test('resend, replay since a time and a test event', async () => {
      const { receiver: hooks, url } = await receiver()
      const endpoint = await createEndpoint(ctx(), portal, { url, eventTypes: ['core.user.created', 'core.account.created'] })
      const since = new Date().toISOString()
      const user = await ctx().createUser(suite.token)
      await deliverUntil(ctx(), () => hooks.received.length >= 1)
      const [message] = await messagesOf(ctx(), portal, endpoint.id)

      const resent = await ctx().request({ method: 'POST', url: `${PORTAL_API}/endpoints/${endpoint.id}/messages/${message!.id}/resend`, headers: portal })
      assert.equal(resent.status, 202, resent.body)
      assert.equal(resent.json<{ message: { origin: string; eventId: string } }>().message.origin, 'resend')
      await deliverUntil(ctx(), () => hooks.received.length >= 2)
      assert.equal(hooks.received[1]!.headers['webhook-id'], hooks.received[0]!.headers['webhook-id'], 'a resent message keeps its webhook-id')
      assert.equal((await attemptsOf(ctx(), portal, endpoint.id)).length, 2)

      const replayed = await ctx().request({ method: 'POST', url: `${PORTAL_API}/endpoints/${endpoint.id}/replay`, headers: portal, payload: { since } })
      assert.equal(replayed.status, 202, replayed.body)
      assert.equal(replayed.json<{ replay: { queued: number } }>().replay.queued, 1)
      await deliverUntil(ctx(), () => hooks.received.length >= 3)
      assert.equal((hooks.events()[2]!.data.user as { id: string }).id, user.id)

      const tested = await ctx().request({ method: 'POST', url: `${PORTAL_API}/endpoints/${endpoint.id}/test`, headers: portal, payload: { type: 'core.transaction.status-changed' } })
      assert.equal(tested.status, 202, tested.body)
      await deliverUntil(ctx(), () => hooks.received.length >= 4)
      const test = hooks.events()[3]!
      assert.equal(test.type, 'core.transaction.status-changed')
      assert.ok(test.data.transaction, 'the catalogue\'s example data')
      // A test event is for its endpoint only, and never replayed.
      const again = await ctx().request({ method: 'POST', url: `${PORTAL_API}/endpoints/${endpoint.id}/replay`, headers: portal, payload: { since } })
      assert.equal(again.json<{ replay: { queued: number } }>().replay.queued, 1)

      for (const [path, payload, status, code] of [
        [`/endpoints/${endpoint.id}/messages/${crypto.randomUUID()}/resend`, undefined, 404, 'entity_not_found'],
        [`/endpoints/${endpoint.id}/replay`, { since: new Date(Date.now() - 40 * 86_400_000).toISOString() }, 400, 'request_invalid'],
        [`/endpoints/${endpoint.id}/replay`, { since: 'yesterday' }, 400, 'request_invalid'],
        [`/endpoints/${endpoint.id}/test`, { type: 'core.no.such-event' }, 400, 'request_invalid'],
        [`/endpoints/${crypto.randomUUID()}/test`, { type: 'core.user.created' }, 404, 'entity_not_found'],
      ] as const) {
        const response = await ctx().request({ method: 'POST', url: `${PORTAL_API}${path}`, headers: portal, ...(payload ? { payload } : {}) })
        assert.equal(response.status, status, `${path}: ${response.body}`)
        assert.equal(response.json<{ code: string }>().code, code)
      }
    })

    test('a redirect is a failed attempt and is never followed', async () => {
      const { receiver: hooks, url } = await receiver()
      const { receiver: target, url: targetUrl } = await receiver()
      hooks.answer = () => ({ status: 302, headers: { location: targetUrl } })
      const endpoint = await createEndpoint(ctx(), portal, { url, eventTypes: ['core.user.created'] })
      await ctx().createUser(suite.token)
      await deliverUntil(ctx(), async () => (await attemptsOf(ctx(), portal, endpoint.id)).length >= 1)
      const [attempt] = await attemptsOf(ctx(), portal, endpoint.id)
      assert.deepEqual([attempt!.succeeded, attempt!.responseStatus, attempt!.error], [false, 302, 'redirect'])
      assert.equal(target.received.length, 0)
      await ctx().request({ method: 'DELETE', url: `${PORTAL_API}/endpoints/${endpoint.id}`, headers: portal })
    })
  })
}
