import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { bearer, ENGINES, individualUser, startApp, type TestContext, type TestResponse, useApp } from './helpers.ts'

const URL = '/core/users/me/metadata'
const PATCH = 'application/json-patch+json'
const ETAG = /^"[0-9a-f]{64}"$/

for (const engine of ENGINES) {
  describe(`metadata [${engine}]`, () => {
    const suite = useApp(engine)

    /** A fresh user and requests acting for it. */
    async function actor() {
      const user = await suite.ctx.createUser(suite.token)
      const headers = bearer(suite.token, user.id)
      return {
        user,
        get: (extra: Record<string, string> = {}) => suite.ctx.request({ method: 'GET', url: URL, headers: { ...headers, ...extra } }),
        put: (body: unknown, extra: Record<string, string> = {}) =>
          suite.ctx.request({ method: 'PUT', url: URL, headers: { ...headers, 'content-type': 'application/json', ...extra }, payload: JSON.stringify(body) }),
        patch: (operations: unknown, extra: Record<string, string> = {}) =>
          suite.ctx.request({ method: 'PATCH', url: URL, headers: { ...headers, 'content-type': PATCH, ...extra }, payload: JSON.stringify(operations) }),
        remove: (extra: Record<string, string> = {}) => suite.ctx.request({ method: 'DELETE', url: URL, headers: { ...headers, ...extra } }),
      }
    }

    /** Proves a refused write changed nothing: same revision, same content. */
    async function assertUnchanged(subject: Awaited<ReturnType<typeof actor>>, before: TestResponse) {
      const now = await subject.get()
      assert.equal(now.status, before.status)
      assert.equal(now.headers.etag, before.headers.etag)
      assert.equal(now.body, before.body)
    }

    test('§3: PUT creates (201), PUT again replaces (200), DELETE removes everything', async () => {
      const subject = await actor()
      const created = await subject.put({ externalId: 'crm-1', tags: ['a'] })
      assert.equal(created.status, 201)
      assert.match(String(created.headers.etag), ETAG)
      assert.deepEqual(created.json(), { metadata: { externalId: 'crm-1', tags: ['a'] } })

      const replaced = await subject.put({ tier: 'gold' })
      assert.equal(replaced.status, 200)
      assert.deepEqual(replaced.json(), { metadata: { tier: 'gold' } }, 'PUT replaces the whole object')
      assert.notEqual(replaced.headers.etag, created.headers.etag)

      const got = await subject.get()
      assert.equal(got.status, 200)
      assert.deepEqual(got.json(), { metadata: { tier: 'gold' } })
      assert.equal(got.headers.etag, replaced.headers.etag)

      const removed = await subject.remove()
      assert.equal(removed.status, 204)
      assert.equal(removed.body, '')
      const gone = await subject.get()
      assert.equal(gone.status, 404)
      assert.deepEqual(gone.json(), { code: 'entity_not_found', message: 'The entity metadata cannot be found', details: { entity: 'metadata' } })
      assert.equal((await subject.remove()).status, 404)
    })

    test('the key order the client sent is kept, and the ETag is the digest of exactly that text', async () => {
      const subject = await actor()
      const response = await subject.put({ zeta: 1, alpha: { b: 2, a: 1 } })
      assert.equal((await subject.get()).body, '{"metadata":{"zeta":1,"alpha":{"b":2,"a":1}}}')
      const again = await subject.put({ zeta: 1, alpha: { b: 2, a: 1 } })
      assert.equal(again.headers.etag, response.headers.etag, 'same content, same tag')
    })

    test('§7: GET with a matching If-None-Match is 304 with the ETag and request id, and no body', async () => {
      const subject = await actor()
      const etag = String((await subject.put({ externalId: 1 })).headers.etag)
      const bare = etag.slice(1, -1)
      for (const header of [etag, bare, `W/${etag}`, `"${'0'.repeat(64)}", ${etag}`, '*']) {
        const response = await subject.get({ 'if-none-match': header })
        assert.equal(response.status, 304, header)
        assert.equal(response.body, '')
        assert.equal(response.headers.etag, etag)
      }
      const changed = await subject.get({ 'if-none-match': `"${'0'.repeat(64)}"` })
      assert.equal(changed.status, 200)
      assert.deepEqual(changed.json(), { metadata: { externalId: 1 } })
    })

    test('§7: If-Match that does not match is 412 on PUT, PATCH and DELETE, and nothing changes', async () => {
      const subject = await actor()
      const etag = String((await subject.put({ externalId: 1 })).headers.etag)
      const before = await subject.get()
      const stale = `"${'ab'.repeat(32)}"`
      for (const response of [
        await subject.put({ externalId: 2 }, { 'if-match': stale }),
        await subject.patch([{ op: 'replace', path: '/externalId', value: 2 }], { 'if-match': stale }),
        await subject.remove({ 'if-match': stale }),
      ]) {
        assert.equal(response.status, 412, response.body)
        assert.equal(response.json().code, 'precondition_failed')
      }
      await assertUnchanged(subject, before)

      const updated = await subject.put({ externalId: 2 }, { 'if-match': etag })
      assert.equal(updated.status, 200)
      const patched = await subject.patch([{ op: 'add', path: '/tier', value: 'gold' }], { 'if-match': `W/${String(updated.headers.etag)}` })
      assert.equal(patched.status, 200)
      assert.deepEqual(patched.json(), { metadata: { externalId: 2, tier: 'gold' } })
      assert.equal((await subject.remove({ 'if-match': String(patched.headers.etag).slice(1, -1) })).status, 204)
    })

    test('If-Match when there is no metadata is 412', async () => {
      const subject = await actor()
      const tag = `"${'cd'.repeat(32)}"`
      assert.equal((await subject.put({ a: 1 }, { 'if-match': tag })).status, 412)
      assert.equal((await subject.patch([{ op: 'add', path: '/a', value: 1 }], { 'if-match': tag })).status, 412)
      assert.equal((await subject.remove({ 'if-match': tag })).status, 412)
      assert.equal((await subject.get()).status, 404, 'still nothing stored')
    })

    test('§7: If-None-Match: * on PUT creates once, then is 412', async () => {
      const subject = await actor()
      assert.equal((await subject.put({ a: 1 }, { 'if-none-match': '*' })).status, 201)
      const before = await subject.get()
      const again = await subject.put({ a: 2 }, { 'if-none-match': '*' })
      assert.equal(again.status, 412)
      assert.equal(again.json().code, 'precondition_failed')
      await assertUnchanged(subject, before)
    })

    test('malformed conditional headers are 400', async () => {
      const subject = await actor()
      await subject.put({ a: 1 })
      for (const response of [
        await subject.get({ 'if-none-match': 'nope' }),
        await subject.put({ a: 2 }, { 'if-match': '"short"' }),
        await subject.put({ a: 2 }, { 'if-none-match': `"${'a'.repeat(64)}"` }),
        await subject.remove({ 'if-match': 'W/' }),
      ]) {
        assert.equal(response.status, 400, response.body)
        assert.equal(response.json<{ details: { context: string } }>().details.context, 'headers')
      }
    })

    test('§7: metadata over 1024 characters is 413 content_too_large, counted in code points', async () => {
      const subject = await actor()
      const atLimit = { e: '😀'.repeat(1024 - 8) }
      assert.equal((await subject.put(atLimit)).status, 201, '1024 code points (2032 UTF-16 units) fit')
      const before = await subject.get()

      const tooLarge = await subject.put({ e: '😀'.repeat(1024 - 7) })
      assert.equal(tooLarge.status, 413)
      assert.deepEqual(tooLarge.json(), {
        code: 'content_too_large',
        message: 'The entity metadata size is greater than maximum size limit',
        details: { threshold: { unit: 'characters', limit: '1024' } },
      })
      const grown = await subject.patch([{ op: 'add', path: '/more', value: 'x' }])
      assert.equal(grown.status, 413, 'the limit applies to the patched result')
      await assertUnchanged(subject, before)
    })

    test('bodies that are not a non-empty object, invalid JSON and wrong content types change nothing', async () => {
      const subject = await actor()
      await subject.put({ a: 1 })
      const before = await subject.get()
      for (const body of [[1], 'text', 42, null, {}]) {
        const response = await subject.put(body)
        assert.equal(response.status, 400, `${JSON.stringify(body)}: ${response.body}`)
        assert.equal(response.json().code, 'request_invalid')
      }
      for (const body of [{ op: 'add', path: '/a', value: 1 }, 'text', [1], null]) {
        const response = await subject.patch(body)
        assert.equal(response.status, 400, `${JSON.stringify(body)}: ${response.body}`)
      }
      const headers = bearer(suite.token, subject.user.id)
      const invalidJson = await suite.ctx.request({ method: 'PUT', url: URL, headers: { ...headers, 'content-type': 'application/json' }, payload: '{"a":' })
      assert.equal(invalidJson.status, 400)
      const invalidPatchJson = await suite.ctx.request({ method: 'PATCH', url: URL, headers: { ...headers, 'content-type': PATCH }, payload: '[{' })
      assert.equal(invalidPatchJson.status, 400)
      for (const [method, contentType] of [['PUT', 'text/plain'], ['PUT', PATCH], ['PATCH', 'application/json'], ['PATCH', 'text/plain']] as const) {
        const response = await suite.ctx.request({ method, url: URL, headers: { ...headers, 'content-type': contentType }, payload: method === 'PUT' ? '{"a":2}' : '[{"op":"add","path":"/b","value":1}]' })
        assert.equal(response.status, 415, `${method} ${contentType}: ${response.body}`)
        assert.equal(response.json().code, 'content_type_unsupported')
      }
      await assertUnchanged(subject, before)
    })

    test('PATCH applies every RFC 6902 operation, atomically', async () => {
      const subject = await actor()
      await subject.put({ a: 1, list: [1, 2], nested: { x: true } })
      const patched = await subject.patch([
        { op: 'add', path: '/b', value: { c: 'd' } },
        { op: 'remove', path: '/a' },
        { op: 'replace', path: '/list/0', value: 10 },
        { op: 'add', path: '/list/-', value: 3 },
        { op: 'move', from: '/nested/x', path: '/moved' },
        { op: 'copy', from: '/b', path: '/copied' },
        { op: 'test', path: '/list', value: [10, 2, 3] },
      ])
      assert.equal(patched.status, 200, patched.body)
      assert.deepEqual(patched.json(), { metadata: { b: { c: 'd' }, list: [10, 2, 3], nested: {}, moved: true, copied: { c: 'd' } } })

      const before = await subject.get()
      const failing = await subject.patch([
        { op: 'add', path: '/added', value: 1 },
        { op: 'test', path: '/moved', value: false },
      ])
      assert.equal(failing.status, 422)
      const body = failing.json<{ code: string; details: { operation: { index: number; op: string; path: string }; reason: string } }>()
      assert.equal(body.code, 'json_patch_failed')
      assert.deepEqual(body.details.operation, { index: 1, op: 'test', path: '/moved' })
      assert.equal(typeof body.details.reason, 'string')
      await assertUnchanged(subject, before)

      const emptied = await subject.patch([{ op: 'replace', path: '', value: {} }])
      assert.equal(emptied.status, 422, 'metadata stays a non-empty object')
      await assertUnchanged(subject, before)
    })

    test('PATCH of an entity without metadata is 404', async () => {
      const subject = await actor()
      const response = await subject.patch([{ op: 'add', path: '/a', value: 1 }])
      assert.equal(response.status, 404)
      assert.deepEqual(response.json<{ details: unknown }>().details, { entity: 'metadata' })
    })

    test('metadata given at creation is readable, with its ETag', async () => {
      const user = await suite.ctx.createUser(suite.token, individualUser({ metadata: { externalId: 'crm-9' } }))
      const response = await suite.ctx.request({ method: 'GET', url: URL, headers: bearer(suite.token, user.id) })
      assert.equal(response.status, 200)
      assert.deepEqual(response.json(), { metadata: { externalId: 'crm-9' } })
      assert.match(String(response.headers.etag), ETAG)
    })

    test('a user is named by me or by its own id; another user is 404', async () => {
      const subject = await actor()
      const other = await actor()
      await subject.put({ own: true })
      const byId = await suite.ctx.request({ method: 'GET', url: `/core/users/${subject.user.id}/metadata`, headers: bearer(suite.token, subject.user.id) })
      assert.deepEqual(byId.json(), { metadata: { own: true } })
      const foreign = await suite.ctx.request({ method: 'GET', url: `/core/users/${subject.user.id}/metadata`, headers: bearer(suite.token, other.user.id) })
      assert.equal(foreign.status, 404)
      assert.deepEqual(foreign.json<{ details: unknown }>().details, { entity: 'user' })
      const write = await suite.ctx.request({ method: 'PUT', url: `/core/users/${subject.user.id}/metadata`, headers: bearer(suite.token, other.user.id), payload: { stolen: true } })
      assert.equal(write.status, 404)
      assert.deepEqual((await subject.get()).json(), { metadata: { own: true } })
    })

    test('reads served from memory: each write is seen by the next read, and another organization never reads it', async () => {
      const subject = await actor()
      const read = async () => {
        const response = await subject.get()
        return { status: response.status, etag: response.headers.etag, body: response.status === 200 ? response.json() : response.json<{ code: string }>().code }
      }
      const put = await subject.put({ step: 1 })
      // Twice: the second read is the cached one.
      for (let i = 0; i < 2; i++) assert.deepEqual(await read(), { status: 200, etag: put.headers.etag, body: { metadata: { step: 1 } } })
      const replaced = await subject.put({ step: 2 }, { 'if-match': String(put.headers.etag) })
      assert.deepEqual(await read(), { status: 200, etag: replaced.headers.etag, body: { metadata: { step: 2 } } })
      const upserted = await subject.put({ step: 3 })
      assert.deepEqual(await read(), { status: 200, etag: upserted.headers.etag, body: { metadata: { step: 3 } } })
      const patched = await subject.patch([{ op: 'replace', path: '/step', value: 4 }])
      assert.deepEqual(await read(), { status: 200, etag: patched.headers.etag, body: { metadata: { step: 4 } } })
      assert.equal((await subject.get({ 'if-none-match': String(patched.headers.etag) })).status, 304)
      assert.equal((await subject.get({ 'if-none-match': String(upserted.headers.etag) })).status, 200, 'an older tag is not the current one')
      assert.equal((await subject.remove()).status, 204)
      assert.deepEqual(await read(), { status: 404, etag: undefined, body: 'entity_not_found' })
      const again = await subject.put({ step: 5 }, { 'if-none-match': '*' })
      assert.equal(again.status, 201)
      assert.deepEqual(await read(), { status: 200, etag: again.headers.etag, body: { metadata: { step: 5 } } })

      // Another organization's client, acting for its own user or naming this one: never this metadata.
      const foreignToken = await suite.ctx.token(await suite.ctx.newClient())
      const foreignUser = await suite.ctx.createUser(foreignToken)
      for (const [actingAs, url] of [
        [foreignUser.id, `/core/users/${subject.user.id}/metadata`],
        [subject.user.id, URL],
        [subject.user.id, `/core/users/${subject.user.id}/metadata`],
      ] as const) {
        const response = await suite.ctx.request({ method: 'GET', url, headers: bearer(foreignToken, actingAs) })
        assert.equal(response.status, 404, `${actingAs} ${url}: ${response.body}`)
        assert.ok(!response.body.includes('step'), response.body)
      }
      assert.equal((await suite.ctx.request({ method: 'GET', url: URL, headers: bearer(foreignToken, foreignUser.id) })).status, 404, 'its own user has none')
    })

    test('entities without their module yet answer 404 for every operation', async () => {
      const subject = await actor()
      const headers = bearer(suite.token, subject.user.id)
      for (const [entity, name] of [['accounts', 'account'], ['external-accounts', 'external-account'], ['files', 'file'], ['transactions', 'transaction']]) {
        const url = `/core/${entity}/0190a8c1-0000-7000-8000-000000000000/metadata`
        for (const response of [
          await suite.ctx.request({ method: 'GET', url, headers }),
          await suite.ctx.request({ method: 'PUT', url, headers, payload: { a: 1 } }),
          await suite.ctx.request({ method: 'PATCH', url, headers: { ...headers, 'content-type': PATCH }, payload: '[{"op":"add","path":"/a","value":1}]' }),
          await suite.ctx.request({ method: 'DELETE', url, headers }),
        ]) {
          assert.equal(response.status, 404, `${entity}: ${response.body}`)
          assert.deepEqual(response.json<{ details: unknown }>().details, { entity: name })
        }
      }
      const unknown = await suite.ctx.request({ method: 'GET', url: '/core/widgets/1/metadata', headers })
      assert.equal(unknown.status, 400)
    })

    test('the scope follows the entity: users metadata needs core.users.metadata:*', async () => {
      const subject = await actor()
      const readOnly = await suite.ctx.newClient('core.users:act-on-behalf-of core.users.metadata:read core.users:create', suite.ctx.client.organizationId)
      const readToken = await suite.ctx.token(readOnly)
      await subject.put({ a: 1 })
      assert.equal((await suite.ctx.request({ method: 'GET', url: URL, headers: bearer(readToken, subject.user.id) })).status, 200)
      const write = await suite.ctx.request({ method: 'PUT', url: URL, headers: bearer(readToken, subject.user.id), payload: { a: 2 } })
      assert.equal(write.status, 403)
      assert.ok(JSON.stringify(write.json()).includes('core.users.metadata:write'))
      const accounts = await suite.ctx.request({ method: 'GET', url: '/core/accounts/0190a8c1-0000-7000-8000-000000000000/metadata', headers: bearer(readToken, subject.user.id) })
      assert.equal(accounts.status, 403, 'accounts metadata needs core.accounts.metadata:read')
    })
  })

  describe(`metadata under concurrent writers [${engine}]`, () => {
    let ctx: TestContext
    before(async () => {
      ctx = await startApp(engine)
    })
    after(() => ctx.close())

    test('writers racing with the same If-Match: exactly one wins, the others get 412', async () => {
      const token = await ctx.token()
      const user = await ctx.createUser(token)
      const headers = bearer(token, user.id)
      for (const method of ['PUT', 'PATCH'] as const) {
        const start = await ctx.request({ method: 'PUT', url: URL, headers, payload: { round: method } })
        const etag = String(start.headers.etag)
        const writers = Array.from({ length: 12 }, (_, i) =>
          method === 'PUT'
            ? ctx.request({ method, url: URL, headers: { ...headers, 'if-match': etag }, payload: { writer: i } })
            : ctx.request({ method, url: URL, headers: { ...headers, 'if-match': etag, 'content-type': PATCH }, payload: JSON.stringify([{ op: 'add', path: '/writer', value: i }]) }),
        )
        const results = await Promise.all(writers)
        const statuses = results.map((r) => r.status).sort()
        assert.deepEqual(statuses, [200, ...Array<number>(11).fill(412)], `${method}: ${statuses.join(',')}`)
        const winner = results.find((r) => r.status === 200)!
        const final = await ctx.request({ method: 'GET', url: URL, headers })
        assert.equal(final.headers.etag, winner.headers.etag)
        assert.deepEqual(final.json(), winner.json())
      }
    })

    test('concurrent creations with If-None-Match: * create once', async () => {
      const token = await ctx.token()
      const user = await ctx.createUser(token)
      const headers = { ...bearer(token, user.id), 'if-none-match': '*' }
      const results = await Promise.all(Array.from({ length: 10 }, (_, i) => ctx.request({ method: 'PUT', url: URL, headers, payload: { creator: i } })))
      assert.deepEqual(results.map((r) => r.status).sort(), [201, ...Array<number>(9).fill(412)])
    })

    test('concurrent patches without If-Match lose no update', async () => {
      const token = await ctx.token()
      const user = await ctx.createUser(token)
      const headers = bearer(token, user.id)
      await ctx.request({ method: 'PUT', url: URL, headers, payload: { start: true } })
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          ctx.request({ method: 'PATCH', url: URL, headers: { ...headers, 'content-type': PATCH }, payload: JSON.stringify([{ op: 'add', path: `/k${i}`, value: i }]) }),
        ),
      )
      assert.ok(results.every((r) => r.status === 200))
      const final = (await ctx.request({ method: 'GET', url: URL, headers })).json<{ metadata: Record<string, unknown> }>().metadata
      assert.equal(Object.keys(final).length, 11)
    })
  })
}
