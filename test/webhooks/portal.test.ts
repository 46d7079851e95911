import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { before, describe, test } from 'node:test'
import { derivePurposeKey } from '../../src/lib/sealing.ts'
import { signPortalToken } from '../../src/modules/webhooks/portal-tokens.ts'
import { bearer, ENGINES, useApp, type TestContext } from '../helpers.ts'
import { createEndpoint, managementLink, openPortal, PORTAL_API, type Endpoint } from './portal.ts'

const codeOf = (response: { json: <T>() => T }) => response.json<{ code: string }>().code

for (const engine of ENGINES) {
  describe(`webhook management link and portal [${engine}]`, () => {
    const suite = useApp(engine, { WEBHOOK_MAX_ENDPOINTS: '3' })
    const ctx = (): TestContext => suite.ctx
    let portal: Record<string, string>
    before(async () => {
      portal = await openPortal(ctx(), suite.token)
    })

    test('the management link is the reference\'s shape and opens the portal once', async () => {
      const response = await ctx().request({ method: 'POST', url: '/core/webhooks/management-link', headers: bearer(suite.token) })
      assert.equal(response.status, 200)
      const { managementLink: link } = response.json<{ managementLink: { url: string; expiresAt: string } }>()
      assert.deepEqual(Object.keys(link).sort(), ['expiresAt', 'url'])
      assert.match(link.expiresAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
      assert.ok(Math.abs(Date.parse(link.expiresAt) - Date.now() - 3_600_000) < 60_000, 'an hour by default')
      const url = new URL(link.url)
      assert.equal(`${url.origin}${url.pathname}`, `${ctx().config.publicUrl}/hosted/webhooks/`)
      assert.equal(url.search, '', 'the credential is in the fragment, which browsers never send')
      const token = new URLSearchParams(url.hash.slice(1)).get('link')!

      const opened = await ctx().request({ method: 'POST', url: `${PORTAL_API}/sessions`, payload: { link: token } })
      assert.equal(opened.status, 201, opened.body)
      assert.equal(opened.json<{ session: { expiresAt: string } }>().session.expiresAt, link.expiresAt)
      const again = await ctx().request({ method: 'POST', url: `${PORTAL_API}/sessions`, payload: { link: token } })
      assert.deepEqual([again.status, codeOf(again)], [410, 'link_already_used'])
    })

    test('an altered or expired link, and a missing, altered, expired or misused session, are refused', async () => {
      const token = await managementLink(ctx(), suite.token)
      const [payload, signature] = token.split('.') as [string, string]
      const decoded = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>
      const otherOrganization = Buffer.from(JSON.stringify({ ...decoded, o: randomUUID() })).toString('base64url')
      // A changed character of the signature (not the last: its low bits are padding, which decoding ignores).
      const altered = `${signature.slice(0, 5)}${signature[5] === 'A' ? 'B' : 'A'}${signature.slice(6)}`
      for (const link of [`${otherOrganization}.${signature}`, `${payload}.${altered}`, 'garbage']) {
        const response = await ctx().request({ method: 'POST', url: `${PORTAL_API}/sessions`, payload: { link } })
        assert.deepEqual([response.status, codeOf(response)], [403, 'signature_invalid'], link)
      }
      const key = derivePurposeKey(ctx().secrets.sealingKey, 'webhooks/portal')
      const grant = { linkId: randomUUID(), organizationId: ctx().client.organizationId, expiresAt: new Date(Date.now() - 1000) }
      const expired = await ctx().request({ method: 'POST', url: `${PORTAL_API}/sessions`, payload: { link: signPortalToken(key, { ...grant, kind: 'link' }) } })
      assert.deepEqual([expired.status, codeOf(expired)], [403, 'signature_expired'])
      // Signed and current, but no such link was ever issued.
      const unissued = await ctx().request({ method: 'POST', url: `${PORTAL_API}/sessions`, payload: { link: signPortalToken(key, { ...grant, kind: 'link', expiresAt: new Date(Date.now() + 60_000) }) } })
      assert.deepEqual([unissued.status, codeOf(unissued)], [410, 'link_already_used'])
      // The link itself is not a session.
      const linkAsSession = await ctx().request({ method: 'GET', url: `${PORTAL_API}/endpoints`, headers: { authorization: `Bearer ${token}` } })
      assert.deepEqual([linkAsSession.status, codeOf(linkAsSession)], [401, 'token_invalid'])

      const sessions: [Record<string, string>, string][] = [
        [{}, 'token_invalid'],
        [{ authorization: 'Bearer nonsense' }, 'token_invalid'],
        [bearer(suite.token), 'token_invalid'],
        [{ authorization: `Bearer ${signPortalToken(key, { ...grant, kind: 'session' })}` }, 'token_expired'],
        [{ authorization: `Bearer ${signPortalToken(Buffer.alloc(32, 7), { ...grant, kind: 'session', expiresAt: new Date(Date.now() + 60_000) })}` }, 'token_invalid'],
      ]
      for (const [headers, code] of sessions) {
        const response = await ctx().request({ method: 'GET', url: `${PORTAL_API}/endpoints`, headers })
        assert.deepEqual([response.status, codeOf(response)], [401, code], JSON.stringify(headers))
      }
    })

    test('endpoints are added, read, edited, disabled and deleted; the secret is sealed at rest', async () => {
      const created = await createEndpoint(ctx(), portal, { url: 'https://hooks.example.com/tessera?source=core', description: 'Ledger sync', eventTypes: ['core.transaction.status-changed', 'core.transaction.status-changed'] })
      assert.deepEqual([created.url, created.description, created.eventTypes, created.status], ['https://hooks.example.com/tessera?source=core', 'Ledger sync', ['core.transaction.status-changed'], 'enabled'])
      const listed = (await ctx().request({ method: 'GET', url: `${PORTAL_API}/endpoints`, headers: portal })).json<{ endpoints: Endpoint[] }>().endpoints
      assert.ok(listed.some((endpoint) => endpoint.id === created.id))

      const edited = await ctx().request({ method: 'PATCH', url: `${PORTAL_API}/endpoints/${created.id}`, headers: portal, payload: { description: 'Ledger', eventTypes: [], enabled: false } })
      assert.equal(edited.status, 200, edited.body)
      const endpoint = edited.json<{ endpoint: Endpoint & { disabledAt: string } }>().endpoint
      assert.deepEqual([endpoint.description, endpoint.eventTypes, endpoint.status, endpoint.disabledReason], ['Ledger', [], 'disabled', 'manual'])

      const { secret } = (await ctx().request({ method: 'GET', url: `${PORTAL_API}/endpoints/${created.id}/secret`, headers: portal })).json<{ secret: string }>()
      const row = await ctx().database.db.selectFrom('webhook_endpoints').selectAll().where('id', '=', created.id).executeTakeFirstOrThrow()
      assert.ok(!JSON.stringify(row).includes(secret.slice(6)), 'only the sealed secret is stored')
      assert.ok(!JSON.stringify(listed).includes(secret.slice(6)), 'lists never carry secrets')

      const deleted = await ctx().request({ method: 'DELETE', url: `${PORTAL_API}/endpoints/${created.id}`, headers: portal })
      assert.equal(deleted.status, 204)
      const gone = await ctx().request({ method: 'GET', url: `${PORTAL_API}/endpoints/${created.id}`, headers: portal })
      assert.deepEqual([gone.status, codeOf(gone)], [404, 'entity_not_found'])
    })

    test('bad input is refused with the error envelope and changes nothing', async () => {
      const before = (await ctx().request({ method: 'GET', url: `${PORTAL_API}/endpoints`, headers: portal })).json<{ endpoints: Endpoint[] }>().endpoints.length
      const cases: [unknown, string][] = [
        [{}, 'url'],
        [{ url: 42 }, 'url'],
        [{ url: 'not a url' }, 'url'],
        [{ url: 'ftp://hooks.example.com/' }, 'url'],
        [{ url: 'https://user:secret@hooks.example.com/' }, 'url'],
        [{ url: 'https://hooks.example.com/#part' }, 'url'],
        [{ url: `https://hooks.example.com/${'a'.repeat(2100)}` }, 'url'],
        [{ url: 'https://hooks.example.com/', eventTypes: ['core.no.such-event'] }, 'eventTypes.0'],
        [{ url: 'https://hooks.example.com/', eventTypes: 'core.user.created' }, 'eventTypes'],
        [{ url: 'https://hooks.example.com/', description: 'x'.repeat(501) }, 'description'],
        [{ url: 'https://hooks.example.com/', secret: 'whsec_mine' }, 'secret'],
      ]
      for (const [payload, property] of cases) {
        const response = await ctx().request({ method: 'POST', url: `${PORTAL_API}/endpoints`, headers: portal, payload: payload as Record<string, unknown> })
        assert.equal(response.status, 400, `${JSON.stringify(payload).slice(0, 80)}: ${response.body}`)
        const { code, details } = response.json<{ code: string; details: { violations: { property: string }[] } }>()
        assert.equal(code, 'request_invalid')
        assert.ok(details.violations.some((violation) => violation.property.startsWith(property.split('.')[0]!)), `${property}: ${response.body}`)
      }
      const huge = await ctx().request({ method: 'POST', url: `${PORTAL_API}/endpoints`, headers: { ...portal, 'content-type': 'application/json' }, payload: JSON.stringify({ url: 'https://a.example/', description: 'x'.repeat(2_000_000) }) })
      assert.equal(huge.status, 413)
      for (const [method, path, payload] of [
        ['PATCH', `/endpoints/${randomUUID()}`, { enabled: true }],
        ['PATCH', '/endpoints/not-a-uuid', { enabled: true }],
        ['GET', `/endpoints/${randomUUID()}/secret`, undefined],
        ['POST', `/endpoints/${randomUUID()}/secret/rotate`, {}],
        ['DELETE', `/endpoints/${randomUUID()}`, undefined],
        ['GET', `/endpoints/${randomUUID()}/messages`, undefined],
      ] as const) {
        const response = await ctx().request({ method, url: `${PORTAL_API}${path}`, headers: portal, ...(payload ? { payload } : {}) })
        assert.ok([400, 404].includes(response.status), `${method} ${path}: ${response.status}`)
      }
      const empty = await createEndpoint(ctx(), portal, { url: 'https://hooks.example.com/a' })
      const noChange = await ctx().request({ method: 'PATCH', url: `${PORTAL_API}/endpoints/${empty.id}`, headers: portal, payload: {} })
      assert.equal(noChange.status, 400)
      const badGrace = await ctx().request({ method: 'POST', url: `${PORTAL_API}/endpoints/${empty.id}/secret/rotate`, headers: portal, payload: { graceSeconds: -1 } })
      assert.equal(badGrace.status, 400)
      const after = (await ctx().request({ method: 'GET', url: `${PORTAL_API}/endpoints`, headers: portal })).json<{ endpoints: Endpoint[] }>().endpoints.length
      assert.equal(after, before + 1)
      await ctx().request({ method: 'DELETE', url: `${PORTAL_API}/endpoints/${empty.id}`, headers: portal })
    })

    test('an organization has at most the configured number of endpoints', async () => {
      const client = await ctx().newClient('*')
      const own = await openPortal(ctx(), await ctx().token(client))
      for (let i = 0; i < 3; i++) await createEndpoint(ctx(), own, { url: `https://hooks.example.com/${i}` })
      const response = await ctx().request({ method: 'POST', url: `${PORTAL_API}/endpoints`, headers: own, payload: { url: 'https://hooks.example.com/4' } })
      assert.equal(response.status, 409)
      assert.deepEqual(response.json(), {
        code: 'webhook_endpoints_limit_exceeded',
        message: 'An organization may have at most 3 webhook endpoints',
        details: { threshold: { unit: 'endpoints', limit: '3' } },
      })
    })

    test('a portal session sees and changes its own organization\'s endpoints only', async () => {
      const mine = await createEndpoint(ctx(), portal, { url: 'https://hooks.example.com/mine' })
      const other = await openPortal(ctx(), await ctx().token(await ctx().newClient('*')))
      const theirs = await createEndpoint(ctx(), other, { url: 'https://hooks.example.com/theirs' })
      const listed = (await ctx().request({ method: 'GET', url: `${PORTAL_API}/endpoints`, headers: other })).json<{ endpoints: Endpoint[] }>().endpoints
      assert.deepEqual(listed.map((endpoint) => endpoint.id), [theirs.id])
      for (const [method, path, payload] of [
        ['GET', `/endpoints/${mine.id}`, undefined],
        ['PATCH', `/endpoints/${mine.id}`, { url: 'https://attacker.example/' }],
        ['GET', `/endpoints/${mine.id}/secret`, undefined],
        ['POST', `/endpoints/${mine.id}/secret/rotate`, {}],
        ['GET', `/endpoints/${mine.id}/messages`, undefined],
        ['GET', `/endpoints/${mine.id}/attempts`, undefined],
        ['POST', `/endpoints/${mine.id}/replay`, { since: new Date(Date.now() - 60_000).toISOString() }],
        ['POST', `/endpoints/${mine.id}/test`, { type: 'core.user.created' }],
        ['DELETE', `/endpoints/${mine.id}`, undefined],
      ] as const) {
        const response = await ctx().request({ method, url: `${PORTAL_API}${path}`, headers: other, ...(payload ? { payload } : {}) })
        assert.deepEqual([response.status, codeOf(response)], [404, 'entity_not_found'], `${method} ${path}`)
      }
      const still = (await ctx().request({ method: 'GET', url: `${PORTAL_API}/endpoints/${mine.id}`, headers: portal })).json<{ endpoint: Endpoint }>().endpoint
      assert.equal(still.url, 'https://hooks.example.com/mine')
    })

    test('the event catalogue lists the core reference\'s 26 types, the kyc-connector\'s 4 and Tessera\'s own, each with an example', async () => {
      const response = await ctx().request({ method: 'GET', url: `${PORTAL_API}/event-types`, headers: portal })
      assert.equal(response.status, 200)
      const types = response.json<{ eventTypes: { type: string; sent: boolean; example: Record<string, unknown> }[] }>().eventTypes
      assert.equal(types.length, 31)
      assert.equal(types.filter((entry) => entry.type.startsWith('kyc-connector.')).length, 4)
      assert.deepEqual(types.filter((entry) => !entry.sent).map((entry) => entry.type).sort(), ['core.account.unarchived', 'core.kyb.onboarding.status-changed'])
      assert.ok(types.every((entry) => Object.keys(entry.example).length > 0))
    })
  })
}
