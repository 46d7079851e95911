import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { describe, test } from 'node:test'
import { requestHash } from '../src/http/idempotency.ts'
import { derivePurposeKey } from '../src/lib/sealing.ts'
import { bearer, ENGINES, individualUser, USER_IP, useApp } from './helpers.ts'

for (const engine of ENGINES) {
  describe(`Idempotency-Key [${engine}]`, () => {
    const suite = useApp(engine)

    const create = (body: Record<string, unknown>, key?: string, accessToken = suite.token) =>
      suite.ctx.request({
        method: 'POST',
        url: '/core/users',
        headers: { ...bearer(accessToken), 'x-service-user-ip': USER_IP, ...(key === undefined ? {} : { 'idempotency-key': key }) },
        payload: body,
      })

    const storedKey = (key: string) => suite.ctx.database.db.selectFrom('idempotency_keys').selectAll().where('key', '=', key).executeTakeFirst()

    test('a retry with the same key and body replays the first response and creates nothing', async () => {
      const key = randomUUID()
      const body = individualUser()
      const first = await create(body, key)
      assert.equal(first.status, 201)
      assert.equal(first.headers['idempotent-replayed'], undefined)

      for (let i = 0; i < 2; i++) {
        const retry = await create(body, key)
        assert.equal(retry.status, 201)
        assert.equal(retry.body, first.body, 'the same user, byte for byte')
        assert.equal(retry.headers['idempotent-replayed'], 'true')
        assert.match(String(retry.headers['content-type']), /application\/json/)
        assert.notEqual(retry.headers['x-service-request-id'], first.headers['x-service-request-id'])
      }
      // Without the key, the same body really runs again: the email is taken, so only one user exists.
      assert.equal((await create(body)).json().code, 'email_already_exists')
    })

    test('the same key with a different body is 422 and changes nothing', async () => {
      const key = randomUUID()
      assert.equal((await create(individualUser(), key)).status, 201)
      const other = individualUser()
      const reused = await create(other, key)
      assert.equal(reused.status, 422)
      assert.equal(reused.json().code, 'idempotency_key_reused')
      assert.equal((await create(other)).status, 201, 'the other user was not created by the refused request')
    })

    test('a failed first attempt is replayed as it was', async () => {
      const taken = individualUser()
      await create(taken)
      const key = randomUUID()
      const first = await create(taken, key)
      assert.equal(first.status, 409)
      const retry = await create(taken, key)
      assert.equal(retry.status, 409)
      assert.equal(retry.body, first.body)
      assert.equal(retry.headers['idempotent-replayed'], 'true')
    })

    test('keys belong to the client that used them', async () => {
      const key = randomUUID()
      assert.equal((await create(individualUser(), key)).status, 201)
      const sibling = await suite.ctx.newClient('*', suite.ctx.client.organizationId)
      const response = await create(individualUser(), key, await suite.ctx.token(sibling))
      assert.equal(response.status, 201)
      assert.equal(response.headers['idempotent-replayed'], undefined)
    })

    test('a retry while the first request is still running is 409, with Retry-After', async () => {
      const key = randomUUID()
      const body = individualUser()
      // Hold the key as a request in progress would.
      const first = create(body, key)
      const results = await Promise.all([first, create(body, key), create(body, key)])
      const statuses = results.map((r) => r.status)
      assert.ok(statuses.filter((s) => s === 201).length >= 1, statuses.join(','))
      for (const response of results.filter((r) => r.status === 409)) {
        assert.equal(response.json().code, 'idempotency_request_in_progress')
        assert.equal(response.headers['retry-after'], '1')
      }
      const row = await storedKey(key)
      assert.equal(row?.status, 'completed')

      const runningKey = randomUUID()
      const now = new Date()
      const hold = (hash: string) => suite.ctx.database.db
        .insertInto('idempotency_keys')
        .values({
          organization_id: suite.ctx.client.organizationId,
          client_id: suite.ctx.client.clientId,
          key: runningKey,
          operation: 'POST /core/users',
          request_hash: hash,
          status: 'running',
          created_at: now,
          locked_until: new Date(now.getTime() + 60_000),
          expires_at: new Date(now.getTime() + 86_400_000),
        })
        .execute()
      const held = individualUser()
      await hold(requestHash(derivePurposeKey(suite.ctx.secrets.sealingKey, 'idempotency/request-digest'), 'POST /core/users', undefined, held))
      const blocked = await create(held, runningKey)
      assert.equal(blocked.status, 409)
      assert.equal(blocked.json().code, 'idempotency_request_in_progress')
      assert.equal(blocked.headers['retry-after'], '1')
      assert.equal((await create(individualUser(), runningKey)).status, 422, 'a different request under a held key is refused whatever its state')
    })

    test('a first request that died gives its key to a retry after the lease; expired keys start afresh', async () => {
      const key = randomUUID()
      const body = individualUser()
      assert.equal((await create(body, key)).status, 201)
      const past = new Date(Date.now() - 1000)

      await suite.ctx.database.db.updateTable('idempotency_keys').set({ expires_at: past }).where('key', '=', key).execute()
      const afresh = await create(individualUser(), key)
      assert.equal(afresh.status, 201, 'an expired key no longer remembers its first body')
      assert.equal(afresh.headers['idempotent-replayed'], undefined)

      // A key left running past its lease (its process died) is taken over by a retry of the same request,
      // which runs again: here the first attempt had created the user, so the retry finds the email taken.
      const abandoned = randomUUID()
      const abandonedBody = individualUser()
      assert.equal((await create(abandonedBody, abandoned)).status, 201)
      await suite.ctx.database.db.updateTable('idempotency_keys').set({ status: 'running', locked_until: past, response_body: null }).where('key', '=', abandoned).execute()
      const takeover = await create(abandonedBody, abandoned)
      assert.equal(takeover.json().code, 'email_already_exists')
      assert.equal((await storedKey(abandoned))?.status, 'completed')
    })

    test('a malformed key is 400', async () => {
      for (const key of [' ', 'x'.repeat(256), 'clé-accentuée']) {
        const response = await create(individualUser(), key)
        assert.equal(response.status, 400, JSON.stringify(key))
        assert.equal(response.json<{ details: { context: string } }>().details.context, 'headers')
      }
    })

    test('the document describes the header and the replay marker', () => {
      const document = suite.ctx.app.swagger() as unknown as { paths: Record<string, Record<string, { parameters?: { name: string }[]; responses: Record<string, { headers?: Record<string, unknown> }> }>> }
      const operation = document.paths['/core/users']!.post!
      assert.ok(operation.parameters?.some((p) => p.name === 'idempotency-key'))
      assert.ok(operation.responses['201']!.headers?.['idempotent-replayed'])
      assert.ok(operation.responses['422'])
    })
  })

  describe(`Idempotency-Key under a rate limit [${engine}]`, () => {
    const suite = useApp(engine, { RATE_LIMIT_PER_MINUTE: '1' })

    test('a request refused by the rate limit does not claim its key, so the retry is not a replayed 429', async () => {
      const create = (key: string) =>
        suite.ctx.request({
          method: 'POST',
          url: '/core/users',
          headers: { ...bearer(suite.token), 'x-service-user-ip': USER_IP, 'idempotency-key': key },
          payload: individualUser(),
        })
      assert.equal((await create(randomUUID())).status, 201)
      const key = randomUUID()
      const limited = await create(key)
      assert.equal(limited.status, 429)
      const stored = await suite.ctx.database.db.selectFrom('idempotency_keys').selectAll().where('key', '=', key).executeTakeFirst()
      assert.equal(stored, undefined)
    })
  })
}
